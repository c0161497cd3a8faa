package matchmaking

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/memtest"
	"github.com/hoistgg/hoist/internal/store"
)

var memoryTickets = flag.Int("memory.tickets", 5000, "tickets TestMemoryTickets matches")

// TestMemoryTickets measures what an ended ticket costs in live heap while
// it is retained (TicketRetention): single-player tickets with a UUID-long
// ID, a skill attribute and two latencies start, are matched 1v1 in
// STANDALONE and complete, with their events published to the store's
// outbox (no webhooks). Bound: 3,500 B a ticket, with the default 5,000
// tickets (its record and index entries, and its share of the events
// MatchmakingSearching, PotentialMatchCreated and MatchmakingSucceeded:
// two events a ticket in 1v1). It was about 4,300 B while each ticket's
// record held its ID and its configuration's name and ARN, the store's
// indexes kept a COMPLETED ticket's first (QUEUED) version alive, and
// each event record wrapped its envelope with its topic, order key and
// sequence; it is about 2,900 B now.
func TestMemoryTickets(t *testing.T) {
	n := *memoryTickets
	h := newTicketHarness(t)
	h.svc.cfg.Publisher = events.New(events.Config{Store: h.st, Region: "us-west-2", Account: "123456789012", Now: h.clock.Now})
	h.config("matchload-1795677224494921123", nil)
	base := memtest.Live()
	for i := range n {
		in := &api.StartMatchmakingInput{ConfigurationName: cfgStr("matchload-1795677224494921123"),
			TicketId: cfgStr(fmt.Sprintf("2f8e4c1a-5b7d-4e3f-9a6c-%012d", i)),
			Players: []api.Player{{PlayerId: cfgStr(fmt.Sprintf("player-%07d", i)),
				LatencyInMs:      map[string]int32{"us-west-2": int32(20 + i%50), "us-east-1": int32(60 + i%40)},
				PlayerAttributes: map[string]api.AttributeValue{"skill": {N: new(float64(1000 + i%500))}}}}}
		if _, err := h.svc.StartMatchmaking(h.ctx, in); err != nil {
			t.Fatal(err)
		}
		if i%500 == 499 {
			h.process()
		}
	}
	h.process()
	h.process()
	completed := 0
	for i := range n {
		if h.ticket(fmt.Sprintf("2f8e4c1a-5b7d-4e3f-9a6c-%012d", i)).Status == stCompleted {
			completed++
		}
	}
	if completed != n {
		t.Fatalf("%d of %d tickets completed", completed, n)
	}
	per := (float64(memtest.Live()) - float64(base)) / float64(n)
	t.Logf("%d completed tickets retained: %.0f B of live heap each", n, per)
	if per > 3500 {
		t.Errorf("an ended ticket costs %.0f B of live heap, want at most 3,500", per)
	}
}

// TestTicketRecordLeavesOutWhatTheRecordHolds: a ticket's data holds
// neither its ID nor its configuration's name or ARN (the record's ID and
// Parent give them), and DescribeMatchmaking answers all three, for a
// ticket written so and for one an older Hoist wrote with them.
func TestTicketRecordLeavesOutWhatTheRecordHolds(t *testing.T) {
	h := newTicketHarness(t)
	h.config("c1", nil)
	h.start("c1", "t1", "p1")
	h.start("c1", "t2", "p2")
	h.process()
	h.process()
	const wantARN = "arn:aws:gamelift:us-west-2:123456789012:matchmakingconfiguration/c1"
	err := h.st.Update(h.ctx, func(tx store.Tx) error {
		for _, id := range []string{"t1", "t2"} {
			rec, err := tx.Get(h.ctx, KindTicket, id)
			if err != nil {
				return err
			}
			for _, f := range []string{"TicketId", "ConfigurationName", "ConfigurationArn"} {
				if bytes.Contains(rec.Data, []byte(f)) {
					t.Errorf("ticket %s's data holds %s: %s", id, f, rec.Data)
				}
			}
		}
		// t2 as an older Hoist wrote it.
		rec, err := tx.Get(h.ctx, KindTicket, "t2")
		if err != nil {
			return err
		}
		rec.Data = bytes.Replace(rec.Data, []byte(`{"ticket":{`),
			[]byte(`{"ticket":{"ConfigurationArn":"`+wantARN+`","ConfigurationName":"c1","TicketId":"t2",`), 1)
		return tx.Put(h.ctx, rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t1", "t2"} {
		tk := h.want(id, stCompleted)
		if api.ToString(tk.TicketId) != id || api.ToString(tk.ConfigurationName) != "c1" || api.ToString(tk.ConfigurationArn) != wantARN {
			t.Errorf("ticket %s described as ID %q, configuration %q, %q", id, api.ToString(tk.TicketId),
				api.ToString(tk.ConfigurationName), api.ToString(tk.ConfigurationArn))
		}
	}
}

// maximalPlayers returns the players of a ticket at every limit GameLift
// and Hoist allow: 10 players, each with a 1,024-character ID, latencies
// to 100 regions with 128-character names, and attrs attributes (at most
// 10) with 1,024-character names, each a list of 100 strings of 100
// characters. With 10 attributes the ticket's record is about 1.3 MB. i
// makes the strings of each ticket its own.
func maximalPlayers(i, attrs int) []api.Player {
	ps := make([]api.Player, 10)
	for p := range ps {
		pl := api.Player{PlayerId: cfgStr(fmt.Sprintf("%d-%d-%s", i, p, strings.Repeat("p", 1024))[:1024]),
			LatencyInMs: map[string]int32{}, PlayerAttributes: map[string]api.AttributeValue{}}
		for r := range 100 {
			pl.LatencyInMs[fmt.Sprintf("%03d%s", r, strings.Repeat("r", 125))] = int32(20 + r)
		}
		for a := range attrs {
			sl := make([]string, 100)
			for k := range sl {
				sl[k] = fmt.Sprintf("%d-%d-%d-%d-%s", i, p, a, k, strings.Repeat("s", 100))[:100]
			}
			pl.PlayerAttributes[fmt.Sprintf("%d%s", a, strings.Repeat("k", 1023))] = api.AttributeValue{SL: sl}
		}
		ps[p] = pl
	}
	return ps
}

// smallPlayers returns the players of a small ticket: 10 players with a
// short ID, one latency and one number attribute.
func smallPlayers(i int) []api.Player {
	ps := make([]api.Player, 10)
	for p := range ps {
		ps[p] = api.Player{PlayerId: cfgStr(fmt.Sprintf("%d-%d", i, p)), LatencyInMs: map[string]int32{"us-west-2": 20},
			PlayerAttributes: map[string]api.AttributeValue{"skill": {N: new(float64(i % 1000))}}}
	}
	return ps
}

// elevenBody is a rule set whose one team needs 11 players: parties of
// 10 never match, so their tickets stay SEARCHING.
const elevenBody = `{"name":"eleven","ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"number","default":10}],
 "teams":[{"name":"red","minPlayers":11,"maxPlayers":11}]}`

// searchingConfig creates the configuration name, of the rule set eleven
// (created once), with an hour's request timeout.
func (h *ticketHarness) searchingConfig(name string) {
	h.t.Helper()
	_, err := h.svc.CreateMatchmakingRuleSet(h.ctx, &api.CreateMatchmakingRuleSetInput{Name: cfgStr("eleven"), RuleSetBody: cfgStr(elevenBody)})
	var ir *api.InvalidRequestException
	if err != nil && !errors.As(err, &ir) {
		h.t.Fatal(err)
	}
	h.config(name, func(in *api.CreateMatchmakingConfigurationInput) {
		in.RuleSetName, in.RequestTimeoutSeconds = cfgStr("eleven"), cfgI32(3600)
	})
}

var maximalTickets = flag.Int("memory.maximal", 1200, "tickets TestMemoryMaximalTickets starts")

// TestMemoryMaximalTickets: 1,200 tickets at every limit (maximalPlayers,
// about 1.3 MB each) started for one configuration whose rule set never
// matches them, with a matchmaker pass after every 100, cost at most
// 192 MiB of live heap (three times MaxTicketBytes): the configuration
// takes the tickets up to its 64 MiB, about 50 of them, and refuses the
// rest with InvalidRequestException; the store holds each ticket once and
// the pool cache once decoded (about 1.3 times its size). Without the
// bound and the cache's versions, 400 such tickets cost 1.4 GB (the
// store's two versions of each, the pool's copy of its bytes and its
// decoded copy) and every pass copied them all.
func TestMemoryMaximalTickets(t *testing.T) {
	const bound = 3 * MaxTicketBytes
	h := newTicketHarness(t)
	h.searchingConfig("big")
	players := maximalPlayers(0, 10) // every ticket's: the store and the pool copy them
	base := memtest.Live()
	taken, refused := 0, 0
	for i := range *maximalTickets {
		_, err := h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("big"),
			TicketId: cfgStr(fmt.Sprint("t", i)), Players: players})
		var ir *api.InvalidRequestException
		switch {
		case err == nil:
			taken++
		case errors.As(err, &ir) && strings.Contains(err.Error(), "64 MiB"):
			refused++
		default:
			t.Fatalf("ticket %d: %v", i, err)
		}
		if i%100 == 99 {
			h.process()
			if grown := memtest.Live() - base; grown > bound {
				t.Fatalf("after %d tickets (%d taken) the live heap grew by %d MiB, want at most %d MiB", i+1, taken, grown>>20, bound>>20)
			}
		}
	}
	h.process()
	grown := memtest.Live() - base
	t.Logf("%d tickets taken, %d refused: %d MiB of live heap", taken, refused, grown>>20)
	if grown > bound {
		t.Errorf("the live heap grew by %d MiB, want at most %d MiB", grown>>20, bound>>20)
	}
	if taken < 40 || refused == 0 {
		t.Errorf("%d tickets taken and %d refused, want about 50 taken and the rest refused", taken, refused)
	}
	h.want("t0", stSearching)
}
