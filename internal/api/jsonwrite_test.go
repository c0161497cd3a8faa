package api

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// structTypes returns every structure type reachable from the Service
// methods' inputs and outputs.
func structTypes() []reflect.Type {
	seen := map[reflect.Type]bool{}
	var out []reflect.Type
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || t == reflect.TypeFor[Timestamp]() {
			return
		}
		seen[t] = true
		out = append(out, t)
		for i := range t.NumField() {
			walk(t.Field(i).Type)
		}
	}
	svc := reflect.TypeFor[Service]()
	for i := range svc.NumMethod() {
		m := svc.Method(i).Type
		for j := range m.NumIn() {
			walk(m.In(j))
		}
		for j := range m.NumOut() {
			walk(m.Out(j))
		}
	}
	return out
}

var sampleStrings = []string{"", "a", "MegaFrogServers_NA", "arn:aws:gamelift:us-west-2:111122223333:gameservergroup/g",
	`{"map":"<frog & pond>"}`, "quote\" back\\slash", "tab\tnew\nline\x00\x1f", "héllo 世界", "\u2028\u2029", "bad\xffutf8", "\x7f"}

var sampleFloats = []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e-7, 1e21, 123456789.125, 1e-300, math.MaxFloat32, 3.4028235e+38 / 3}

// fill sets v (settable) to random values; depth limits nesting.
func fill(r *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 4 || r.IntN(5) == 0 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(r, v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[Timestamp]() {
			if r.IntN(6) > 0 {
				v.Set(reflect.ValueOf(Timestamp{time.UnixMilli(r.Int64N(4e12) - 1e12).UTC()}))
			}
			return
		}
		for i := range v.NumField() {
			fill(r, v.Field(i), depth+1)
		}
	case reflect.String:
		v.SetString(sampleStrings[r.IntN(len(sampleStrings))])
	case reflect.Uint8: // a blob's byte
		v.SetUint(uint64(r.IntN(256)))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int32, reflect.Int64:
		n := r.Int64N(1<<40) - 1<<39
		if v.Kind() == reflect.Int32 {
			n = int64(int32(n))
		}
		v.SetInt(n)
	case reflect.Float32, reflect.Float64:
		f := sampleFloats[r.IntN(len(sampleFloats))]
		if r.IntN(2) == 0 {
			f = r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
		}
		v.SetFloat(f)
	case reflect.Slice:
		if depth > 4 || r.IntN(4) == 0 {
			return
		}
		n := r.IntN(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(r, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		if depth > 4 || r.IntN(4) == 0 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range r.IntN(4) {
			e := reflect.New(v.Type().Elem()).Elem()
			fill(r, e, depth+1)
			m.SetMapIndex(reflect.ValueOf(sampleStrings[r.IntN(len(sampleStrings))]), e)
		}
		v.Set(m)
	default:
		panic("fill: unexpected kind " + v.Kind().String())
	}
}

// TestAppendJSONMatches: for every structure, AppendJSON writes exactly
// what encoding/json writes (HTML escaping off), for random values.
func TestAppendJSONMatches(t *testing.T) {
	types := structTypes()
	if len(types) < 300 {
		t.Fatalf("found %d structure types, expected hundreds", len(types))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range types {
		for i := range 40 {
			v := reflect.New(typ)
			if i > 0 {
				fill(r, v.Elem(), 0)
			}
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			wantErr := enc.Encode(v.Interface())
			got, err := v.Interface().(JSONAppender).AppendJSON([]byte("prefix"))
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("%s: AppendJSON error %v, encoding/json %v", typ, err, wantErr)
			}
			if wantErr != nil {
				continue
			}
			if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); string(got) != "prefix"+string(w) {
				t.Fatalf("%s:\nAppendJSON    %s\nencoding/json %s", typ, got[len("prefix"):], w)
			}
		}
	}
}

// NaN has no JSON form: AppendJSON fails as encoding/json does.
func TestAppendJSONNaN(t *testing.T) {
	nan := math.NaN()
	v := &ScalingPolicy{Threshold: &nan}
	if _, err := v.AppendJSON(nil); err == nil {
		t.Fatal("AppendJSON of a NaN member succeeded")
	}
}

// TestDecodeJSONFastMatches: for every input shape and random values, a
// fast decoding that succeeds gives what encoding/json gives, and the
// fast path takes the flat inputs the load generator sends.
func TestDecodeJSONFastMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fast := 0
	for _, op := range Operations() {
		for i := range 40 {
			in := op.NewInput()
			if i > 0 {
				fill(r, reflect.ValueOf(in).Elem(), 0)
			}
			data, err := json.Marshal(in)
			if err != nil {
				continue // a NaN member
			}
			if checkFastDecode(t, reflect.TypeOf(in).Elem(), data) {
				fast++
			}
		}
	}
	if fast == 0 {
		t.Fatal("the fast path never decoded an input")
	}
	for _, body := range []string{`{"GameServerGroupName":"g"}`,
		`{"GameServerGroupName":"g","GameServerId":"gs-1","UtilizationStatus":"UTILIZED"}`} {
		var in UpdateGameServerInput
		if !in.DecodeJSONFast([]byte(body)) {
			t.Errorf("%s: not decoded by the fast path", body)
		}
	}
}

// checkFastDecode compares DecodeJSONFast with encoding/json on data; it
// reports whether the fast path decoded it.
func checkFastDecode(t *testing.T, typ reflect.Type, data []byte) bool {
	t.Helper()
	got := reflect.New(typ)
	ok := got.Interface().(JSONFastDecoder).DecodeJSONFast(data)
	if !ok {
		if !got.Elem().IsZero() {
			t.Fatalf("%s: DecodeJSONFast(%s) gave up but left %+v", typ, data, got.Interface())
		}
		return false
	}
	want := reflect.New(typ)
	if err := json.Unmarshal(data, want.Interface()); err != nil {
		t.Fatalf("%s: DecodeJSONFast(%s) succeeded, encoding/json: %v", typ, data, err)
	}
	if !reflect.DeepEqual(got.Interface(), want.Interface()) {
		t.Fatalf("%s: %s\nDecodeJSONFast %+v\nencoding/json  %+v", typ, data, got.Interface(), want.Interface())
	}
	return true
}

func FuzzDecodeJSONFast(f *testing.F) {
	f.Add([]byte(`{"GameServerGroupName":"g","GameServerId":"gs-1","UtilizationStatus":"UTILIZED","Limit":5}`))
	f.Add([]byte(`{"gameservergroupname":"g","Limit":2147483648,"SortOrder":null}`))
	f.Add([]byte(`{"GameServerData":"\u00e9","InstanceIds":["i-1"]}`))
	types := []reflect.Type{reflect.TypeFor[UpdateGameServerInput](), reflect.TypeFor[ClaimGameServerInput](),
		reflect.TypeFor[ListGameServersInput](), reflect.TypeFor[DescribeGameServerInstancesInput]()}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, typ := range types {
			checkFastDecode(t, typ, data)
		}
	})
}
