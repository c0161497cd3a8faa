package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRelease runs the tool as a release would for this machine's target
// (when it is a release target): the archive holds the binary, LICENSE,
// README and (Linux) the systemd units; SHA256SUMS matches what was
// written; the binary prints the stamped version; a second run writes the
// same bytes; and -archive=false leaves the same binary.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the release build compiles Hoist anew (with -trimpath), about a minute of CPU")
	}
	host := target{runtime.GOOS, runtime.GOARCH}
	if !slices.Contains(defaultTargets, host) {
		t.Skipf("%s is not a release target: the test runs the binary it builds", host)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600") // 2026-01-01
	const version = "v0.0.0-test.1"
	runTool := func(args ...string) string {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		args = append([]string{"-version", version, "-targets", host.String(), "-out", dir}, args...)
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("release %s: status %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
		return dir
	}
	first := runTool()
	sums := checkSums(t, first)
	archive := host.name(version) + ".tar.gz"
	if host.OS == "windows" {
		archive = host.name(version) + ".zip"
	}
	if _, ok := sums[archive]; !ok || len(sums) != 1 {
		t.Fatalf("SHA256SUMS lists %v, want %s alone", sums, archive)
	}
	bin := unpack(t, filepath.Join(first, archive), host)
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || string(out) != "hoist "+version+"\n" {
		t.Errorf("hoist --version: %q, %v; want %q", out, err, "hoist "+version+"\n")
	}

	if again := checkSums(t, runTool()); again[archive] != sums[archive] {
		t.Errorf("a second run wrote another archive: %s, then %s", sums[archive], again[archive])
	}
	binSums := checkSums(t, runTool("-archive=false"))
	wantBin, err := fileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	if got := binSums[host.name(version)+"/"+host.exe()]; got != wantBin {
		t.Errorf("-archive=false: binary %s, want the archive's %s (SHA256SUMS: %v)", got, wantBin, binSums)
	}
}

// checkSums reads dir/SHA256SUMS, checks every file it names against its
// sum, and returns the sums by name.
func checkSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 || name == "" {
			t.Fatalf("SHA256SUMS line %q: want <sha256 hex>  <name>", sc.Text())
		}
		got, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || got != sum {
			t.Fatalf("%s: SHA-256 %s (%v), SHA256SUMS says %s", name, got, err, sum)
		}
		sums[name] = sum
	}
	return sums
}

// unpack checks a target's archive's entries and extracts its binary into
// a temporary directory, returning its path.
func unpack(t *testing.T, archive string, tg target) string {
	t.Helper()
	files := readArchive(t, archive)
	top := tg.name("v0.0.0-test.1") + "/"
	want := []string{top, top + tg.exe(), top + "LICENSE", top + "README.md"}
	if tg.OS == "linux" {
		want = append(want, top+"systemd/hoist-agent.env", top+"systemd/hoist-agent.service",
			top+"systemd/hoist-anywhere.env", top+"systemd/hoist-anywhere.service",
			top+"systemd/hoist.env", top+"systemd/hoist.service")
	}
	var names []string
	for _, f := range files {
		names = append(names, f.name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("archive holds %q, want %q", names, want)
	}
	bin := filepath.Join(t.TempDir(), tg.exe())
	if err := os.WriteFile(bin, files[1].data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// archived is one entry read back from an archive.
type archived struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
	data  []byte
}

// readArchive reads every entry of a .tar.gz or .zip archive, in order.
func readArchive(t *testing.T, path string) []archived {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".zip") {
		return readZip(t, b)
	}
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out []archived
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: owner %d/%d (%q/%q), want 0/0 unnamed", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		out = append(out, archived{h.Name, h.FileInfo().Mode(), h.ModTime, data})
	}
}

// readZip reads every entry of a zip archive, in order.
func readZip(t *testing.T, b []byte) []archived {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out []archived
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, archived{f.Name, f.Mode(), f.Modified, data})
	}
	return out
}

// TestArchivesAreReproducible: both archive formats make the same bytes
// from the same files whatever the files' own times and modes, and hold
// the modes and the time they were given.
func TestArchivesAreReproducible(t *testing.T) {
	src := t.TempDir()
	bin, doc := filepath.Join(src, "hoist.exe"), filepath.Join(src, "LICENSE")
	for _, p := range []string{bin, doc} {
		if err := os.WriteFile(p, []byte("contents of "+filepath.Base(p)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	entries := []entry{{"hoist.exe", bin, 0o755}, {"LICENSE", doc, 0o644}}
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, write := range map[string]func(string, string, []entry, time.Time) error{
		"a.zip": writeZip, "a.tar.gz": writeTarGz,
	} {
		t.Run(name, func(t *testing.T) {
			var sums []string
			for i := range 2 {
				dst := filepath.Join(t.TempDir(), name)
				if err := write(dst, "top", entries, mtime); err != nil {
					t.Fatal(err)
				}
				sum, err := fileSHA256(dst)
				if err != nil {
					t.Fatal(err)
				}
				sums = append(sums, sum)
				if i == 0 {
					checkEntries(t, readArchive(t, dst), mtime)
				}
				// The next run's files: other times, other modes.
				later := mtime.Add(time.Duration(i+1) * time.Hour)
				for _, p := range []string{bin, doc} {
					_ = os.Chtimes(p, later, later)
					_ = os.Chmod(p, 0o640)
				}
			}
			if sums[0] != sums[1] {
				t.Errorf("two archives of the same files: %s, %s", sums[0], sums[1])
			}
		})
	}
}

// checkEntries checks the entries written by TestArchivesAreReproducible.
func checkEntries(t *testing.T, got []archived, mtime time.Time) {
	t.Helper()
	want := []archived{
		{"top/", fs.ModeDir | 0o755, mtime, nil},
		{"top/hoist.exe", 0o755, mtime, []byte("contents of hoist.exe")},
		{"top/LICENSE", 0o644, mtime, []byte("contents of LICENSE")},
	}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.name != w.name || g.mode != w.mode || !g.mtime.Equal(w.mtime) || !bytes.Equal(g.data, w.data) {
			t.Errorf("entry %d: %q %v %v %q, want %q %v %v %q", i, g.name, g.mode, g.mtime, g.data, w.name, w.mode, w.mtime, w.data)
		}
	}
}

// TestSettings: the version, the targets and the build environment.
func TestSettings(t *testing.T) {
	for v, ok := range map[string]bool{
		"v0.3.0": true, "v1.0.0-rc.1": true, "v10.20.30-beta-2": true, "v0.0.0-ci": true,
		"0.3.0": false, "v0.3": false, "v01.0.0": false, "v1.0.0+meta": false, "v1.0.0-": false,
		"v1.0.0 -X main.x=y": false, "v1.0.0/../x": false, "": false,
	} {
		if err := checkVersion(v); (err == nil) != ok {
			t.Errorf("checkVersion(%q) = %v, want ok %v", v, err, ok)
		}
	}
	ts, err := parseTargets("linux/arm64, windows/amd64,linux/arm64")
	if err != nil || !slices.Equal(ts, []target{{"linux", "arm64"}, {"windows", "amd64"}}) {
		t.Errorf("parseTargets: %v, %v", ts, err)
	}
	for _, bad := range []string{"linux/386", "plan9/amd64", "linux", ""} {
		if _, err := parseTargets(bad); err == nil {
			t.Errorf("parseTargets(%q): no error", bad)
		}
	}
	env := buildEnv([]string{"HOME=/h", "CGO_ENABLED=1", "GOFLAGS=-race", "GOAMD64=v3", "GOOS=plan9", "GOPATH=/p"}, target{"linux", "arm64"})
	want := []string{"HOME=/h", "GOPATH=/p", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64", "GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS=", "GOEXPERIMENT=", "GOWORK=off"}
	if !slices.Equal(env, want) {
		t.Errorf("buildEnv:\n got %q\nwant %q", env, want)
	}
}

// FuzzCheckVersion: an accepted version is safe in a file name and on the
// linker's command line.
func FuzzCheckVersion(f *testing.F) {
	for _, s := range []string{"v0.3.0", "v1.0.0-rc.1", "v1.0.0 x", "v1.0.0/..", "v1.0.0-\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if checkVersion(v) != nil {
			return
		}
		if !strings.HasPrefix(v, "v") || len(v) > 64 || strings.ContainsFunc(v, func(r rune) bool {
			return !(r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}) {
			t.Errorf("accepted %q", v)
		}
	})
}
