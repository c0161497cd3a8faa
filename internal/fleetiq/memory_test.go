package fleetiq

import (
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/memtest"
	"github.com/hoistgg/hoist/internal/store/journal"
)

// memoryServers is how many game servers TestMemoryGameServers registers:
// a small number in the normal test run, a million for the figures of
// docs/performance.md ("Memory"). The small number is 20,000, not fewer:
// opening a store adds about 1 MB of heap spans whatever it holds (partly
// filled spans of each size class), which at 5,000 game servers was a
// fifth of the spans figure and moved it by 80 B a game server from run to
// run (800-880 B; 620-650 B at 20,000):
//
//	go test -run TestMemoryGameServers -memory.servers 1000000 -v -timeout 30m ./internal/fleetiq/
var memoryServers = flag.Int("memory.servers", 20_000, "game servers TestMemoryGameServers registers")

// TestMemoryGameServers registers game servers through the Service on the
// journal store and reports what each costs: live heap while Hoist runs,
// then, after a restart in a new process, the time to open the store, its
// live heap and resident memory. Each game server is two records (the game
// server and its health deadline); 100 instances add one record each.
func TestMemoryGameServers(t *testing.T) {
	n := *memoryServers
	dir := filepath.Join(t.TempDir(), "store")
	st, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Store = st; c.Now = time.Now })
	h.group(seedGroup)
	before := memtest.Live()
	start := time.Now()
	registerMany(t, h, n, 100)
	took := time.Since(start)
	live := memtest.Live() - before
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	r := memtest.Restart(t, "TestMemoryChild", dir)
	t.Logf("%d game servers registered in %v; live heap %.0f B per game server while running",
		n, took.Round(time.Millisecond), memtest.PerRecord(live, n))
	t.Logf("restart: open %v; live heap %.0f B per game server (%.1f MB); resident memory %.1f MB after opening, %.1f MB after a collection (test binary alone %.1f MB); heap spans in use %.1f MB",
		r.Open.Round(time.Millisecond), memtest.PerRecord(r.Heap, n), mb(r.Heap), mb(r.RSSOpen), mb(r.RSSCollected), mb(r.RSSBase), mb(r.HeapInuse))
	// The bounds the documentation's figures rest on (about 620 B live and
	// 710 B of heap spans measured when it was written; 1,170 B of spans
	// before the store packed its records after a replay), with room for
	// the allocator's variation.
	if per := memtest.PerRecord(r.Heap, n); per > 800 {
		t.Errorf("a game server costs %.0f B of live heap after a restart, want at most 800", per)
	}
	if per := memtest.PerRecord(r.HeapInuse, n); per > 900 {
		t.Errorf("a game server costs %.0f B of heap spans after a restart, want at most 900", per)
	}
}

// TestMemoryChild is the restarted process of TestMemoryGameServers.
func TestMemoryChild(t *testing.T) { memtest.Child(t) }

func mb(b uint64) float64 { return float64(b) / (1 << 20) }
