package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// Dumper is implemented by the stores that can tell what they hold, so
// that a whole store can be copied into another (hoist migrate-store).
type Dumper interface {
	// Kinds returns the kinds that have at least one record, in any order.
	Kinds(ctx context.Context) ([]Kind, error)
	// NextSeq returns a Seq greater than every Seq the store has given,
	// also to records since deleted.
	NextSeq(ctx context.Context) (int64, error)
}

// Checksum returns how many records of kind s holds and a SHA-256 of all
// of them (every column, Seq included) in ID order, read in one View: two
// stores holding the same records of kind give the same sum.
func Checksum(ctx context.Context, s Store, kind Kind) (n int, sum [sha256.Size]byte, err error) {
	err = s.View(ctx, func(tx Tx) error {
		n = 0
		h := sha256.New()
		err := Each(ctx, tx, Query{Kind: kind, Order: OrderID}, func(r Record) error {
			n++
			hashRecord(h, &r)
			return nil
		})
		h.Sum(sum[:0])
		return err
	})
	return n, sum, err
}

// hashRecord writes r into h, each field with its length so that no two
// records write the same bytes.
func hashRecord(h hash.Hash, r *Record) {
	var b [binary.MaxVarintLen64]byte
	field := func(p []byte) {
		h.Write(b[:binary.PutUvarint(b[:], uint64(len(p)))])
		h.Write(p)
	}
	field([]byte(r.ID))
	field([]byte(r.Parent))
	field([]byte(r.Key))
	h.Write(b[:binary.PutVarint(b[:], r.Rank)])
	h.Write(b[:binary.PutVarint(b[:], r.Seq)])
	field(r.Data)
}
