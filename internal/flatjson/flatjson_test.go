package flatjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestScanner(t *testing.T) {
	sc := NewScanner([]byte(` {"a":"x", "b":-12,"c":true,"d":false,"e":null ,"f":""} `))
	var got []string
	for {
		k, kind, v, ok := sc.Next()
		if !ok {
			break
		}
		got = append(got, string(k)+string(kind)+string(v))
	}
	want := []string{"asx", "bn-12", "ct", "df", "ez", "fs"}
	if sc.Failed() || len(got) != len(want) {
		t.Fatalf("got %q (failed %v), want %q", got, sc.Failed(), want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	for _, bad := range []string{``, `[]`, `{"a":{}}`, `{"a":"\n"}`, `{"a":1,}`, `{"a":1} x`, `{"a\"":1}`, `{"a":tru}`} {
		sc := NewScanner([]byte(bad))
		for _, _, _, ok := sc.Next(); ok; _, _, _, ok = sc.Next() {
		}
		if !sc.Failed() {
			t.Errorf("%s: not failed", bad)
		}
	}
}

// FuzzScanner: a scan that does not fail was of a valid JSON object, and
// its strings and whole numbers are what encoding/json reads.
func FuzzScanner(f *testing.F) {
	f.Add([]byte(`{"a":"x","b":1,"c":null}`))
	f.Add([]byte(`{"a":"é","b":-0,"c":1.5e3,"a":"y"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := NewScanner(data)
		last := map[string][2]string{} // key: kind, value of its last member
		for {
			k, kind, v, ok := sc.Next()
			if !ok {
				break
			}
			last[string(k)] = [2]string{string(kind), string(v)}
		}
		if sc.Failed() {
			return
		}
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if err := d.Decode(&m); err != nil || !json.Valid(data) {
			t.Fatalf("%q scanned but is not a JSON object: %v", data, err)
		}
		for k, kv := range last {
			switch kv[0][0] {
			case String:
				if s, ok := m[k].(string); !ok || s != kv[1] {
					t.Fatalf("%q: member %q: %q, encoding/json %#v", data, k, kv[1], m[k])
				}
			case Number:
				n, ok := Int([]byte(kv[1]))
				jn, _ := m[k].(json.Number)
				x, err := jn.Int64()
				if ok && (err != nil || x != n) {
					t.Fatalf("%q: member %q: Int %d, encoding/json %#v", data, k, n, m[k])
				}
			}
		}
	})
}

// FuzzAppendString: AppendString writes what encoding/json's Encoder with
// HTML escaping off writes.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", "<&>", "q\"b\\", "\x00\x1f\n", "é", "\u2028", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+strings.TrimSuffix(want.String(), "\n") {
			t.Fatalf("AppendString(%q) = %s, encoding/json %s", s, got[1:], want.String())
		}
	})
}
