package matchmaking

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// bytesOf reads the configuration's ticket bytes.
func (h *ticketHarness) bytesOf(config string) int64 {
	h.t.Helper()
	var n int64
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		var err error
		n, err = ticketBytes(h.ctx, tx, config)
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// startSmall starts a ticket of smallPlayers(i) for config.
func (h *ticketHarness) startSmall(config, id string, i int) error {
	_, err := h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr(config),
		TicketId: cfgStr(id), Players: smallPlayers(i)})
	return err
}

// wantBound checks that err is the refusal of a ticket past the bound.
func wantBound(t *testing.T, what string, err error, bound int64) {
	t.Helper()
	var ir *api.InvalidRequestException
	if !errors.As(err, &ir) || !strings.Contains(err.Error(), fmt.Sprintf("at most %d bytes", bound)) {
		t.Fatalf("%s: %v, want InvalidRequestException naming the bound of %d bytes", what, err, bound)
	}
}

// TestTicketBytesBound: a configuration's active tickets hold at most
// maxTicketBytes, counted as each ticket's record when it started.
// StartMatchmaking and StartMatchBackfill refuse a ticket that would pass
// it (InvalidRequestException naming the bound, and nothing stored); a
// ticket gives its bytes back when it ends (stopped, timed out, matched),
// whatever it went through; other configurations have their own count.
func TestTicketBytesBound(t *testing.T) {
	h := newTicketHarness(t)
	h.searchingConfig("big")
	if err := h.startSmall("big", "t1", 1); err != nil {
		t.Fatal(err)
	}
	one := h.bytesOf("big")
	var rec store.Record
	_ = h.st.View(h.ctx, func(tx store.Tx) (err error) { rec, err = tx.Get(h.ctx, KindTicket, "t1"); return err })
	if size := int64(len(rec.Data) + len(rec.ID)); one <= 0 || one > size || size-one > 20 {
		t.Fatalf("one ticket of %d bytes counts %d", size, one)
	}
	h.svc.maxTicketBytes = 2*one + one/2
	if err := h.startSmall("big", "t2", 2); err != nil {
		t.Fatal(err)
	}
	wantBound(t, "third ticket", h.startSmall("big", "t3", 3), h.svc.maxTicketBytes)
	if out, _ := h.svc.DescribeMatchmaking(h.ctx, &api.DescribeMatchmakingInput{TicketIds: []string{"t3"}}); len(out.TicketList) != 0 {
		t.Fatalf("the refused ticket was stored: %+v", out.TicketList)
	}
	if n := h.bytesOf("big"); n != 2*one {
		t.Fatalf("after a refusal the count is %d, want %d", n, 2*one)
	}
	players := smallPlayers(4)
	for i := range players {
		players[i].Team = cfgStr("red")
	}
	_, err := h.svc.StartMatchBackfill(h.ctx, &api.StartMatchBackfillInput{ConfigurationName: cfgStr("big"), TicketId: cfgStr("b1"), Players: players})
	wantBound(t, "backfill ticket", err, h.svc.maxTicketBytes)

	// Searching (a new version of each record) keeps the count; stopping
	// gives a ticket's bytes back.
	h.process()
	h.want("t1", stSearching)
	if _, err := h.svc.StopMatchmaking(h.ctx, &api.StopMatchmakingInput{TicketId: cfgStr("t1")}); err != nil {
		t.Fatal(err)
	}
	if n := h.bytesOf("big"); n != one {
		t.Fatalf("after a stop the count is %d, want %d", n, one)
	}
	if err := h.startSmall("big", "t3", 3); err != nil {
		t.Fatalf("a ticket within the bound again: %v", err)
	}
	// Another configuration has its own count.
	h.searchingConfig("other")
	if err := h.startSmall("other", "o1", 5); err != nil {
		t.Fatal(err)
	}
	// Timing out gives the bytes back.
	h.clock.Advance(time.Hour)
	h.process()
	h.want("t2", stTimedOut)
	h.want("t3", stTimedOut)
	if n, m := h.bytesOf("big"), h.bytesOf("other"); n != 0 || m != 0 {
		t.Fatalf("with every ticket ended the counts are %d and %d, want 0", n, m)
	}
	// Matched tickets give theirs back; a deleted configuration leaves no
	// count behind.
	h.config("duel", nil)
	h.start("duel", "d1", "p1")
	h.start("duel", "d2", "p2")
	h.process()
	h.want("d1", stCompleted)
	if n := h.bytesOf("duel"); n != 0 {
		t.Fatalf("with both tickets matched the count is %d, want 0", n)
	}
	if _, err := h.svc.DeleteMatchmakingConfiguration(h.ctx, &api.DeleteMatchmakingConfigurationInput{Name: cfgStr("big")}); err != nil {
		t.Fatal(err)
	}
	err = h.st.View(h.ctx, func(tx store.Tx) error { _, err := tx.Get(h.ctx, KindTicketBytes, "big"); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the deleted configuration's count: %v, want ErrNotFound", err)
	}
}

// TestTicketBytesBoundExactAtOnce: on one replica's store the bound is
// exact however many StartMatchmaking calls come at once: with room for
// one more ticket, 16 calls at once start exactly one (each reads the
// count in its own transaction; on a shared store it is read just before,
// and calls in flight at once may each pass).
func TestTicketBytesBoundExactAtOnce(t *testing.T) {
	h := newTicketHarness(t)
	h.searchingConfig("big")
	if err := h.startSmall("big", "t00", 1); err != nil {
		t.Fatal(err)
	}
	one := h.bytesOf("big")
	h.svc.maxTicketBytes = 2*one + one/2
	const n = 16
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := range n {
		go func() {
			<-start
			errs <- h.startSmall("big", fmt.Sprintf("t%02d", i+1), 1)
		}()
	}
	close(start)
	started := 0
	for range n {
		if err := <-errs; err == nil {
			started++
		} else {
			wantBound(t, "a call at once", err, h.svc.maxTicketBytes)
		}
	}
	if started != 1 {
		t.Fatalf("%d of %d calls at once started a ticket with room for one", started, n)
	}
	if got := h.bytesOf("big"); got > h.svc.maxTicketBytes {
		t.Fatalf("the count is %d, past the bound of %d", got, h.svc.maxTicketBytes)
	}
}

// TestTicketBytesReadForSeveralStarts: on a shared store (PostgreSQL) a
// replica reads a configuration's count once for the starts of
// countsFresh, adding the bytes of the tickets it started since: its own
// starts in that time count against the bound at once, another replica
// reads the count itself, and a ticket that ended elsewhere is seen once
// the read is countsFresh old.
func TestTicketBytesReadForSeveralStarts(t *testing.T) {
	h := newTicketHarness(t)
	h.svc.cfg.Shared = true
	h.searchingConfig("big")
	other := New(Config{Store: h.st, Region: "us-west-2", Account: "123456789012", Now: h.clock.Now, Shared: true})
	if err := h.startSmall("big", "t00", 1); err != nil {
		t.Fatal(err)
	}
	one := h.bytesOf("big")
	h.svc.maxTicketBytes, other.maxTicketBytes = 2*one+one/2, 2*one+one/2
	if err := h.startSmall("big", "t01", 1); err != nil { // read 0, started here since: one
		t.Fatal(err)
	}
	wantBound(t, "a third ticket here", h.startSmall("big", "t02", 1), h.svc.maxTicketBytes)
	_, err := other.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("big"),
		TicketId: cfgStr("t03"), Players: smallPlayers(1)})
	wantBound(t, "a third ticket on another replica", err, other.maxTicketBytes)

	if _, err := other.StopMatchmaking(h.ctx, &api.StopMatchmakingInput{TicketId: cfgStr("t00")}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(countsFresh - time.Millisecond)
	wantBound(t, "a start here before the read is countsFresh old", h.startSmall("big", "t04", 1), h.svc.maxTicketBytes)
	h.clock.Advance(time.Millisecond)
	if err := h.startSmall("big", "t05", 1); err != nil {
		t.Fatalf("a start once the read is countsFresh old, with t00 ended on another replica: %v", err)
	}
	if got := h.bytesOf("big"); got > h.svc.maxTicketBytes || got < 2*one-one/10 {
		t.Fatalf("the count is %d, want about %d (two tickets)", got, 2*one)
	}
}
