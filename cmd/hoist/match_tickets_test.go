package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/flexmatch"
)

func TestParseTickets(t *testing.T) {
	data := `{"tickets": [
		{"ticketId": "late", "submittedAt": 7.25, "players": [{"playerId": "l"}]},
		{"ticketId": "party.1", "submittedAt": 0, "players": [
			{"playerId": "p1", "attributes": {"skill": 12.5, "mode": "ctf", "roles": ["tank", "healer"], "ping": {"a": 1, "b": 2.5}},
			 "latencies": {"us-east-1": 40, "eu-west-1": 120}},
			{"playerId": "p2", "attributes": {"roles": []}}]},
		{"ticketId": "also-0", "submittedAt": 0, "players": [{"playerId": "z"}]}]}`
	ts, err := parseTickets([]byte(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range ts {
		ids = append(ids, tk.ID)
	}
	if strings.Join(ids, " ") != "party.1 also-0 late" || ts[2].Submitted != 7250*time.Millisecond {
		t.Fatalf("order %v, late at %v", ids, ts[2].Submitted)
	}
	p1 := ts[0].Players[0]
	a := p1.Attributes
	if *a["skill"].N != 12.5 || *a["mode"].S != "ctf" || strings.Join(a["roles"].SL, ",") != "tank,healer" || a["ping"].SDM["b"] != 2.5 {
		t.Errorf("attributes %+v", a)
	}
	if p1.Latencies["us-east-1"] != 40 || p1.Latencies["eu-west-1"] != 120 {
		t.Errorf("latencies %v", p1.Latencies)
	}
	if r := ts[0].Players[1].Attributes["roles"]; r.Type() != flexmatch.TypeStringList || len(r.SL) != 0 {
		t.Errorf("an empty list is a string list: %+v", r)
	}
}

func TestParseTicketsErrors(t *testing.T) {
	long := strings.Repeat("x", 101)
	ok := `{"playerId": "p"}`
	ticket := func(fields string) string { return `{"tickets": [` + fields + `]}` }
	one := func(player string) string {
		return ticket(`{"ticketId": "t1", "submittedAt": 0, "players": [` + player + `]}`)
	}
	var eleven []string
	for i := range 11 {
		eleven = append(eleven, fmt.Sprintf(`{"playerId": "p%d"}`, i))
	}
	var manyAttrs []string
	for i := range 11 {
		manyAttrs = append(manyAttrs, fmt.Sprintf(`"a%d": 1`, i))
	}
	for _, c := range []struct{ data, want string }{
		{`[]`, "tickets file: must be a JSON object"},
		{`{}`, "tickets file: tickets: must be a list"},
		{`{"tickets": null}`, "tickets file: tickets: must be a list"},
		{`{"tickets": []}`, "tickets: at least one ticket"},
		{`{"tickets": [], "extra": 1}`, `unknown field "extra"`},
		{ticket(`7`), "tickets[0]: must be a JSON object"},
		{ticket(`{"submittedAt": 0, "players": [` + ok + `]}`), "tickets[0]: ticketId: is required"},
		{ticket(`{"ticketId": 5, "submittedAt": 0, "players": [` + ok + `]}`), "tickets[0]: ticketId: must be a string"},
		{ticket(`{"ticketId": "a b", "submittedAt": 0, "players": [` + ok + `]}`), `tickets[0]: ticketId: must be 1 to 128`},
		{ticket(`{"ticketId": "", "submittedAt": 0, "players": [` + ok + `]}`), `tickets[0]: ticketId: must be 1 to 128`},
		{ticket(`{"ticketId": "t1", "players": [` + ok + `]}`), "t1: submittedAt: is required"},
		{ticket(`{"ticketId": "t1", "submitedAt": 0, "players": [` + ok + `]}`), `t1`},
		{ticket(`{"ticketId": "t1", "submitedAt": 0, "players": [` + ok + `]}`), `unknown field "submitedAt"`},
		{ticket(`{"ticketId": "t1", "submittedAt": "0", "players": [` + ok + `]}`), "t1: submittedAt: must be a number"},
		{ticket(`{"ticketId": "t1", "submittedAt": 1e7, "players": [` + ok + `]}`), "t1: submittedAt: must be a number"},
		{ticket(`{"ticketId": "t1", "submittedAt": 0}`), "t1: players: must be a list"},
		{ticket(`{"ticketId": "t1", "submittedAt": 0, "players": []}`), "t1: players: must hold 1 to 10 players, got 0"},
		{ticket(`{"ticketId": "t1", "submittedAt": 0, "players": [` + strings.Join(eleven, ",") + `]}`), "t1: players: must hold 1 to 10 players, got 11"},
		{ticket(`{"ticketId": "t1", "submittedAt": 0, "players": [` + ok + `]}, {"ticketId": "t1", "submittedAt": 0, "players": [{"playerId": "q"}]}`), "t1: ticketId: also the ID of tickets[0]"},
		{ticket(`{"ticketId": "t1", "submittedAt": 0, "players": [` + ok + `]}, {"ticketId": "t2", "submittedAt": 0, "players": [` + ok + `]}`), `t2: players[0].playerId: player "p" is also on ticket t1`},
		{one(`{"playerId": "p"}, {"playerId": "p"}`), `t1: players[1].playerId: player "p" is also on ticket t1`},
		{one(`{}`), "t1: players[0].playerId: is required"},
		{one(`{"playerId": ""}`), "t1: players[0].playerId: is required"},
		{one(`{"playerId": "p", "team": "red"}`), `t1: players[0]: unknown field "team"`},
		{one(`{"playerId": "p", "attributes": [1]}`), "t1: players[0].attributes: must be an object"},
		{one(`{"playerId": "p", "attributes": {` + strings.Join(manyAttrs, ",") + `}}`), "t1: players[0].attributes: at most 10 attributes"},
		{one(`{"playerId": "p", "attributes": {"x": true}}`), "t1: players[0].attributes[x]: must be a string, a number"},
		{one(`{"playerId": "p", "attributes": {"x": null}}`), "t1: players[0].attributes[x]: must be a string, a number"},
		{one(`{"playerId": "p", "attributes": {"x": "` + long + `"}}`), "t1: players[0].attributes[x]: a string value is at most 100"},
		{one(`{"playerId": "p", "attributes": {"x": [1]}}`), "t1: players[0].attributes[x]: a list value must hold only strings"},
		{one(`{"playerId": "p", "attributes": {"x": ["` + long + `"]}}`), "t1: players[0].attributes[x]: a string of a list"},
		{one(`{"playerId": "p", "attributes": {"x": {"k": "v"}}}`), "t1: players[0].attributes[x]: an object value must map strings to numbers"},
		{one(`{"playerId": "p", "attributes": {"x": {"": 1}}}`), "t1: players[0].attributes[x]: a map key"},
		{one(`{"playerId": "p", "attributes": {"": 1}}`), "t1: players[0].attributes[]: an attribute name"},
		{one(`{"playerId": "p", "latencies": {"r": 0}}`), "t1: players[0].latencies[r]: must be a whole number"},
		{one(`{"playerId": "p", "latencies": {"r": 1.5}}`), "t1: players[0].latencies[r]: must be a whole number"},
		{one(`{"playerId": "p", "latencies": {"r": "10"}}`), "t1: players[0].latencies[r]: must be a whole number"},
		{one(`{"playerId": "p", "latencies": [10]}`), "t1: players[0].latencies: must be an object"},
		{`{"tickets": [` + `{"ticketId": "t1", "submittedAt": 0, "players": [` + ok + `]}` + `]`, "tickets file: must be a JSON object"},
	} {
		_, err := parseTickets([]byte(c.data), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n  got %v\n  want an error with %q", c.data, err, c.want)
		}
	}
}

func TestParseTicketsChecksRuleSet(t *testing.T) {
	rs, err := flexmatch.Parse([]byte(rules1v1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = parseTickets([]byte(`{"tickets": [{"ticketId": "t9", "submittedAt": 0, "players": [{"playerId": "p", "attributes": {"skill": ["a"]}}]}]}`), rs)
	if err == nil || !strings.Contains(err.Error(), "t9: Players[0].PlayerAttributes[skill]") {
		t.Errorf("got %v", err)
	}
}

// FuzzParseTickets: any input is parsed or refused with an error, never a
// panic, and what is parsed keeps the file's limits and is in submission
// order.
func FuzzParseTickets(f *testing.F) {
	for _, s := range []string{
		`{"tickets": [{"ticketId": "t1", "submittedAt": 0, "players": [{"playerId": "p"}]}]}`,
		`{"tickets": [{"ticketId": "a", "submittedAt": 2.5, "players": [{"playerId": "p", "attributes": {"s": 1, "m": "x", "l": ["a"], "d": {"k": 1}}, "latencies": {"r": 5}}]},
		  {"ticketId": "b", "submittedAt": 1, "players": [{"playerId": "q"}]}]}`,
		`{"tickets": [{"ticketId": "t1", "submittedAt": 1e400, "players": []}]}`,
		`{"tickets": [{"ticketId": "t1", "submittedAt": -0, "players": [{"playerId": "p", "latencies": {"r": 2147483648}}]}]}`,
		`{"tickets": [null]}`, `null`, `{"tickets": {}}`, ``, `{"tickets": [{"ticketId": "\u00e9"}]}`,
	} {
		f.Add([]byte(s))
	}
	rs, err := flexmatch.Parse([]byte(rules1v1))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := parseTickets(data, rs)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "tickets file: ") {
				t.Errorf("error without its prefix: %v", err)
			}
			return
		}
		if len(ts) == 0 {
			t.Fatal("no tickets and no error")
		}
		ids, players := map[string]bool{}, map[string]bool{}
		for i, tk := range ts {
			if ids[tk.ID] || tk.ID == "" || len(tk.ID) > maxTicketIDLen {
				t.Errorf("ticket ID %q", tk.ID)
			}
			ids[tk.ID] = true
			if tk.Submitted < 0 || tk.Submitted > maxSubmittedAt*time.Second || i > 0 && tk.Submitted < ts[i-1].Submitted {
				t.Errorf("ticket %s submitted at %v", tk.ID, tk.Submitted)
			}
			if len(tk.Players) < 1 || len(tk.Players) > maxTicketPlayers {
				t.Errorf("ticket %s has %d players", tk.ID, len(tk.Players))
			}
			for _, p := range tk.Players {
				if players[p.ID] || p.ID == "" {
					t.Errorf("player ID %q", p.ID)
				}
				players[p.ID] = true
				if len(p.Attributes) > maxPlayerAttrs {
					t.Errorf("player %s has %d attributes", p.ID, len(p.Attributes))
				}
				for k, v := range p.Attributes {
					if v.Type() == "" {
						t.Errorf("player %s attribute %s has no value", p.ID, k)
					}
				}
				for r, ms := range p.Latencies {
					if ms < 1 {
						t.Errorf("player %s latency %s = %d", p.ID, r, ms)
					}
				}
			}
		}
	})
}
