package fleetiq

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
)

// viaJSON is what encoding/json makes of v after a round trip: the
// reference the fast codecs must match.
func viaJSON[T any](t *testing.T, v *T) *T {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkCodec[T any, P interface {
	*T
	appendJSON([]byte) []byte
	decodeJSON([]byte) error
}](t *testing.T, v P) {
	t.Helper()
	want := viaJSON(t, (*T)(v))
	fast := v.appendJSON(nil)
	ref, _ := json.Marshal(v)
	for _, c := range []struct {
		name string
		data []byte
		fast bool
	}{{"fast encoding, fast decoding", fast, true}, {"fast encoding, encoding/json", fast, false},
		{"encoding/json, fast decoding", ref, true}} {
		got := P(new(T))
		var err error
		if c.fast {
			err = got.decodeJSON(c.data)
		} else {
			err = json.Unmarshal(c.data, got)
		}
		if err != nil {
			t.Fatalf("%s: %s: %v", c.name, c.data, err)
		}
		if !reflect.DeepEqual((*T)(got), want) {
			t.Fatalf("%s: %s\ngot  %+v\nwant %+v", c.name, c.data, got, want)
		}
	}
}

func TestRecordCodecs(t *testing.T) {
	conn, data := "10.0.0.1:7777", `{"map":"<frog & \"pond\">"}`+"\x01\xff"
	checkCodec(t, &serverRec{ID: "gs-1", Group: "MegaFrogServers_NA", Instance: "i-1"})
	checkCodec(t, &serverRec{ID: "gs-1", Group: "g", Instance: "i-1", Conn: &conn, Data: &data,
		Utilized: true, Claimed: true, LastClaim: -5, Registered: 1 << 60, LastHealth: 42})
	checkCodec(t, &instanceRec{Group: "g", ID: "i-1", Status: api.GameServerInstanceStatusDraining, Available: -1, Busy: 7})
}

// FuzzRecordCodecs: for any values the fast codecs agree with
// encoding/json, and for any bytes the fast decoders give what
// encoding/json gives.
func FuzzRecordCodecs(f *testing.F) {
	f.Add("gs", "g", "i", "c", "d", true, false, int64(1), int64(2), int64(3), []byte(`{"id":"a","r":1}`))
	f.Add("é", "\x00", "\\", "\"", "\xff", false, true, int64(-1), int64(0), int64(1<<62), []byte(`{"ID":"a","id":"b"}`))
	f.Add("", "", "", "", "", false, false, int64(0), int64(0), int64(0), []byte(`{"g":"x","a":1e2,"b":01}`))
	f.Add("x", "y", "z", "", "", false, false, int64(0), int64(0), int64(0), []byte(`{"id":}`))
	f.Fuzz(func(t *testing.T, id, group, inst, conn, data string, u, cl bool, lc, r, h int64, raw []byte) {
		g := &serverRec{ID: id, Group: group, Instance: inst, Utilized: u, Claimed: cl, LastClaim: lc, Registered: r, LastHealth: h}
		if len(conn)%2 == 1 {
			g.Conn = &conn
		}
		if len(data)%2 == 0 {
			g.Data = &data
		}
		checkCodec(t, g)
		checkCodec(t, &instanceRec{Group: group, ID: inst, Status: api.GameServerInstanceStatus(conn), Available: int(lc), Busy: int(r)})

		var gs, gsRef serverRec
		errFast, errRef := gs.decodeJSON(raw), json.Unmarshal(raw, &gsRef)
		if (errFast == nil) != (errRef == nil) || errRef == nil && !reflect.DeepEqual(gs, gsRef) {
			t.Fatalf("serverRec from %q: fast %+v, %v; encoding/json %+v, %v", raw, gs, errFast, gsRef, errRef)
		}
		var is, isRef instanceRec
		errFast, errRef = is.decodeJSON(raw), json.Unmarshal(raw, &isRef)
		if (errFast == nil) != (errRef == nil) || errRef == nil && !reflect.DeepEqual(is, isRef) {
			t.Fatalf("instanceRec from %q: fast %+v, %v; encoding/json %+v, %v", raw, is, errFast, isRef, errRef)
		}
	})
}
