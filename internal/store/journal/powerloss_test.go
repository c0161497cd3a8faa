package journal

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

// powerModel is what the writers of TestPowerLoss were told: for each key,
// its value as of the last acknowledged write ("" once deleted), and the
// value of a write that failed (the power went during it), which may or
// may not have become durable.
type powerModel struct {
	mu    sync.Mutex
	acked map[string]string
	doubt map[string]string
}

// TestPowerLoss: every acknowledged write survives a power cut at a random
// point (memFS: what was not synced is lost, or random sectors of it land,
// in any order; so may sectors of a direct write in flight), in both write
// modes, through rotations and snapshots, and
// through several cuts in a row on the same data, each followed by a
// recovery that must open without calling anything damage.
func TestPowerLoss(t *testing.T) { forWriteModes(t, testPowerLoss) }

func testPowerLoss(t *testing.T, opts Options) {
	const dir = "/mem/store"
	rounds := 30
	if testing.Short() {
		rounds = 6
	}
	var cuts, acked int
	for round := range rounds {
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		m := newMemFS()
		model := &powerModel{acked: map[string]string{}, doubt: map[string]string{}}
		for life := range 5 {
			m.cutAt = m.ops + 1 + rng.IntN(250)
			o := opts
			o.fs = m
			o.SnapshotBytes = 512 + rng.Int64N(4<<10)
			m.tornWrite = nil
			if rng.IntN(2) == 0 {
				p := rng.Float64()
				m.tornWrite = func() bool { return rng.Float64() < p }
			}
			s, err := Open(dir, o)
			if err != nil {
				if !errors.Is(err, errPowerCut) {
					t.Fatalf("round %d life %d: Open after a power cut: %v", round, life, err)
				}
			} else {
				// What recovery found: every acknowledged write.
				model.check(t, fmt.Sprintf("round %d life %d", round, life), contents(t, s))
				acked += model.write(s, rng, fmt.Sprintf("r%dl%d", round, life))
				_ = s.Close()
			}
			cuts++
			var tear *rand.Rand
			if rng.IntN(2) == 0 {
				tear = rng
			}
			m = m.image(tear)
		}
		// The last cut's recovery.
		s, err := Open(dir, Options{fs: m, BufferedWrites: opts.BufferedWrites})
		if err != nil {
			t.Fatalf("round %d: final Open: %v", round, err)
		}
		model.check(t, fmt.Sprintf("round %d final", round), contents(t, s))
		_ = s.Close()
	}
	t.Logf("%d power cuts, %d acknowledged writes checked after them", cuts, acked)
}

// write runs six writers, each on its own keys, until the store fails
// (the power went) or each has written 60 times; it returns the number of
// writes acknowledged.
func (pm *powerModel) write(s *Store, rng *rand.Rand, tag string) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for w := range 6 {
		seed := rng.Uint64()
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for step := range 60 {
				key := fmt.Sprintf("w%d-%d", w, r.IntN(8))
				val := ""
				if r.IntN(5) > 0 {
					// Up to 1 KB: batches span several sectors.
					val = fmt.Sprintf("%s-%d-%d-%s", tag, w, step, strings.Repeat("v", r.IntN(1000)))
				}
				err := s.Update(context.Background(), func(tx store.Tx) error {
					if val == "" {
						err := tx.Delete(context.Background(), "K", key)
						if errors.Is(err, store.ErrNotFound) {
							return nil
						}
						return err
					}
					return tx.Put(context.Background(), store.Record{Kind: "K", ID: key, Data: []byte(val)})
				})
				pm.mu.Lock()
				if err != nil {
					pm.doubt[key] = val
				} else {
					pm.acked[key] = val
				}
				pm.mu.Unlock()
				if err != nil {
					return
				}
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return n
}

// check compares the recovered state with the model and then takes it as
// the model: what recovery found is durable.
func (pm *powerModel) check(t *testing.T, when string, got map[string]string) {
	t.Helper()
	pm.mu.Lock()
	defer pm.mu.Unlock()
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range pm.acked {
		keys[k] = true
	}
	for k := range keys {
		g, want := got[k], pm.acked[k]
		d, inDoubt := pm.doubt[k]
		if g != want && !(inDoubt && g == d) {
			t.Fatalf("%s: %s = %q after a power cut, acknowledged %q (in doubt: %v %q)", when, k, g, want, inDoubt, d)
		}
	}
	clear(pm.acked)
	for k, v := range got {
		pm.acked[k] = v
	}
	clear(pm.doubt)
}
