package builds

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// manyEntries is a zip64 archive of n entries that is never held in
// memory: ReadAt computes its bytes. One empty stored file "a" at offset
// 0, then n central directory records named f0000000, f0000001, ... all
// pointing at it, then the zip64 end records.
type manyEntries struct {
	n        int64
	local    []byte // the local header of "a"
	dirStart int64
	trailer  []byte // zip64 EOCD, locator, EOCD
}

const manyRecordLen = 46 + 8

func newManyEntries(n int64) *manyEntries {
	le := binary.LittleEndian
	local := make([]byte, 31)
	le.PutUint32(local, 0x04034b50)
	le.PutUint16(local[4:], 20)
	le.PutUint16(local[26:], 1)
	local[30] = 'a'
	m := &manyEntries{n: n, local: local, dirStart: int64(len(local))}
	dirSize := uint64(n) * manyRecordLen
	z64At := uint64(m.dirStart) + dirSize
	t := make([]byte, zip64EOCDLen+zip64LocatorLen+eocdLen)
	le.PutUint32(t, zip64EOCDSignature)
	le.PutUint64(t[4:], zip64EOCDLen-12)
	le.PutUint16(t[12:], 45)
	le.PutUint16(t[14:], 45)
	le.PutUint64(t[24:], uint64(n))
	le.PutUint64(t[32:], uint64(n))
	le.PutUint64(t[40:], dirSize)
	le.PutUint64(t[48:], uint64(m.dirStart))
	loc := t[zip64EOCDLen:]
	le.PutUint32(loc, zip64LocatorSig)
	le.PutUint64(loc[8:], z64At)
	le.PutUint32(loc[16:], 1)
	end := loc[zip64LocatorLen:]
	le.PutUint32(end, eocdSignature)
	le.PutUint16(end[8:], 0xffff)
	le.PutUint16(end[10:], 0xffff)
	le.PutUint32(end[12:], 0xffffffff)
	le.PutUint32(end[16:], 0xffffffff)
	m.trailer = t
	return m
}

func (m *manyEntries) size() int64 {
	return m.dirStart + m.n*manyRecordLen + int64(len(m.trailer))
}

// record writes central directory record i.
func (m *manyEntries) record(i int64, b []byte) {
	le := binary.LittleEndian
	clear(b)
	le.PutUint32(b, 0x02014b50)
	le.PutUint16(b[4:], 20)
	le.PutUint16(b[6:], 20)
	le.PutUint16(b[28:], 8)
	copy(b[46:], fmt.Sprintf("f%07d", i%10_000_000))
}

func (m *manyEntries) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	var rec [manyRecordLen]byte
	dirEnd := m.dirStart + m.n*manyRecordLen
	for n < len(p) {
		at := off + int64(n)
		switch {
		case at >= m.size():
			return n, io.EOF
		case at < m.dirStart:
			n += copy(p[n:], m.local[at:])
		case at < dirEnd:
			i := (at - m.dirStart) / manyRecordLen
			m.record(i, rec[:])
			n += copy(p[n:], rec[(at-m.dirStart)%manyRecordLen:])
		default:
			n += copy(p[n:], m.trailer[at-dirEnd:])
		}
	}
	return n, nil
}

// TestManyEntriesSynthetic checks the synthetic archive is one archive/zip
// reads, so the refusal below is about its size, not its form.
func TestManyEntriesSynthetic(t *testing.T) {
	m := newManyEntries(3)
	zr, err := zip.NewReader(m, m.size())
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != 3 || zr.File[2].Name != "f0000002" {
		t.Fatalf("read %d entries", len(zr.File))
	}
	idx, err := readZipIndex(m, m.size())
	if err != nil || idx.entries != 3 || idx.size != 3*manyRecordLen {
		t.Fatalf("readZipIndex = %+v, %v", idx, err)
	}
}

// TestUnpackRefusesMillionsOfEntries: archives with millions of central
// directory records are refused quickly and without parsing the records:
//   - declared: a zip64 end record declares 4 million entries (216 MB of
//     directory); refused from the end records (archive/zip parsed all of
//     it before, about a gigabyte of memory);
//   - past the directory: the end record declares 2,304 entries in a
//     directory of their size, and 4 million records follow it (184 MB);
//     archive/zip read on past the declared directory until the records
//     ended (2,304 is 4 million modulo 65,536, all it compares), 800 MB
//     before the entry limit refused them;
//   - in the directory: 2.2 million records of 46 bytes fill a declared
//     directory within the byte limit, declaring 2,304 (the same modulo
//     65,536); archive/zip parsed them all before the entry limit.
//
// The last two are streamed to a temporary file, never held in memory.
func TestUnpackRefusesMillionsOfEntries(t *testing.T) {
	inDir := 2304 + 33*65536
	cases := map[string]struct {
		open func(t *testing.T) (io.ReaderAt, int64)
		want string
	}{
		"declared": {func(*testing.T) (io.ReaderAt, int64) {
			m := newManyEntries(4_000_000)
			return m, m.size()
		}, "4000000 entries; the limit is 200000"},
		"past the directory": {func(t *testing.T) (io.ReaderAt, int64) {
			return recordsFile(t, 4_000_000, 2304, 2304*centralHeaderMinimum)
		}, "central directory records past"},
		"in the directory": {func(t *testing.T) (io.ReaderAt, int64) {
			return recordsFile(t, inDir, 2304, uint32(inDir*centralHeaderMinimum))
		}, "more than 200000 entries"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r, size := c.open(t)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := Unpack(r, size, t.TempDir(), 1<<30, DefaultMaxEntries)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			var ae *ArchiveError
			if !errors.As(err, &ae) || !strings.Contains(ae.Reason, c.want) {
				t.Errorf("Unpack = %v, want %q", err, c.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("refusing allocated %d bytes; want under 8 MiB", alloc)
			}
			if took > 5*time.Second {
				t.Errorf("refusing took %s", took)
			}
		})
	}
}

// recordsFile streams to a temporary file an archive of one empty stored
// file "a", then n central directory records with empty names all pointing
// at it, then an end record declaring `declared` entries in a directory of
// dirSize bytes right after "a". It returns the file, open.
func recordsFile(t *testing.T, n int, declared uint16, dirSize uint32) (io.ReaderAt, int64) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "records.zip"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w := bufio.NewWriterSize(f, 1<<20)
	if err := writeRecordsZip(w, n, declared, dirSize); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return f, st.Size()
}

// writeRecordsZip writes recordsFile's archive to w.
func writeRecordsZip(w io.Writer, n int, declared uint16, dirSize uint32) error {
	le := binary.LittleEndian
	local := make([]byte, 31)
	le.PutUint32(local, 0x04034b50)
	le.PutUint16(local[4:], 20)
	le.PutUint16(local[26:], 1)
	local[30] = 'a'
	if _, err := w.Write(local); err != nil {
		return err
	}
	rec := make([]byte, centralHeaderMinimum)
	le.PutUint32(rec, 0x02014b50)
	le.PutUint16(rec[4:], 20)
	le.PutUint16(rec[6:], 20)
	for range n {
		if _, err := w.Write(rec); err != nil {
			return err
		}
	}
	end := make([]byte, eocdLen)
	le.PutUint32(end, eocdSignature)
	le.PutUint16(end[8:], declared)
	le.PutUint16(end[10:], declared)
	le.PutUint32(end[12:], dirSize)
	le.PutUint32(end[16:], uint32(len(local)))
	_, err := w.Write(end)
	return err
}

// TestUnpackRefusesLargeDirectory: few entries with huge comments make a
// central directory over the limit (maxEntries x dirBytesPerEntry).
func TestUnpackRefusesLargeDirectory(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range 4 {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("f%d", i), Comment: strings.Repeat("c", 4000)})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("x"))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, err := unpackBytes(t, buf.Bytes(), 1<<20, 4)
	var ae *ArchiveError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "central directory") {
		t.Fatalf("Unpack = %v, want the directory limit", err)
	}
	if _, _, err := unpackBytes(t, buf.Bytes(), 1<<20, 40); err != nil {
		t.Fatalf("with 40 entries allowed: %v", err)
	}
}

// TestUnpackRefusesOverlap: entries sharing one compressed stream (the
// "zip bomb by overlap") are refused before anything is written. Before the
// check each entry unpacked the shared stream again.
func TestUnpackRefusesOverlap(t *testing.T) {
	body := strings.Repeat("\x00", 1<<20)
	b := overlapZip(t, body, 8)
	if len(b) > 16<<10 {
		t.Fatalf("archive is %d bytes", len(b))
	}
	dir, _, err := unpackBytes(t, b, 1<<30, 100)
	var ae *ArchiveError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "overlap") {
		t.Fatalf("Unpack = %v, want overlapping entries refused", err)
	}
	assertEmpty(t, dir)
}

// overlapZip writes n entries f0..f<n-1> holding body, then points every
// central directory record at the first entry's local header.
func overlapZip(t *testing.T, body string, n int) []byte {
	t.Helper()
	var ents []zent
	for i := range n {
		ents = append(ents, zent{name: fmt.Sprintf("f%d", i), body: body})
	}
	b := makeZip(t, ents...)
	sig := []byte{0x50, 0x4b, 0x01, 0x02}
	for at := bytes.Index(b, sig); at >= 0; {
		binary.LittleEndian.PutUint32(b[at+42:], 0)
		next := bytes.Index(b[at+4:], sig)
		if next < 0 {
			break
		}
		at += 4 + next
	}
	return b
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("the build directory holds %d entries after a refusal", len(ents))
	}
}

// FuzzReadZipIndex: readZipIndex never panics, and reads every archive
// archive/zip reads, with the same entry count (modulo 65536, as
// archive/zip compares it).
func FuzzReadZipIndex(f *testing.F) {
	f.Add(makeZip(f, zent{name: "a", body: "x"}, zent{name: "d/", mode: 0}))
	m := newManyEntries(2)
	b := make([]byte, m.size())
	m.ReadAt(b, 0)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, err := readZipIndex(bytes.NewReader(b), int64(len(b)))
		zr, zerr := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if zerr != nil && !errors.Is(zerr, zip.ErrInsecurePath) {
			return
		}
		if err != nil {
			t.Fatalf("archive/zip reads it, readZipIndex: %v", err)
		}
		if uint16(idx.entries) != uint16(len(zr.File)) {
			t.Fatalf("readZipIndex says %d entries, archive/zip read %d", idx.entries, len(zr.File))
		}
	})
}

// FuzzOpenArchive: openArchive never panics and never lets archive/zip
// list more entries than the limit, and an archive archive/zip reads
// within the limit, with its directory where the end record says (no
// prefix), opens with the same entries.
func FuzzOpenArchive(f *testing.F) {
	f.Add(makeZip(f, zent{name: "a", body: "x"}, zent{name: "d/", mode: 0}))
	m := newManyEntries(2)
	b := make([]byte, m.size())
	m.ReadAt(b, 0)
	f.Add(b)
	var rec bytes.Buffer
	writeRecordsZip(&rec, 9, 2, 2*centralHeaderMinimum)
	f.Add(rec.Bytes())
	const limit = 4
	f.Fuzz(func(t *testing.T, b []byte) {
		zr, _, err := openArchive(bytes.NewReader(b), int64(len(b)), limit)
		if err == nil && len(zr.File) > limit {
			t.Fatalf("openArchive listed %d entries; the limit is %d", len(zr.File), limit)
		}
		want, werr := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if werr != nil || len(want.File) > limit || !directoryAtItsOffset(b) {
			return
		}
		if err != nil {
			t.Fatalf("archive/zip reads %d entries, openArchive: %v", len(want.File), err)
		}
		for i, f := range want.File {
			if i >= len(zr.File) || zr.File[i].Name != f.Name {
				t.Fatalf("entry %d is %q; openArchive listed %d entries", i, f.Name, len(zr.File))
			}
		}
	})
}

// directoryAtItsOffset reports whether b's end record puts the central
// directory right before itself, at the offset it declares.
func directoryAtItsOffset(b []byte) bool {
	idx, err := readZipIndex(bytes.NewReader(b), int64(len(b)))
	return err == nil && idx.size <= uint64(idx.endAt) && uint64(idx.endAt)-idx.size == idx.offset
}

// TestUnpackPrefixedArchive: an archive behind a prefix (a self-extracting
// stub), whose offsets count from the archive's own start, still unpacks:
// the confined view keeps archive/zip's base offset.
func TestUnpackPrefixedArchive(t *testing.T) {
	b := makeZip(t, zent{name: "bin/server", body: "hello"}, zent{name: "README", body: "hi"})
	b = append([]byte(strings.Repeat("#!stub\n", 100)), b...)
	dir, n, err := unpackBytes(t, b, 1<<20, 10)
	if err != nil || n != 7 {
		t.Fatalf("Unpack = %d, %v", n, err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "bin", "server")); err != nil || string(got) != "hello" {
		t.Fatalf("bin/server = %q, %v", got, err)
	}
}
