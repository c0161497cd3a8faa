package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/hoistgg/hoist/internal/api"
)

// AWS JSON 1.1.
const (
	jsonContentType = "application/x-amz-json-1.1"
	// targetPrefix is the service part of X-Amz-Target.
	targetPrefix = "GameLift."
)

var jsonContentTypeValue = []string{jsonContentType}

// jsonCodec is AWS JSON 1.1.
type jsonCodec struct{}

func (jsonCodec) name() string { return "awsJson1_1" }

// acceptsContentType reports whether a request Content-Type (already cut to
// its media type) names JSON.
func (jsonCodec) acceptsContentType(mt string) bool {
	return strings.EqualFold(mt, jsonContentType) || strings.EqualFold(mt, "application/json")
}

// decode reads a JSON object into in, a pointer to a shape. Unknown members are ignored, member
// names match case-insensitively (encoding/json), and anything after the
// object other than white space is an error.
func (jsonCodec) decode(body []byte, in any) error {
	body = bytes.TrimLeft(body, " \t\r\n")
	if len(body) == 0 {
		return nil
	}
	if body[0] != '{' {
		return errSerialization("the request body must be a JSON object")
	}
	if f, ok := in.(api.JSONFastDecoder); ok && f.DecodeJSONFast(body) {
		return nil
	}
	if err := json.Unmarshal(body, in); err != nil {
		return jsonDecodeError(err)
	}
	return nil
}

// jsonDecodeError turns an encoding/json error into a SerializationException
// whose message says what is wrong and where.
func jsonDecodeError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return errSerialization("malformed JSON at byte offset %d: %s", se.Offset, se.Error())
	case errors.As(err, &te):
		where := "the request body"
		if te.Field != "" {
			where = "member " + te.Field
		}
		detail := ""
		if strings.HasPrefix(te.Value, "number ") {
			detail = " (out of range or not a whole number)"
		}
		return errSerialization("%s: expected %s, got a JSON %s%s", where, wireTypeName(te.Type.String()), te.Value, detail)
	case errors.As(err, new(base64.CorruptInputError)):
		return errSerialization("a blob member is not valid base64: %s", err.Error())
	default:
		return errSerialization("could not decode the JSON request body: %s", err.Error())
	}
}

// encode writes out as JSON. Absent members are omitted (every member is
// omitzero); HTML characters are not escaped. Shapes encode themselves
// (api.JSONAppender, generated to write what encoding/json writes).
func (jsonCodec) encode(buf *bytes.Buffer, out any) error {
	if a, ok := out.(api.JSONAppender); ok {
		b, err := a.AppendJSON(buf.AvailableBuffer())
		if err != nil {
			return err
		}
		buf.Write(b)
		return nil
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// jsonError is the body of an AWS JSON 1.1 error response.
type jsonError struct {
	Type    string `json:"__type"`
	Message string `json:"message"`
}

func (c jsonCodec) encodeError(buf *bytes.Buffer, code, msg string) error {
	return c.encode(buf, jsonError{Type: code, Message: msg})
}

func (jsonCodec) setHeaders(h http.Header, hasBody bool, errorCode string) {
	h["Content-Type"] = jsonContentTypeValue
	if errorCode != "" {
		h["X-Amzn-Errortype"] = []string{errorCode} // x-amzn-ErrorType, canonical form
	}
}

// jsonOperation returns the operation an X-Amz-Target header names.
func jsonOperation(r *http.Request) (string, error) {
	target := r.Header.Get("X-Amz-Target")
	if target == "" {
		return "", newError(CodeUnknownOperation, http.StatusBadRequest,
			"the X-Amz-Target header is missing: AWS JSON 1.1 requests name the operation as X-Amz-Target: GameLift.<Operation>")
	}
	op, ok := strings.CutPrefix(target, targetPrefix)
	if !ok {
		return "", newError(CodeUnknownOperation, http.StatusBadRequest,
			"X-Amz-Target %q does not name a GameLift operation (want GameLift.<Operation>)", clip(target))
	}
	return op, nil
}

// wireTypeName names a Go type of the api package the way the service model
// does (integer, string, list, ...), for error messages.
func wireTypeName(goType string) string {
	t := strings.TrimPrefix(goType, "*")
	switch t {
	case "int8", "int16", "int32":
		return "an integer"
	case "int", "int64":
		return "a long integer"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	case "[]uint8":
		return "a blob"
	case "api.Timestamp":
		return "a timestamp"
	}
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a map"
	case strings.HasPrefix(t, "api."):
		return "a " + strings.TrimPrefix(t, "api.")
	}
	return "a " + t
}

// clip shortens a client-supplied value repeated in an error message.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
