package builds

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// S3Handler serves the S3 subset build uploads need, path-style, for
// requests under "/" + Bucket() + "/": PutObject, CreateMultipartUpload,
// UploadPart, CompleteMultipartUpload, AbortMultipartUpload, HeadObject
// and DeleteObject. Requests are verified with SigV4 (service s3) against
// the upload credentials Hoist issued (which may write only their build's
// key) or Hoist's API credentials (any key).
func (s *Service) S3Handler() http.Handler { return http.HandlerFunc(s.serveS3) }

func (s *Service) serveS3(w http.ResponseWriter, r *http.Request) {
	reqID := newRequestID()
	w.Header().Set("x-amz-request-id", reqID)
	w.Header().Set("Server", "Hoist")
	if err := s.dispatchS3(w, r); err != nil {
		drainRefused(w, r)
		s.writeS3Error(w, r, reqID, err)
	}
}

// Limits on reading a refused request's body before answering.
const (
	maxRefusedDrain  = 64 << 20
	refusedDrainWait = 10 * time.Second
)

// drainRefused reads (and drops) what is left of a refused request's body,
// at most maxRefusedDrain bytes within refusedDrainWait, before the answer
// is written: a client that sends its body without waiting for 100
// Continue (aws-sdk-go-v2) would otherwise have the connection closed under
// the body it is still writing, and see a reset instead of the S3 error.
// (net/http itself drains only 256 KiB.) A client that waits for 100
// Continue is asked for the body: a refused part costs its upload, which
// is what S3 clients expect of an early error anyway.
func drainRefused(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(refusedDrainWait))
	_, _ = io.CopyN(io.Discard, r.Body, maxRefusedDrain)
	_ = rc.SetReadDeadline(time.Time{})
}

// s3Handler serves one S3 operation on key.
type s3Handler func(s *Service, w http.ResponseWriter, r *http.Request, a *authResult, key string) error

// s3Operation picks the operation a request asks for.
func s3Operation(r *http.Request) (string, s3Handler) {
	q := r.URL.Query()
	_, uploads := q["uploads"]
	uploadID := q.Has("uploadId")
	switch {
	case r.Method == http.MethodPut && r.Header.Get("x-amz-copy-source") != "":
		return "CopyObject", nil
	case r.Method == http.MethodPut && uploadID && q.Has("partNumber"):
		return "UploadPart", (*Service).uploadPart
	case r.Method == http.MethodPut && len(q) == 0 || r.Method == http.MethodPut && onlyXID(q):
		return "PutObject", (*Service).putObject
	case r.Method == http.MethodPost && uploads:
		return "CreateMultipartUpload", (*Service).createMultipart
	case r.Method == http.MethodPost && uploadID:
		return "CompleteMultipartUpload", (*Service).completeMultipart
	case r.Method == http.MethodDelete && uploadID:
		return "AbortMultipartUpload", (*Service).abortMultipart
	case r.Method == http.MethodDelete && (len(q) == 0 || onlyXID(q)):
		return "DeleteObject", (*Service).deleteObject
	case r.Method == http.MethodHead && (len(q) == 0 || onlyXID(q)):
		return "HeadObject", (*Service).headObject
	}
	return r.Method + " " + r.URL.RawQuery, nil
}

// onlyXID reports whether the query holds only the x-id parameter the Go
// SDK adds to name the operation.
func onlyXID(q map[string][]string) bool {
	_, ok := q["x-id"]
	return ok && len(q) == 1
}

func (s *Service) dispatchS3(w http.ResponseWriter, r *http.Request) error {
	key, err := s.objectKey(r)
	if err != nil {
		return err
	}
	name, op := s3Operation(r)
	if op == nil {
		return errNotImplemented(name)
	}
	a, err := s.authenticate(r)
	if err != nil {
		return err
	}
	return op(s, w, r, a, key)
}

// objectKey returns the key a path-style request names.
func (s *Service) objectKey(r *http.Request) (string, error) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/"+s.bucket)
	if !ok || rest != "" && rest[0] != '/' {
		return "", s3Errorf(http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist; Hoist's build bucket is %s.", s.bucket)
	}
	key := strings.TrimPrefix(rest, "/")
	if key == "" {
		return "", errNotImplemented("a bucket-level request")
	}
	if len(key) > 1024 {
		return "", s3Errorf(http.StatusBadRequest, "KeyTooLongError", "Your key is too long.")
	}
	return key, nil
}

// target is what an upload to a key writes: a build's archive, or a plain
// object.
type target struct {
	key   string
	build *Record // nil for a plain object
}

// uploadTarget checks that a may upload to key now, before any body is
// read: upload credentials only to their build's key, and a build's key
// only while the build waits for its archive.
func (s *Service) uploadTarget(ctx context.Context, a *authResult, key string) (target, error) {
	if a.cred != nil && key != a.cred.StorageKey {
		return target{}, errAccessDenied("These upload credentials may only write %s.", a.cred.StorageKey)
	}
	buildID, isBuildKey := buildIDOfKey(key)
	if !isBuildKey {
		if strings.HasPrefix(key, "builds/") {
			return target{}, errAccessDenied("Keys under builds/ are reserved for build archives (builds/<build ID>.zip).")
		}
		return target{key: key}, nil
	}
	r, err := s.get(ctx, buildID)
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return target{}, errAccessDenied("Build %s does not exist.", buildID)
	}
	if err != nil {
		return target{}, err
	}
	if err := checkAwaiting(r); err != nil {
		return target{}, err
	}
	return target{key: key, build: r}, nil
}

// checkAwaiting refuses an upload to a build that already has its archive.
func checkAwaiting(r *Record) error {
	if r.Status != api.BuildStatusInitialized || !r.Received.IsZero() {
		return errAccessDenied("Build %s already received its archive (status %s); create a new build to upload another.", *r.BuildId, r.Status)
	}
	return nil
}

// buildIDOfKey returns the build whose storage key key is.
func buildIDOfKey(key string) (string, bool) {
	id, ok := strings.CutPrefix(key, "builds/")
	if !ok {
		return "", false
	}
	id, ok = strings.CutSuffix(id, ".zip")
	if !ok || !strings.HasPrefix(id, "build-") || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// storeUpload records a completed upload of blob as t: the build's archive (and
// the build then waits for unpacking), or the plain object (replacing an
// older one). On error the blob is removed.
func (s *Service) storeUpload(ctx context.Context, t target, blob string, size int64, etag string, sums map[string]string) error {
	var old string
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if t.build != nil {
			return receiveArchive(ctx, tx, *t.build.BuildId, blob, s.now())
		}
		var prev objectRecord
		if _, err := store.GetJSON(ctx, tx, KindUploadObject, t.key, &prev); err == nil {
			old = prev.Blob
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		o := objectRecord{Key: t.key, Blob: blob, Host: s.cfg.ReplicaID, Size: size, ETag: etag, Modified: s.now(), Checksums: sums}
		return store.PutJSON(ctx, tx, store.Record{Kind: KindUploadObject, ID: t.key}, o)
	})
	if err != nil {
		s.blobs.remove(blob)
		return err
	}
	s.blobs.remove(old)
	return nil
}

// receiveArchive records that a build's archive arrived as blob.
func receiveArchive(ctx context.Context, tx store.Tx, buildID, blob string, now time.Time) error {
	r, err := Get(ctx, tx, buildID)
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return errAccessDenied("Build %s was deleted.", buildID)
	}
	if err != nil {
		return err
	}
	if err := checkAwaiting(r); err != nil {
		return err
	}
	r.Received, r.Archive = now, blob
	return putBuild(ctx, tx, r)
}

// awaitUnpack starts unpacking a build's archive and waits for the outcome
// up to ProcessWait. A refused archive is answered as an error that names
// the reason, so that the uploader (the CLI's upload-build) shows it.
func (s *Service) awaitUnpack(ctx context.Context, buildID string) error {
	done := s.startUnpack(buildID)
	t := time.NewTimer(s.cfg.ProcessWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		return nil
	case <-ctx.Done():
		return nil
	}
	r, err := s.get(ctx, buildID)
	if err != nil || r.Status != api.BuildStatusFailed {
		return nil
	}
	return s3Errorf(http.StatusBadRequest, "InvalidBuildArchive", "Hoist received the archive but refused it, and build %s is FAILED: %s", buildID, r.StatusReason)
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}
