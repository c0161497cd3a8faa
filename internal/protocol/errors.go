package protocol

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/hoistgg/hoist/internal/api"
)

// Error codes of the protocol layer itself. They are not modeled by GameLift,
// so the SDKs report them as generic API errors carrying the code.
const (
	// CodeSerialization: the body could not be read or decoded, or a header
	// the protocol forbids was present.
	CodeSerialization = "SerializationException"
	// CodeUnknownOperation: the request names no GameLift operation Hoist
	// knows (HTTP 400), or its path is not one of the API routes (HTTP 404).
	CodeUnknownOperation = "UnknownOperationException"
	// CodeMethodNotAllowed: the API routes accept POST only.
	CodeMethodNotAllowed = "MethodNotAllowedException"
	// CodeUnsupportedMediaType: the Content-Type (or smithy-protocol) header
	// names another format.
	CodeUnsupportedMediaType = "UnsupportedMediaTypeException"
	// CodeRequestTooLarge: the body is larger than Options.MaxBodyBytes.
	CodeRequestTooLarge = "RequestEntityTooLargeException"
)

// protocolError is an error of the wire protocol rather than of an
// operation. It implements api.Error.
type protocolError struct {
	code   string
	status int
	msg    string
}

func (e *protocolError) Error() string        { return e.code + ": " + e.msg }
func (e *protocolError) ErrorCode() string    { return e.code }
func (e *protocolError) ErrorMessage() string { return e.msg }
func (e *protocolError) HTTPStatus() int      { return e.status }

func newError(code string, status int, format string, a ...any) *protocolError {
	msg := format
	if len(a) > 0 {
		msg = fmt.Sprintf(format, a...)
	}
	return &protocolError{code: code, status: status, msg: msg}
}

func errSerialization(format string, a ...any) *protocolError {
	return newError(CodeSerialization, http.StatusBadRequest, format, a...)
}

// internalError is what a client sees instead of an error Hoist does not
// model: no detail beyond the request ID to quote in a bug report.
func internalError(requestID string) api.Error {
	return &api.InternalServiceException{
		Message: "Hoist could not complete the request because of an internal error (request ID " + requestID + ")",
	}
}

// asAPIError finds the api.Error in err's chain. ok is false when there is
// none, or when the one found reports a status that is not an error status.
func asAPIError(err error) (ae api.Error, ok bool) {
	if !errors.As(err, &ae) {
		return nil, false
	}
	if s := ae.HTTPStatus(); s < 400 || s > 599 {
		return nil, false
	}
	return ae, true
}
