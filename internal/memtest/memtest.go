// Package memtest measures what Hoist's records cost in memory, for the
// memory tests and benchmarks of the domain packages (docs/performance.md,
// "Memory").
//
// Live reports the live heap of the calling process. Restart measures a
// restart: it runs the calling test binary again as a child that opens a
// journal store directory, the way Hoist opens it at start, and reports how
// long opening took and the child's heap and resident memory afterwards;
// the test package must have a test that calls Child (see Child).
package memtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
)

// Live collects garbage and returns the bytes of live heap objects.
func Live() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// RSS returns the resident memory of this process in bytes (Linux; 0
// elsewhere).
func RSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Result is what Restart measured in the child.
type Result struct {
	// Open is how long journal.Open took: loading the snapshot and
	// replaying the journal.
	Open time.Duration
	// Heap is the live heap after opening, less the child's live heap
	// before: what the records cost.
	Heap uint64
	// RSSOpen is the child's resident memory right after opening, with
	// the garbage collector at Hoist's setting (GOGC 400) and no memory
	// limit; RSSCollected after a collection that returns free memory to
	// the operating system (debug.FreeOSMemory), as Hoist does after
	// opening its store. RSSBase is the child's resident memory before
	// opening (the test binary itself).
	RSSOpen, RSSCollected, RSSBase uint64
	// HeapInuse is what opening added to the runtime's in-use heap spans,
	// after the collection: Heap plus the free space in spans that also
	// hold live objects, which the heap cannot give back.
	HeapInuse uint64
}

const (
	envDir   = "HOIST_MEMTEST_DIR"
	envChild = "HOIST_MEMTEST_CHILD"
	marker   = "memtest-result: "
)

// Restart runs the test named child (a test of the calling package that
// calls Child) in a new process of the test binary, which opens the
// journal store in dir and reports what it measured. The store must be
// closed.
func Restart(t testing.TB, child, dir string) Result {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envDir+"="+dir, envChild+"=1", "GOGC=400", "GOMEMLIMIT=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("restart child: %v\n%s", err, out)
	}
	i := bytes.Index(out, []byte(marker))
	if i < 0 {
		t.Fatalf("restart child reported nothing:\n%s", out)
	}
	line, _, _ := bytes.Cut(out[i+len(marker):], []byte("\n"))
	var r Result
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("restart child: %v in %q", err, line)
	}
	return r
}

// Child is the child side of Restart: a test that calls it does nothing
// (it skips) unless Restart started it.
func Child(t *testing.T) {
	dir := os.Getenv(envDir)
	if os.Getenv(envChild) == "" || dir == "" {
		t.Skip("run by memtest.Restart only")
	}
	var r Result
	base := Live()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	inuseBase := m.HeapInuse
	r.RSSBase = RSS()
	start := time.Now()
	st, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Open = time.Since(start)
	r.RSSOpen = RSS()
	r.Heap = Live() - base
	debug.FreeOSMemory()
	r.RSSCollected = RSS()
	runtime.ReadMemStats(&m)
	r.HeapInuse = m.HeapInuse - inuseBase
	runtime.KeepAlive(st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	fmt.Printf("%s%s\n", marker, b)
}

// PerRecord returns bytes/n, or 0 when n is 0.
func PerRecord(bytes uint64, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(bytes) / float64(n)
}

// KindSize is what the records of one kind hold.
type KindSize struct {
	Kind    store.Kind
	Records int
	// Bytes of their ID and Data (Parent and Key values are mostly shared
	// between records).
	Bytes int
}

// Sizes lists every record of the given kinds in st and sums their sizes.
func Sizes(ctx context.Context, st store.Store, kinds ...store.Kind) ([]KindSize, error) {
	out := make([]KindSize, len(kinds))
	err := st.View(ctx, func(tx store.Tx) error {
		for i, k := range kinds {
			out[i].Kind = k
			q := store.Query{Kind: k, Limit: 10_000}
			for {
				recs, next, err := tx.List(ctx, q)
				if err != nil {
					return err
				}
				for _, r := range recs {
					out[i].Records++
					out[i].Bytes += len(r.ID) + len(r.Data)
				}
				if next == "" {
					break
				}
				q.After = next
			}
		}
		return nil
	})
	return out, err
}

// Split divides heap, the live heap the records of sizes cost together,
// between their kinds: each record gets an equal share of what is left
// once the bytes they hold are counted (the record's own structure and
// its index entries), plus its own bytes. It returns the fixed share and
// each kind's cost per record.
func Split(heap uint64, sizes []KindSize) (fixed float64, per map[store.Kind]float64) {
	records, bytes := 0, 0
	for _, s := range sizes {
		records += s.Records
		bytes += s.Bytes
	}
	per = map[store.Kind]float64{}
	if records == 0 {
		return 0, per
	}
	fixed = (float64(heap) - float64(bytes)) / float64(records)
	for _, s := range sizes {
		if s.Records > 0 {
			per[s.Kind] = fixed + float64(s.Bytes)/float64(s.Records)
		}
	}
	return fixed, per
}
