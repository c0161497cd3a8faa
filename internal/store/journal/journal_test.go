package journal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, env storetest.Env) store.Store {
		s, err := Open(t.TempDir(), Options{Now: env.Now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestConformanceBuffered runs the suite writing through the page cache
// (the journal's mode where O_DIRECT is not available).
func TestConformanceBuffered(t *testing.T) {
	storetest.Run(t, func(t *testing.T, env storetest.Env) store.Store {
		s, err := Open(t.TempDir(), Options{BufferedWrites: true, Now: env.Now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// forWriteModes runs test with the default options (direct writes where
// the file system takes them) and with BufferedWrites.
func forWriteModes(t *testing.T, test func(t *testing.T, opts Options)) {
	t.Run("default", func(t *testing.T) { test(t, Options{}) })
	t.Run("buffered", func(t *testing.T) { test(t, Options{BufferedWrites: true}) })
}

// TestConformanceSnapshotting runs the suite with a snapshot every few
// kilobytes, so that rotations happen while it runs.
func TestConformanceSnapshotting(t *testing.T) {
	storetest.Run(t, func(t *testing.T, env storetest.Env) store.Store {
		s, err := Open(t.TempDir(), Options{SnapshotBytes: 4 << 10, Now: env.Now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func openDir(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func put(t *testing.T, s store.Store, id string, data string) {
	t.Helper()
	err := s.Update(context.Background(), func(tx store.Tx) error {
		return tx.Put(context.Background(), store.Record{Kind: "K", ID: id, Key: "k", Data: []byte(data)})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// contents reads every record of kind K as ID -> Data.
func contents(t *testing.T, s store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := s.View(context.Background(), func(tx store.Tx) error {
		recs, _, err := tx.List(context.Background(), store.Query{Kind: "K"})
		for _, r := range recs {
			out[r.ID] = string(r.Data)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	openDir(t, dir, Options{})
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
}

// TestReopen: records, Seq and leases survive Close and Open, and Seq keeps
// growing even when the newest record was deleted.
func TestReopen(t *testing.T) { forWriteModes(t, testReopen) }

func testReopen(t *testing.T, opts Options) {
	dir := t.TempDir()
	s := openDir(t, dir, opts)
	put(t, s, "a", "1")
	put(t, s, "b", "2")
	var seqB int64
	err := s.Update(context.Background(), func(tx store.Tx) error {
		rec, err := tx.Get(context.Background(), "K", "b")
		seqB = rec.Seq
		if err != nil {
			return err
		}
		return tx.Delete(context.Background(), "K", "b")
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	if ok, err := s.Lease(context.Background(), "loop", "me", now, time.Minute); !ok || err != nil {
		t.Fatalf("Lease: %v %v", ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir, opts)
	if got := contents(t, s); !maps.Equal(got, map[string]string{"a": "1"}) {
		t.Fatalf("after reopen: %v", got)
	}
	if ok, _ := s.Lease(context.Background(), "loop", "other", now.Add(time.Second), time.Minute); ok {
		t.Error("lease lost across reopen")
	}
	put(t, s, "c", "3")
	var seqC int64
	_ = s.View(context.Background(), func(tx store.Tx) error {
		rec, err := tx.Get(context.Background(), "K", "c")
		seqC = rec.Seq
		return err
	})
	if seqC <= seqB {
		t.Errorf("Seq after reopen = %d, want > %d", seqC, seqB)
	}
}

// TestSnapshots: with small journal files, random writes roll over many
// generations; after reopening, the state is exactly what was written and
// only the newest generation's files are left.
func TestSnapshots(t *testing.T) { forWriteModes(t, testSnapshots) }

func testSnapshots(t *testing.T, opts Options) {
	dir := t.TempDir()
	opts.SnapshotBytes = 8 << 10
	s := openDir(t, dir, opts)
	model := map[string]string{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		id := "r" + strconv.Itoa(rng.IntN(300))
		if _, ok := model[id]; ok && rng.IntN(4) == 0 {
			err := s.Update(context.Background(), func(tx store.Tx) error { return tx.Delete(context.Background(), "K", id) })
			if err != nil {
				t.Fatal(err)
			}
			delete(model, id)
			continue
		}
		data := fmt.Sprintf("%d-%s", i, bytes.Repeat([]byte("x"), rng.IntN(200)))
		put(t, s, id, data)
		model[id] = data
	}
	if got := contents(t, s); !maps.Equal(got, model) {
		t.Fatal("live state differs from the model")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	gen := s.gen
	if gen < 10 {
		t.Fatalf("only %d generations: no rotation to test", gen)
	}
	s = openDir(t, dir, opts)
	if got := contents(t, s); !maps.Equal(got, model) {
		t.Fatalf("after reopen: %d records, want %d", len(got), len(model))
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*-*"))
	if len(names) > 3 {
		t.Errorf("old generations left behind: %v", names)
	}
}

// TestTornTail: bytes of a batch whose write a crash interrupted follow the
// last entry. Open keeps every whole entry, clears the rest, and later
// writes and reopens work. (Before, the torn bytes here also held a whole,
// intact entry after the torn one; that is damage now: TestDamageThenIntact.)
func TestTornTail(t *testing.T) { forWriteModes(t, testTornTail) }

func testTornTail(t *testing.T, opts Options) {
	dir := t.TempDir()
	s := openDir(t, dir, opts)
	put(t, s, "a", "1")
	put(t, s, "b", "2")
	end := s.out.size
	path := filepath.Join(dir, fileName(journalPrefix, s.gen))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A torn batch: a header claiming more than follows, then the start of
	// its entries, cut short.
	ghost, start := beginEntry(nil)
	ghost = appendPut(ghost, "K", &rec{id: "ghost", seq: 99, data: []byte("boo")})
	ghost = frameBatch(nil, finishEntry(ghost, start))
	writeAt(t, path, end, ghost[:len(ghost)-5])

	s = openDir(t, dir, opts)
	if got := contents(t, s); !maps.Equal(got, map[string]string{"a": "1", "b": "2"}) {
		t.Fatalf("after a torn tail: %v", got)
	}
	put(t, s, "c", "3")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir, opts)
	if got := contents(t, s); !maps.Equal(got, map[string]string{"a": "1", "b": "2", "c": "3"}) {
		t.Fatalf("after writing over the torn tail: %v", got)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*"+brokenSuffix+"*")); len(names) > 0 {
		t.Errorf("a torn tail was taken for damage: %v", names)
	}
}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestDamageThenIntact: an entry whose checksum does not match, followed by
// an intact one, is damage, not a torn tail: Open copies the file aside,
// changes nothing, refuses with the file, the offset and what to do, and
// does the same (without a second copy) when started again. Doing what the
// error says (truncating at the offset) opens the store with the entries
// before the damage. Before, Open zeroed everything from the damaged entry
// on, the acknowledged "c" and "d" included, and said nothing.
func TestDamageThenIntact(t *testing.T) { forWriteModes(t, testDamageThenIntact) }

func testDamageThenIntact(t *testing.T, opts Options) {
	dir := t.TempDir()
	s := openDir(t, dir, opts)
	put(t, s, "a", "1")
	put(t, s, "b", "2")
	damagedAt := s.out.size
	put(t, s, "c", "3")
	put(t, s, "d", "4")
	path := filepath.Join(dir, fileName(journalPrefix, s.gen))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// One bit of c's payload flips.
	writeAt(t, path, damagedAt+entryHeader+2, []byte{0xee})
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, err = Open(dir, opts)
		if err == nil {
			t.Fatal("Open over damage followed by intact entries succeeded")
		}
		for _, want := range []string{path, fmt.Sprintf("offset %d", damagedAt), path + brokenSuffix, fmt.Sprintf("truncate -s %d", damagedAt)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		after, _ := os.ReadFile(path)
		if !bytes.Equal(after, before) {
			t.Fatal("Open changed the damaged file")
		}
		copied, err := os.ReadFile(path + brokenSuffix)
		if err != nil || !bytes.Equal(copied, before) {
			t.Fatalf("copy aside: %v (same content: %v)", err, bytes.Equal(copied, before))
		}
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*"+brokenSuffix+"*")); len(names) != 1 {
		t.Errorf("copies after two attempts: %v, want one", names)
	}
	// The operator gives up c and d, as the error explains.
	if err := os.Truncate(path, damagedAt); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir, opts)
	if got := contents(t, s); !maps.Equal(got, map[string]string{"a": "1", "b": "2"}) {
		t.Fatalf("after truncating: %v", got)
	}
	put(t, s, "e", "5")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir, opts)
	if got := contents(t, s); !maps.Equal(got, map[string]string{"a": "1", "b": "2", "e": "5"}) {
		t.Fatalf("after truncating and writing: %v", got)
	}
}

// TestDamageBeforeTheEnd: damage in a journal file that newer files follow
// is not a torn write: Open refuses rather than lose what follows.
func TestDamageBeforeTheEnd(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	for i := range 5 {
		put(t, s, strconv.Itoa(i), "y")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A newer generation after journal-1, as a rotation leaves it until its
	// snapshot is written.
	e, start := beginEntry(nil)
	e = appendPut(e, "K", &rec{id: "later", seq: 100, data: []byte("z")})
	e = frameBatch(append([]byte(nil), journalMagic...), finishEntry(e, start))
	if err := os.WriteFile(filepath.Join(dir, fileName(journalPrefix, 2)), e, 0o600); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir, Options{})
	if got := contents(t, s); len(got) != 6 || got["later"] != "z" {
		t.Fatalf("two generations replayed: %v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, fileName(journalPrefix, 1))
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	data[len(journalMagic)+entryHeader+3] ^= 0xff
	if err := os.WriteFile(first, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("Open over a damaged older journal: %v, want an error", err)
	}
}

// TestWriteFailure: once a journal write fails, the Update gets the error,
// later writes are refused, and Views still see the last durable state.
func TestWriteFailure(t *testing.T) {
	s := openDir(t, t.TempDir(), Options{})
	put(t, s, "kept", "1")
	_ = s.out.f.Close() // every later write fails
	err := s.Update(context.Background(), func(tx store.Tx) error {
		return tx.Put(context.Background(), store.Record{Kind: "K", ID: "lost"})
	})
	if err == nil {
		t.Fatal("Update after a failed write returned nil")
	}
	if err2 := s.Update(context.Background(), func(tx store.Tx) error { return nil }); err2 == nil {
		t.Error("store took a write after a failure")
	}
	if got := contents(t, s); !maps.Equal(got, map[string]string{"kept": "1"}) {
		t.Errorf("View after the failure: %v", got)
	}
}

// TestFormat1: a journal file an older Hoist wrote (entries alone, not in
// batches) opens with its records, its torn tail cleared and damage
// refused as in format 2; new writes go to a new file of format 2, and the
// whole opens again.
func TestFormat1(t *testing.T) {
	entry := func(id, data string, seq int64) []byte {
		e, start := beginEntry(nil)
		e = appendPut(e, "K", &rec{id: id, seq: seq, data: []byte(data)})
		return finishEntry(e, start)
	}
	v1 := append(append(append([]byte(nil), journalMagicV1...), entry("a", "1", 1)...), entry("b", "2", 2)...)
	torn := entry("torn", "x", 3)
	dir := t.TempDir()
	path := filepath.Join(dir, fileName(journalPrefix, 1))
	if err := os.WriteFile(path, append(bytes.Clone(v1), torn[:len(torn)-2]...), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openDir(t, dir, Options{})
	if got := contents(t, s); !maps.Equal(got, map[string]string{"a": "1", "b": "2"}) {
		t.Fatalf("format 1: %v", got)
	}
	if s.gen != 2 {
		t.Errorf("writing to generation %d, want a new file (2)", s.gen)
	}
	put(t, s, "c", "3")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir, Options{})
	if got := contents(t, s); !maps.Equal(got, map[string]string{"a": "1", "b": "2", "c": "3"}) {
		t.Fatalf("format 1 then 2: %v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	damaged := t.TempDir()
	bad := append(bytes.Clone(v1), entry("c", "3", 3)...)
	bad[len(journalMagicV1)+entryHeader+2] ^= 1 // a's entry
	if err := os.WriteFile(filepath.Join(damaged, fileName(journalPrefix, 1)), bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(damaged, Options{}); err == nil || !strings.Contains(err.Error(), "damaged entry at offset 8") {
		t.Fatalf("format 1 with damage: %v", err)
	}
}

// TestFailedReported: a journal write that fails (the disk refuses it)
// makes Failed report it, with the cause; Views go on.
func TestFailedReported(t *testing.T) {
	forWriteModes(t, func(t *testing.T, opts Options) {
		m := newMemFS()
		opts.fs = m
		s := openDir(t, "/mem/store", opts)
		put(t, s, "kept", "1")
		if err := s.Failed(); err != nil {
			t.Fatalf("Failed() before the failure: %v", err)
		}
		m.mu.Lock()
		m.fail = errors.New("input/output error")
		m.mu.Unlock()
		if err := s.Update(context.Background(), func(tx store.Tx) error {
			return tx.Put(context.Background(), store.Record{Kind: "K", ID: "lost"})
		}); err == nil {
			t.Fatal("Update on a failing disk returned nil")
		}
		err := s.Failed()
		if err == nil || !strings.Contains(err.Error(), "input/output error") {
			t.Fatalf("Failed() = %v, want the write's error", err)
		}
		if got := contents(t, s); !maps.Equal(got, map[string]string{"kept": "1"}) {
			t.Errorf("View after the failure: %v", got)
		}
	})
}

// TestInSynctestBubble: domain tests run their loops in testing/synctest
// bubbles with a real store; Open, Update, View, Lease and Close work
// inside one and leave no goroutine behind.
func TestInSynctestBubble(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		put(t, s, "a", "x")
		time.Sleep(time.Hour) // fake time: the store has no timers to fire
		if got := contents(t, s); got["a"] != "x" {
			t.Error("record missing")
		}
		ok, err := s.Lease(t.Context(), "loop", "me", time.Now(), time.Minute)
		if err != nil || !ok {
			t.Errorf("Lease: %v %v", ok, err)
		}
		synctest.Wait()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// appendOldLease appends a lease as a Hoist before lease terms wrote it.
func appendOldLease(b []byte, name, holder string, expires int64) []byte {
	b = append(b, opLease)
	b = appendString(b, name)
	b = appendString(b, holder)
	return binary.AppendVarint(b, expires)
}

// TestLeasesBeforeTerms: a journal holding leases as a Hoist before lease
// terms wrote them opens, each lease in a term that grew with each change
// of holder, and a renewal by the last holder keeps that term.
func TestLeasesBeforeTerms(t *testing.T) {
	dir := t.TempDir()
	e, start := beginEntry(nil)
	far := time.Now().Add(time.Hour).UnixNano()
	e = appendOldLease(e, "loop", "A", far-3)
	e = appendOldLease(e, "loop", "A", far-2)
	e = appendOldLease(e, "loop", "B", far-1)
	e = appendOldLease(e, "loop", "B", far)
	e = finishEntry(e, start)
	j := frameBatch(append([]byte(nil), journalMagic...), e)
	if err := os.WriteFile(filepath.Join(dir, fileName(journalPrefix, 1)), j, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openDir(t, dir, Options{})
	if _, ok, err := s.AcquireLease(t.Context(), "loop", "A", time.Minute); err != nil || ok {
		t.Fatalf("A took B's lease: %v %v", ok, err)
	}
	g, ok, err := s.AcquireLease(t.Context(), "loop", "B", time.Minute)
	if err != nil || !ok || g.Term != 2 {
		t.Fatalf("B's renewal: %v %+v %v, want term 2", ok, g, err)
	}
}

// fuzzFiles are the files FuzzOpen fills: two generations of journal and
// the snapshot between them.
var fuzzFiles = []string{fileName(journalPrefix, 1), fileName(snapshotPrefix, 2), fileName(journalPrefix, 2)}

// FuzzOpen: whatever bytes the journal and snapshot files of one or two
// generations hold, Open fails cleanly, changing none of them, or opens; a
// store it opens opens again with the same state, takes a write and opens
// again with it.
func FuzzOpen(f *testing.F) {
	e, start := beginEntry(nil)
	e = appendPut(e, "K", &rec{id: "a", parent: "p", key: "k", rank: 3, seq: 1, data: []byte("d")})
	e = appendLease(e, "l", lease{holder: "h", expires: 5, term: 2})
	e = appendOldLease(e, "m", "h", 7)
	e = finishEntry(e, start)
	j := frameBatch(append([]byte(nil), journalMagic...), e)
	f.Add(j, []byte(nil), []byte(nil))
	f.Add(append(bytes.Clone(j), 9, 0, 0, 0, 1), []byte(nil), []byte(nil))
	f.Add(frameBatch(append(bytes.Clone(j), 9, 0, 0, 0, 1, 2, 3, 4, 5), e), []byte(nil), []byte(nil))
	f.Add([]byte("HOISTJ"), []byte(nil), []byte(nil))
	// Format 1 (entries alone), as an older Hoist wrote it.
	v1 := append(append([]byte(nil), journalMagicV1...), e...)
	f.Add(v1, []byte(nil), []byte(nil))
	f.Add(append(append(bytes.Clone(v1), 9, 0, 0, 0, 1, 2, 3, 4, 5), e...), []byte(nil), []byte(nil))
	f.Add(v1, []byte(nil), j)
	// Two generations as a store leaves them: snapshot-2 and journal-2.
	gen := fuzzGenerations(f)
	f.Add(j, gen[1], gen[2])
	f.Add([]byte(nil), gen[1], gen[2])
	f.Add([]byte(nil), gen[1][:len(gen[1])-3], gen[2])
	f.Add(j, []byte(nil), gen[2])
	f.Fuzz(func(t *testing.T, j1, s2, j2 []byte) {
		dir := t.TempDir()
		written := map[string][]byte{}
		for i, data := range [][]byte{j1, s2, j2} {
			if data == nil {
				continue
			}
			written[fuzzFiles[i]] = data
			if err := os.WriteFile(filepath.Join(dir, fuzzFiles[i]), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		s, err := Open(dir, Options{})
		if err != nil {
			for name, data := range written {
				if got, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(got, data) {
					t.Fatalf("Open failed (%v) and changed %s", err, name)
				}
			}
			return
		}
		before := contents(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openDir(t, dir, Options{})
		if got := contents(t, s); !maps.Equal(got, before) {
			t.Fatalf("second open: %v, want %v", got, before)
		}
		put(t, s, "fuzz-new", "n")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2store, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer s2store.Close()
		before["fuzz-new"] = "n"
		if got := contents(t, s2store); !maps.Equal(got, before) {
			t.Fatalf("reopen: %v, want %v", got, before)
		}
	})
}

// fuzzGenerations runs a store until it rotates to generation 2 and
// returns its files by the index of fuzzFiles (the journal's preallocated
// zeros cut off).
func fuzzGenerations(f *testing.F) [3][]byte {
	dir := f.TempDir()
	s, err := Open(dir, Options{SnapshotBytes: 64})
	if err != nil {
		f.Fatal(err)
	}
	for i := 0; s.gen < 2; i++ {
		err := s.Update(context.Background(), func(tx store.Tx) error {
			return tx.Put(context.Background(), store.Record{Kind: "K", ID: strconv.Itoa(i % 3), Data: []byte(strings.Repeat("v", i))})
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	var out [3][]byte
	for i, name := range fuzzFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		out[i] = bytes.TrimRight(data, "\x00")
	}
	if out[1] == nil || out[2] == nil {
		f.Fatal("the store did not leave snapshot-2 and journal-2")
	}
	return out
}

// TestDirectWritesReported: DirectWrites says how the journal is written,
// after writes too.
func TestDirectWritesReported(t *testing.T) {
	forWriteModes(t, func(t *testing.T, opts Options) {
		s := openDir(t, t.TempDir(), opts)
		want := s.out.direct // read before any write: the syncer is idle
		if opts.BufferedWrites && want {
			t.Fatal("BufferedWrites, yet the journal was opened for direct writes")
		}
		for i := range 3 {
			if err := s.Update(t.Context(), func(tx store.Tx) error {
				return tx.Put(t.Context(), store.Record{Kind: "k", ID: fmt.Sprint(i), Data: []byte("{}")})
			}); err != nil {
				t.Fatal(err)
			}
			if got := s.DirectWrites(); got != want {
				t.Fatalf("DirectWrites() = %v after write %d, want %v", got, i, want)
			}
		}
	})
}

// TestLargeBatchBuffersReleased: the buffers a batch needs (its entries,
// its frame, the direct writes' aligned copy) are reused for the next
// batch only while they are small: after one 32 MiB write and a few small
// ones, the store holds no more than a few MiB of them.
func TestLargeBatchBuffersReleased(t *testing.T) {
	forWriteModes(t, func(t *testing.T, opts Options) {
		s := openDir(t, t.TempDir(), opts)
		put(t, s, "small", "{}")
		base := liveHeap()
		big := `"` + strings.Repeat("x", 32<<20) + `"`
		put(t, s, "big", big)
		big = ""
		if err := s.Update(t.Context(), func(tx store.Tx) error { return tx.Delete(t.Context(), "K", "big") }); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			put(t, s, fmt.Sprint("small-", i), "{}")
		}
		if grown := int64(liveHeap()) - int64(base); grown > 8<<20 {
			t.Errorf("after a 32 MiB batch the store holds %d MiB more, want at most 8 MiB", grown>>20)
		}
	})
}

// liveHeap collects garbage and returns the live heap in bytes.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
