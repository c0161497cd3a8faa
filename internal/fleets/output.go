package fleets

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// A server process's output is untrusted: a hostile game server can print
// anything. What Hoist quotes of it (in a fleet event's Message and in its
// own log) is bounded and escaped; the copy its PreSignedLogUrl serves is
// bounded and kept only for the newest processes of each fleet.
const (
	// quoteLines is how many of the output's last lines are quoted, and
	// quoteBytes how many bytes they may take together (the last line is
	// quoted whatever its size).
	quoteLines = 10
	quoteBytes = 1 << 10
	// quoteLineMax is the most characters of one quoted line, escapes
	// included; a longer line is cut and ends with quoteCut.
	quoteLineMax = 200
	quoteCut     = "…"
	// quoteRead is how many bytes are read from the end of the output
	// for the quote.
	quoteRead = 8 << 10
	// outputKeepMax is the most bytes of a process's output kept for its
	// log URL (the end of it).
	outputKeepMax = 1 << 20
	// outputKeepCount is how many processes' output a fleet keeps; the
	// oldest copies go first.
	outputKeepCount = 20
	// outputDirName holds the kept copies in the fleet's directory.
	outputDirName = "process-output"
)

// quoteOutput returns the last non-blank lines of a process's output (at
// most quoteLines, of quoteBytes together), each escaped and cut by
// quoteLine. partial says that data does not begin at the start of the
// output: its first line may be the end of a longer one and is dropped.
func quoteOutput(data []byte, partial bool) []string {
	lines := bytes.Split(data, []byte{'\n'})
	if partial && len(lines) > 0 {
		lines = lines[1:]
	}
	var out []string
	total := 0
	for i := len(lines) - 1; i >= 0 && len(out) < quoteLines; i-- {
		l := bytes.TrimSuffix(lines[i], []byte{'\r'})
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		q := quoteLine(l)
		if total += len(q); total > quoteBytes && len(out) > 0 {
			break
		}
		out = append(out, q)
	}
	slices.Reverse(out)
	return out
}

// quoteLine escapes one line of output so that it reads as one line of
// printable text whatever it holds: a backslash becomes \\, bytes that are
// not UTF-8 become \xNN, and every rune that is not printable (control
// characters, ANSI escapes, line and paragraph separators, bidirectional
// and other format characters) becomes \xNN, \uNNNN or \UNNNNNNNN. A
// line longer than quoteLineMax characters (escapes included) is cut
// there and ends with quoteCut.
func quoteLine(l []byte) string {
	var b strings.Builder
	n := 0
	for len(l) > 0 {
		r, size := utf8.DecodeRune(l)
		piece := escapeRune(r, l[:size])
		k := utf8.RuneCountInString(piece)
		if n+k > quoteLineMax {
			b.WriteString(quoteCut)
			break
		}
		n += k
		b.WriteString(piece)
		l = l[size:]
	}
	return b.String()
}

// escapeRune returns how quoteLine writes rune r, read from raw.
func escapeRune(r rune, raw []byte) string {
	switch {
	case r == utf8.RuneError && len(raw) == 1:
		return fmt.Sprintf(`\x%02x`, raw[0])
	case r == '\\':
		return `\\`
	case r == ' ' || (unicode.IsPrint(r) && r != utf8.RuneError):
		return string(r)
	case r < 0x80:
		return fmt.Sprintf(`\x%02x`, r)
	case r <= 0xffff:
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}

// openOutput opens a process's output file for reading: a regular file,
// not a symbolic link (where a game server runs as Hoist's own user it
// could replace its output file with a link to a file of Hoist's).
func openOutput(path string) (*os.File, error) {
	li, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !li.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !os.SameFile(li, fi) {
		f.Close()
		return nil, fmt.Errorf("%s changed while it was opened", path)
	}
	return f, nil
}

// readTail returns the last limit bytes of f and whether they start after
// the beginning of the file.
func readTail(f *os.File, limit int64) ([]byte, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	off := max(fi.Size()-limit, 0)
	buf := make([]byte, fi.Size()-off)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	return buf[:n], off > 0, nil
}

// processOutput is what Hoist took of an ended process's output.
type processOutput struct {
	// Read: its output file was read.
	Read bool
	// Lines are its last lines, escaped (quoteOutput).
	Lines []string
	// Kept: a copy of its end is kept for the event's PreSignedLogUrl.
	Kept bool
	// Pruned are the processes whose older copies were removed to make
	// room for it (their holder records go with them).
	Pruned []string
}

// takeOutput quotes the end of a process's output file and, when the
// fleet has a directory, keeps a copy of its last outputKeepMax bytes
// there. Failures are logged: the event is recorded without them.
func (s *Service) takeOutput(fleetID, processID, path string) processOutput {
	var out processOutput
	if path == "" {
		return out
	}
	f, err := openOutput(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("fleets: reading a server process's output", "fleet", fleetID, "process", processID, "err", err)
		}
		return out
	}
	defer f.Close()
	data, partial, err := readTail(f, quoteRead)
	if err != nil {
		s.log.Warn("fleets: reading a server process's output", "fleet", fleetID, "process", processID, "err", err)
		return out
	}
	out.Read, out.Lines = true, quoteOutput(data, partial)
	pruned, err := s.keepOutput(fleetID, processID, f)
	if err != nil {
		s.log.Warn("fleets: keeping a server process's output", "fleet", fleetID, "process", processID, "err", err)
	} else {
		out.Kept = s.fleetDir(fleetID) != ""
	}
	out.Pruned = pruned
	return out
}

// keepOutput copies the last outputKeepMax bytes of f to the fleet's
// directory as the output of processID, and removes the oldest copies
// beyond outputKeepCount; it returns the processes whose copies it removed.
func (s *Service) keepOutput(fleetID, processID string, f *os.File) ([]string, error) {
	dir := s.fleetDir(fleetID)
	if dir == "" {
		return nil, nil
	}
	if !validName(processID) {
		return nil, fmt.Errorf("process ID %q cannot name a file", processID)
	}
	dir = filepath.Join(dir, outputDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(fi.Size()-outputKeepMax, 0)
	name := processID + ".log"
	w, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(w, io.NewSectionReader(f, off, fi.Size()-off))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return pruneOutputs(dir, outputKeepCount, name)
}

// validName reports whether an ID can name a file: not empty, no path
// separator, no dot-only name.
func validName(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, `/\`+"\x00")
}

// pruneOutputs removes the oldest files of dir beyond keep, never newest
// (the copy just written: file times may be too coarse to tell), and
// returns the processes whose copies it removed.
func pruneOutputs(dir string, keep int, newest string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) <= keep {
		return nil, err
	}
	type aged struct {
		name string
		mod  int64
	}
	var files []aged
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && e.Name() != newest {
			files = append(files, aged{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(files, func(a, b aged) int {
		return cmp.Or(cmp.Compare(a.mod, b.mod), strings.Compare(a.name, b.name))
	})
	var errs []error
	var pruned []string
	for _, f := range files[:max(len(files)+1-keep, 0)] {
		if err := os.Remove(filepath.Join(dir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		pruned = append(pruned, strings.TrimSuffix(f.name, ".log"))
	}
	return pruned, errors.Join(errs...)
}

// WriteProcessOutput writes the kept output of a server process of a
// fleet (what the PreSignedLogUrl of its SERVER_PROCESS_* events serves);
// NotFoundException when the fleet or the copy is gone;
// *hosting.LogsElsewhere when another replica's data directory holds it.
func (s *Service) WriteProcessOutput(ctx context.Context, w io.Writer, fleetID, processID string) error {
	var holder string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		if _, err := getFleet(ctx, tx, fleetID); err != nil {
			return err
		}
		var err error
		holder, err = outputHolder(ctx, tx, fleetID, processID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return api.NewNotFoundException("fleet %s does not exist", fleetID)
	}
	if err != nil {
		return err
	}
	if holder != "" && holder != s.cfg.ReplicaID {
		return &hosting.LogsElsewhere{Replica: holder}
	}
	gone := api.NewNotFoundException("the output of server process %s of fleet %s is no longer kept (Hoist keeps the newest %d per fleet)",
		processID, fleetID, outputKeepCount)
	dir := s.fleetDir(fleetID)
	if dir == "" || !validName(processID) {
		return gone
	}
	root, err := os.OpenRoot(filepath.Join(dir, outputDirName))
	if err != nil {
		return gone
	}
	defer root.Close()
	f, err := root.Open(processID + ".log")
	if err != nil {
		return gone
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
