package store

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// refs renders change refs as "kind/id".
func refs(rs []ChangeRef) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Kind) + "/" + r.ID
	}
	return out
}

// TestChangeLogRing: entries are published in order, taken back when a
// function fails, and a reader that fell behind the ring learns it lost
// changes instead of skipping them.
func TestChangeLogRing(t *testing.T) {
	l := NewChangeLog(4)
	l.Watch("K")
	_, head, err := l.Read("", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Append("K", "a")
	l.Append("K", "b")
	if got, _, _ := l.Read(head, 0, nil); len(got) != 0 {
		t.Fatalf("unpublished entries read: %v", refs(got))
	}
	l.Publish(2)
	mark := l.Mark()
	l.Append("K", "ghost")
	l.Truncate(mark) // its function failed
	l.Append("K", "c")
	l.Publish(l.Mark() - 1)
	got, pos, err := l.Read(head, 0, nil)
	if err != nil || !slices.Equal(refs(got), []string{"K/a", "K/b", "K/c"}) {
		t.Fatalf("Read = %v, %v", refs(got), err)
	}
	for i := range 5 { // more than the ring holds
		l.Append("K", fmt.Sprint("x", i))
	}
	l.Publish(l.Mark() - 1)
	if _, _, err := l.Read(pos, 0, nil); !errors.Is(err, ErrChangesLost) {
		t.Errorf("a reader behind the ring: %v, want ErrChangesLost", err)
	}
	if _, _, err := NewChangeLog(4).Read(pos, 0, nil); !errors.Is(err, ErrChangesLost) {
		t.Errorf("a position from another opening: %v, want ErrChangesLost", err)
	}
	_, now, _ := l.Read("", 0, nil)
	epoch, p, _ := DecodePosition(now)
	if _, _, err := l.Read(EncodePosition(epoch, p+1), 0, nil); !errors.Is(err, ErrInvalidCursor) {
		t.Errorf("a position not issued yet: %v, want ErrInvalidCursor", err)
	}
}

// TestChangeLogGrows: the ring starts empty and keeps its entries as it
// grows to its size.
func TestChangeLogGrows(t *testing.T) {
	l := NewChangeLog(1000)
	if len(l.ring) != 0 {
		t.Fatalf("a new log holds a ring of %d", len(l.ring))
	}
	_, head, _ := l.Read("", 0, nil)
	var want []string
	for i := range 1500 {
		id := fmt.Sprint(i)
		l.Append("K", id)
		if i >= 500 {
			want = append(want, "K/"+id)
		}
	}
	l.Publish(l.Mark() - 1)
	if len(l.ring) != 1000 {
		t.Errorf("ring of %d, want the size, 1000", len(l.ring))
	}
	if _, _, err := l.Read(head, 0, nil); !errors.Is(err, ErrChangesLost) {
		t.Errorf("from the head: %v, want ErrChangesLost (500 entries dropped)", err)
	}
	got, _, err := l.Read(EncodePosition(l.epoch, 500), 2000, nil)
	if err != nil || !slices.Equal(refs(got), want) {
		t.Errorf("the last 1000: %d entries, %v", len(got), err)
	}
}

// TestChangeLogTruncateAfterWrap: a failed function that wrapped the ring
// takes its entries back without resurrecting the ones it overwrote.
func TestChangeLogTruncateAfterWrap(t *testing.T) {
	l := NewChangeLog(2)
	_, head, _ := l.Read("", 0, nil)
	l.Append("K", "a")
	l.Publish(1)
	mark := l.Mark()
	l.Append("K", "b")
	l.Append("K", "c") // overwrites a's slot
	l.Truncate(mark)
	if _, _, err := l.Read(head, 0, nil); !errors.Is(err, ErrChangesLost) {
		t.Errorf("after a's slot was overwritten: %v, want ErrChangesLost", err)
	}
}

// FuzzDecodePosition: any string either fails with ErrInvalidCursor or is
// a position that encodes back to itself.
func FuzzDecodePosition(f *testing.F) {
	f.Add(EncodePosition(7, 9))
	f.Add(EncodePosition(-1, 1<<62))
	f.Add("")
	f.Add("UA")
	f.Fuzz(func(t *testing.T, s string) {
		a, b, err := DecodePosition(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("DecodePosition(%q): %v", s, err)
			}
			return
		}
		if a2, b2, err := DecodePosition(EncodePosition(a, b)); err != nil || a2 != a || b2 != b {
			t.Fatalf("round trip of %d %d: %d %d %v", a, b, a2, b2, err)
		}
	})
}
