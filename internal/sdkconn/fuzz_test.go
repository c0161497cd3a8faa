package sdkconn

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// okAPI answers every call with success.
type okAPI struct{}

func (okAPI) Connected(context.Context, hosting.Conn) error                     { return nil }
func (okAPI) Disconnected(context.Context, hosting.Conn, bool)                  {}
func (okAPI) ProcessReady(context.Context, hosting.Conn, int32, []string) error { return nil }
func (okAPI) Heartbeat(context.Context, hosting.Conn, bool) error               { return nil }
func (okAPI) ActivateGameSession(context.Context, hosting.Conn, string) error   { return nil }
func (okAPI) AcceptPlayerSession(context.Context, hosting.Conn, string, string) error {
	return nil
}
func (okAPI) RemovePlayerSession(context.Context, hosting.Conn, string, string) error {
	return nil
}
func (okAPI) UpdatePlayerSessionCreationPolicy(context.Context, hosting.Conn, string, api.PlayerSessionCreationPolicy) error {
	return nil
}
func (okAPI) DescribePlayerSessions(context.Context, hosting.Conn, hosting.DescribePlayerSessionsRequest) (map[string]any, error) {
	return map[string]any{"PlayerSessions": []any{}}, nil
}
func (okAPI) ProcessEnding(context.Context, hosting.Conn) error { return nil }
func (okAPI) GetComputeCertificate(context.Context, hosting.Conn) (map[string]any, error) {
	return map[string]any{"CertificatePath": "p", "ComputeName": "c"}, nil
}
func (okAPI) GetFleetRoleCredentials(context.Context, hosting.Conn, string, string) (map[string]any, error) {
	return nil, &hosting.SDKError{Status: 400, Message: "no"}
}
func (okAPI) CheckGameSessionHost(context.Context, hosting.Conn, string) error { return nil }

// lastBackfill is a Backfiller that keeps the last request it got.
type lastBackfill struct{ req *hosting.BackfillRequest }

func (b *lastBackfill) StartMatchBackfill(_ context.Context, _ hosting.Conn, req hosting.BackfillRequest) (string, error) {
	b.req = &req
	return "t", nil
}

func (b *lastBackfill) StopMatchBackfill(context.Context, hosting.Conn, string, string, string) error {
	return nil
}

// checkBackfillBounds checks what reached the Backfiller against the
// bounds the endpoint promises.
func checkBackfillBounds(t *testing.T, req *hosting.BackfillRequest) {
	t.Helper()
	if req.GameSessionArn == "" || req.ConfigurationArn == "" || len(req.TicketID) > 128 {
		t.Fatalf("request %+v passed without its IDs", req)
	}
	if n := len(req.Players); n < 1 || n > maxBackfillPlayers {
		t.Fatalf("%d players passed", n)
	}
	for _, p := range req.Players {
		if p.PlayerId == nil || *p.PlayerId == "" || len(*p.PlayerId) > 1024 || len(p.PlayerAttributes) > maxBackfillAttributes {
			t.Fatalf("player %+v passed", p)
		}
		for _, l := range p.LatencyInMs {
			if l < 1 {
				t.Fatalf("latency %d passed", l)
			}
		}
		for k, v := range p.PlayerAttributes {
			n := 0
			for _, set := range []bool{v.S != nil, v.N != nil, v.SL != nil, v.SDM != nil} {
				if set {
					n++
				}
			}
			if k == "" || n != 1 || (v.S != nil && (len(*v.S) < 1 || len(*v.S) > 100)) {
				t.Fatalf("attribute %q %+v passed", k, v)
			}
		}
	}
}

// FuzzDecodeMessage feeds arbitrary frames to the decoder and to the
// handler of the decoded action: nothing panics, a decoded request has a
// bounded Action and RequestId, and every answer encodes as a JSON object
// echoing them.
func FuzzDecodeMessage(f *testing.F) {
	for _, seed := range []string{
		`{"Action":"ActivateServerProcess","RequestId":"7b0e","SdkVersion":"5.6.0","SdkLanguage":"Go","Port":7777,"LogPaths":["/local/game/logs"]}`,
		`{"Action":"ActivateServerProcess","RequestId":"7b0e","Port":7777,"LogPaths":null}`,
		`{"Action":"HeartbeatServerProcess","RequestId":"r","HealthStatus":true}`,
		`{"Action":"ActivateGameSession","RequestId":"r","GameSessionId":"arn:aws:gamelift:us-west-2::gamesession/f/g"}`,
		`{"Action":"AcceptPlayerSession","RequestId":"r","GameSessionId":"g","PlayerSessionId":"psess-1"}`,
		`{"Action":"UpdatePlayerSessionCreationPolicy","RequestId":"r","GameSessionId":"g","PlayerSessionPolicy":"DENY_ALL"}`,
		`{"Action":"DescribePlayerSessions","RequestId":"r","PlayerId":"p","Limit":10}`,
		`{"Action":"StartMatchBackfill","RequestId":"r","Players":[{"PlayerId":"p","LatencyInMs":{"us-west-2":20}}]}`,
		`{"Action":"StartMatchBackfill","RequestId":"r","GameSessionArn":"arn:aws:gamelift:us-west-2::gamesession/f/g","MatchmakingConfigurationArn":"arn:aws:gamelift:us-west-2:1:matchmakingconfiguration/c","TicketId":"t-1","Players":[{"PlayerId":"p","Team":"red","LatencyInMs":{"us-west-2":20},"PlayerAttributes":{"skill":{"AttrType":"DOUBLE","N":10},"mode":{"AttrType":"STRING","S":"x"},"maps":{"AttrType":"STRING_LIST","SL":["a"]},"elo":{"AttrType":"STRING_DOUBLE_MAP","SDM":{"a":1.5}}}}]}`,
		`{"Action":"StartMatchBackfill","RequestId":"r","GameSessionArn":"g","MatchmakingConfigurationArn":"c","Players":[{"PlayerId":"p","PlayerAttributes":{"k":{"AttrType":"DOUBLE","S":"x"}}}]}`,
		`{"Action":"StartMatchBackfill","RequestId":"r","GameSessionArn":"g","MatchmakingConfigurationArn":"c","Players":[{"PlayerId":"p","PlayerAttributes":{"k":null}},null]}`,
		`{"Action":"StopMatchBackfill","RequestId":"r","GameSessionArn":"g","MatchmakingConfigurationArn":"c","TicketId":"t"}`,
		`{"Action":"TerminateServerProcess","RequestId":"r"}`,
		`{"Action":"GetFleetRoleCredentials","RequestId":"r","RoleArn":"a","RoleSessionName":"s"}`,
		`{"Action":"Port","RequestId":"r","Port":1e99}`,
		`{"RequestId":"r"}`, `{}`, `null`, `[]`, `"x"`, `{"Action":"A","Action":"B"}`, "\xff",
	} {
		f.Add([]byte(seed))
	}
	bf := &lastBackfill{}
	// The clock moves on an hour per read, so the backfill bound never
	// refuses: every request gets to the parser.
	var clock time.Time
	srv := &Server{cfg: Config{Now: func() time.Time { clock = clock.Add(time.Hour); return clock }}, backfills: map[string]*bucket{}}
	pc := &procConn{s: srv, api: okAPI{}, backfill: bf}
	f.Fuzz(func(t *testing.T, data []byte) {
		bf.req = nil
		defer func() {
			if bf.req != nil {
				checkBackfillBounds(t, bf.req)
			}
		}()
		req, err := DecodeMessage(data)
		var rp *Reply
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if de.RequestID == "" {
				return
			}
			rp = &Reply{Action: de.Action, RequestID: de.RequestID, Status: 400, Message: de.Reason}
		} else {
			if req.Action == "" || len(req.Action) > maxIDLength || len(req.RequestID) > maxIDLength {
				t.Fatalf("decoded Action %q RequestId %q", req.Action, req.RequestID)
			}
			rp = &Reply{Action: req.Action, RequestID: req.RequestID, Status: 200}
			if h, ok := handlers[req.Action]; ok {
				fields, err := h(context.Background(), pc, &args{r: req})
				rp.Fields = fields
				if err != nil {
					rp.Status = 400
					rp.Message = err.Error()
				}
			}
		}
		out, err := rp.Encode()
		if err != nil {
			t.Fatalf("encoding the reply: %v", err)
		}
		var back map[string]any
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("reply is not JSON: %v", err)
		}
		if back["Action"] != rp.Action || back["RequestId"] != rp.RequestID {
			t.Fatalf("reply %s does not echo Action %q RequestId %q", out, rp.Action, rp.RequestID)
		}
	})
}
