//lint:file-ignore SA1019 feature/s3/manager is the uploader the aws CLI's upload-build path is tested with

package builds

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/sigv4"
)

// s3Client returns an aws-sdk-go-v2 S3 client for the Hoist at srv, path
// style, signing with the given credentials, without retries.
func s3Client(srv *httptest.Server, akid, secret, token string, mod ...func(*s3.Options)) *s3.Client {
	return s3.New(s3.Options{
		Region:           "us-west-2",
		BaseEndpoint:     aws.String(srv.URL),
		UsePathStyle:     true,
		Credentials:      credentials.NewStaticCredentialsProvider(akid, secret, token),
		HTTPClient:       srv.Client(),
		RetryMaxAttempts: 1,
	}, mod...)
}

// uploadClient returns a client signing with a build's upload credentials.
func uploadClient(srv *httptest.Server, c *api.AwsCredentials, mod ...func(*s3.Options)) *s3.Client {
	return s3Client(srv, *c.AccessKeyId, *c.SecretAccessKey, *c.SessionToken, mod...)
}

func s3Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return ""
}

func (h *harness) status(t testing.TB, id string) api.BuildStatus {
	t.Helper()
	d, err := h.DescribeBuild(h.ctx, &api.DescribeBuildInput{BuildId: &id})
	if err != nil {
		t.Fatal(err)
	}
	return d.Build.Status
}

func TestS3PutObject(t *testing.T) {
	tests := map[string]types.ChecksumAlgorithm{
		"default":   "",
		"crc32":     types.ChecksumAlgorithmCrc32,
		"crc32c":    types.ChecksumAlgorithmCrc32c,
		"crc64nvme": types.ChecksumAlgorithmCrc64nvme,
		"sha1":      types.ChecksumAlgorithmSha1,
		"sha256":    types.ChecksumAlgorithmSha256,
	}
	for name, algo := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			srv := startHoist(t, h)
			out, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
			if err != nil {
				t.Fatal(err)
			}
			_, err = uploadClient(srv, out.UploadCredentials).PutObject(h.ctx, &s3.PutObjectInput{
				Bucket: out.StorageLocation.Bucket, Key: out.StorageLocation.Key,
				Body: bytes.NewReader(goodArchive(t)), ChecksumAlgorithm: algo,
			})
			if err != nil {
				t.Fatal(err)
			}
			if st := h.status(t, *out.Build.BuildId); st != api.BuildStatusReady {
				t.Fatalf("status %s after PutObject", st)
			}
		})
	}
}

// TestS3PutObjectTLS uploads over HTTPS, where the SDK sends an aws-chunked
// body with a trailing checksum (STREAMING-UNSIGNED-PAYLOAD-TRAILER).
func TestS3PutObjectTLS(t *testing.T) {
	h := newHarness(t)
	var sawTrailer bool
	s3h := h.S3Handler()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-amz-content-sha256") == sigv4.StreamingUnsignedPayloadTrailer {
			sawTrailer = true
		}
		s3h.ServeHTTP(w, r)
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	out, _ := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	_, err := uploadClient(srv, out.UploadCredentials).PutObject(h.ctx, &s3.PutObjectInput{
		Bucket: out.StorageLocation.Bucket, Key: out.StorageLocation.Key,
		Body: bytes.NewReader(goodArchive(t)), ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sawTrailer {
		t.Error("the SDK did not send an aws-chunked body with a trailer; the test does not cover it")
	}
	if st := h.status(t, *out.Build.BuildId); st != api.BuildStatusReady {
		t.Fatalf("status %s", st)
	}
}

// bigArchive returns a zip holding one file of n random bytes (stored, so
// the archive is as large).
func bigArchive(t testing.TB, n int) ([]byte, []byte) {
	payload := make([]byte, n)
	rand.Read(payload)
	return makeZip(t, zent{name: "payload.bin", body: string(payload), method: 0}), payload
}

func TestS3MultipartUploadManager(t *testing.T) {
	h := newHarness(t)
	srv := startHoist(t, h)
	out, _ := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	archive, payload := bigArchive(t, 11<<20)
	up := manager.NewUploader(uploadClient(srv, out.UploadCredentials), func(u *manager.Uploader) {
		u.PartSize = manager.MinUploadPartSize
		u.Concurrency = 3
	})
	res, err := up.Upload(h.ctx, &s3.PutObjectInput{
		Bucket: out.StorageLocation.Bucket, Key: out.StorageLocation.Key, Body: bytes.NewReader(archive),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.UploadID == "" || len(res.CompletedParts) != 3 {
		t.Fatalf("not a 3-part upload: %+v", res)
	}
	id := *out.Build.BuildId
	if st := h.status(t, id); st != api.BuildStatusReady {
		t.Fatalf("status %s", st)
	}
	dir, _ := h.BuildDir(h.ctx, id)
	got, err := os.ReadFile(filepath.Join(dir, "payload.bin"))
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("unpacked payload differs (%d bytes, %v)", len(got), err)
	}
	if names, _ := h.blobs.list(); len(names) != 0 {
		t.Errorf("blobs left after the upload: %v", names)
	}
}

func TestS3MultipartAbort(t *testing.T) {
	h := newHarness(t)
	srv := startHoist(t, h)
	out, _ := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	c := uploadClient(srv, out.UploadCredentials)
	loc := out.StorageLocation
	cr, err := c.CreateMultipartUpload(h.ctx, &s3.CreateMultipartUploadInput{Bucket: loc.Bucket, Key: loc.Key})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.UploadPart(h.ctx, &s3.UploadPartInput{Bucket: loc.Bucket, Key: loc.Key, UploadId: cr.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("part one"))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AbortMultipartUpload(h.ctx, &s3.AbortMultipartUploadInput{Bucket: loc.Bucket, Key: loc.Key, UploadId: cr.UploadId}); err != nil {
		t.Fatal(err)
	}
	if names, _ := h.blobs.list(); len(names) != 0 {
		t.Errorf("blobs left after abort: %v", names)
	}
	_, err = c.CompleteMultipartUpload(h.ctx, &s3.CompleteMultipartUploadInput{Bucket: loc.Bucket, Key: loc.Key, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String(`"x"`)}}}})
	if code := s3Code(err); code != "NoSuchUpload" {
		t.Errorf("complete after abort: %s", code)
	}
}

// TestS3OpenUploadsCapped: a build may have DefaultMaxOpenUploads
// unfinished multipart uploads; the next CreateMultipartUpload is refused
// until one is aborted. Before the cap every call added an upload (each
// able to hold up to the archive size limit in parts).
func TestS3OpenUploadsCapped(t *testing.T) {
	h := newHarness(t)
	srv := startHoist(t, h)
	out, _ := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	c := uploadClient(srv, out.UploadCredentials)
	loc := out.StorageLocation
	var first *string
	for i := range DefaultMaxOpenUploads {
		cr, err := c.CreateMultipartUpload(h.ctx, &s3.CreateMultipartUploadInput{Bucket: loc.Bucket, Key: loc.Key})
		if err != nil {
			t.Fatalf("upload %d: %v", i+1, err)
		}
		if first == nil {
			first = cr.UploadId
		}
	}
	_, err := c.CreateMultipartUpload(h.ctx, &s3.CreateMultipartUploadInput{Bucket: loc.Bucket, Key: loc.Key})
	if code := s3Code(err); code != "InvalidRequest" || !strings.Contains(err.Error(), "unfinished multipart uploads") {
		t.Fatalf("upload %d: %v, want InvalidRequest", DefaultMaxOpenUploads+1, err)
	}
	if _, err := c.AbortMultipartUpload(h.ctx, &s3.AbortMultipartUploadInput{Bucket: loc.Bucket, Key: loc.Key, UploadId: first}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateMultipartUpload(h.ctx, &s3.CreateMultipartUploadInput{Bucket: loc.Bucket, Key: loc.Key}); err != nil {
		t.Errorf("after an abort: %v", err)
	}
}

// TestS3OperatorObject uploads with Hoist's API credentials to a key of
// the operator's choosing, then creates a build from it.
func TestS3OperatorObject(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Operators = sigv4.NewAuthenticator(map[string]string{"AKIAOPERATOR": "operator-secret"}, c.Now)
	})
	srv := startHoist(t, h)
	c := s3Client(srv, "AKIAOPERATOR", "operator-secret", "")
	bucket, key := aws.String(h.Bucket()), aws.String("games/v1/server.zip")
	if _, err := c.PutObject(h.ctx, &s3.PutObjectInput{Bucket: bucket, Key: key, Body: bytes.NewReader(goodArchive(t))}); err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(h.ctx, &s3.HeadObjectInput{Bucket: bucket, Key: key})
	if err != nil || aws.ToInt64(head.ContentLength) != int64(len(goodArchive(t))) {
		t.Fatalf("HeadObject: %+v %v", head, err)
	}
	out, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023, StorageLocation: &api.S3Location{Bucket: bucket, Key: key}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if st := h.status(t, *out.Build.BuildId); st != api.BuildStatusReady {
		t.Fatalf("status %s", st)
	}
	if _, err := c.DeleteObject(h.ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: key}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HeadObject(h.ctx, &s3.HeadObjectInput{Bucket: bucket, Key: key}); s3Code(err) != "NotFound" {
		t.Errorf("HeadObject after delete: %v", err)
	}
	odd := aws.String("games/v 1+ü=%2F~!.zip")
	if _, err := c.PutObject(h.ctx, &s3.PutObjectInput{Bucket: bucket, Key: odd, Body: bytes.NewReader(goodArchive(t))}); err != nil {
		t.Fatalf("odd key: %v", err)
	}
	if _, err := c.HeadObject(h.ctx, &s3.HeadObjectInput{Bucket: bucket, Key: odd}); err != nil {
		t.Fatalf("odd key: %v", err)
	}
	if _, err := s3Client(srv, "AKIAOPERATOR", "wrong", "").PutObject(h.ctx, &s3.PutObjectInput{Bucket: bucket, Key: key, Body: strings.NewReader("x")}); s3Code(err) != "SignatureDoesNotMatch" {
		t.Errorf("wrong operator secret: %v", err)
	}
	if _, err := s3Client(srv, "AKIASTRANGER", "x", "").PutObject(h.ctx, &s3.PutObjectInput{Bucket: bucket, Key: key, Body: strings.NewReader("x")}); s3Code(err) != "InvalidAccessKeyId" {
		t.Errorf("unknown key: %v", err)
	}
}

func TestS3Refusals(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.MaxArchiveSize = 64 << 10 })
	srv := startHoist(t, h)
	newBuild := func() *api.CreateBuildOutput {
		out, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	put := func(c *s3.Client, key string, body []byte, mod ...func(*s3.PutObjectInput)) error {
		in := &s3.PutObjectInput{Bucket: aws.String(h.Bucket()), Key: aws.String(key), Body: bytes.NewReader(body)}
		for _, m := range mod {
			m(in)
		}
		_, err := c.PutObject(h.ctx, in)
		return err
	}
	big, _ := bigArchive(t, 100<<10)
	tests := map[string]struct {
		do   func(out *api.CreateBuildOutput) error
		code string
	}{
		"other key": {code: "AccessDenied", do: func(out *api.CreateBuildOutput) error {
			return put(uploadClient(srv, out.UploadCredentials), "games/other.zip", goodArchive(t))
		}},
		"another build's key": {code: "AccessDenied", do: func(out *api.CreateBuildOutput) error {
			return put(uploadClient(srv, out.UploadCredentials), *newBuild().StorageLocation.Key, goodArchive(t))
		}},
		"wrong secret": {code: "SignatureDoesNotMatch", do: func(out *api.CreateBuildOutput) error {
			c := out.UploadCredentials
			return put(s3Client(srv, *c.AccessKeyId, "not-the-secret", *c.SessionToken), *out.StorageLocation.Key, goodArchive(t))
		}},
		"wrong token": {code: "InvalidToken", do: func(out *api.CreateBuildOutput) error {
			c := out.UploadCredentials
			return put(s3Client(srv, *c.AccessKeyId, *c.SecretAccessKey, "HoistUploadforged"), *out.StorageLocation.Key, goodArchive(t))
		}},
		"no token": {code: "InvalidToken", do: func(out *api.CreateBuildOutput) error {
			c := out.UploadCredentials
			return put(s3Client(srv, *c.AccessKeyId, *c.SecretAccessKey, ""), *out.StorageLocation.Key, goodArchive(t))
		}},
		"bad archive": {code: "InvalidBuildArchive", do: func(out *api.CreateBuildOutput) error {
			return put(uploadClient(srv, out.UploadCredentials), *out.StorageLocation.Key, []byte("not a zip"))
		}},
		"second upload": {code: "AccessDenied", do: func(out *api.CreateBuildOutput) error {
			c := uploadClient(srv, out.UploadCredentials)
			if err := put(c, *out.StorageLocation.Key, goodArchive(t)); err != nil {
				return err
			}
			return put(c, *out.StorageLocation.Key, goodArchive(t))
		}},
		"too large": {code: "EntityTooLarge", do: func(out *api.CreateBuildOutput) error {
			return put(uploadClient(srv, out.UploadCredentials), *out.StorageLocation.Key, big)
		}},
		"bad checksum": {code: "BadDigest", do: func(out *api.CreateBuildOutput) error {
			return put(uploadClient(srv, out.UploadCredentials), *out.StorageLocation.Key, goodArchive(t), func(in *s3.PutObjectInput) {
				in.ChecksumCRC32 = aws.String("AAAAAA==")
			})
		}},
		"other bucket": {code: "NoSuchBucket", do: func(out *api.CreateBuildOutput) error {
			_, err := uploadClient(srv, out.UploadCredentials).PutObject(h.ctx, &s3.PutObjectInput{
				Bucket: aws.String("someone-elses"), Key: out.StorageLocation.Key, Body: bytes.NewReader(goodArchive(t))})
			return err
		}},
		"copy": {code: "NotImplemented", do: func(out *api.CreateBuildOutput) error {
			_, err := uploadClient(srv, out.UploadCredentials).CopyObject(h.ctx, &s3.CopyObjectInput{
				Bucket: out.StorageLocation.Bucket, Key: out.StorageLocation.Key, CopySource: aws.String(h.Bucket() + "/x")})
			return err
		}},
		"delete build key": {code: "AccessDenied", do: func(out *api.CreateBuildOutput) error {
			_, err := uploadClient(srv, out.UploadCredentials).DeleteObject(h.ctx, &s3.DeleteObjectInput{
				Bucket: out.StorageLocation.Bucket, Key: out.StorageLocation.Key})
			return err
		}},
		"deleted build": {code: "AccessDenied", do: func(out *api.CreateBuildOutput) error {
			if err := h.DeleteBuild(h.ctx, &api.DeleteBuildInput{BuildId: out.Build.BuildId}); err != nil {
				return err
			}
			return put(uploadClient(srv, out.UploadCredentials), *out.StorageLocation.Key, goodArchive(t))
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if code := s3Code(tc.do(newBuild())); code != tc.code {
				t.Errorf("got %q, want %q", code, tc.code)
			}
		})
	}
}

// TestS3LongEntryName: an entry name over the file system's limit is the
// archive's fault: the upload is answered InvalidBuildArchive with the
// reason, and the build is FAILED with it. Before the check the unpack
// failed creating the file, and the build was FAILED as Hoist's own error.
func TestS3LongEntryName(t *testing.T) {
	h := newHarness(t)
	srv := startHoist(t, h)
	out, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	if err != nil {
		t.Fatal(err)
	}
	archive := makeZip(t, zent{name: "game/" + strings.Repeat("n", 256), body: "x"})
	_, err = uploadClient(srv, out.UploadCredentials).PutObject(h.ctx, &s3.PutObjectInput{
		Bucket: out.StorageLocation.Bucket, Key: out.StorageLocation.Key, Body: bytes.NewReader(archive)})
	if code := s3Code(err); code != "InvalidBuildArchive" || !strings.Contains(err.Error(), "path element of 256 bytes") {
		t.Fatalf("PutObject = %v, want InvalidBuildArchive naming the long element", err)
	}
	r, err := h.get(h.ctx, *out.Build.BuildId)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != api.BuildStatusFailed || !strings.Contains(r.StatusReason, "path element") {
		t.Errorf("build is %s (%q), want FAILED for the long name", r.Status, r.StatusReason)
	}
}

func TestS3Expired(t *testing.T) {
	h := newHarness(t)
	srv := startHoist(t, h)
	out, _ := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	h.clock.Advance(DefaultCredentialsTTL)
	_, err := uploadClient(srv, out.UploadCredentials).PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: out.StorageLocation.Bucket, Key: out.StorageLocation.Key, Body: bytes.NewReader(goodArchive(t))})
	if code := s3Code(err); code != "ExpiredToken" {
		t.Fatalf("got %q", code)
	}
	// Back to the real time (the SDK signs with it) for fresh credentials.
	h.clock.Advance(-DefaultCredentialsTTL)
	re, err := h.RequestUploadCredentials(h.ctx, &api.RequestUploadCredentialsInput{BuildId: out.Build.BuildId})
	if err != nil {
		t.Fatal(err)
	}
	_, err = uploadClient(srv, re.UploadCredentials).PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: re.StorageLocation.Bucket, Key: re.StorageLocation.Key, Body: bytes.NewReader(goodArchive(t))})
	if err != nil {
		t.Fatalf("fresh credentials: %v", err)
	}
}

// TestS3ConcurrentUploads races uploads to one build's key: exactly one
// wins, the others are refused, and no bytes are left behind.
func TestS3ConcurrentUploads(t *testing.T) {
	h := newHarness(t)
	srv := startHoist(t, h)
	out, _ := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	c := uploadClient(srv, out.UploadCredentials)
	const n = 6
	codes := make(chan string, n)
	for range n {
		go func() {
			_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: out.StorageLocation.Bucket,
				Key: out.StorageLocation.Key, Body: bytes.NewReader(goodArchive(t))})
			codes <- s3Code(err)
		}()
	}
	got := map[string]int{}
	for range n {
		got[<-codes]++
	}
	if got[""] != 1 || got["AccessDenied"] != n-1 {
		t.Fatalf("outcomes %v, want one success and %d AccessDenied", got, n-1)
	}
	h.Close()
	if st := h.status(t, *out.Build.BuildId); st != api.BuildStatusReady {
		t.Fatalf("status %s", st)
	}
	if names, _ := h.blobs.list(); len(names) != 0 {
		t.Errorf("blobs left: %v", names)
	}
}

// TestS3NoOperators: without Config.Operators only upload credentials are
// accepted; the package holds no API secrets of its own to fall back on.
func TestS3NoOperators(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Operators = nil })
	srv := startHoist(t, h)
	_, err := s3Client(srv, "AKIAOPERATOR", "operator-secret", "").PutObject(h.ctx, &s3.PutObjectInput{
		Bucket: aws.String(h.Bucket()), Key: aws.String("games/x.zip"), Body: strings.NewReader("x")})
	if code := s3Code(err); code != "InvalidAccessKeyId" {
		t.Errorf("operator request without Operators: %v, want InvalidAccessKeyId", err)
	}
}
