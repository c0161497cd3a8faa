package journal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hoistgg/hoist/internal/store"
)

// Files in the store's directory, by generation g (16 hex digits):
//
//	journal-g   entries appended since snapshot-g (or since the start, for
//	            the first generation); each Update is one entry
//	snapshot-g  the whole state as of the start of journal-g
//	LOCK        the lock file
//
// A new generation starts when the journal file grows past
// Options.SnapshotBytes: journal-(g+1) is created, then snapshot-(g+1) is
// written next to it from the state as of the end of journal-g, and only
// once it is durable are journal-g and snapshot-g removed.
const (
	journalPrefix  = "journal-"
	snapshotPrefix = "snapshot-"
	tmpSuffix      = ".tmp"
)

var (
	// journalMagic starts a journal file of format 2 (batches of entries);
	// journalMagicV1, format 1 (entries alone), which Hoist still reads.
	journalMagic   = []byte("HOISTJ\x00\x02")
	journalMagicV1 = []byte("HOISTJ\x00\x01")
	snapshotMagic  = []byte("HOISTS\x00\x01")
)

func fileName(prefix string, gen uint64) string {
	return fmt.Sprintf("%s%016x", prefix, gen)
}

// parseGen returns the generation of a journal or snapshot file name.
func parseGen(name, prefix string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || len(rest) != 16 {
		return 0, false
	}
	g, err := strconv.ParseUint(rest, 16, 64)
	return g, err == nil
}

// recover loads the newest intact snapshot, replays the journal files from
// its generation on, cuts a torn entry off the end of the last one (a write
// that a crash interrupted: never acknowledged), removes files older than
// the snapshot and opens the last journal file for appending.
func (s *Store) recover() error {
	names, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	var journals, snapshots []uint64
	for _, name := range names {
		if strings.HasSuffix(name, tmpSuffix) {
			_ = s.fs.Remove(filepath.Join(s.dir, name)) // an unfinished snapshot or copy
			continue
		}
		if g, ok := parseGen(name, journalPrefix); ok {
			journals = append(journals, g)
		} else if g, ok := parseGen(name, snapshotPrefix); ok {
			snapshots = append(snapshots, g)
		}
	}
	slices.Sort(journals)
	slices.Sort(snapshots)
	base := uint64(0) // generation of the snapshot loaded; 0: none
	for i := len(snapshots) - 1; i >= 0; i-- {
		err := s.loadSnapshot(snapshots[i])
		if err == nil {
			base = snapshots[i]
			break
		}
		s.log.Error("journal: snapshot unreadable, trying an older one", "file", fileName(snapshotPrefix, snapshots[i]), "err", err)
		s.tables, s.leases, s.nextSeq = map[store.Kind]*table{}, map[string]lease{}, 1
	}
	var replay []uint64
	for _, g := range journals {
		if g >= base {
			replay = append(replay, g)
		}
	}
	switch {
	case len(replay) > 0 && base == 0 && replay[0] != 1:
		return fmt.Errorf("journal: %s: the files before %s are missing and no snapshot covers them",
			s.dir, fileName(journalPrefix, replay[0]))
	case len(replay) > 0 && base != 0 && replay[0] != base:
		return fmt.Errorf("journal: %s: %s is missing", s.dir, fileName(journalPrefix, base))
	}
	for i, g := range replay {
		if i > 0 && g != replay[i-1]+1 {
			return fmt.Errorf("journal: %s: %s is missing", s.dir, fileName(journalPrefix, replay[i-1]+1))
		}
		if err := s.replay(g, i == len(replay)-1); err != nil {
			return err
		}
	}
	if len(replay) == 0 {
		g := max(base, 1)
		if err := s.createJournal(g); err != nil {
			return err
		}
	}
	for _, g := range journals {
		if g < base {
			_ = s.fs.Remove(filepath.Join(s.dir, fileName(journalPrefix, g)))
		}
	}
	for _, g := range snapshots {
		if g < base {
			_ = s.fs.Remove(filepath.Join(s.dir, fileName(snapshotPrefix, g)))
		}
	}
	return nil
}

// apply replays one decoded operation on the working state.
func (s *Store) apply(o *op) {
	switch o.code {
	case opPut:
		t := s.tables[o.kind]
		if t == nil {
			t = newTable()
			s.tables[o.kind] = t
		}
		r := o.r
		t.set(t.get(r.id), &r)
		s.nextSeq = max(s.nextSeq, r.seq+1)
	case opDelete:
		if t := s.tables[o.kind]; t != nil {
			t.set(t.get(o.r.id), nil)
		}
	case opLease, opLeaseTerm:
		l := lease{holder: o.holder, expires: o.expires, term: o.term}
		if o.code == opLease { // written before terms: a new holder, a new term
			cur, had := s.leases[o.name]
			l.term = max(cur.term, 1)
			if had && cur.holder != o.holder {
				l.term++
			}
		}
		s.leases[o.name] = l
	case opNextSeq:
		s.nextSeq = max(s.nextSeq, o.n)
	}
}

// replay applies the entries of journal-g, up to the first zero header (the
// preallocated rest of the file). Files of format 2 (journalMagic) hold
// batches of entries, one per write; files of format 1 (an older Hoist's)
// hold entries alone.
//
// Only a torn tail may end the journal early: in the last file, a batch
// (format 1: an entry) that is not whole and intact and after which no
// intact one follows: the write a crash interrupted, so never
// acknowledged, which is zeroed. Anything else is damage: a bad batch that
// an intact one follows (or, in a file that newer files follow, any bad
// batch) would mean dropping writes that were acknowledged. Then the file
// is copied aside and Open fails, saying where and what the operator can do.
func (s *Store) replay(g uint64, last bool) error {
	path := filepath.Join(s.dir, fileName(journalPrefix, g))
	data, err := s.fs.ReadFile(path)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if last && !slices.ContainsFunc(data, func(c byte) bool { return c != 0 }) {
		// Created, but its header never reached the disk.
		return s.createJournal(g)
	}
	batches := bytes.HasPrefix(data, journalMagic)
	if !batches && !bytes.HasPrefix(data, journalMagicV1) {
		return fmt.Errorf("journal: %s is not a Hoist journal file", path)
	}
	unit := "entry"
	if batches {
		unit = "batch"
	}
	rest, entries := data[len(journalMagic):], 0
	for len(rest) > 0 {
		frame, next, ok := readUnit(rest, batches)
		if !ok {
			break
		}
		at := int64(len(data) - len(rest))
		payloads, err := unitEntries(frame, batches)
		if err != nil {
			return s.damaged(path, data, at, fmt.Sprintf("the %s at offset %d has a matching checksum but does not decode", unit, at))
		}
		for _, payload := range payloads {
			d := decoder{b: payload}
			for {
				o, ok := d.next()
				if !ok {
					break
				}
				s.apply(&o)
			}
			entries++
		}
		rest = next
	}
	end := int64(len(data) - len(rest))
	dirty := slices.ContainsFunc(rest, func(c byte) bool { return c != 0 })
	if dirty && !last {
		return s.damaged(path, data, end, fmt.Sprintf("damaged %s at offset %d, and newer journal files follow it", unit, end))
	}
	if dirty {
		if at, ok := intactAfter(rest, batches); ok {
			return s.damaged(path, data, end, fmt.Sprintf("damaged %s at offset %d, and an intact %s follows it at offset %d", unit, end, unit, end+int64(at)))
		}
	}
	if !last {
		return nil
	}
	f, err := s.fs.OpenRW(path)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if dirty {
		// A batch a crash interrupted: never acknowledged. Zero it, so that
		// no part of it can pass for an entry once new ones are written over it.
		s.log.Warn("journal: cleared a write a crash left unfinished (it was never acknowledged)",
			"file", filepath.Base(path), "offset", end, "bytes", len(rest))
		if err := writeZeros(f, end, int64(len(rest))); err != nil {
			_ = f.Close()
			return fmt.Errorf("journal: clear the end of %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return fmt.Errorf("journal: %w", err)
		}
	}
	s.log.Info("journal: replayed", "file", filepath.Base(path), "entries", entries)
	if !batches {
		// An older Hoist's file: new writes go to a new generation, in
		// format 2; this one is removed with the next snapshot.
		_ = f.Close()
		return s.createJournal(g + 1)
	}
	s.gen = g
	s.out.open(s.fs, f, end, int64(len(data)), data[end&^(dioBlock-1):end], s.opts.BufferedWrites)
	return nil
}

// readUnit reads the batch (with batches) or entry at the start of b.
func readUnit(b []byte, batches bool) (frame, rest []byte, ok bool) {
	if batches {
		return readBatch(b)
	}
	return readEntry(b)
}

// unitEntries returns the payloads of the entries of an intact batch (or
// the one payload of an intact entry), each decoding whole.
func unitEntries(frame []byte, batches bool) ([][]byte, error) {
	if !batches {
		return [][]byte{frame}, validPayload(frame)
	}
	var out [][]byte
	for len(frame) > 0 {
		payload, next, ok := readEntry(frame)
		if !ok {
			return nil, errCorrupt
		}
		if err := validPayload(payload); err != nil {
			return nil, err
		}
		out = append(out, payload)
		frame = next
	}
	return out, nil
}

// validPayload reports whether every operation of an entry's payload decodes.
func validPayload(payload []byte) error {
	d := decoder{b: payload}
	for {
		if _, ok := d.next(); !ok {
			return d.err
		}
	}
}

// intactAfter looks for a whole, intact batch or entry (its checksum
// matches and its operations decode) starting anywhere after the first
// byte of b, which starts with one that is not; at is its offset in b.
func intactAfter(b []byte, batches bool) (at int, ok bool) {
	for i := 1; i+entryHeader < len(b); i++ {
		if frame, _, ok := readUnit(b[i:], batches); ok {
			if _, err := unitEntries(frame, batches); err == nil {
				return i, true
			}
		}
	}
	return 0, false
}

// brokenSuffix names the copy of a damaged journal file that Open leaves
// next to it.
const brokenSuffix = ".broken"

// damaged copies the journal file at path (whose content is data) aside as
// path.broken, durably, and returns the error Open fails with: which file,
// the offset and what the operator can do. Nothing of the file is changed.
func (s *Store) damaged(path string, data []byte, off int64, what string) error {
	copyPath, err := s.copyAside(path, data)
	kept := "a copy of the file is " + copyPath
	if err != nil {
		s.log.Error("journal: could not copy a damaged journal file aside", "file", path, "err", err)
		kept = "it could not be copied aside (" + err.Error() + "); copy it before changing it"
	}
	return fmt.Errorf("journal: %s: %s: dropping it would lose acknowledged writes, so the store does not open; %s. "+
		"Restore the data directory from a backup, or, to give up everything in this file from offset %d on "+
		"(and keep the rest), truncate it to that size (truncate -s %d %s) and start Hoist again (see internal/store/README.md, \"Damage\")",
		path, what, kept, off, off, path)
}

// copyAside writes data to path.broken (or path.broken.N when that holds
// something else), through a temporary file, and syncs it. A copy with the
// same content already there is kept, so that restarts do not pile copies up.
func (s *Store) copyAside(path string, data []byte) (string, error) {
	for n := 0; ; n++ {
		dst := path + brokenSuffix
		if n > 0 {
			dst += "." + strconv.Itoa(n)
		}
		old, err := s.fs.ReadFile(dst)
		if err == nil {
			if bytes.Equal(old, data) {
				return dst, nil
			}
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		f, err := s.fs.Create(dst + tmpSuffix)
		if err != nil {
			return "", err
		}
		if _, err := f.Write(data); err != nil {
			_ = f.Close()
			return "", err
		}
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return "", err
		}
		if err := f.Close(); err != nil {
			return "", err
		}
		if err := s.fs.Rename(dst+tmpSuffix, dst); err != nil {
			return "", err
		}
		return dst, s.fs.SyncDir(s.dir)
	}
}

// createJournal creates journal-g with its header, durably (the file and
// its directory entry), and makes it the file the syncer appends to.
func (s *Store) createJournal(g uint64) error {
	path := filepath.Join(s.dir, fileName(journalPrefix, g))
	f, err := s.fs.Create(path)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if _, err := f.Write(journalMagic); err != nil {
		_ = f.Close()
		return fmt.Errorf("journal: %w", err)
	}
	if err := writeZeros(f, int64(len(journalMagic)), preallocate-int64(len(journalMagic))); err != nil {
		_ = f.Close()
		return fmt.Errorf("journal: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("journal: %w", err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		_ = f.Close()
		return fmt.Errorf("journal: sync directory: %w", err)
	}
	_ = s.out.close()
	s.gen = g
	s.out.open(s.fs, f, int64(len(journalMagic)), preallocate, journalMagic, s.opts.BufferedWrites)
	return nil
}

// rotate starts a new generation after a batch: journal-(g+1) takes the
// next entries while snapshot-(g+1) is written, in the background, from
// snap (the state as of the end of journal-g).
func (s *Store) rotate(snap *snapshot) {
	old := s.gen
	if err := s.createJournal(old + 1); err != nil {
		s.log.Error("journal: could not start a new journal file; keeping the current one", "err", err)
		return
	}
	s.snapBusy.Store(true)
	s.snapping.Go(func() {
		defer s.snapBusy.Store(false)
		if err := s.writeSnapshot(old+1, snap); err != nil {
			s.log.Error("journal: snapshot failed; the journal files it would replace are kept", "err", err)
			return
		}
		for _, name := range []string{fileName(journalPrefix, old), fileName(snapshotPrefix, old)} {
			if err := s.fs.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				s.log.Warn("journal: could not remove a replaced file", "file", name, "err", err)
			}
		}
	})
}

// snapshotEntry is the size at which a snapshot entry is closed.
const snapshotEntry = 256 << 10

// writeSnapshot writes snapshot-g from snap: a temporary file, fsynced,
// renamed into place, and the directory fsynced.
func (s *Store) writeSnapshot(g uint64, snap *snapshot) error {
	path := filepath.Join(s.dir, fileName(snapshotPrefix, g))
	f, err := s.fs.Create(path + tmpSuffix)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer func() {
		if f != nil {
			_ = f.Close()
			_ = s.fs.Remove(path + tmpSuffix)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := w.Write(snapshotMagic); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	buf, start := beginEntry(nil)
	var records int64
	flush := func() error {
		buf = finishEntry(buf, start)
		_, err := w.Write(buf)
		buf, start = beginEntry(buf[:0])
		return err
	}
	kinds := slices.Sorted(func(yield func(store.Kind) bool) {
		for k := range snap.tables {
			if !yield(k) {
				return
			}
		}
	})
	for _, kind := range kinds {
		var werr error
		snap.tables[kind].byID.Ascend(func(r *rec) bool {
			buf = appendPut(buf, kind, r)
			records++
			if len(buf) >= snapshotEntry {
				werr = flush()
			}
			return werr == nil
		})
		if werr != nil {
			return fmt.Errorf("journal: %w", werr)
		}
	}
	for name, l := range snap.leases {
		buf = appendLease(buf, name, l)
	}
	buf = appendCount(buf, opNextSeq, snap.nextSeq)
	if err := flush(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	buf = appendCount(buf, opEnd, records)
	if err := flush(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := f.Close(); err != nil {
		f = nil
		_ = s.fs.Remove(path + tmpSuffix)
		return fmt.Errorf("journal: %w", err)
	}
	f = nil
	if err := s.fs.Rename(path+tmpSuffix, path); err != nil {
		_ = s.fs.Remove(path + tmpSuffix)
		return fmt.Errorf("journal: %w", err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("journal: sync directory: %w", err)
	}
	return nil
}

// loadSnapshot reads snapshot-g into the (empty) working state. A snapshot
// counts only when it is whole: every entry intact and the closing count
// matching the records read.
func (s *Store) loadSnapshot(g uint64) error {
	path := filepath.Join(s.dir, fileName(snapshotPrefix, g))
	data, err := s.fs.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(data, snapshotMagic) {
		return errors.New("not a Hoist snapshot file")
	}
	rest, records := data[len(snapshotMagic):], int64(0)
	for len(rest) > 0 {
		payload, next, ok := readEntry(rest)
		if !ok {
			return fmt.Errorf("damaged entry at offset %d", len(data)-len(rest))
		}
		d := decoder{b: payload}
		for {
			o, ok := d.next()
			if !ok {
				break
			}
			if o.code == opEnd {
				if o.n != records || len(next) != 0 || len(d.b) != 0 {
					return fmt.Errorf("snapshot closes with %d records after %d", o.n, records)
				}
				s.log.Info("journal: loaded snapshot", "file", filepath.Base(path), "records", records)
				return nil
			}
			if o.code == opPut {
				records++
			}
			s.apply(&o)
		}
		if d.err != nil {
			return d.err
		}
		rest = next
	}
	return errors.New("snapshot is unfinished")
}
