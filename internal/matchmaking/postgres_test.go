package matchmaking

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest/pgstore"
)

// TestStartWakesTheConfigurationHolderOnPostgres: a ticket started through
// replica A is taken up at once (QUEUED to SEARCHING) by the matchmaker of
// replica B, which holds the configuration's shard, although B's loop
// would not look again for an hour: A's StartMatchmaking wakes the holder
// after its commit.
func TestStartWakesTheConfigurationHolderOnPostgres(t *testing.T) {
	st := pgstore.Open(t)
	h := &ticketHarness{configHarness: newConfigHarnessOn(t, st), rec: &recorder{}, placer: &fakePlacer{}}
	h.config("duel", nil)
	b := New(Config{Store: st, Region: "us-west-2", Account: "123456789012", Now: h.clock.Now,
		ReplicaID: "B", Interval: time.Hour})
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	aDone := make(chan struct{})
	go func() { h.svc.wake.Run(ctx); close(aDone) }() // replica A: its wakes, no loop
	t.Cleanup(func() { cancel(); <-done; <-aDone })
	pgtest.WaitFor(t, "B holds the configuration's shard", func() bool {
		gs, err := st.Leases(h.ctx, store.ShardLeasePrefix(loopName)+"duel")
		return err == nil && len(gs) == 1 && gs[0].Holder == "B"
	})
	h.start("duel", "t1", "a")
	pgtest.WaitFor(t, "the ticket SEARCHING", func() bool { return h.ticket("t1").Status == stSearching })
}

// TestStartsAtOnceDoNotConflictOnPostgres: StartMatchmaking calls at once
// on one configuration commit without running again: each adds its
// ticket's bytes to a record of the count of its own and reads the count
// and the wait estimate before its transaction, instead of all reading
// and writing the configuration's one count (serializable conflicts, then
// serial reruns). The bound still holds: the count is every ticket's.
func TestStartsAtOnceDoNotConflictOnPostgres(t *testing.T) {
	st := pgstore.Open(t)
	h := &ticketHarness{configHarness: newConfigHarnessOn(t, st), rec: &recorder{}, placer: &fakePlacer{}}
	h.config("duel", nil)
	for i := range 2 * ticketByteShards { // tickets started before, as after a while
		if err := h.startSmall("duel", ids.UUID(), i); err != nil {
			t.Fatal(err)
		}
	}
	// Other tickets, so that the new ones' IDs seldom share an index
	// page (PostgreSQL's predicate locks cover pages), as in a store
	// that has been running.
	err := st.Update(h.ctx, func(tx store.Tx) error {
		for range 4000 {
			if err := tx.Insert(h.ctx, store.Record{Kind: KindTicket, ID: ids.UUID(), Parent: "gone", Key: "x", Data: []byte("{}")}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const callers, each = 12, 4
	before := st.Stats()
	h.startAtOnce("duel", callers, each)
	after := st.Stats()
	// Before, 16 to 34 of the 48 ran again; now none (2 allowed: another
	// conflict on a shared index page).
	if r := after.Retries - before.Retries; r > 2 {
		t.Errorf("%d StartMatchmaking calls at once ran %d transactions again after a conflict, want at most 2", callers*each, r)
	}
	var one int64
	err = st.View(h.ctx, func(tx store.Tx) error {
		return store.Each(h.ctx, tx, store.Query{Kind: KindTicket, Parent: "duel", HasParent: true}, func(r store.Record) error {
			one += int64(len(r.Data) + len(r.ID))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := h.bytesOf("duel"); n <= 0 || n > one {
		t.Errorf("the count is %d for tickets of %d bytes together", n, one)
	}
}

// TestSearchingVersionKnown: a pass that takes a QUEUED ticket to
// SEARCHING keeps in its pool the version (Seq) the ticket's record has
// afterwards, so that the next pass does not read the ticket again. On
// PostgreSQL (Config.Shared) the write is a Put that keeps the record's
// Seq, known from the read before it, so the pass reads no ticket twice;
// on the embedded store it deletes and inserts the record and reads its
// new Seq. On both, a later write to the ticket gives it a new Seq, which
// the pool notices.
func TestSearchingVersionKnown(t *testing.T) {
	stores := map[string]func(t *testing.T) *ticketHarness{
		"journal": func(t *testing.T) *ticketHarness { return newTicketHarness(t) },
		"postgres": func(t *testing.T) *ticketHarness {
			h := &ticketHarness{configHarness: newConfigHarnessOn(t, pgstore.Open(t)), rec: &recorder{}, placer: &fakePlacer{}}
			h.svc.cfg.Shared = true
			return h
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			h := open(t)
			h.config("duel", nil)
			h.start("duel", "lonely", "p1")
			h.process()
			if got := h.ticket("lonely"); got.Status != stSearching || len(got.Players) != 1 {
				t.Fatalf("after a pass: %+v", got)
			}
			seqOf := func() int64 {
				var seq int64
				if err := h.svc.cfg.Store.View(h.ctx, func(tx store.Tx) error {
					rec, err := tx.Get(h.ctx, KindTicket, "lonely")
					seq = rec.Seq
					return err
				}); err != nil {
					t.Fatal(err)
				}
				return seq
			}
			cached := func() int64 {
				h.svc.pool.mu.Lock()
				defer h.svc.pool.mu.Unlock()
				if e := h.svc.pool.m["duel"]["lonely"]; e != nil {
					return e.seq
				}
				return -1
			}
			if c, r := cached(), seqOf(); c != r {
				t.Fatalf("the pool keeps version %d of the SEARCHING ticket, its record is at %d: the next pass reads it again", c, r)
			}
			if _, err := h.svc.StopMatchmaking(h.ctx, &api.StopMatchmakingInput{TicketId: cfgStr("lonely")}); err != nil {
				t.Fatal(err)
			}
			if c, r := cached(), seqOf(); c == r {
				t.Fatalf("after StopMatchmaking the record is still at the pool's version %d", r)
			}
		})
	}
}

// TestConsecutiveStartsDoNotConflictOnPostgres: StartMatchmaking calls at
// once with consecutive ticket IDs (as studios often number them) commit
// without running again. Their tickets go to neighbouring entries of one
// page of the records' primary key, and each insert reads that page for a
// ticket of its ID first; under SERIALIZABLE that read is a predicate lock
// on the page, which every neighbour's insert then conflicts with (before:
// about a third of the calls ran again, alone). The starts are Claims, at
// READ COMMITTED, that take no predicate locks.
func TestConsecutiveStartsDoNotConflictOnPostgres(t *testing.T) {
	h := newPostgresTicketHarness(t)
	h.config("duel", nil)
	for i := range 2 * ticketByteShards { // tickets started before, as after a while
		if err := h.startSmall("duel", fmt.Sprintf("warm-%06d", i), i); err != nil {
			t.Fatal(err)
		}
	}
	const callers, each = 12, 4
	st := h.st.(*postgres.Store)
	before := st.Stats()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				n := i*callers + c // the calls at once have neighbouring IDs
				if err := h.startSmall("duel", fmt.Sprintf("ticket-%06d", n), n); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if r := st.Stats().Retries - before.Retries; r != 0 {
		t.Errorf("%d StartMatchmaking calls at once with consecutive ticket IDs ran %d transactions again after a conflict, want 0", callers*each, r)
	}
	for n := range callers * each {
		if got := h.ticket(fmt.Sprintf("ticket-%06d", n)); got.Status != stQueued {
			t.Fatalf("ticket %d: %+v", n, got)
		}
	}
}

// TestSameTicketIDAtOnceOnPostgres: of two StartMatchmaking calls at once
// with one ticket ID, exactly one succeeds and the other is refused with
// InvalidRequestException (the ID was used), although neither reads the
// other's ticket: the second insert of the ID waits for the first and
// finds it (the insert is not answered: the failure ends the transaction,
// and the call answers as for an ID used before, as a third call after
// both is). The ticket's bytes are counted once.
func TestSameTicketIDAtOnceOnPostgres(t *testing.T) {
	h := newPostgresTicketHarness(t)
	h.config("duel", nil)
	for i := range 2 * ticketByteShards {
		if err := h.startSmall("duel", fmt.Sprintf("warm-%06d", i), i); err != nil {
			t.Fatal(err)
		}
	}
	bytesBefore := h.bytesOf("duel")
	var size int64
	for round := range 20 {
		id := fmt.Sprintf("same-%d", round)
		errs := make([]error, 2)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for k := range errs {
			wg.Go(func() { <-start; errs[k] = h.startSmall("duel", id, round) })
		}
		close(start)
		wg.Wait()
		ok := 0
		for _, err := range errs {
			var ir *api.InvalidRequestException
			switch {
			case err == nil:
				ok++
			case !errors.As(err, &ir) || !strings.Contains(err.Error(), "already used"):
				t.Fatalf("round %d: %v, want success or InvalidRequestException", round, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d of 2 calls with ticket ID %s succeeded, want 1 (%v)", round, ok, id, errs)
		}
		var ir *api.InvalidRequestException
		if err := h.startSmall("duel", id, round); !errors.As(err, &ir) || !strings.Contains(err.Error(), "already used") {
			t.Fatalf("round %d: a start with ticket ID %s after both: %v, want InvalidRequestException", round, id, err)
		}
		err := h.st.View(h.ctx, func(tx store.Tx) error {
			tk, err := getTicket(h.ctx, tx, id)
			if err == nil {
				size += tk.Size
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := h.bytesOf("duel") - bytesBefore; got != size {
		t.Errorf("the count grew by %d for 20 tickets of %d bytes together", got, size)
	}
}

// TestStartsAndDeleteAtOnceOnPostgres: DeleteMatchmakingConfiguration at
// the same time as StartMatchmaking calls (Claims, which read the
// configuration without holding it) never leaves a ticket of a deleted
// configuration: each start holds a record of the configuration's count,
// which the delete deletes, so the delete waits for it and then sees its
// ticket (refused), or the start finds the configuration gone.
func TestStartsAndDeleteAtOnceOnPostgres(t *testing.T) {
	h := newPostgresTicketHarness(t)
	for round := range 10 {
		name := fmt.Sprintf("c%d", round)
		h.config(name, nil) // with every record of its count, at 0
		start := make(chan struct{})
		var wg sync.WaitGroup
		for k := range 8 {
			wg.Go(func() {
				<-start
				_ = h.startSmall(name, fmt.Sprintf("%s-%d", name, k), k) // NotFoundException once deleted
			})
		}
		wg.Go(func() {
			<-start
			_, _ = h.svc.DeleteMatchmakingConfiguration(h.ctx, &api.DeleteMatchmakingConfigurationInput{Name: cfgStr(name)})
		})
		close(start)
		wg.Wait()
		var tickets int
		var exists bool
		err := h.st.View(h.ctx, func(tx store.Tx) error {
			var err error
			if tickets, err = tx.Count(h.ctx, store.Query{Kind: KindTicket, Parent: name, HasParent: true}); err != nil {
				return err
			}
			_, err = getConfig(h.ctx, tx, name)
			exists = err == nil
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !exists && tickets > 0 {
			t.Fatalf("round %d: configuration %s deleted with %d tickets started", round, name, tickets)
		}
	}
}

// newPostgresTicketHarness is a ticket harness on a PostgreSQL store of
// its own schema, shared as by several replicas (its starts are Claims).
func newPostgresTicketHarness(t *testing.T) *ticketHarness {
	st := pgstore.Open(t)
	h := &ticketHarness{configHarness: newConfigHarnessOn(t, st), rec: &recorder{}, placer: &fakePlacer{}}
	h.svc.cfg.Shared = true
	return h
}

// TestStartReadsTheConfigurationsRuleSetOnPostgres: a start's Claim reads
// the rule set its configuration named when last read on this replica
// with the configuration, in one round trip (readForStart); once the
// configuration names another rule set, the starts after are checked
// against the new one, the first reading it itself and the next with
// the configuration.
func TestStartReadsTheConfigurationsRuleSetOnPostgres(t *testing.T) {
	h := newPostgresTicketHarness(t)
	const stringsBody = `{"name":"strings","ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"string","default":"ten"}],
 "teams":[{"name":"red","minPlayers":1,"maxPlayers":1},{"name":"blue","minPlayers":1,"maxPlayers":1}]}`
	if _, err := h.svc.CreateMatchmakingRuleSet(h.ctx, &api.CreateMatchmakingRuleSetInput{Name: cfgStr("strings"), RuleSetBody: cfgStr(stringsBody)}); err != nil {
		t.Fatal(err)
	}
	h.config("duel", nil)
	h.start("duel", "t-0", "p-0") // the replica learns the configuration's rule set
	if _, err := h.svc.UpdateMatchmakingConfiguration(h.ctx, &api.UpdateMatchmakingConfigurationInput{Name: cfgStr("duel"), RuleSetName: cfgStr("strings")}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"after-1", "after-2"} {
		_, err := h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("duel"), TicketId: cfgStr(id),
			Players: []api.Player{{PlayerId: cfgStr(id), PlayerAttributes: map[string]api.AttributeValue{"skill": {N: new(12.0)}}}}})
		cfgWantInvalid(t, id+": a number where the configuration's new rule set declares a string", err, "declares skill as string")
		_, err = h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("duel"), TicketId: cfgStr(id + "-s"),
			Players: []api.Player{{PlayerId: cfgStr(id), PlayerAttributes: map[string]api.AttributeValue{"skill": {S: cfgStr("high")}}}}})
		if err != nil {
			t.Fatalf("%s: a string, as the new rule set declares: %v", id, err)
		}
	}
	if name, _ := h.svc.ruleSetNames.Load("duel"); name != "strings" {
		t.Fatalf("the rule set the replica knows the configuration by: %v, want strings", name)
	}
}

// TestFirstStartsAreClaimsOnPostgres: CreateMatchmakingConfiguration
// writes every record of the configuration's count, so that the first
// StartMatchmaking calls at once on a new configuration all run as Claims
// (READ COMMITTED, row locks), none as an Update. Before, each of the
// first ticketByteShards starts found no record to add to and ran as a
// SERIALIZABLE Update inserting it; those conflicted with each other and
// every one run again ran alone, holding up every start (at the start of
// a FlexMatch load on three replicas: 65 serialization failures in its
// first second).
func TestFirstStartsAreClaimsOnPostgres(t *testing.T) {
	h := newPostgresTicketHarness(t)
	h.config("duel", nil)
	if n := h.countRecords("duel"); n != ticketByteShards {
		t.Fatalf("a new configuration has %d records of its count, want %d", n, ticketByteShards)
	}
	st := h.st.(*postgres.Store)
	before := st.Stats()
	const callers, each = 12, 4
	h.startAtOnce("duel", callers, each)
	after := st.Stats()
	if n := updates(after) - updates(before); n != 0 {
		t.Errorf("%d first StartMatchmaking calls at once committed %d Updates, want none (all Claims)", callers*each, n)
	}
	if r := after.Retries - before.Retries; r != 0 {
		t.Errorf("%d first StartMatchmaking calls at once ran %d transactions again, want 0", callers*each, r)
	}
	if n := h.countRecords("duel"); n != ticketByteShards {
		t.Errorf("after the starts the configuration has %d records of its count, want %d", n, ticketByteShards)
	}
}

// TestEarlierConfigurationGetsItsCountOnPostgres: a configuration an
// earlier Hoist created has no records of its count; its first start runs
// as an Update that writes them all, and the starts after it are Claims.
func TestEarlierConfigurationGetsItsCountOnPostgres(t *testing.T) {
	h := newPostgresTicketHarness(t)
	h.config("duel", nil)
	err := h.st.Update(h.ctx, func(tx store.Tx) error { return deleteTicketBytes(h.ctx, tx, "duel") })
	if err != nil {
		t.Fatal(err)
	}
	st := h.st.(*postgres.Store)
	before := st.Stats()
	if err := h.startSmall("duel", "first", 0); err != nil {
		t.Fatal(err)
	}
	if n := updates(st.Stats()) - updates(before); n != 1 {
		t.Errorf("the first start committed %d Updates, want 1", n)
	}
	if n := h.countRecords("duel"); n != ticketByteShards {
		t.Fatalf("after the first start the configuration has %d records of its count, want %d", n, ticketByteShards)
	}
	before = st.Stats()
	for i := range ticketByteShards {
		if err := h.startSmall("duel", fmt.Sprintf("next-%d", i), i+1); err != nil {
			t.Fatal(err)
		}
	}
	if n := updates(st.Stats()) - updates(before); n != 0 {
		t.Errorf("%d starts after the first committed %d Updates, want none", ticketByteShards, n)
	}
	if got := h.bytesOf("duel"); got <= 0 {
		t.Errorf("the count is %d after %d tickets", got, ticketByteShards+1)
	}
}

// updates is how many Updates (not Claims) the store committed.
func updates(s postgres.Stats) int64 { return s.Commits - s.Claims }

// countRecords returns how many records of config's count hold added
// bytes.
func (h *ticketHarness) countRecords(config string) int {
	h.t.Helper()
	var n int
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		recs, _, err := tx.List(h.ctx, store.Query{Kind: KindTicketBytes, Parent: config, HasParent: true, Key: bytesAdded, HasKey: true, NoData: true})
		n = len(recs)
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// startAtOnce starts callers*each small tickets on config with random IDs,
// callers at once, each one after the other.
func (h *ticketHarness) startAtOnce(config string, callers, each int) {
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				if err := h.startSmall(config, ids.UUID(), c*each+i); err != nil {
					h.t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
