package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// target is one GOOS/GOARCH pair a release is built for.
type target struct{ OS, Arch string }

// defaultTargets are the release targets: the platforms Hoist ships for.
var defaultTargets = []target{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}, {"windows", "amd64"},
}

func (t target) String() string { return t.OS + "/" + t.Arch }

// exe is the binary's file name on the target.
func (t target) exe() string {
	if t.OS == "windows" {
		return "hoist.exe"
	}
	return "hoist"
}

// name is the release's name for the target: the archive's base name and
// its top directory.
func (t target) name(version string) string {
	return "hoist_" + version + "_" + t.OS + "_" + t.Arch
}

// targetNames lists the targets as GOOS/GOARCH.
func targetNames(ts []target) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	return names
}

// parseTargets reads a comma-separated list of GOOS/GOARCH pairs, each
// one of the release targets, in the order given, without repeats.
func parseTargets(s string) ([]target, error) {
	var ts []target
	for _, f := range strings.Split(s, ",") {
		os, arch, _ := strings.Cut(strings.TrimSpace(f), "/")
		t := target{os, arch}
		if !slices.Contains(defaultTargets, t) {
			return nil, fmt.Errorf("-targets: %q is not a release target (want some of %s)", f, strings.Join(targetNames(defaultTargets), ","))
		}
		if !slices.Contains(ts, t) {
			ts = append(ts, t)
		}
	}
	return ts, nil
}

// versionPattern is a semantic version with Go's leading v (as module
// versions and tags are written), without build metadata: it becomes part
// of file names and of the linker's command line.
var versionPattern = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// checkVersion accepts a release version such as v0.3.0 or v1.0.0-rc.1.
func checkVersion(v string) error {
	if len(v) > 64 || !versionPattern.MatchString(v) {
		return fmt.Errorf("-version %q: want vMAJOR.MINOR.PATCH with an optional -PRERELEASE (letters, digits, '-' and '.'), e.g. v0.3.0", v)
	}
	return nil
}

// ldflags are the linker flags of a release build: no symbol table or
// DWARF, and the version hoist --version prints (main.version).
func ldflags(version string) string {
	return "-s -w -X main.version=" + version
}

// buildEnv is env with the settings that make a build the same on every
// machine: no cgo, the target, the baseline instruction set levels, no
// GOFLAGS, experiments or workspace from the caller.
func buildEnv(env []string, t target) []string {
	fixed := []string{
		"CGO_ENABLED=0", "GOOS=" + t.OS, "GOARCH=" + t.Arch, "GOAMD64=v1", "GOARM64=v8.0",
		"GOFLAGS=", "GOEXPERIMENT=", "GOWORK=off",
	}
	out := make([]string, 0, len(env)+len(fixed))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(fixed, func(f string) bool { return strings.HasPrefix(f, k+"=") }) {
			out = append(out, kv)
		}
	}
	return append(out, fixed...)
}

// plan is one run of the release tool.
type plan struct {
	version string
	targets []target
	out     string // absolute
	archive bool
}

// newPlan checks the settings of a run.
func newPlan(version, targets, out string, archive bool) (*plan, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	ts, err := parseTargets(targets)
	if err != nil {
		return nil, err
	}
	if out == "" {
		return nil, errors.New("-out: empty")
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("-out: %w", err)
	}
	return &plan{version: version, targets: ts, out: abs, archive: archive}, nil
}

// run builds every target into p.out, then writes SHA256SUMS.
func (p *plan) run(stdout io.Writer) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	gover, err := goOutput(root, nil, "env", "GOVERSION")
	if err != nil {
		return err
	}
	mtime, from := sourceDate(root)
	fmt.Fprintf(stdout, "hoist %s with %s, archive times %s (%s)\n", p.version, gover, mtime.Format(time.RFC3339), from)
	if err := os.MkdirAll(p.out, 0o755); err != nil {
		return err
	}
	var files []string
	for _, t := range p.targets {
		f, err := p.buildTarget(root, t, mtime)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	sums, err := writeSums(p.out, files)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, sums)
	return nil
}

// buildTarget builds hoist for t and packs it (or leaves the binary in
// out/<name>/), returning the file's path relative to p.out.
func (p *plan) buildTarget(root string, t target, mtime time.Time) (string, error) {
	name := t.name(p.version)
	if !p.archive {
		if err := os.MkdirAll(filepath.Join(p.out, name), 0o755); err != nil {
			return "", err
		}
		rel := name + "/" + t.exe()
		return rel, goBuild(root, t, p.version, filepath.Join(p.out, filepath.FromSlash(rel)))
	}
	tmp, err := os.MkdirTemp("", "hoist-release-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, t.exe())
	if err := goBuild(root, t, p.version, bin); err != nil {
		return "", err
	}
	entries, err := archiveEntries(root, t, bin)
	if err != nil {
		return "", err
	}
	if t.OS == "windows" {
		return name + ".zip", writeZip(filepath.Join(p.out, name+".zip"), name, entries, mtime)
	}
	return name + ".tar.gz", writeTarGz(filepath.Join(p.out, name+".tar.gz"), name, entries, mtime)
}

// goBuild builds ./cmd/hoist of the module at root for t into dst.
func goBuild(root string, t target, version, dst string) error {
	_, err := goOutput(root, buildEnv(os.Environ(), t), "build", "-trimpath", "-buildvcs=false",
		"-ldflags", ldflags(version), "-o", dst, "./cmd/hoist")
	if err != nil {
		return fmt.Errorf("%s: %w", t, err)
	}
	return nil
}

// goOutput runs the go command in dir (with env, if not nil) and returns
// its standard output, trimmed.
func goOutput(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out)), nil
}

// modulePath is the module the tool releases.
const modulePath = "github.com/hoistgg/hoist"

// moduleRoot is the directory of the Hoist module the tool runs in.
func moduleRoot() (string, error) {
	out, err := goOutput("", append(os.Environ(), "GOWORK=off"), "list", "-m", "-f", "{{.Path}}\t{{.Dir}}")
	if err != nil {
		return "", err
	}
	path, dir, _ := strings.Cut(out, "\t")
	if path != modulePath || dir == "" {
		return "", fmt.Errorf("run inside the Hoist repository (module %s), not in %q", modulePath, path)
	}
	return dir, nil
}

// sourceDate is the time archive entries carry: SOURCE_DATE_EPOCH (the
// reproducible-builds convention) when set, else the time of the HEAD
// commit, else 1980-01-01 (the earliest a zip file can hold); and where
// it came from.
func sourceDate(root string) (time.Time, string) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 315532800 {
			return time.Unix(n, 0).UTC(), "SOURCE_DATE_EPOCH"
		}
	}
	cmd := exec.Command("git", "log", "-1", "--format=%ct", "HEAD")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && n >= 315532800 {
			return time.Unix(n, 0).UTC(), "the HEAD commit"
		}
	}
	return time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC), "no SOURCE_DATE_EPOCH and no git commit"
}

// writeSums writes out/SHA256SUMS for files (paths relative to out, with
// forward slashes), in the format sha256sum -c reads, sorted by name, and
// returns its contents.
func writeSums(out string, files []string) (string, error) {
	files = slices.Clone(files)
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		sum, err := fileSHA256(filepath.Join(out, filepath.FromSlash(f)))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, f)
	}
	return b.String(), os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(b.String()), 0o644)
}

// fileSHA256 is the SHA-256 of a file's contents, in hex.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
