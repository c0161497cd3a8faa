package server

import (
	"net/url"
	"testing"
)

// FuzzParsePeerLog: any query either names one log (a game session, or a
// fleet's process), each ID within maxLogIDLen, whose query parses back
// to it, or is refused, without panicking.
func FuzzParsePeerLog(f *testing.F) {
	f.Add("gameSessionId=arn%3Aaws%3Agamelift%3Aus-west-2%3A%3Agamesession%2Ffleet-1%2Fgs-1")
	f.Add("fleetId=fleet-1&processId=process-1")
	f.Add("fleetId=fleet-1&processId=process-1&gameSessionId=x")
	f.Add("gameSessionId=a&gameSessionId=b")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		l, err := parsePeerLog(q)
		if err != nil {
			return
		}
		if (l.gameSessionID == "") == (l.fleetID == "" || l.processID == "") {
			t.Fatalf("%q: not exactly one log: %+v", raw, l)
		}
		if len(l.gameSessionID) > maxLogIDLen || len(l.fleetID) > maxLogIDLen || len(l.processID) > maxLogIDLen {
			t.Fatalf("%q: an ID over the limit", raw)
		}
		if back, err := parsePeerLog(l.query()); err != nil || back != l {
			t.Fatalf("%q: %+v does not parse back (%+v, %v)", raw, l, back, err)
		}
	})
}
