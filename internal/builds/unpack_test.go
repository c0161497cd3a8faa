package builds

import (
	"archive/zip"
	"bytes"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zent is one entry of a test archive.
type zent struct {
	name string
	body string
	mode fs.FileMode // 0: a regular 0644 file (or a directory for names ending in "/")
	// raw, when set, writes the entry with CreateRaw and these header
	// values (a lying header), body being the stored bytes.
	rawSize uint64
	method  uint16
	flags   uint16
}

func makeZip(t testing.TB, ents ...zent) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range ents {
		if err := addEntry(zw, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func addEntry(zw *zip.Writer, e zent) error {
	fh := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
	if e.method != 0 {
		fh.Method = e.method
	}
	if e.mode != 0 {
		fh.SetMode(e.mode)
	}
	if e.rawSize != 0 || e.flags != 0 {
		fh.Method = e.method // zip.Store unless set
		fh.Flags = e.flags
		fh.CRC32 = crc32.ChecksumIEEE([]byte(e.body))
		fh.CompressedSize64 = uint64(len(e.body))
		fh.UncompressedSize64 = e.rawSize
		w, err := zw.CreateRaw(fh)
		if err != nil {
			return err
		}
		_, err = w.Write([]byte(e.body))
		return err
	}
	w, err := zw.CreateHeader(fh)
	if err != nil {
		return err
	}
	_, err = w.Write([]byte(e.body))
	return err
}

func unpackBytes(t testing.TB, b []byte, maxBytes int64, maxEntries int) (string, int64, error) {
	t.Helper()
	parent := t.TempDir()
	dir := filepath.Join(parent, "build")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := Unpack(bytes.NewReader(b), int64(len(b)), dir, maxBytes, maxEntries)
	return dir, n, err
}

func TestUnpackGood(t *testing.T) {
	b := makeZip(t,
		zent{name: "bin/server", body: "#!/bin/sh\necho hi\n", mode: 0o755},
		zent{name: "data/", mode: fs.ModeDir | 0o755},
		zent{name: "data/level.dat", body: "level"},
		zent{name: "./readme.txt", body: "hello"},
		zent{name: `win\style.txt`, body: "w"},
		zent{name: "lib/libgame.so.1", body: "elf"},
		zent{name: "lib/libgame.so", body: "libgame.so.1", mode: fs.ModeSymlink | 0o777},
		zent{name: "current", body: "data", mode: fs.ModeSymlink | 0o777},
		zent{name: "deep/a/link", body: "../../data/level.dat", mode: fs.ModeSymlink | 0o777},
	)
	dir, n, err := unpackBytes(t, b, 1<<20, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len("#!/bin/sh\necho hi\n") + len("level") + len("hello") + 1 + 3); n != want {
		t.Errorf("size %d, want %d", n, want)
	}
	checks := map[string]struct {
		content string
		exec    bool
	}{
		"bin/server":        {"#!/bin/sh\necho hi\n", true},
		"data/level.dat":    {"level", false},
		"readme.txt":        {"hello", false},
		"win/style.txt":     {"w", false},
		"lib/libgame.so":    {"elf", false},
		"current/level.dat": {"level", false},
		"deep/a/link":       {"level", false},
	}
	for name, c := range checks {
		p := filepath.Join(dir, filepath.FromSlash(name))
		got, err := os.ReadFile(p)
		if err != nil || string(got) != c.content {
			t.Errorf("%s: %q, %v; want %q", name, got, err, c.content)
			continue
		}
		st, _ := os.Stat(p)
		if exec := st.Mode()&0o100 != 0; exec != c.exec {
			t.Errorf("%s: mode %v, want exec %v", name, st.Mode(), c.exec)
		}
	}
}

func TestUnpackRejects(t *testing.T) {
	big := strings.Repeat("0", 64<<10)
	tests := map[string]struct {
		archive    []byte
		maxBytes   int64
		maxEntries int
		reason     string
	}{
		"zip slip":           {archive: makeZip(t, zent{name: "../evil", body: "x"}), reason: `".."`},
		"zip slip inside":    {archive: makeZip(t, zent{name: "a/../../evil", body: "x"}), reason: `".."`},
		"zip slip backslash": {archive: makeZip(t, zent{name: `a\..\..\evil`, body: "x"}), reason: `".."`},
		"absolute":           {archive: makeZip(t, zent{name: "/etc/evil", body: "x"}), reason: "absolute path"},
		"drive letter":       {archive: makeZip(t, zent{name: `C:\evil`, body: "x"}), reason: "drive letter"},
		"symlink absolute":   {archive: makeZip(t, zent{name: "l", body: "/etc/passwd", mode: fs.ModeSymlink | 0o777}), reason: "absolute"},
		"symlink escapes":    {archive: makeZip(t, zent{name: "a/l", body: "../../outside", mode: fs.ModeSymlink | 0o777}), reason: "inside the build"},
		"symlink chain escapes": {archive: makeZip(t,
			zent{name: "f", body: "x"},
			zent{name: "b", body: ".", mode: fs.ModeSymlink | 0o777},
			zent{name: "a", body: "b/..", mode: fs.ModeSymlink | 0o777}), reason: "inside the build"},
		"symlink dangling": {archive: makeZip(t, zent{name: "l", body: "nothing", mode: fs.ModeSymlink | 0o777}), reason: "inside the build"},
		"symlink loop": {archive: makeZip(t,
			zent{name: "a", body: "b", mode: fs.ModeSymlink | 0o777},
			zent{name: "b", body: "a", mode: fs.ModeSymlink | 0o777}), reason: "inside the build"},
		"write through symlink": {archive: makeZip(t,
			zent{name: "d", body: "..", mode: fs.ModeSymlink | 0o777},
			zent{name: "d/evil", body: "x"}), reason: "both as a directory"},
		"duplicate":         {archive: makeZip(t, zent{name: "a", body: "1"}, zent{name: "a", body: "2"}), reason: "twice"},
		"file and dir":      {archive: makeZip(t, zent{name: "a", body: "1"}, zent{name: "a/b", body: "2"}), reason: "both as a directory"},
		"device":            {archive: makeZip(t, zent{name: "dev", mode: fs.ModeDevice | 0o644}), reason: "not a file"},
		"pipe":              {archive: makeZip(t, zent{name: "fifo", mode: fs.ModeNamedPipe | 0o644}), reason: "not a file"},
		"zip bomb declared": {archive: makeZip(t, zent{name: "bomb", body: big}), maxBytes: 1 << 10, reason: "more than"},
		"zip bomb total":    {archive: makeZip(t, zent{name: "a", body: big}, zent{name: "b", body: big}), maxBytes: 100 << 10, reason: "more than"},
		"lying header":      {archive: makeZip(t, zent{name: "liar", body: big, rawSize: 10}), reason: "corrupt"},
		"too many entries":  {archive: makeZip(t, zent{name: "a", body: "1"}, zent{name: "b", body: "2"}, zent{name: "c", body: "3"}), maxEntries: 2, reason: "entries"},
		"encrypted":         {archive: makeZip(t, zent{name: "secret", body: "x", flags: 0x1, rawSize: 1}), reason: "encrypted"},
		"unknown method":    {archive: makeZip(t, zent{name: "lzma", body: "x", method: 14, rawSize: 1}), reason: "compression method"},
		"empty":             {archive: makeZip(t), reason: "no files"},
		"only root":         {archive: makeZip(t, zent{name: "./", mode: fs.ModeDir | 0o755}), reason: "no files"},
		"name too long":     {archive: makeZip(t, zent{name: strings.Repeat("n", 256), body: "x"}), reason: "path element of 256 bytes"},
		"dir name too long": {archive: makeZip(t, zent{name: strings.Repeat("d", 300) + "/f", body: "x"}), reason: "path element of 300 bytes"},
		"path too long":     {archive: makeZip(t, zent{name: strings.Repeat(strings.Repeat("d", 200)+"/", 16) + "f", body: "x"}), reason: "path of 3217 bytes"},
		"not a zip":         {archive: []byte("this is not a zip archive at all"), reason: "not a valid zip"},
		"truncated":         {archive: truncate(makeZip(t, zent{name: "a", body: big}), 30), reason: "not a valid zip"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.maxBytes == 0 {
				tc.maxBytes = 1 << 20
			}
			if tc.maxEntries == 0 {
				tc.maxEntries = 100
			}
			dir, _, err := unpackBytes(t, tc.archive, tc.maxBytes, tc.maxEntries)
			var ae *ArchiveError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want an *ArchiveError", err)
			}
			if !strings.Contains(ae.Reason, tc.reason) {
				t.Errorf("reason %q does not mention %q", ae.Reason, tc.reason)
			}
			assertContained(t, filepath.Dir(dir), dir)
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("a rejected archive left %d entries behind", len(left))
			}
		})
	}
}

func truncate(b []byte, n int) []byte { return b[:len(b)-n] }

// TestUnpackCorruptData flips the stored data of a deflated archive so that
// decompression or the CRC check fails.
func TestUnpackCorruptData(t *testing.T) {
	b := makeZip(t, zent{name: "a.txt", body: strings.Repeat("hello world ", 1000)})
	// Local header is 30 bytes + name; corrupt data just after it.
	off := 30 + len("a.txt") + 20
	b[off] ^= 0xff
	b[off+1] ^= 0xff
	_, _, err := unpackBytes(t, b, 1<<20, 10)
	var ae *ArchiveError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "corrupt") {
		t.Fatalf("err = %v, want a corrupt-entry ArchiveError", err)
	}
}

// assertContained checks that parent holds nothing but dir, and that every
// symlink under dir resolves inside it.
func assertContained(t testing.TB, parent, dir string) {
	t.Helper()
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if filepath.Join(parent, e.Name()) != dir {
			t.Fatalf("unpack wrote %s outside the build directory", e.Name())
		}
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			if rel, err := filepath.Rel(realDir, r); err != nil || !filepath.IsLocal(rel) && rel != "." {
				t.Fatalf("symlink %s resolves to %s, outside the build", p, r)
			}
		}
		return nil
	})
}

func FuzzUnpack(f *testing.F) {
	f.Add(makeZip(f, zent{name: "a/b.txt", body: "hello"}, zent{name: "x", body: "a", mode: fs.ModeSymlink | 0o777}))
	f.Add(makeZip(f, zent{name: "../evil", body: "x"}))
	f.Add(makeZip(f, zent{name: "b", body: ".", mode: fs.ModeSymlink | 0o777}, zent{name: "a", body: "b/..", mode: fs.ModeSymlink | 0o777}))
	f.Add(makeZip(f, zent{name: "d", body: "..", mode: fs.ModeSymlink | 0o777}, zent{name: "d/e", body: "x"}))
	f.Add(makeZip(f, zent{name: "bin/run", body: "#!", mode: 0o755}, zent{name: "e/", mode: fs.ModeDir | 0o700}))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir, _, err := unpackBytes(t, b, 1<<20, 1000)
		var ae *ArchiveError
		if err != nil && !errors.As(err, &ae) {
			// Hoist-side failures (a name the OS refuses, say) are allowed,
			// but never an escape.
			t.Logf("non-archive error: %v", err)
		}
		assertContained(t, filepath.Dir(dir), dir)
	})
}
