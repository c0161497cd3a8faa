package journal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/hoistgg/hoist/internal/store"
)

// An entry is the unit of the journal and of snapshot files: a 4-byte
// little-endian payload length, the payload's CRC-32C, then the payload, a
// sequence of operations. One Update is one entry, so that replay applies
// it whole or not at all.
const entryHeader = 8

// maxEntry bounds the length an entry header may claim, so that a corrupt
// header is not taken for a huge allocation.
const maxEntry = 1 << 30

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Operation codes.
const (
	opPut       byte = 1 // kind, id, parent, key, rank, seq, data
	opDelete    byte = 2 // kind, id
	opLease     byte = 3 // name, holder, expires (an older Hoist's: no term)
	opNextSeq   byte = 4 // the next Seq to assign (snapshots)
	opEnd       byte = 5 // records in the snapshot: its last entry
	opLeaseTerm byte = 6 // name, holder, expires, term
)

// op is one decoded operation.
type op struct {
	code         byte
	kind         store.Kind
	r            rec // opPut: the record; opDelete: r.id
	name, holder string
	expires      int64 // opLease, opLeaseTerm
	term         int64 // opLeaseTerm; 0 for opLease
	n            int64 // opNextSeq, opEnd
}

// beginEntry reserves an entry header at the end of buf; finishEntry fills
// it in once the payload is appended.
func beginEntry(buf []byte) ([]byte, int) {
	return append(buf, make([]byte, entryHeader)...), len(buf)
}

func finishEntry(buf []byte, start int) []byte {
	payload := buf[start+entryHeader:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(payload, crcTable))
	return buf
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendPut(b []byte, kind store.Kind, r *rec) []byte {
	b = append(b, opPut)
	b = appendString(b, string(kind))
	b = appendString(b, r.id)
	b = appendString(b, r.parent)
	b = appendString(b, r.key)
	b = binary.AppendVarint(b, r.rank)
	b = binary.AppendVarint(b, r.seq)
	b = binary.AppendUvarint(b, uint64(len(r.data)))
	return append(b, r.data...)
}

func appendDelete(b []byte, kind store.Kind, id string) []byte {
	b = append(b, opDelete)
	b = appendString(b, string(kind))
	return appendString(b, id)
}

func appendLease(b []byte, name string, l lease) []byte {
	b = append(b, opLeaseTerm)
	b = appendString(b, name)
	b = appendString(b, l.holder)
	b = binary.AppendVarint(b, l.expires)
	return binary.AppendVarint(b, l.term)
}

func appendCount(b []byte, code byte, n int64) []byte {
	return binary.AppendVarint(append(b, code), n)
}

var errCorrupt = errors.New("corrupt entry")

// readEntry splits the entry at the start of b: its payload and the rest.
// ok is false when b does not start with a whole, intact entry: the zeros
// of the preallocated end of a journal file, a torn write, or damage. (An
// entry is never empty, so a zero header is never an entry.)
func readEntry(b []byte) (payload, rest []byte, ok bool) { return readFrame(b, 0) }

// A batch is what the syncer writes at once (journal format 2): a header
// as an entry's, whose CRC-32C starts from batchSeed instead of zero (so
// that no entry passes for a batch, nor a batch for an entry), then the
// batch's entries. A write cut short, even one whose parts reached the
// disk out of order, leaves one batch that is not intact, and nothing
// intact after it: what follows a batch was written only once the batch
// was durable.
const batchSeed = 0x4a424154

// frameBatch appends to dst the batch of the given entries.
func frameBatch(dst, entries []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(entries)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Update(batchSeed, crcTable, entries))
	return append(dst, entries...)
}

// readBatch is readEntry for a batch: its entries and the rest.
func readBatch(b []byte) (entries, rest []byte, ok bool) { return readFrame(b, batchSeed) }

func readFrame(b []byte, seed uint32) (payload, rest []byte, ok bool) {
	if len(b) < entryHeader {
		return nil, b, false
	}
	n := binary.LittleEndian.Uint32(b)
	if n == 0 || n > maxEntry || uint64(len(b)-entryHeader) < uint64(n) {
		return nil, b, false
	}
	payload = b[entryHeader : entryHeader+int(n)]
	if crc32.Update(seed, crcTable, payload) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, b, false
	}
	return payload, b[entryHeader+int(n):], true
}

// decoder reads the operations of one payload.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errCorrupt
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes() []byte {
	if d.err != nil {
		return nil
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 || uint64(len(d.b)-k) < n {
		d.err = errCorrupt
		return nil
	}
	v := d.b[k : k+int(n)]
	d.b = d.b[k+int(n):]
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Varint(d.b)
	if k <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[k:]
	return v
}

// next decodes the next operation; ok is false at the end of the payload
// or on an error (d.err).
func (d *decoder) next() (o op, ok bool) {
	if d.err != nil || len(d.b) == 0 {
		return op{}, false
	}
	o.code = d.byte()
	switch o.code {
	case opPut:
		o.kind = store.Kind(d.string())
		o.r.id = d.string()
		o.r.parent = d.string()
		o.r.key = d.string()
		o.r.rank = d.varint()
		o.r.seq = d.varint()
		if data := d.bytes(); len(data) > 0 {
			o.r.data = append([]byte(nil), data...)
		} else {
			o.r.data = []byte{}
		}
	case opDelete:
		o.kind = store.Kind(d.string())
		o.r.id = d.string()
	case opLease, opLeaseTerm:
		o.name = d.string()
		o.holder = d.string()
		o.expires = d.varint()
		if o.code == opLeaseTerm {
			o.term = d.varint()
		}
	case opNextSeq, opEnd:
		o.n = d.varint()
	default:
		d.err = errCorrupt
	}
	return o, d.err == nil
}
