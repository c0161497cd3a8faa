package sessions

import (
	"flag"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/memtest"
	"github.com/hoistgg/hoist/internal/store/journal"
)

// memorySessions is how many game sessions TestMemorySessions starts: a
// small number in the normal test run, more for the figures of
// docs/performance.md ("Memory"):
//
//	go test -run TestMemorySessions -v -timeout 30m ./internal/sessions/ -memory.sessions 100000
var memorySessions = flag.Int("memory.sessions", 1_000, "game sessions TestMemorySessions starts")

// playersPerSession is how many player sessions TestMemorySessions
// creates in each game session.
const playersPerSession = 4

// TestMemorySessions measures, through the Service on the journal store,
// what each record kind of a game session's life costs in live heap: a
// ready server process, an ACTIVE game session, a player session (ACTIVE:
// reserved and accepted), and the same game session once ended (TERMINATED,
// kept for the retention period with its player sessions). It then restarts
// in a new process and reports the open time and memory of the whole store.
func TestMemorySessions(t *testing.T) {
	n := *memorySessions
	dir := filepath.Join(t.TempDir(), "store")
	st, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Store = st; c.Now = time.Now })
	h.st = st
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	pid := func(i int) string { return fmt.Sprintf("proc-%07d", i) }
	gsIDs := make([]string, n)
	live := []uint64{memtest.Live()}
	phases := []struct {
		name string
		per  int // records of the kind per game session
		step func(i int) error
	}{
		{"server process (ACTIVE)", 1, func(i int) error {
			err := h.svc.ProcessLaunched(h.ctx, hosting.Process{ID: pid(i), FleetID: "fleet-1", ComputeName: "i-1",
				Location: "us-west-2", LaunchPath: "/local/game/server"})
			if err != nil {
				return err
			}
			c := conn("fleet-1", "i-1", pid(i))
			if err := h.sdk.Connected(h.ctx, c); err != nil {
				return err
			}
			return h.sdk.ProcessReady(h.ctx, c, int32(1024+i%50000), []string{"logs"})
		}},
		{"game session (ACTIVE)", 1, func(i int) error {
			gs, err := h.create("fleet-1", func(in *api.CreateGameSessionInput) {
				in.MaximumPlayerSessionCount = api.Int32(playersPerSession)
				in.CreatorId = api.String(fmt.Sprint("creator-", i))
				in.GameProperties = []api.GameProperty{{Key: api.String("mode"), Value: api.String("ranked")}}
			})
			if err != nil {
				return err
			}
			// placement picks any free process: activate on the one it chose
			gsIDs[i] = api.ToString(gs.GameSessionId)
			return h.sdk.ActivateGameSession(h.ctx, conn("fleet-1", "i-1", h.gameSession(gsIDs[i]).ProcessID), gsIDs[i])
		}},
		{"player session (ACTIVE)", playersPerSession, func(i int) error {
			players := make([]string, playersPerSession)
			for k := range players {
				players[k] = fmt.Sprintf("player-%07d-%d", i, k)
			}
			ids, err := h.reserve(gsIDs[i], players...)
			if err != nil {
				return err
			}
			p := h.gameSession(gsIDs[i]).ProcessID
			for _, id := range ids {
				if err := h.sdk.AcceptPlayerSession(h.ctx, conn("fleet-1", "i-1", p), gsIDs[i], id); err != nil {
					return err
				}
			}
			return nil
		}},
		{"ended game session with its player sessions and process (TERMINATED)", 1, func(i int) error {
			return h.sdk.ProcessEnding(h.ctx, conn("fleet-1", "i-1", h.gameSession(gsIDs[i]).ProcessID))
		}},
	}
	for _, ph := range phases {
		start := time.Now()
		if err := parallel(n, ph.step); err != nil {
			t.Fatalf("%s: %v", ph.name, err)
		}
		live = append(live, memtest.Live())
		prev, cur := live[len(live)-2], live[len(live)-1]
		t.Logf("%s: %+.0f B each while running (%d in %v)", ph.name, (float64(cur)-float64(prev))/float64(n*ph.per), n*ph.per,
			time.Since(start).Round(time.Millisecond))
	}
	sizes, err := memtest.Sizes(h.ctx, st, hosting.KindGameSession, hosting.KindPlayerSession, hosting.KindProcess,
		kindProcessDue, kindCreation, kindPlayerIndex)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	r := memtest.Restart(t, "TestMemoryChild", dir)
	t.Logf("restart: open %v; live heap %.0f B per ended game session (with its %d player sessions and process); heap spans %.0f B; resident memory %.1f MB after a collection (test binary alone %.1f MB)",
		r.Open.Round(time.Millisecond), memtest.PerRecord(r.Heap, n), playersPerSession, memtest.PerRecord(r.HeapInuse, n),
		float64(r.RSSCollected)/(1<<20), float64(r.RSSBase)/(1<<20))
	fixed, per := memtest.Split(r.Heap, sizes)
	t.Logf("after the restart, per record: %.0f B of structure and indexes plus what it holds:", fixed)
	for _, sz := range sizes {
		t.Logf("  %-22s %8d records, %5.0f B each", sz.Kind, sz.Records, per[sz.Kind])
	}
	gs := per[hosting.KindGameSession] + per[kindCreation]
	ps := per[hosting.KindPlayerSession] + per[kindPlayerIndex]
	t.Logf("an ended game session costs %.0f B, a player session %.0f B, a TERMINATED process %.0f B (kept %v)",
		gs, ps, per[hosting.KindProcess]+per[kindProcessDue], 24*time.Hour)
	// The bounds the documentation's figures rest on, with room for the
	// allocator's variation.
	if gs > 3000 || ps > 1500 {
		t.Errorf("a game session costs %.0f B and a player session %.0f B, want at most 3000 and 1500", gs, ps)
	}
}

// TestMemoryChild is the restarted process of TestMemorySessions.
func TestMemoryChild(t *testing.T) { memtest.Child(t) }

// parallel runs step(0..n-1) from 16 goroutines; the first error wins.
func parallel(n int, step func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := step(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
