package sdkconn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Request is a decoded frame from a server process: its Action, RequestId
// and the other top-level fields, undecoded until a handler asks for them.
type Request struct {
	Action    string
	RequestID string
	fields    map[string]json.RawMessage
}

// DecodeError is a frame DecodeMessage refused. RequestID is set when the
// frame was a JSON object with a string RequestId, so that the process can
// still be answered.
type DecodeError struct {
	RequestID string
	Action    string
	Reason    string
}

func (e *DecodeError) Error() string { return e.Reason }

// maxIDLength bounds the Action and RequestId echoed back (SDKs send short
// names and UUIDs).
const maxIDLength = 256

// DecodeMessage decodes one text frame. It never panics: anything that is
// not a JSON object with a string Action is a *DecodeError.
func DecodeMessage(data []byte) (*Request, error) {
	if !utf8.Valid(data) {
		return nil, &DecodeError{Reason: "frame is not valid UTF-8"}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return nil, &DecodeError{Reason: "frame is not a JSON object"}
	}
	r := &Request{fields: fields}
	var err error
	if r.RequestID, err = r.String("RequestId"); err != nil {
		return nil, &DecodeError{Reason: err.Error()}
	}
	if len(r.RequestID) > maxIDLength {
		return nil, &DecodeError{Reason: "RequestId is too long"}
	}
	if r.Action, err = r.String("Action"); err != nil || r.Action == "" {
		return nil, &DecodeError{RequestID: r.RequestID, Reason: "Action must be a non-empty string"}
	}
	if len(r.Action) > maxIDLength {
		return nil, &DecodeError{RequestID: r.RequestID, Reason: "Action is too long"}
	}
	return r, nil
}

// fieldError is a request field of the wrong JSON type (answered 400).
func fieldError(name, want string) error {
	return fmt.Errorf("field %s must be %s", name, want)
}

// raw returns a field, or nil when it is absent or null.
func (r *Request) raw(name string) json.RawMessage {
	v := r.fields[name]
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil
	}
	return v
}

// String returns a string field ("" when absent or null).
func (r *Request) String(name string) (string, error) {
	var s string
	if v := r.raw(name); v != nil && json.Unmarshal(v, &s) != nil {
		return "", fieldError(name, "a string")
	}
	return s, nil
}

// Bool returns a boolean field (false when absent or null).
func (r *Request) Bool(name string) (bool, error) {
	var b bool
	if v := r.raw(name); v != nil && json.Unmarshal(v, &b) != nil {
		return false, fieldError(name, "a boolean")
	}
	return b, nil
}

// Int32 returns an integer field (0 when absent or null).
func (r *Request) Int32(name string) (int32, error) {
	var n int32
	if v := r.raw(name); v != nil && json.Unmarshal(v, &n) != nil {
		return 0, fieldError(name, "a 32-bit integer")
	}
	return n, nil
}

// Strings returns a string array field (nil when absent or null).
func (r *Request) Strings(name string) ([]string, error) {
	var s []string
	if v := r.raw(name); v != nil && json.Unmarshal(v, &s) != nil {
		return nil, fieldError(name, "an array of strings")
	}
	return s, nil
}

// Reply is what the service answers to a request.
type Reply struct {
	Action, RequestID string
	// Status is 200 on success; Message is the ErrorMessage otherwise.
	Status  int
	Message string
	// Fields are the result fields, merged at the top level.
	Fields map[string]any
}

// Encode renders the reply as a JSON text frame. The envelope keys always
// win over result fields of the same name.
func (rp *Reply) Encode() ([]byte, error) {
	m := make(map[string]any, len(rp.Fields)+4)
	for k, v := range rp.Fields {
		m[k] = v
	}
	m["Action"] = rp.Action
	m["RequestId"] = rp.RequestID
	m["StatusCode"] = rp.Status
	if rp.Status != 200 {
		m["ErrorMessage"] = rp.Message
	} else {
		delete(m, "ErrorMessage")
	}
	return json.Marshal(m)
}
