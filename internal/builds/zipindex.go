package builds

import (
	"encoding/binary"
	"errors"
	"io"
	"slices"
)

// Zip record signatures and sizes (APPNOTE.TXT 4.3.14 to 4.3.16).
const (
	eocdSignature        = 0x06054b50
	eocdLen              = 22
	zip64LocatorSig      = 0x07064b50
	zip64LocatorLen      = 20
	zip64EOCDSignature   = 0x06064b50
	zip64EOCDLen         = 56
	eocdSearch           = 65 * 1024 // how far from the end archive/zip looks
	centralHeaderMinimum = 46
)

// dirBytesPerEntry is the average size of a central directory record Hoist
// accepts (46 bytes of fixed fields plus name, extra field and comment):
// the directory of an archive of n entries may be up to n times this. It
// bounds the memory archive/zip spends on names, extras and comments.
const dirBytesPerEntry = 512

// zipIndex is what an archive's end-of-central-directory record (or its
// zip64 version) declares about the central directory.
type zipIndex struct {
	entries uint64 // total entries
	size    uint64 // bytes of the central directory
	offset  uint64 // where the central directory starts
	// endAt is where the end record (the zip64 one if there is one)
	// starts: archive/zip takes the directory to end there.
	endAt int64
}

// readZipIndex reads the entry count, size and offset of the central
// directory of the zip archive in r (size bytes long) from its
// end-of-central-directory record, following the zip64 locator when the
// record says to, without reading the directory itself. It finds the
// record as archive/zip does: the last signature in the archive's tail
// whose comment fits. An error means the archive is not one archive/zip
// reads either.
func readZipIndex(r io.ReaderAt, size int64) (zipIndex, error) {
	tail := min(size, eocdSearch)
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
		return zipIndex{}, err
	}
	at := findEOCD(buf)
	if at < 0 {
		return zipIndex{}, errors.New("no end of central directory record")
	}
	rec := buf[at:]
	le := binary.LittleEndian
	eocdAt := size - tail + int64(at)
	idx := zipIndex{
		entries: uint64(le.Uint16(rec[10:])),
		size:    uint64(le.Uint32(rec[12:])),
		offset:  uint64(le.Uint32(rec[16:])),
		endAt:   eocdAt,
	}
	// archive/zip's test, 0xffff for the size included.
	if idx.entries == 0xffff || idx.size == 0xffff || idx.offset == 0xffffffff {
		if z, ok, err := readZip64Index(r, eocdAt); err != nil {
			return zipIndex{}, err
		} else if ok {
			idx = z
		}
	}
	return idx, nil
}

// findEOCD returns the offset in b of the last end-of-central-directory
// signature, or -1 when there is none or its comment does not fit in b.
func findEOCD(b []byte) int {
	for i := len(b) - eocdLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(b[i:]) != eocdSignature {
			continue
		}
		if n := int(binary.LittleEndian.Uint16(b[i+20:])); i+eocdLen+n > len(b) {
			return -1
		}
		return i
	}
	return -1
}

// readZip64Index reads the zip64 end-of-central-directory record that the
// locator just before eocdAt points to. ok is false when there is no
// locator (archive/zip then uses the 32-bit values too).
func readZip64Index(r io.ReaderAt, eocdAt int64) (idx zipIndex, ok bool, err error) {
	if eocdAt < zip64LocatorLen {
		return idx, false, nil
	}
	loc := make([]byte, zip64LocatorLen)
	if _, err := r.ReadAt(loc, eocdAt-zip64LocatorLen); err != nil {
		return idx, false, err
	}
	le := binary.LittleEndian
	if le.Uint32(loc) != zip64LocatorSig || le.Uint32(loc[4:]) != 0 || le.Uint32(loc[16:]) != 1 {
		return idx, false, nil // not a (single-disk) zip64 archive
	}
	at := le.Uint64(loc[8:])
	if at > 1<<62 {
		return idx, false, errors.New("the zip64 locator points past the archive")
	}
	rec := make([]byte, zip64EOCDLen)
	if _, err := r.ReadAt(rec, int64(at)); err != nil {
		return idx, false, err
	}
	if le.Uint32(rec) != zip64EOCDSignature {
		return idx, false, errors.New("no zip64 end of central directory record where the locator points")
	}
	z := zipIndex{entries: le.Uint64(rec[32:]), size: le.Uint64(rec[40:]), offset: le.Uint64(rec[48:]), endAt: int64(at)}
	return z, true, nil
}

// checkZipIndex refuses, before archive/zip parses the central directory
// (which costs memory for every entry it holds), an archive that declares
// more entries than maxEntries or a directory larger than maxEntries
// records of dirBytesPerEntry bytes, or a directory too small for the
// entries it declares.
func checkZipIndex(idx zipIndex, maxEntries int) error {
	switch {
	case idx.entries > uint64(maxEntries):
		return archiveErrorf("the archive has %d entries; the limit is %d", idx.entries, maxEntries)
	case idx.size > uint64(maxEntries)*dirBytesPerEntry:
		return archiveErrorf("the archive's central directory is %d bytes; the limit is %d (%d entries of %d bytes on average)",
			idx.size, uint64(maxEntries)*dirBytesPerEntry, maxEntries, dirBytesPerEntry)
	case idx.entries*centralHeaderMinimum > idx.size:
		return archiveErrorf("the archive declares %d entries in a central directory of %d bytes", idx.entries, idx.size)
	}
	return nil
}

// span is the bytes of the archive one entry's compressed data occupies.
type span struct {
	start, end int64
	name       string
}

// checkOverlaps refuses entries whose compressed data shares bytes with
// another entry's (the "overlapping files" zip bomb, where many entries
// reuse one highly compressed stream), or reaches past the archive's
// size.
func checkOverlaps(spans []span, size int64) error {
	slices.SortFunc(spans, func(a, b span) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
	for i, s := range spans {
		if i > 0 && s.start < spans[i-1].end {
			return archiveErrorf("entries %q and %q overlap in the archive", spans[i-1].name, s.name)
		}
		if s.end > size {
			return archiveErrorf("entry %q reaches past the end of the archive", s.name)
		}
	}
	return nil
}
