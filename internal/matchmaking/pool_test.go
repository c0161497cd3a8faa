package matchmaking

import (
	"bytes"
	"context"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/flexmatch"
	"github.com/hoistgg/hoist/internal/store"
)

// poolOf lists the configuration's SEARCHING tickets through the pool
// cache of s, as a pass does.
func poolOf(t *testing.T, h *ticketHarness, s *Service, config string) map[string]*pooled {
	t.Helper()
	out := map[string]*pooled{}
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		es, err := s.pool.searching(h.ctx, tx, config)
		for _, e := range es {
			out[e.flex.ID] = e
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPoolCacheVersions: the pool cache keeps a SEARCHING ticket decoded
// while its record keeps its version (Seq), decodes it again when the
// record was written anew, and forgets a ticket that left SEARCHING. A
// second Service on the same store (a replica taking the matchmaker's
// lease over) starts with an empty cache and reads the same pool.
func TestPoolCacheVersions(t *testing.T) {
	h := newTicketHarness(t)
	h.searchingConfig("c")
	for _, id := range []string{"t1", "t2"} {
		if err := h.startSmall("c", id, 1); err != nil {
			t.Fatal(err)
		}
	}
	h.process()
	first := poolOf(t, h, h.svc, "c")
	if len(first) != 2 || first["t1"] == nil || first["t1"].flex.Players[0].ID != "1-0" {
		t.Fatalf("pool %+v, want t1 and t2", first)
	}
	if again := poolOf(t, h, h.svc, "c"); again["t1"] != first["t1"] || again["t2"] != first["t2"] {
		t.Fatal("an unchanged ticket was decoded again")
	}
	// Another writer (another replica) changes t1's record.
	err := h.st.Update(h.ctx, func(tx store.Tx) error {
		rec, err := tx.Get(h.ctx, KindTicket, "t1")
		if err != nil {
			return err
		}
		rec.Data = bytes.ReplaceAll(rec.Data, []byte(`"1-0"`), []byte(`"changed"`))
		if err := tx.Delete(h.ctx, KindTicket, "t1"); err != nil {
			return err
		}
		return tx.Insert(h.ctx, rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	changed := poolOf(t, h, h.svc, "c")
	if e := changed["t1"]; e == nil || e.seq == first["t1"].seq || e.flex.Players[0].ID != "changed" {
		t.Fatalf("after t1's record changed the pool holds %+v", e)
	}
	if changed["t2"] != first["t2"] {
		t.Fatal("t2 was decoded again though its record did not change")
	}
	if _, err := h.svc.StopMatchmaking(h.ctx, &api.StopMatchmakingInput{TicketId: cfgStr("t2")}); err != nil {
		t.Fatal(err)
	}
	if left := poolOf(t, h, h.svc, "c"); len(left) != 1 || len(h.svc.pool.m["c"]) != 1 {
		t.Fatalf("after t2 stopped the pool holds %d tickets and the cache %d, want 1", len(left), len(h.svc.pool.m["c"]))
	}
	replica := New(h.svc.cfg)
	if got := poolOf(t, h, replica, "c"); len(got) != 1 || got["t1"].seq != changed["t1"].seq {
		t.Fatalf("a new replica's pool %+v", got)
	}
}

// TestApplyDropsStaleVersion: a match is applied only if each of its
// tickets' records is the version the matcher saw; else it is dropped and
// its tickets search on.
func TestApplyDropsStaleVersion(t *testing.T) {
	h := newTicketHarness(t)
	h.svc.passWork = 0 // the pass moves the tickets to SEARCHING, and forms no match
	h.config("duel", nil)
	h.start("duel", "d1", "p1")
	h.start("duel", "d2", "p2")
	h.process()
	h.want("d1", stSearching)
	seen := poolOf(t, h, h.svc, "duel")
	fm := flexmatch.Match{Tickets: []string{"d1", "d2"},
		Teams: []flexmatch.Team{{Name: "red", Players: []string{"p1"}}, {Name: "blue", Players: []string{"p2"}}}}
	apply := func(inPool map[string]*pooled) []*ticketRecord {
		var ts []*ticketRecord
		err := h.svc.update(h.ctx, func(ctx context.Context, tx store.Tx) error {
			c, err := getConfig(ctx, tx, "duel")
			if err != nil {
				return err
			}
			rs, err := h.svc.ruleSetOf(ctx, tx, c)
			if err != nil {
				return err
			}
			read, err := ticketsByID(ctx, tx, fm.Tickets)
			if err != nil {
				return err
			}
			ts, err = h.svc.applyTx(ctx, tx, c, rs, &fm, inPool, read, h.svc.now())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	stale := *seen["d1"]
	stale.seq--
	if ts := apply(map[string]*pooled{"d1": &stale, "d2": seen["d2"]}); len(ts) != 0 {
		t.Fatalf("a match of a stale ticket was applied: %d tickets", len(ts))
	}
	h.want("d1", stSearching)
	h.want("d2", stSearching)
	if ts := apply(seen); len(ts) != 2 {
		t.Fatalf("the match of current tickets applied %d tickets, want 2", len(ts))
	}
	h.want("d1", stCompleted)
}
