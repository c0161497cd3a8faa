package builds

import (
	"archive/zip"
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math"
)

// centralSignature starts every central directory record.
const centralSignature = 0x02014b50

// zipDirectory is where archive/zip reads an archive's central directory:
// from start until a record does not parse, the end record declaring it
// to end at end. base is archive/zip's baseOffset, what it adds to every
// offset the directory holds (non-zero for archives behind a prefix).
type zipDirectory struct {
	start, end, base int64
}

// openArchive opens the zip archive in r (size bytes long) with
// archive/zip in a way that bounds what reading its index costs:
// archive/zip reads central directory records until one does not parse,
// whatever the end record declares, so it is given a view of the archive
// that ends with the declared directory (confinedArchive), and the records
// in that view are counted first, without keeping them, against
// maxEntries. It returns the reader and the size of the view, which
// archive/zip reads entries' data through too.
func openArchive(r io.ReaderAt, size int64, maxEntries int) (*zip.Reader, int64, error) {
	idx, err := readZipIndex(r, size)
	if err != nil {
		return nil, 0, archiveErrorf("not a valid zip archive: %v", err)
	}
	if err := checkZipIndex(idx, maxEntries); err != nil {
		return nil, 0, err
	}
	dir, err := locateDirectory(r, size, idx)
	if err != nil {
		return nil, 0, err
	}
	if err := checkNothingPast(r, size, dir); err != nil {
		return nil, 0, err
	}
	view := &confinedArchive{r: r, end: dir.end, tail: endRecords(idx, dir.end)}
	if dir.base > 0 && mayBeRecord(view, int64(idx.offset), view.size()) {
		return nil, 0, archiveErrorf("the archive's central directory could start at %d or at %d", idx.offset, dir.start)
	}
	if err := countRecords(view, dir.start, maxEntries); err != nil {
		return nil, 0, err
	}
	zr, err := zip.NewReader(view, view.size())
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, 0, archiveErrorf("not a valid zip archive: %v", err)
	}
	return zr, view.size(), nil
}

// locateDirectory finds the central directory idx declares as archive/zip
// does: it ends where the end record starts, unless a record parses at the
// declared offset itself, then it starts there (archive/zip's remedy for
// archives whose end record gives a wrong base offset).
func locateDirectory(r io.ReaderAt, size int64, idx zipIndex) (zipDirectory, error) {
	if idx.size > uint64(idx.endAt) || idx.offset > math.MaxInt64 {
		return zipDirectory{}, archiveErrorf("not a valid zip archive: the central directory (%d bytes at %d) does not fit before its end record", idx.size, idx.offset)
	}
	start := idx.endAt - int64(idx.size)
	base := start - int64(idx.offset)
	if base > 0 && mayBeRecord(r, int64(idx.offset), size) {
		start, base = int64(idx.offset), 0
	}
	return zipDirectory{start: start, end: start + int64(idx.size), base: base}, nil
}

// checkNothingPast refuses an archive with a central directory record
// right after the directory its end record declares: records the end
// record does not count (archive/zip would read them all).
func checkNothingPast(r io.ReaderAt, size int64, dir zipDirectory) error {
	if dir.end+4 > size {
		return nil
	}
	var sig [4]byte
	if _, err := r.ReadAt(sig[:], dir.end); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if binary.LittleEndian.Uint32(sig[:]) == centralSignature {
		return archiveErrorf("the archive has central directory records past the %d bytes its end record declares", dir.end-dir.start)
	}
	return nil
}

// mayBeRecord reports whether archive/zip might read a central directory
// record at off in r (limit bytes long): a signature there, and the
// record's names and fields within limit. archive/zip accepts fewer
// (it also checks extra fields), never more.
func mayBeRecord(r io.ReaderAt, off, limit int64) bool {
	var h [centralHeaderMinimum]byte
	if off < 0 || off > limit-centralHeaderMinimum {
		return false
	}
	if _, err := r.ReadAt(h[:], off); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	le := binary.LittleEndian
	if le.Uint32(h[:]) != centralSignature {
		return false
	}
	return off+centralHeaderMinimum+recordVariable(h[:]) <= limit
}

// recordVariable is the length of a central directory record's name, extra
// field and comment, from its fixed part h.
func recordVariable(h []byte) int64 {
	le := binary.LittleEndian
	return int64(le.Uint16(h[28:])) + int64(le.Uint16(h[30:])) + int64(le.Uint16(h[32:]))
}

// countRecords reads the central directory records of r from start the
// way archive/zip does (a record after another until one has no
// signature or is cut short) without keeping them, and refuses more than
// maxEntries. Its memory is one buffer whatever the records.
func countRecords(r *confinedArchive, start int64, maxEntries int) error {
	br := bufio.NewReaderSize(io.NewSectionReader(r, start, r.size()-start), 64<<10)
	var h [centralHeaderMinimum]byte
	for n := 0; ; n++ {
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return endOfRecords(err)
		}
		if binary.LittleEndian.Uint32(h[:]) != centralSignature {
			return nil
		}
		if n == maxEntries {
			return archiveErrorf("the archive's central directory holds more than %d entries (the limit)", maxEntries)
		}
		if _, err := br.Discard(int(recordVariable(h[:]))); err != nil {
			return endOfRecords(err)
		}
	}
}

// endOfRecords is the result of a read that ended the records: the end of
// the view ends them (archive/zip stops there too), anything else is a
// read error of the archive's file.
func endOfRecords(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// confinedArchive is an archive as archive/zip gets to see it: the bytes
// of r up to end (the end of the declared central directory), then tail,
// end records that declare the same directory. Past the directory
// archive/zip finds those records, which are not central directory
// records, so it stops there.
type confinedArchive struct {
	r    io.ReaderAt
	end  int64
	tail []byte
}

// size is the length of the view.
func (c *confinedArchive) size() int64 { return c.end + int64(len(c.tail)) }

// ReadAt reads the view.
func (c *confinedArchive) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	n := 0
	if off < c.end {
		k := int(min(int64(len(p)), c.end-off))
		m, err := c.r.ReadAt(p[:k], off)
		if m < k {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return m, err
		}
		n = m
	}
	if at := off + int64(n) - c.end; n < len(p) && at < int64(len(c.tail)) {
		n += copy(p[n:], c.tail[at:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// endRecords returns a zip64 end-of-central-directory record at offset at,
// its locator and an end record pointing to it, declaring idx's entries,
// directory size and offset.
func endRecords(idx zipIndex, at int64) []byte {
	le := binary.LittleEndian
	t := make([]byte, zip64EOCDLen+zip64LocatorLen+eocdLen)
	le.PutUint32(t, zip64EOCDSignature)
	le.PutUint64(t[4:], zip64EOCDLen-12)
	le.PutUint16(t[12:], 45)
	le.PutUint16(t[14:], 45)
	le.PutUint64(t[24:], idx.entries)
	le.PutUint64(t[32:], idx.entries)
	le.PutUint64(t[40:], idx.size)
	le.PutUint64(t[48:], idx.offset)
	loc := t[zip64EOCDLen:]
	le.PutUint32(loc, zip64LocatorSig)
	le.PutUint64(loc[8:], uint64(at))
	le.PutUint32(loc[16:], 1)
	end := loc[zip64LocatorLen:]
	le.PutUint32(end, eocdSignature)
	le.PutUint16(end[8:], 0xffff)
	le.PutUint16(end[10:], 0xffff)
	le.PutUint32(end[12:], 0xffffffff)
	le.PutUint32(end[16:], 0xffffffff)
	return t
}
