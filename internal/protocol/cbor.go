package protocol

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/fxamacker/cbor/v2"

	"github.com/hoistgg/hoist/internal/api"
)

// Smithy RPC v2 CBOR.
const (
	cborContentType     = "application/cbor"
	smithyProtocol      = "rpc-v2-cbor"
	smithyProtocolKey   = "smithy-protocol"
	cborPathPrefix      = "/service/"
	cborServiceName     = "GameLift"
	cborServiceAbsolute = "com.amazonaws.gamelift.GameLift"
	// cborErrorNamespace prefixes __type: errors carry absolute shape IDs.
	cborErrorNamespace = "com.amazonaws.gamelift#"
)

var (
	cborContentTypeValue = []string{cborContentType}
	smithyProtocolValue  = []string{smithyProtocol}
)

// Limits of the CBOR decoder. GameLift inputs nest a few levels deep and their
// longest lists hold a few hundred items; the body size bounds the rest.
const (
	cborMaxNesting  = 32
	cborMaxArray    = 10000
	cborMaxMapPairs = 10000
)

var (
	cborDec cbor.DecMode
	cborEnc cbor.EncMode
)

func init() {
	var err error
	cborDec, err = cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:   cborMaxNesting,
		MaxArrayElements:  cborMaxArray,
		MaxMapPairs:       cborMaxMapPairs,
		IndefLength:       cbor.IndefLengthAllowed,
		TagsMd:            cbor.TagsAllowed,
		UTF8:              cbor.UTF8RejectInvalid,
		FieldNameMatching: cbor.FieldNameMatchingCaseSensitive,
		// NaN and the infinities are valid CBOR but no valid GameLift
		// input: AWS JSON cannot carry them, so Hoist could neither
		// store nor answer them faithfully (docs/protocols.md).
		NaN: cbor.NaNDecodeForbidden,
		Inf: cbor.InfDecodeForbidden,
	}.DecMode()
	if err != nil {
		panic("protocol: CBOR decoder options: " + err.Error())
	}
	cborEnc, err = cbor.EncOptions{
		Sort:          cbor.SortNone,
		ShortestFloat: cbor.ShortestFloatNone, // no half-precision floats
		NaNConvert:    cbor.NaNConvertNone,
		InfConvert:    cbor.InfConvertNone,
		IndefLength:   cbor.IndefLengthForbidden,
		TagsMd:        cbor.TagsAllowed, // tag 1 around timestamps
		OmitEmpty:     cbor.OmitEmptyGoValue,
	}.EncMode()
	if err != nil {
		panic("protocol: CBOR encoder options: " + err.Error())
	}
}

// cborCodec is Smithy RPC v2 CBOR.
type cborCodec struct{}

func (cborCodec) name() string { return "rpcv2Cbor" }

func (cborCodec) acceptsContentType(mt string) bool {
	return strings.EqualFold(mt, cborContentType)
}

// decode reads a CBOR map into in, a pointer to a shape. Unknown members are ignored; member names
// match exactly; duplicate keys, trailing data and items beyond the limits
// are errors. Indefinite-length items and tags are accepted.
func (cborCodec) decode(body []byte, in any) error {
	if len(body) == 0 {
		return nil
	}
	if body[0]>>5 != 5 { // major type 5: map
		return errSerialization("the request body must be a CBOR map")
	}
	if err := cborDec.Unmarshal(body, in); err != nil {
		return cborDecodeError(err, in)
	}
	return nil
}

// cborDecodeError turns a decoder error into a SerializationException whose
// message says what is wrong and where.
func cborDecodeError(err error, in any) error {
	var te *cbor.UnmarshalTypeError
	var dk *cbor.DupMapKeyError
	var ud *cbor.UnacceptableDataItemError
	switch {
	case errors.As(err, &ud), errors.Is(err, api.ErrNonFinite):
		return errSerialization("the request holds a number that is not a finite number (NaN or an infinity); GameLift inputs take finite numbers only")
	case errors.As(err, &te):
		return errSerialization("%s", cborTypeMessage(te, in))
	case errors.As(err, &dk):
		return errSerialization("duplicate key %v in a CBOR map", dk.Key)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errSerialization("the CBOR request body ends in the middle of a data item")
	default:
		return errSerialization("could not decode the CBOR request body: %s", strings.TrimPrefix(err.Error(), "cbor: "))
	}
}

// cborTypeMessage names the member and the types of a type mismatch, e.g.
// "member GameServerId: expected a string, got a CBOR positive integer".
//
// The decoder names the top-level member the mismatch is in, with the Go
// type of the innermost value; when that is not the member's own type, the
// mismatch is somewhere inside the member.
func cborTypeMessage(te *cbor.UnmarshalTypeError, in any) string {
	where := "the request body"
	if te.StructFieldName != "" {
		member := te.StructFieldName[strings.LastIndexByte(te.StructFieldName, '.')+1:]
		where = "member " + member
		if !isMemberOfType(in, member, te.GoType) {
			where = "a value inside member " + member
		}
	}
	got := te.CBORType
	if got == "primitives" { // the decoder's name for major type 7
		got = "float or simple value"
	}
	msg := where + ": expected " + wireTypeName(te.GoType) + ", got a CBOR " + got
	// The decoder appends a detail (e.g. an overflow) in parentheses.
	full := te.Error()
	if i := strings.LastIndex(full, " ("); i >= 0 && strings.HasSuffix(full, ")") && strings.Contains(full[:i], te.GoType) {
		msg += full[i:]
	}
	return msg
}

// isMemberOfType reports whether the input struct has a member (by wire
// name) whose Go type, without pointer, is goType. Used on error paths only.
func isMemberOfType(in any, member, goType string) bool {
	t := reflect.TypeOf(in)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == member {
			return strings.TrimPrefix(f.Type.String(), "*") == strings.TrimPrefix(goType, "*")
		}
	}
	return false
}

// encode writes out as a CBOR map; absent members are omitted.
func (cborCodec) encode(buf *bytes.Buffer, out any) error {
	return cborEnc.NewEncoder(buf).Encode(out)
}

// cborError is the body of an RPC v2 CBOR error response. The protocol reads
// "message"; the SDKs fill a modeled error's Message member from "Message".
type cborError struct {
	Type          string `cbor:"__type"`
	Message       string `cbor:"message"`
	MemberMessage string `cbor:"Message"`
}

func (c cborCodec) encodeError(buf *bytes.Buffer, code, msg string) error {
	return c.encode(buf, cborError{Type: cborErrorType(code), Message: msg, MemberMessage: msg})
}

// cborErrorType is the __type of an error: the absolute shape ID for the
// errors of the GameLift model, as the protocol asks; the bare code for the
// rest (protocol and authentication errors, not implemented), which have no
// shape, so that the SDKs report them by their plain code.
func cborErrorType(code string) string {
	if modeledErrors[code] {
		return cborErrorNamespace + code
	}
	return code
}

// modeledErrors holds the error codes some GameLift operation declares.
var modeledErrors = func() map[string]bool {
	m := make(map[string]bool)
	for _, op := range api.Operations() {
		for _, code := range op.Errors {
			m[code] = true
		}
	}
	return m
}()

func (cborCodec) setHeaders(h http.Header, hasBody bool, errorCode string) {
	if hasBody {
		h["Content-Type"] = cborContentTypeValue
	}
}

// cborRoute returns the operation of a /service/<Service>/operation/<Op>
// path; ok is false for any other path.
func cborRoute(path string) (op string, ok bool) {
	rest, ok := strings.CutPrefix(path, cborPathPrefix)
	if !ok {
		return "", false
	}
	service, rest, _ := strings.Cut(rest, "/")
	op, ok = strings.CutPrefix(rest, "operation/")
	if !ok || strings.Contains(op, "/") || (service != cborServiceName && service != cborServiceAbsolute) {
		return "", false
	}
	return op, true
}

// checkCBORHeaders checks the headers RPC v2 CBOR requires or forbids. A
// missing smithy-protocol header is tolerated: the path names the protocol.
func checkCBORHeaders(r *http.Request) error {
	if v := r.Header.Values(smithyProtocolKey); len(v) > 0 && (len(v) > 1 || v[0] != smithyProtocol) {
		return newError(CodeUnsupportedMediaType, http.StatusUnsupportedMediaType,
			"the smithy-protocol header is %q; Hoist serves %q on this path", clip(strings.Join(v, ",")), smithyProtocol)
	}
	if r.Header.Get("X-Amz-Target") != "" || r.Header.Get("X-Amzn-Target") != "" {
		return errSerialization("an RPC v2 CBOR request must not carry an X-Amz-Target or X-Amzn-Target header")
	}
	return nil
}
