package matchmaking

import (
	"bytes"
	"flag"
	"fmt"
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
