package builds

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
)

const s3Namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

// s3Error is an S3 error answered to the client.
type s3Error struct {
	Status  int
	Code    string
	Message string
}

func (e *s3Error) Error() string { return e.Code + ": " + e.Message }

func s3Errorf(status int, code, format string, a ...any) *s3Error {
	return &s3Error{Status: status, Code: code, Message: fmt.Sprintf(format, a...)}
}

func errNoSuchKey(key string) *s3Error {
	return s3Errorf(http.StatusNotFound, "NoSuchKey", "The specified key does not exist: %s", key)
}

func errNoSuchUpload() *s3Error {
	return s3Errorf(http.StatusNotFound, "NoSuchUpload", "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
}

func errAccessDenied(format string, a ...any) *s3Error {
	return s3Errorf(http.StatusForbidden, "AccessDenied", format, a...)
}

func errInvalidArgument(format string, a ...any) *s3Error {
	return s3Errorf(http.StatusBadRequest, "InvalidArgument", format, a...)
}

func errTooLarge(limit int64) *s3Error {
	return s3Errorf(http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size of %d bytes for a build archive.", limit)
}

func errNotImplemented(what string) *s3Error {
	return s3Errorf(http.StatusNotImplemented, "NotImplemented", "Hoist's S3 endpoint serves only build uploads; %s is not implemented.", what)
}

// errorBody is S3's XML error document.
type errorBody struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string
	Message   string
	Resource  string `xml:",omitempty"`
	RequestID string `xml:"RequestId"`
}

// writeS3Error answers err: an *s3Error as itself, anything else as a 500
// InternalError whose cause is logged, not shown.
func (s *Service) writeS3Error(w http.ResponseWriter, r *http.Request, reqID string, err error) {
	var se *s3Error
	if !errors.As(err, &se) {
		s.log.Error("S3 request failed", "method", r.Method, "path", r.URL.Path, "request_id", reqID, "err", err)
		se = s3Errorf(http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	} else {
		s.log.Debug("S3 request refused", "method", r.Method, "path", r.URL.Path, "request_id", reqID, "code", se.Code, "message", se.Message)
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(se.Status)
		return
	}
	writeXML(w, se.Status, errorBody{Code: se.Code, Message: se.Message, Resource: r.URL.Path, RequestID: reqID})
}

func writeXML(w http.ResponseWriter, status int, v any) {
	body, err := xml.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte("<Error><Code>InternalError</Code></Error>")
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}

// initiateResult answers CreateMultipartUpload.
type initiateResult struct {
	XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Bucket   string
	Key      string
	UploadID string `xml:"UploadId"`
}

// completeRequest is CompleteMultipartUpload's body.
type completeRequest struct {
	XMLName xml.Name       `xml:"CompleteMultipartUpload"`
	Parts   []completePart `xml:"Part"`
}

type completePart struct {
	PartNumber        int
	ETag              string
	ChecksumCRC32     string `xml:",omitempty"`
	ChecksumCRC32C    string `xml:",omitempty"`
	ChecksumCRC64NVME string `xml:",omitempty"`
	ChecksumSHA1      string `xml:",omitempty"`
	ChecksumSHA256    string `xml:",omitempty"`
}

// completeResult answers CompleteMultipartUpload.
type completeResult struct {
	XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Location string
	Bucket   string
	Key      string
	ETag     string
}
