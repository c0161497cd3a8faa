package fleets

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// TestProcessOutputOnAnotherReplica: the output a replica (r1) kept when
// its process crashed is recorded as r1's. Another replica (r2, the same
// store, a data directory of its own) asked for it answers
// *hosting.LogsElsewhere naming r1, and links it in the console; r1
// serves it. Once r1 prunes the copy (a fleet keeps the newest
// outputKeepCount), its record goes too and r2 answers NotFoundException.
// A purged fleet leaves no record.
func TestProcessOutputOnAnotherReplica(t *testing.T) {
	h, _ := crashHarness(t)
	id, inst := h.activeFleet(ec2Input(1))
	first := h.crash(inst, "segfault in map loader\n")
	cfg := h.svc.cfg
	cfg.ReplicaID, cfg.DataDir = "r2", t.TempDir()
	r2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var le *hosting.LogsElsewhere
	if err := r2.WriteProcessOutput(h.ctx, &bytes.Buffer{}, id, first); !errors.As(err, &le) || le.Replica != "r1" {
		t.Fatalf("r2's WriteProcessOutput: %v, want LogsElsewhere naming r1", err)
	}
	if kept := r2.ProcessOutputKept(id, []string{first, "process-never"}); !kept[first] || kept["process-never"] {
		t.Errorf("r2's ProcessOutputKept: %v, want only %s", kept, first)
	}
	var out bytes.Buffer
	if err := h.svc.WriteProcessOutput(h.ctx, &out, id, first); err != nil || out.String() != "segfault in map loader\n" {
		t.Fatalf("r1's WriteProcessOutput: %q, %v", out.String(), err)
	}
	for range outputKeepCount {
		h.crash(inst, "again\n")
	}
	err = r2.WriteProcessOutput(h.ctx, &bytes.Buffer{}, id, first)
	if nf := (*api.NotFoundException)(nil); !errors.As(err, &nf) {
		t.Errorf("r2's WriteProcessOutput of a pruned copy: %v, want NotFoundException", err)
	}
	if n := h.holderRecords(id); n != outputKeepCount {
		t.Errorf("%d holder records after %d crashes, want %d", n, outputKeepCount+1, outputKeepCount)
	}
	err = h.st.Update(h.ctx, func(tx store.Tx) error {
		f, err := getFleet(h.ctx, tx, id)
		if err != nil {
			return err
		}
		return h.svc.purgeFleet(h.ctx, tx, f, &effects{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := h.holderRecords(id); n != 0 {
		t.Errorf("%d holder records after the fleet was purged", n)
	}
}

// holderRecords counts a fleet's process output holder records.
func (h *harness) holderRecords(fleetID string) int {
	h.t.Helper()
	n := 0
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		return store.Each(h.ctx, tx, store.Query{Kind: kindProcessOutput, Parent: fleetID, HasParent: true},
			func(store.Record) error { n++; return nil })
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}
