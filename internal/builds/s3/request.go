package s3

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Operation is an S3 operation.
type Operation string

// The operations Hoist serves (and CopyObject, which it names to refuse).
const (
	PutObject               Operation = "PutObject"
	UploadPart              Operation = "UploadPart"
	CreateMultipartUpload   Operation = "CreateMultipartUpload"
	CompleteMultipartUpload Operation = "CompleteMultipartUpload"
	AbortMultipartUpload    Operation = "AbortMultipartUpload"
	DeleteObject            Operation = "DeleteObject"
	HeadObject              Operation = "HeadObject"
	CopyObject              Operation = "CopyObject"
)

// Classify returns the operation r asks for, and false for a request
// Hoist does not serve (then the name describes it, for the error).
func Classify(r *http.Request) (Operation, bool) {
	q := r.URL.Query()
	_, uploads := q["uploads"]
	uploadID := q.Has("uploadId")
	switch {
	case r.Method == http.MethodPut && r.Header.Get("x-amz-copy-source") != "":
		return CopyObject, false
	case r.Method == http.MethodPut && uploadID && q.Has("partNumber"):
		return UploadPart, true
	case r.Method == http.MethodPut && len(q) == 0 || r.Method == http.MethodPut && onlyXID(q):
		return PutObject, true
	case r.Method == http.MethodPost && uploads:
		return CreateMultipartUpload, true
	case r.Method == http.MethodPost && uploadID:
		return CompleteMultipartUpload, true
	case r.Method == http.MethodDelete && uploadID:
		return AbortMultipartUpload, true
	case r.Method == http.MethodDelete && (len(q) == 0 || onlyXID(q)):
		return DeleteObject, true
	case r.Method == http.MethodHead && (len(q) == 0 || onlyXID(q)):
		return HeadObject, true
	}
	return Operation(r.Method + " " + r.URL.RawQuery), false
}

// onlyXID reports whether the query holds only the x-id parameter the Go
// SDK adds to name the operation.
func onlyXID(q map[string][]string) bool {
	_, ok := q["x-id"]
	return ok && len(q) == 1
}

// ObjectKey returns the key a path-style request to bucket names.
func ObjectKey(r *http.Request, bucket string) (string, error) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/"+bucket)
	if !ok || rest != "" && rest[0] != '/' {
		return "", Errorf(http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist; Hoist's build bucket is %s.", bucket)
	}
	key := strings.TrimPrefix(rest, "/")
	if key == "" {
		return "", ErrNotImplemented("a bucket-level request")
	}
	if len(key) > 1024 {
		return "", Errorf(http.StatusBadRequest, "KeyTooLongError", "Your key is too long.")
	}
	return key, nil
}

// AccessKeyID returns the access key ID of a request signed in its
// Authorization header ("" when there is none).
func AccessKeyID(r *http.Request) string {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	akid, _, _ := strings.Cut(cred, "/")
	return strings.TrimSpace(akid)
}

// NewRequestID returns a fresh x-amz-request-id.
func NewRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// Limits on reading a refused request's body before answering.
const (
	maxRefusedDrain  = 64 << 20
	refusedDrainWait = 10 * time.Second
)

// DrainRefused reads (and drops) what is left of a refused request's body,
// at most 64 MiB within 10 s, before the answer is written: a client that
// sends its body without waiting for 100 Continue (aws-sdk-go-v2) would
// otherwise have the connection closed under the body it is still
// writing, and see a reset instead of the S3 error. (net/http itself
// drains only 256 KiB.) A client that waits for 100 Continue is asked for
// the body: a refused part costs its upload, which is what S3 clients
// expect of an early error anyway.
func DrainRefused(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(refusedDrainWait))
	_, _ = io.CopyN(io.Discard, r.Body, maxRefusedDrain)
	_ = rc.SetReadDeadline(time.Time{})
}

// CheckLength compares the bytes read with the limit and the declared
// length (-1: none).
func CheckLength(n, max, declared int64) error {
	switch {
	case n > max:
		return ErrTooLarge(max)
	case declared >= 0 && n != declared:
		return Errorf(http.StatusBadRequest, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header.")
	}
	return nil
}

// IsSHA256Hex reports whether s is a hex SHA-256 digest.
func IsSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	return strings.IndexFunc(s, func(c rune) bool {
		return !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F')
	}) < 0
}

// maxCompleteBodySize bounds CompleteMultipartUpload's body.
const maxCompleteBodySize = 4 << 20

// ReadCompleteRequest reads and checks CompleteMultipartUpload's body,
// whose payload hash the signature covers is payloadHash.
func ReadCompleteRequest(r *http.Request, payloadHash string) (*CompleteRequest, error) {
	body, err := NewPayloadReader(r, payloadHash)
	if err != nil {
		return nil, err
	}
	d, err := NewDigester(r.Header, IsSHA256Hex(payloadHash), r.Header.Get("x-amz-trailer"))
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.TeeReader(io.LimitReader(body, maxCompleteBodySize+1), d))
	if err != nil {
		return nil, err
	}
	if len(b) > maxCompleteBodySize {
		return nil, Errorf(http.StatusBadRequest, "MalformedXML", "The CompleteMultipartUpload body is too large.")
	}
	// Checksum headers on Complete describe the whole object, not the body.
	h := r.Header.Clone()
	for name := range h {
		if strings.HasPrefix(strings.ToLower(name), checksumHeaderPrefix) {
			h.Del(name)
		}
	}
	d.expected = map[string]string{}
	if err := d.Verify(payloadHash, h, nil); err != nil {
		return nil, err
	}
	var req CompleteRequest
	if err := xml.Unmarshal(b, &req); err != nil {
		return nil, Errorf(http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
	}
	if len(req.Parts) == 0 {
		return nil, Errorf(http.StatusBadRequest, "MalformedXML", "CompleteMultipartUpload lists no parts.")
	}
	return &req, nil
}

// SameETag compares ETags with or without their quotes.
func SameETag(a, b string) bool { return strings.Trim(a, `"`) == strings.Trim(b, `"`) }

// MultipartETag is S3's ETag of a multipart object: the MD5 of the parts'
// MD5s (their ETags, in order), a dash and the part count.
func MultipartETag(partETags []string) string {
	h := md5.New()
	for _, e := range partETags {
		b, _ := hex.DecodeString(strings.Trim(e, `"`))
		h.Write(b)
	}
	return fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(h.Sum(nil)), len(partETags))
}
