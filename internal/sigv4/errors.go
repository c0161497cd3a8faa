package sigv4

import (
	"fmt"
	"net/http"
)

// Flavour selects the canonical request rules and the error codes of a
// verification.
type Flavour int

const (
	// API is the general AWS flavour every service but S3 uses: the
	// path normalised and encoded twice, the payload hash computed from
	// the body, the error codes of the AWS JSON and CBOR protocols.
	API Flavour = iota
	// S3 is S3's flavour: the path as sent, the payload hash from
	// x-amz-content-sha256, S3's error codes.
	S3
)

func (f Flavour) String() string {
	if f == S3 {
		return "S3"
	}
	return "API"
}

// Kind classifies an Error independently of the flavour's error codes.
type Kind int

const (
	// KindMissing: the request carries no Authorization header.
	KindMissing Kind = iota + 1
	// KindMalformed: the Authorization header or X-Amz-Date is missing a
	// part or malformed.
	KindMalformed
	// KindScope: the credential scope names another service, or a date
	// other than X-Amz-Date's.
	KindScope
	// KindUnknownKey: the access key ID is not known.
	KindUnknownKey
	// KindSignature: the signature does not match the request.
	KindSignature
	// KindExpired: X-Amz-Date is more than MaxSkew away from the clock.
	KindExpired
)

// Error is a refused signature. It has the method set of api.Error, so the
// protocol handler answers it with its code, message and status. Its
// message never holds a secret or a signature.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Status  int
}

func (e *Error) Error() string        { return e.Code + ": " + e.Message }
func (e *Error) ErrorCode() string    { return e.Code }
func (e *Error) ErrorMessage() string { return e.Message }
func (e *Error) HTTPStatus() int      { return e.Status }

// Error codes of the API flavour (AWS JSON 1.1 and RPC v2 CBOR services).
const (
	CodeMissingAuthenticationToken = "MissingAuthenticationTokenException"
	CodeIncompleteSignature        = "IncompleteSignatureException"
	CodeUnrecognizedClient         = "UnrecognizedClientException"
	CodeInvalidSignature           = "InvalidSignatureException"
)

// Error codes of the S3 flavour.
const (
	CodeAccessDenied                 = "AccessDenied"
	CodeAuthorizationHeaderMalformed = "AuthorizationHeaderMalformed"
	CodeInvalidAccessKeyID           = "InvalidAccessKeyId"
	CodeSignatureDoesNotMatch        = "SignatureDoesNotMatch"
	CodeRequestTimeTooSkewed         = "RequestTimeTooSkewed"
)

// Fixed messages.
const (
	msgMissingToken    = "Missing Authentication Token"
	msgUnrecognized    = "The security token included in the request is invalid."
	msgSignature       = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	msgS3Missing       = "Requests must be signed with SigV4 in the Authorization header; anonymous requests and presigned URLs are not accepted."
	msgS3UnknownKey    = "The AWS Access Key Id you provided does not exist in our records."
	msgS3Signature     = "The request signature we calculated does not match the signature you provided. Check your key and signing method."
	msgS3Skewed        = "The difference between the request time and the server's time is too large."
	msgPayloadMismatch = "The provided 'x-amz-content-sha256' header does not match what was computed."
)

// newError returns the error of kind k in flavour f. An empty msg takes
// the flavour's fixed message for the kind.
func newError(f Flavour, k Kind, msg string) *Error {
	e := &Error{Kind: k, Message: msg}
	switch f {
	case S3:
		switch k {
		case KindMissing:
			e.Code, e.Status, e.Message = CodeAccessDenied, http.StatusForbidden, or(msg, msgS3Missing)
		case KindMalformed, KindScope:
			e.Code, e.Status = CodeAuthorizationHeaderMalformed, http.StatusBadRequest
		case KindUnknownKey:
			e.Code, e.Status, e.Message = CodeInvalidAccessKeyID, http.StatusForbidden, or(msg, msgS3UnknownKey)
		case KindSignature:
			e.Code, e.Status, e.Message = CodeSignatureDoesNotMatch, http.StatusForbidden, or(msg, msgS3Signature)
		case KindExpired:
			// S3 says only that the difference is too large.
			e.Code, e.Status, e.Message = CodeRequestTimeTooSkewed, http.StatusForbidden, msgS3Skewed
		}
	default:
		switch k {
		case KindMissing:
			e.Code, e.Status, e.Message = CodeMissingAuthenticationToken, http.StatusForbidden, or(msg, msgMissingToken)
		case KindMalformed:
			e.Code, e.Status = CodeIncompleteSignature, http.StatusBadRequest
		case KindUnknownKey:
			e.Code, e.Status, e.Message = CodeUnrecognizedClient, http.StatusBadRequest, or(msg, msgUnrecognized)
		case KindScope, KindSignature, KindExpired:
			e.Code, e.Status, e.Message = CodeInvalidSignature, http.StatusForbidden, or(msg, msgSignature)
		}
	}
	return e
}

func errorf(f Flavour, k Kind, format string, a ...any) *Error {
	return newError(f, k, fmt.Sprintf(format, a...))
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// clip shortens an untrusted value quoted in a message.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
