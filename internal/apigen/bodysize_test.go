package apigen

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"testing"
	"unicode/utf16"

	"github.com/fxamacker/cbor/v2"
)

// TestBodyBoundHolds: for every operation the model bounds, an input with
// every member present and as long as the model allows (strings of
// characters outside the Basic Multilingual Plane, the longest enum value,
// full lists and maps), encoded as Python's json writes it (every such
// character escaped as a surrogate pair, a space after each comma and
// colon) and as CBOR, fits in bodyBound.
func TestBodyBoundHolds(t *testing.T) {
	m, err := PinnedModel()
	if err != nil {
		t.Fatal(err)
	}
	g := &gen{m: m}
	bounded := 0
	for _, op := range g.sortedOps() {
		shape := m.Operations[op].Input.Shape
		bound, ok := g.bodyBound(shape)
		if !ok {
			continue
		}
		bounded++
		v := g.largest(shape, 0)
		var js bytes.Buffer
		pythonJSON(&js, v)
		cb, err := cbor.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if int64(js.Len()) > bound || int64(len(cb)) > bound {
			t.Errorf("%s: the largest input is %d bytes of JSON, %d of CBOR; the bound is %d", op, js.Len(), len(cb), bound)
		}
	}
	if bounded < 80 {
		t.Errorf("only %d operations are bounded", bounded)
	}
}

// largest builds the largest value of shape the model allows; i makes map
// keys differ.
func (g *gen) largest(shape string, i int) any {
	s := g.m.Shapes[shape]
	count := func(dflt int) int {
		if s.Max == nil {
			return dflt
		}
		return int(*s.Max)
	}
	switch s.Type {
	case "string":
		if isEnum(s) {
			longest := ""
			for _, e := range s.Enum {
				if len(e) > len(longest) {
					longest = e
				}
			}
			return longest
		}
		return distinct(count(unboundedStringChars), i)
	case "blob":
		return bytes.Repeat([]byte{0xff}, count(0))
	case "integer", "long":
		return int64(-1 << 63)
	case "double", "float", "timestamp":
		return -1.2345678901234567e-308
	case "boolean":
		return false
	case "list":
		out := make([]any, count(0))
		for j := range out {
			out[j] = g.largest(s.Member.Shape, j)
		}
		return out
	case "map":
		out := map[string]any{}
		for j := range count(0) {
			out[g.largest(s.Key.Shape, j).(string)] = g.largest(s.Value.Shape, j)
		}
		return out
	case "structure":
		out := map[string]any{}
		for name, m := range s.Members {
			out[name] = g.largest(m.Shape, i)
		}
		return out
	}
	panic("type " + s.Type)
}

// distinct is n characters outside the Basic Multilingual Plane, but for
// the decimal digits of i at its start (so map keys differ).
func distinct(n, i int) string {
	d := strconv.Itoa(i)
	if n <= len(d) {
		return d[:n]
	}
	return d + string(bytes.Repeat([]byte("😀"), n-len(d)))
}

// pythonJSON writes v as Python's json.dumps does by default: non-ASCII
// escaped (UTF-16), ", " and ": " between items, blobs in base64 (as
// botocore sends them).
func pythonJSON(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		sep := ""
		for k, x := range v {
			b.WriteString(sep)
			pythonJSON(b, k)
			b.WriteString(": ")
			pythonJSON(b, x)
			sep = ", "
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for j, x := range v {
			if j > 0 {
				b.WriteString(", ")
			}
			pythonJSON(b, x)
		}
		b.WriteByte(']')
	case string:
		b.WriteByte('"')
		for _, r := range v {
			switch {
			case r < 0x80:
				b.WriteRune(r)
			case r < 0x10000:
				fmt.Fprintf(b, `\u%04x`, r)
			default:
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
			}
		}
		b.WriteByte('"')
	case []byte:
		pythonJSON(b, base64.StdEncoding.EncodeToString(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	}
}
