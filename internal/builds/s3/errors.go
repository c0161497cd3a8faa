package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
)

// Namespace is the XML namespace of S3's documents.
const Namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

// Error is an S3 error answered to the client.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error.
func Errorf(status int, code, format string, a ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, a...)}
}

// ErrNoSuchKey: no object at key.
func ErrNoSuchKey(key string) *Error {
	return Errorf(http.StatusNotFound, "NoSuchKey", "The specified key does not exist: %s", key)
}

// ErrNoSuchUpload: no such multipart upload.
func ErrNoSuchUpload() *Error {
	return Errorf(http.StatusNotFound, "NoSuchUpload", "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
}

// ErrAccessDenied: 403 AccessDenied.
func ErrAccessDenied(format string, a ...any) *Error {
	return Errorf(http.StatusForbidden, "AccessDenied", format, a...)
}

// ErrInvalidArgument: 400 InvalidArgument.
func ErrInvalidArgument(format string, a ...any) *Error {
	return Errorf(http.StatusBadRequest, "InvalidArgument", format, a...)
}

// ErrTooLarge: an upload over limit bytes.
func ErrTooLarge(limit int64) *Error {
	return Errorf(http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size of %d bytes for a build archive.", limit)
}

// ErrNotImplemented: a request Hoist does not serve.
func ErrNotImplemented(what string) *Error {
	return Errorf(http.StatusNotImplemented, "NotImplemented", "Hoist's S3 endpoint serves only build uploads; %s is not implemented.", what)
}

// errorBody is S3's XML error document.
type errorBody struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string
	Message   string
	Resource  string `xml:",omitempty"`
	RequestID string `xml:"RequestId"`
}

// WriteError answers err: an *Error as itself, anything else as a 500
// InternalError whose cause is logged, not shown.
func WriteError(w http.ResponseWriter, r *http.Request, reqID string, err error, log *slog.Logger) {
	var se *Error
	if !errors.As(err, &se) {
		log.Error("S3 request failed", "method", r.Method, "path", r.URL.Path, "request_id", reqID, "err", err)
		se = Errorf(http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	} else {
		log.Debug("S3 request refused", "method", r.Method, "path", r.URL.Path, "request_id", reqID, "code", se.Code, "message", se.Message)
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(se.Status)
		return
	}
	WriteXML(w, se.Status, errorBody{Code: se.Code, Message: se.Message, Resource: r.URL.Path, RequestID: reqID})
}

// WriteXML answers v as an XML document with status.
func WriteXML(w http.ResponseWriter, status int, v any) {
	body, err := xml.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte("<Error><Code>InternalError</Code></Error>")
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}

// InitiateResult answers CreateMultipartUpload.
type InitiateResult struct {
	XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Bucket   string
	Key      string
	UploadID string `xml:"UploadId"`
}

// CompleteRequest is CompleteMultipartUpload's body.
type CompleteRequest struct {
	XMLName xml.Name       `xml:"CompleteMultipartUpload"`
	Parts   []CompletePart `xml:"Part"`
}

type CompletePart struct {
	PartNumber        int
	ETag              string
	ChecksumCRC32     string `xml:",omitempty"`
	ChecksumCRC32C    string `xml:",omitempty"`
	ChecksumCRC64NVME string `xml:",omitempty"`
	ChecksumSHA1      string `xml:",omitempty"`
	ChecksumSHA256    string `xml:",omitempty"`
}

// CompleteResult answers CompleteMultipartUpload.
type CompleteResult struct {
	XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Location string
	Bucket   string
	Key      string
	ETag     string
}
