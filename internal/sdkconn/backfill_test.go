package sdkconn_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sdkconn/sdkconntest"
)

// fakeBackfiller records the backfill calls it gets and answers with err.
type fakeBackfiller struct {
	mu     sync.Mutex
	starts []hosting.BackfillRequest
	stops  [][3]string
	err    error
}

func (f *fakeBackfiller) StartMatchBackfill(_ context.Context, c hosting.Conn, req hosting.BackfillRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, req)
	if f.err != nil {
		return "", f.err
	}
	if req.TicketID != "" {
		return req.TicketID, nil
	}
	return "generated-ticket", nil
}

func (f *fakeBackfiller) StopMatchBackfill(_ context.Context, c hosting.Conn, gs, conf, ticket string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, [3]string{gs, conf, ticket})
	return f.err
}

const confARN = "arn:aws:gamelift:us-west-2:123456789012:matchmakingconfiguration/duel"

// TestMatchBackfill sends StartMatchBackfill and StopMatchBackfill as the
// SDKs do and checks what reaches the Backfiller, what is refused before it
// (with 400 and the field's name), and that a process may backfill only a
// game session it hosts.
func TestMatchBackfill(t *testing.T) {
	player := func(extra map[string]any) map[string]any {
		p := map[string]any{"PlayerId": "p1", "Team": "red", "LatencyInMs": map[string]any{"us-west-2": 20}}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	attrs := map[string]any{
		"skill": map[string]any{"AttrType": "DOUBLE", "N": 23.5},
		"mode":  map[string]any{"AttrType": "STRING", "S": "ranked"},
		"maps":  map[string]any{"AttrType": "STRING_LIST", "SL": []string{"a", "b"}},
		"elo":   map[string]any{"AttrType": "STRING_DOUBLE_MAP", "SDM": map[string]float64{"x": 1.5}},
	}
	full := api.Player{PlayerId: api.String("p1"), Team: api.String("red"), LatencyInMs: map[string]int32{"us-west-2": 20},
		PlayerAttributes: map[string]api.AttributeValue{
			"skill": {N: api.Float64(23.5)}, "mode": {S: api.String("ranked")},
			"maps": {SL: []string{"a", "b"}}, "elo": {SDM: map[string]float64{"x": 1.5}},
		}}
	many := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"PlayerId": "p" + strings.Repeat("x", i+1)}
		}
		return out
	}
	tooManyAttrs := map[string]any{}
	for i := range 11 {
		tooManyAttrs["a"+strings.Repeat("x", i)] = map[string]any{"AttrType": "DOUBLE", "N": 1}
	}
	req := func(players any, extra map[string]any) map[string]any {
		f := map[string]any{"GameSessionArn": gsID, "MatchmakingConfigurationArn": confARN, "Players": players}
		for k, v := range extra {
			f[k] = v
		}
		return f
	}
	tests := map[string]struct {
		action     string
		fields     map[string]any
		hostErr    error // CheckGameSessionHost's answer
		bfErr      error
		want       *hosting.BackfillRequest
		wantStop   [3]string
		wantTicket string
		wantStatus int
		wantMsg    string
	}{
		"start with every attribute type": {action: "StartMatchBackfill",
			fields: req([]any{player(map[string]any{"PlayerAttributes": attrs})}, map[string]any{"TicketId": "t-1"}),
			want:   &hosting.BackfillRequest{TicketID: "t-1", GameSessionArn: gsID, ConfigurationArn: confARN, Players: []api.Player{full}}, wantTicket: "t-1"},
		"start without ticket ID": {action: "StartMatchBackfill", fields: req([]any{map[string]any{"PlayerId": "p1"}}, nil),
			want:       &hosting.BackfillRequest{GameSessionArn: gsID, ConfigurationArn: confARN, Players: []api.Player{{PlayerId: api.String("p1")}}},
			wantTicket: "generated-ticket"},
		"start with 199 players": {action: "StartMatchBackfill", fields: req(many(199), nil), wantTicket: "generated-ticket"},
		"start with 200 players": {action: "StartMatchBackfill", fields: req(many(200), nil), wantStatus: 400, wantMsg: "at most 199"},
		"start without players":  {action: "StartMatchBackfill", fields: req(nil, nil), wantStatus: 400, wantMsg: "Players is required"},
		"start with no players":  {action: "StartMatchBackfill", fields: req([]any{}, nil), wantStatus: 400, wantMsg: "Players is empty"},
		"start, Players an object": {action: "StartMatchBackfill", fields: req(map[string]any{}, nil),
			wantStatus: 400, wantMsg: "Players must be"},
		"start, player without ID": {action: "StartMatchBackfill", fields: req([]any{map[string]any{"Team": "red"}}, nil),
			wantStatus: 400, wantMsg: "Players[0].PlayerId is required"},
		"start, player twice": {action: "StartMatchBackfill",
			fields: req([]any{map[string]any{"PlayerId": "p1"}, map[string]any{"PlayerId": "p1"}}, nil), wantStatus: 400, wantMsg: "Players[1].PlayerId repeats"},
		"start, latency a string": {action: "StartMatchBackfill",
			fields: req([]any{player(map[string]any{"LatencyInMs": map[string]any{"us-west-2": "20"}})}, nil), wantStatus: 400, wantMsg: "Players[0]"},
		"start, latency zero": {action: "StartMatchBackfill",
			fields: req([]any{player(map[string]any{"LatencyInMs": map[string]any{"us-west-2": 0}})}, nil), wantStatus: 400, wantMsg: "LatencyInMs"},
		"start, 11 attributes": {action: "StartMatchBackfill",
			fields: req([]any{player(map[string]any{"PlayerAttributes": tooManyAttrs})}, nil), wantStatus: 400, wantMsg: "at most 10"},
		"start, unknown AttrType": {action: "StartMatchBackfill",
			fields:     req([]any{player(map[string]any{"PlayerAttributes": map[string]any{"k": map[string]any{"AttrType": "NONE"}}})}, nil),
			wantStatus: 400, wantMsg: "AttrType must be"},
		"start, AttrType without its value": {action: "StartMatchBackfill",
			fields:     req([]any{player(map[string]any{"PlayerAttributes": map[string]any{"k": map[string]any{"AttrType": "DOUBLE", "S": "x"}}})}, nil),
			wantStatus: 400, wantMsg: "exactly its value (N)"},
		"start, S too long": {action: "StartMatchBackfill",
			fields:     req([]any{player(map[string]any{"PlayerAttributes": map[string]any{"k": map[string]any{"AttrType": "STRING", "S": strings.Repeat("s", 101)}}})}, nil),
			wantStatus: 400, wantMsg: "PlayerAttributes[k].S"},
		"start, SL entry empty": {action: "StartMatchBackfill",
			fields:     req([]any{player(map[string]any{"PlayerAttributes": map[string]any{"k": map[string]any{"AttrType": "STRING_LIST", "SL": []string{""}}}})}, nil),
			wantStatus: 400, wantMsg: "SL[0]"},
		"start, Team empty": {action: "StartMatchBackfill", fields: req([]any{player(map[string]any{"Team": ""})}, nil),
			wantStatus: 400, wantMsg: "Team"},
		"start, bad ticket ID": {action: "StartMatchBackfill", fields: req([]any{player(nil)}, map[string]any{"TicketId": "a b"}),
			wantStatus: 400, wantMsg: "TicketId"},
		"start, configuration missing": {action: "StartMatchBackfill", fields: map[string]any{"GameSessionArn": gsID, "Players": []any{player(nil)}},
			wantStatus: 400, wantMsg: "MatchmakingConfigurationArn is required"},
		"start, game session missing": {action: "StartMatchBackfill", fields: map[string]any{"MatchmakingConfigurationArn": confARN, "Players": []any{player(nil)}},
			wantStatus: 400, wantMsg: "GameSessionArn is required"},
		"start on another process's game session": {action: "StartMatchBackfill", fields: req([]any{player(nil)}, nil),
			hostErr: &hosting.SDKError{Status: 403, Message: "not hosted by process"}, wantStatus: 403, wantMsg: "not hosted"},
		"start refused by FlexMatch": {action: "StartMatchBackfill", fields: req([]any{player(nil)}, nil),
			bfErr: &hosting.SDKError{Status: 400, Message: "not a FlexMatch game session"}, wantStatus: 400, wantMsg: "FlexMatch game session",
			want: &hosting.BackfillRequest{GameSessionArn: gsID, ConfigurationArn: confARN, Players: []api.Player{{PlayerId: api.String("p1"),
				Team: api.String("red"), LatencyInMs: map[string]int32{"us-west-2": 20}}}}},
		"stop": {action: "StopMatchBackfill", fields: map[string]any{"GameSessionArn": gsID, "MatchmakingConfigurationArn": confARN, "TicketId": "t-1"},
			wantStop: [3]string{gsID, confARN, "t-1"}},
		"stop without ticket": {action: "StopMatchBackfill", fields: map[string]any{"GameSessionArn": gsID, "MatchmakingConfigurationArn": confARN},
			wantStatus: 400, wantMsg: "TicketId is required"},
		"stop on another process's game session": {action: "StopMatchBackfill",
			fields:  map[string]any{"GameSessionArn": gsID, "MatchmakingConfigurationArn": confARN, "TicketId": "t-1"},
			hostErr: &hosting.SDKError{Status: 403, Message: "not hosted by process"}, wantStatus: 403, wantMsg: "not hosted"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fake := &sdkconntest.API{Hook: func(_ context.Context, c sdkconntest.Call) (map[string]any, error) {
				if c.Method == "CheckGameSessionHost" {
					return nil, tc.hostErr
				}
				return nil, nil
			}}
			bf := &fakeBackfiller{err: tc.bfErr}
			e, _ := start(t, sdkconn.Config{API: fake, Backfiller: bf})
			c := dial(t, e, "proc-1", sdkclient.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			reply, err := c.Call(ctx, tc.action, tc.fields)
			checkReply(t, reply, err, tc.action, tc.wantStatus, tc.wantMsg)
			if tc.wantTicket != "" && reply.Fields()["TicketId"] != tc.wantTicket {
				t.Errorf("TicketId %v, want %s", reply.Fields()["TicketId"], tc.wantTicket)
			}
			bf.mu.Lock()
			defer bf.mu.Unlock()
			checked := callsExcept(fake.Calls(), "Connected")
			reached := len(bf.starts) + len(bf.stops)
			switch {
			case tc.want != nil:
				if len(bf.starts) != 1 || !reflect.DeepEqual(bf.starts[0], *tc.want) {
					t.Errorf("Backfiller got %+v, want %+v", bf.starts, *tc.want)
				}
			case tc.wantStop != [3]string{}:
				if len(bf.stops) != 1 || bf.stops[0] != tc.wantStop {
					t.Errorf("Backfiller got stops %v, want %v", bf.stops, tc.wantStop)
				}
			case tc.wantStatus != 0 && reached != 0:
				t.Errorf("a refused request reached the Backfiller: %+v %v", bf.starts, bf.stops)
			}
			if reached > 0 && (len(checked) != 1 || checked[0].Method != "CheckGameSessionHost" || checked[0].GameSessionID != gsID) {
				t.Errorf("the Backfiller was called without the host check: %+v", checked)
			}
		})
	}
}

// TestBackfillThrottled: a process that sends backfill requests in a loop
// gets 10 through at once, then one per second of its clock, and 429 for
// the rest, which never reach the Backfiller; another process has its own
// allowance. Before the bound every request reached the Backfiller (a store
// write and events each).
func TestBackfillThrottled(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	fake := &sdkconntest.API{}
	bf := &fakeBackfiller{}
	e, _ := start(t, sdkconn.Config{API: fake, Backfiller: bf, Now: clock.Now})
	c := dial(t, e, "proc-1", sdkclient.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	startReq := map[string]any{"GameSessionArn": gsID, "MatchmakingConfigurationArn": confARN,
		"Players": []any{map[string]any{"PlayerId": "p1"}}}
	stopReq := map[string]any{"GameSessionArn": gsID, "MatchmakingConfigurationArn": confARN, "TicketId": "t-1"}
	call := func(c *sdkclient.Client, action string, wantStatus int) {
		t.Helper()
		fields := startReq
		if action == "StopMatchBackfill" {
			fields = stopReq
		}
		reply, err := c.Call(ctx, action, fields)
		msg := ""
		if wantStatus == 429 {
			msg = "throttled"
		}
		checkReply(t, reply, err, action, wantStatus, msg)
	}
	for i := range 10 {
		call(c, []string{"StartMatchBackfill", "StopMatchBackfill"}[i%2], 200)
	}
	call(c, "StartMatchBackfill", 429)
	call(c, "StopMatchBackfill", 429)
	clock.Advance(time.Second)
	call(c, "StartMatchBackfill", 200)
	call(c, "StartMatchBackfill", 429)
	other := dial(t, e, "proc-2", sdkclient.Options{})
	call(other, "StartMatchBackfill", 200)
	bf.mu.Lock()
	defer bf.mu.Unlock()
	if n := len(bf.starts) + len(bf.stops); n != 12 {
		t.Errorf("%d requests reached the Backfiller, want 12", n)
	}
}
