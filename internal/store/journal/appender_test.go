package journal

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// newAppenderFile creates a journal-like file: size bytes of content (the
// magic, then filler) and zeros up to alloc, and opens an appender on it.
func newAppenderFile(t *testing.T, size, alloc int64, buffered bool) (*appender, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j")
	content := bytes.Repeat([]byte{0xa5}, int(size))
	copy(content, journalMagic)
	if err := os.WriteFile(path, append(bytes.Clone(content), make([]byte, alloc-size)...), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	a := &appender{}
	a.open(osFS{}, osFile{f}, size, alloc, content[size&^(dioBlock-1):], buffered)
	t.Cleanup(func() { _ = a.close() })
	return a, content
}

// checkFile: the file holds want, then only zeros.
func checkFile(t *testing.T, a *appender, want []byte) {
	t.Helper()
	got, err := os.ReadFile(a.f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < len(want) || !bytes.Equal(got[:len(want)], want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("file differs from what was appended at offset %d (file %d bytes, appended %d)", i, len(got), len(want))
	}
	if i := bytes.IndexFunc(got[len(want):], func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("non-zero byte at offset %d after the appended data", len(want)+i)
	}
	if a.size != int64(len(want)) || a.alloc < a.size || int64(len(got)) < a.alloc-dioBlock {
		t.Fatalf("size %d alloc %d, file %d bytes, appended %d", a.size, a.alloc, len(got), len(want))
	}
}

// TestAppenderWritesWhatIsAppended: batches of every size, across block
// boundaries and the file's growth, land in the file as written, in both
// modes, from a new file and from one laid out by an older Hoist (whose
// allocated end is not block-aligned).
func TestAppenderWritesWhatIsAppended(t *testing.T) {
	starts := []struct {
		name        string
		size, alloc int64
	}{
		{"new", int64(len(journalMagic)), preallocate},
		{"unaligned", 5000, int64(len(journalMagic)) + preallocate},
		{"nearly full", preallocate - 100, preallocate},
	}
	for _, buffered := range []bool{false, true} {
		for _, st := range starts {
			name := st.name + map[bool]string{false: " default", true: " buffered"}[buffered]
			t.Run(name, func(t *testing.T) {
				a, want := newAppenderFile(t, st.size, st.alloc, buffered)
				t.Logf("direct writes: %v", a.direct)
				rng := rand.New(rand.NewPCG(uint64(st.size), 7))
				for a.size < st.alloc+preallocate/2 {
					n := rng.IntN(3 * dioBlock)
					if rng.IntN(20) == 0 {
						n = rng.IntN(200 << 10) // a batch of many entries
					}
					data := make([]byte, n)
					for i := range data {
						data[i] = byte(rng.IntN(255) + 1)
					}
					if err := a.append(data); err != nil {
						t.Fatal(err)
					}
					want = append(want, data...)
				}
				checkFile(t, a, want)
			})
		}
	}
}

// TestAppenderFallBack: an appender that had to leave direct writes goes on
// through the page cache from where it was.
func TestAppenderFallBack(t *testing.T) {
	a, want := newAppenderFile(t, int64(len(journalMagic)), preallocate, false)
	if !a.direct {
		t.Skip("direct writes are not available here")
	}
	for i := range 10 {
		data := bytes.Repeat([]byte{byte(i + 1)}, 1000+i*700)
		var err error
		if i == 4 {
			err = a.fallBack(data)
		} else {
			err = a.append(data)
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, data...)
	}
	if a.direct {
		t.Fatal("still direct after fallBack")
	}
	checkFile(t, a, want)
}
