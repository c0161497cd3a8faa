package store

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
)

// Cursor is the decoded position of the last record of a page: the order it
// was issued for and that record's key in the order (Seq, Rank and ID, or
// ID). Backends use EncodeCursor and DecodeCursor so that every backend's
// cursors look alike and fail alike.
type Cursor struct {
	Order Order
	Desc  bool
	Seq   int64
	Rank  int64
	ID    string
}

const cursorVersion = 1

// EncodeCursor encodes the position of r under order as an opaque string:
// version, order and direction, then the order's key (seq, or rank and ID,
// or ID) in binary, base64url-encoded.
func EncodeCursor(order Order, desc bool, r *Record) string {
	buf := make([]byte, 0, 2+binary.MaxVarintLen64+len(r.ID))
	buf = append(buf, cursorVersion, cursorFlags(order, desc))
	switch order {
	case OrderCreated:
		buf = binary.AppendVarint(buf, r.Seq)
	case OrderRankAsc, OrderRankDesc:
		buf = binary.AppendVarint(buf, r.Rank)
		buf = append(buf, r.ID...)
	default:
		buf = append(buf, r.ID...)
	}
	return base64.RawURLEncoding.EncodeToString(buf)
}

func cursorFlags(order Order, desc bool) byte {
	flags := byte(order) << 1
	if desc {
		flags |= 1
	}
	return flags
}

// DecodeCursor decodes s, which must have been issued for order and desc;
// anything else fails with ErrInvalidCursor.
func DecodeCursor(s string, order Order, desc bool) (Cursor, error) {
	buf, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(buf) < 2 || buf[0] != cursorVersion {
		return Cursor{}, ErrInvalidCursor
	}
	if buf[1] != cursorFlags(order, desc) {
		return Cursor{}, fmt.Errorf("%w: issued for another order", ErrInvalidCursor)
	}
	c, rest := Cursor{Order: order, Desc: desc}, buf[2:]
	switch order {
	case OrderCreated:
		v, n := binary.Varint(rest)
		if n <= 0 || n != len(rest) {
			return Cursor{}, ErrInvalidCursor
		}
		c.Seq = v
	case OrderRankAsc, OrderRankDesc:
		v, n := binary.Varint(rest)
		if n <= 0 {
			return Cursor{}, ErrInvalidCursor
		}
		c.Rank, c.ID = v, string(rest[n:])
	default:
		c.ID = string(rest)
	}
	return c, nil
}
