package store

import (
	"errors"
	"testing"
)

func TestCursorRoundTrip(t *testing.T) {
	r := &Record{ID: "gs-1", Rank: -7, Seq: 42}
	for _, order := range []Order{OrderID, OrderCreated, OrderRankAsc, OrderRankDesc} {
		for _, desc := range []bool{false, true} {
			s := EncodeCursor(order, desc, r)
			c, err := DecodeCursor(s, order, desc)
			if err != nil {
				t.Fatalf("order %d desc %v: %v", order, desc, err)
			}
			switch order {
			case OrderCreated:
				if c.Seq != 42 {
					t.Errorf("seq %d", c.Seq)
				}
			case OrderRankAsc, OrderRankDesc:
				if c.Rank != -7 || c.ID != "gs-1" {
					t.Errorf("rank %d id %q", c.Rank, c.ID)
				}
			default:
				if c.ID != "gs-1" {
					t.Errorf("id %q", c.ID)
				}
			}
			if _, err := DecodeCursor(s, order, !desc); !errors.Is(err, ErrInvalidCursor) {
				t.Errorf("other direction: %v", err)
			}
		}
	}
}

// FuzzDecodeCursor: any string decodes to a cursor or ErrInvalidCursor, and
// a decoded cursor encodes back to a cursor that decodes to the same position.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(EncodeCursor(OrderRankDesc, false, &Record{ID: "x", Rank: 3}), uint8(OrderRankDesc), false)
	f.Add(EncodeCursor(OrderCreated, true, &Record{Seq: 9}), uint8(OrderCreated), true)
	f.Add("", uint8(0), false)
	f.Fuzz(func(t *testing.T, s string, o uint8, desc bool) {
		order := Order(o % 4)
		c, err := DecodeCursor(s, order, desc)
		if err != nil {
			if !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("error %v is not ErrInvalidCursor", err)
			}
			return
		}
		again, err := DecodeCursor(EncodeCursor(order, desc, &Record{ID: c.ID, Rank: c.Rank, Seq: c.Seq}), order, desc)
		if err != nil || again != c {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", c, again, err)
		}
	})
}
