package matchmaking

import (
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

// TestDiagnose: the console's dry pass sees the searching tickets, says
// what held each back, writes nothing, and runs no pass over more tickets
// than asked.
func TestDiagnose(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", nil)
	h.start("duel", "t1", "a")
	h.process()
	h.want("t1", stSearching)
	seq := func() int64 {
		var rec store.Record
		err := h.st.View(h.ctx, func(tx store.Tx) error {
			var err error
			rec, err = tx.Get(h.ctx, KindTicket, "t1")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return rec.Seq
	}
	before := seq()
	d, err := h.svc.Diagnose(h.ctx, "duel", 10)
	if err != nil {
		t.Fatal(err)
	}
	if d.RuleSet != "rs1" || d.Pool != 1 || d.TooMany || len(d.Matches) != 0 || len(d.Held) != 1 || d.Held[0].TicketID != "t1" || len(d.Held[0].Rules) != 0 {
		t.Fatalf("diagnosis %+v", d)
	}
	if seq() != before {
		t.Fatal("the dry pass wrote the ticket")
	}
	if d, err = h.svc.Diagnose(h.ctx, "duel", 0); err != nil || !d.TooMany || d.Held != nil {
		t.Fatalf("over the limit: %+v %v", d, err)
	}
}

// TestListTickets: a configuration's tickets, a page at a time, the most
// recently changed first, each with its match's metrics.
func TestListTickets(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", nil)
	h.start("duel", "t1", "a")
	h.process()
	h.start("duel", "t2", "b")
	h.process()
	h.start("duel", "t3", "c")
	page, next, err := h.svc.ListTickets(h.ctx, "duel", "", 2)
	if err != nil || len(page) != 2 || next == "" || *page[0].Ticket.TicketId != "t3" {
		t.Fatalf("first page %+v %q %v", page, next, err)
	}
	rest, next2, err := h.svc.ListTickets(h.ctx, "duel", next, 2)
	if err != nil || len(rest) != 1 || next2 != "" {
		t.Fatalf("second page %+v %q %v", rest, next2, err)
	}
	for _, v := range append(page, rest...) {
		if *v.Ticket.TicketId != "t3" && (v.MatchID == "" || v.Ticket.Status != stCompleted) {
			t.Errorf("matched ticket %+v", v)
		}
	}
	if _, _, err := h.svc.ListTickets(h.ctx, "duel", "forged", 2); err == nil {
		t.Error("a forged cursor was accepted")
	}
}
