package protocol

import (
	"bytes"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// shapeTypes returns the input and output types of every operation, found
// through the Service interface (outputs are not in the operation table).
func shapeTypes(t *testing.T) map[string]reflect.Type {
	t.Helper()
	types := make(map[string]reflect.Type)
	svc := reflect.TypeFor[api.Service]()
	for i := range svc.NumMethod() {
		m := svc.Method(i)
		types[m.Name+"Input"] = m.Type.In(1).Elem()
		if m.Type.NumOut() == 2 {
			types[m.Name+"Output"] = m.Type.Out(0).Elem()
		}
	}
	if len(api.Operations()) != svc.NumMethod() {
		t.Fatalf("%d operations, %d Service methods", len(api.Operations()), svc.NumMethod())
	}
	return types
}

var timestampType = reflect.TypeFor[api.Timestamp]()

// fill sets every member of v, recursively, to a distinct non-zero value.
func fill(v reflect.Value, depth int, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type().Elem() == timestampType {
			v.Set(reflect.ValueOf(api.Time(time.UnixMilli(1580218197293 + int64(*n)*1001).UTC())))
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth, n)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1, n)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{0, 1, 2, byte(*n)})
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		if depth < 8 {
			fill(s.Index(0), depth+1, n)
			fill(s.Index(1), depth+1, n)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			k.SetString("k" + strconv.Itoa(i))
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, depth+1, n)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		v.SetString("v" + strconv.Itoa(*n) + " <&> ü")
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		v.SetInt(int64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	}
}

// TestEveryShapeRoundTrips encodes every input and output shape, filled
// and empty, in both protocols and decodes it back: struct tags are honoured
// by both codecs, absent members are omitted, timestamps and blobs survive.
func TestEveryShapeRoundTrips(t *testing.T) {
	codecs := map[string]codec{"json": jsonCodec{}, "cbor": cborCodec{}}
	empty := map[string]string{"json": "{}", "cbor": "\xa0"}
	for name, typ := range shapeTypes(t) {
		for cname, c := range codecs {
			t.Run(name+"/"+cname, func(t *testing.T) {
				var buf bytes.Buffer
				zero := reflect.New(typ).Interface()
				if err := c.encode(&buf, zero); err != nil {
					t.Fatal(err)
				}
				if buf.String() != empty[cname] {
					t.Errorf("empty %s encodes as %q", name, buf.Bytes())
				}
				n := 0
				want := reflect.New(typ)
				fill(want.Elem(), 0, &n)
				buf.Reset()
				if err := c.encode(&buf, want.Interface()); err != nil {
					t.Fatal(err)
				}
				got := reflect.New(typ)
				if err := c.decode(buf.Bytes(), got.Interface()); err != nil {
					t.Fatalf("decode: %v", err)
				}
				if !reflect.DeepEqual(got.Interface(), want.Interface()) {
					t.Errorf("round trip changed the value:\n got %+v\nwant %+v", got.Elem(), want.Elem())
				}
			})
		}
	}
}
