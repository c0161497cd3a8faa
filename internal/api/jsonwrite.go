package api

import (
	"encoding/base64"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/hoistgg/hoist/internal/flatjson"
)

// JSON encoding of the shapes without reflection. Every structure has a
// generated writeJSON (json_gen.go) that writes what encoding/json writes
// for it with HTML escaping off: members in the struct's (sorted) order,
// absent members omitted as omitzero omits them. TestAppendJSONMatches
// checks that byte for byte on every structure with random values.

// JSONAppender is implemented by every structure shape.
type JSONAppender interface {
	// AppendJSON appends the shape as JSON to b. It fails only for a float
	// member that is not a finite number, which JSON cannot hold.
	AppendJSON(b []byte) ([]byte, error)
}

// JSONFastDecoder is implemented by every operation's input shape
// (jsondec_gen.go): DecodeJSONFast decodes the common flat inputs without
// reflection, exactly as encoding/json would, and reports false (leaving
// the shape empty) for anything else, which the caller then decodes with
// encoding/json. TestDecodeJSONFastMatches and FuzzDecodeJSONFast check it.
type JSONFastDecoder interface {
	DecodeJSONFast(data []byte) bool
}

// jsonWriter is the state of one AppendJSON.
type jsonWriter struct {
	b     []byte
	err   error
	first bool // no member written yet in the current object
}

func (w *jsonWriter) open() {
	w.b = append(w.b, '{')
	w.first = true
}

func (w *jsonWriter) close() {
	w.b = append(w.b, '}')
	w.first = false
}

// key writes a member name (which needs no escaping) and its colon.
func (w *jsonWriter) key(k string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *jsonWriter) listStart() { w.b = append(w.b, '[') }
func (w *jsonWriter) listEnd()   { w.b = append(w.b, ']') }

// elem writes the comma before list element i.
func (w *jsonWriter) elem(i int) {
	if i > 0 {
		w.b = append(w.b, ',')
	}
}

func (w *jsonWriter) str(s string) { w.b = flatjson.AppendString(w.b, s) }

func (w *jsonWriter) boolean(v bool) { w.b = strconv.AppendBool(w.b, v) }
func (w *jsonWriter) int(v int64)    { w.b = strconv.AppendInt(w.b, v, 10) }

// float writes v as encoding/json does: shortest form, exponent only for
// very small or large magnitudes.
func (w *jsonWriter) float(v float64, bits int) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		if w.err == nil {
			w.err = fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(v, 'g', -1, bits))
		}
		w.b = append(w.b, "null"...)
		return
	}
	format := byte('f')
	if abs := math.Abs(v); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	w.b = strconv.AppendFloat(w.b, v, format, -1, bits)
	if format == 'e' {
		// e-09 to e-9
		if n := len(w.b); n >= 4 && w.b[n-4] == 'e' && w.b[n-3] == '-' && w.b[n-2] == '0' {
			w.b[n-2] = w.b[n-1]
			w.b = w.b[:n-1]
		}
	}
}

func (w *jsonWriter) timestamp(t *Timestamp) { w.b = t.appendJSON(w.b) }

func (w *jsonWriter) blob(v []byte) {
	w.b = append(w.b, '"')
	w.b = base64.StdEncoding.AppendEncode(w.b, v)
	w.b = append(w.b, '"')
}

// sortedKeys returns a map's keys in encoding/json's order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func (w *jsonWriter) null() { w.b = append(w.b, "null"...) }

// mapKey writes a map key (any string) and its colon.
func (w *jsonWriter) mapKey(k string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.str(k)
	w.b = append(w.b, ':')
}
