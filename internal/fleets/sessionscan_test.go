package fleets

import (
	"encoding/json"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// FuzzScanSession: on any bytes scanSession does not panic, and on a game
// session record as Hoist writes it, whatever its strings hold, it reads
// what decoding the record reads, or declines (and the record is decoded).
func FuzzScanSession(f *testing.F) {
	f.Add([]byte(`{"session":{"Location":"us-west-2"}}`), "us-west-2", "i-0123", "game", `{"a":"\"ComputeName\":\"x\""}`, int32(2), int32(8), true)
	f.Add([]byte(`"Location":"a","ComputeName":"b","CurrentPlayerSessionCount":1e3,"MaximumPlayerSessionCount":-}`), "custom-\"loc", "", "\"Location\":\"evil\"", "", int32(-1), int32(0), false)
	f.Fuzz(func(t *testing.T, raw []byte, loc, comp, name, data string, cur, most int32, withCompute bool) {
		_, _ = scanSession(raw)
		gs := hosting.GameSession{ProcessID: name, Session: api.GameSession{Name: api.String(name), Location: api.String(loc),
			GameSessionData: api.String(data), CurrentPlayerSessionCount: api.Int32(cur), MaximumPlayerSessionCount: api.Int32(most),
			GameProperties: []api.GameProperty{{Key: api.String(name), Value: api.String(data)}}}}
		if withCompute {
			gs.Session.ComputeName = api.String(comp)
		}
		b, err := json.Marshal(&gs)
		if err != nil {
			t.Skip()
		}
		var back hosting.GameSession
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		s, ok := scanSession(b)
		if !ok {
			return
		}
		want := countedSession{location: api.ToString(back.Session.Location), compute: api.ToString(back.Session.ComputeName),
			current: int(api.ToInt32(back.Session.CurrentPlayerSessionCount)), maximum: int(api.ToInt32(back.Session.MaximumPlayerSessionCount))}
		if s != want {
			t.Fatalf("scanSession(%s) = %+v, decoding reads %+v", b, s, want)
		}
	})
}
