package store

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"
)

// ChangeLog is the change feed of an embedded store: the set of watched
// kinds and an in-memory ring of the last changes, numbered in commit
// order. The store appends to it while a write function runs (its turn:
// one function at a time), takes a failed function's entries back, and
// publishes positions once they are durable; Read serves Changes. A
// position carries a number drawn at random when the log is made, so that
// a position from before the store was opened again is told apart (it
// fails with ErrChangesLost: the reader reads the records afresh).
type ChangeLog struct {
	watched atomic.Pointer[map[Kind]bool]

	mu      sync.Mutex
	epoch   int64
	size    int         // the most entries kept
	ring    []ChangeRef // ring[p % len(ring)] is the entry at position p; grows to size
	next    int64       // position of the next entry appended (the first is 1)
	floor   int64       // the oldest position the ring still holds
	visible int64       // the newest position readers may see
}

// ChangeRef names a record a change was made to.
type ChangeRef struct {
	Kind Kind
	ID   string
}

// DefaultChangeLogSize is how many changes an embedded store keeps for
// readers of its feed unless told otherwise.
const DefaultChangeLogSize = 1 << 16

// NewChangeLog returns an empty log keeping the last size changes
// (DefaultChangeLogSize when size <= 0).
func NewChangeLog(size int) *ChangeLog {
	if size <= 0 {
		size = DefaultChangeLogSize
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	l := &ChangeLog{epoch: int64(binary.LittleEndian.Uint64(b[:]) >> 1), size: size, next: 1, floor: 1}
	l.watched.Store(&map[Kind]bool{})
	return l
}

// Watch adds kinds to the watched ones.
func (l *ChangeLog) Watch(kinds ...Kind) {
	for {
		old := l.watched.Load()
		m := make(map[Kind]bool, len(*old)+len(kinds))
		for k := range *old {
			m[k] = true
		}
		for _, k := range kinds {
			m[k] = true
		}
		if l.watched.CompareAndSwap(old, &m) {
			return
		}
	}
}

// Watched reports whether writes to kind are recorded.
func (l *ChangeLog) Watched(kind Kind) bool { return (*l.watched.Load())[kind] }

// Append records a write to the record kind/id and returns its position.
// The caller holds the store's turn.
func (l *ChangeLog) Append(kind Kind, id string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next-l.floor >= int64(len(l.ring)) && len(l.ring) < l.size {
		l.grow()
	}
	p := l.next
	l.ring[p%int64(len(l.ring))] = ChangeRef{Kind: kind, ID: id}
	l.next++
	if l.next-l.floor > int64(len(l.ring)) {
		l.floor = l.next - int64(len(l.ring))
	}
	return p
}

// grow doubles the ring (up to size), keeping its entries: a store that
// watches nothing, or little, keeps a small one.
func (l *ChangeLog) grow() {
	ring := make([]ChangeRef, min(max(2*len(l.ring), 64), l.size))
	for p := l.floor; p < l.next; p++ {
		ring[p%int64(len(ring))] = l.ring[p%int64(len(l.ring))]
	}
	l.ring = ring
}

// Mark returns the position the next entry will take, for Truncate.
func (l *ChangeLog) Mark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Truncate takes back the entries appended since Mark returned mark (a
// function that failed, a batch rolled back). They were never published.
func (l *ChangeLog) Truncate(mark int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if mark < l.next && mark > l.visible {
		l.next = mark
		l.floor = min(l.floor, mark)
	}
}

// Publish lets readers see the entries up to position upTo (they are
// durable).
func (l *ChangeLog) Publish(upTo int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.visible = max(l.visible, min(upTo, l.next-1))
}

// Read returns the published entries after position after (at most
// limit of those of kinds, or of any kind when kinds is empty, each record
// once) and the position to read from next. It is Store.Changes but for
// reading the records themselves.
func (l *ChangeLog) Read(after string, limit int, kinds []Kind) ([]ChangeRef, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if after == "" {
		return nil, EncodePosition(l.epoch, l.visible), nil
	}
	epoch, pos, err := DecodePosition(after)
	switch {
	case err != nil:
		return nil, "", err
	case epoch != l.epoch:
		return nil, "", ErrChangesLost
	case pos < 0 || pos > l.visible:
		return nil, "", ErrInvalidCursor
	case pos+1 < l.floor:
		return nil, "", ErrChangesLost
	}
	if limit <= 0 {
		limit = DefaultChangesLimit
	}
	var out []ChangeRef
	seen := map[ChangeRef]bool{}
	for pos < l.visible && len(out) < limit {
		pos++
		ref := l.ring[pos%int64(len(l.ring))]
		if (len(kinds) > 0 && !slices.Contains(kinds, ref.Kind)) || seen[ref] {
			continue
		}
		seen[ref] = true
		out = append(out, ref)
	}
	return out, EncodePosition(l.epoch, pos), nil
}

// positionVersion starts every encoded feed position.
const positionVersion = 0x50

// EncodePosition encodes a change feed position of two numbers (what they
// mean is the backend's) as an opaque string.
func EncodePosition(a, b int64) string {
	buf := make([]byte, 0, 1+2*binary.MaxVarintLen64)
	buf = append(buf, positionVersion)
	buf = binary.AppendVarint(buf, a)
	buf = binary.AppendVarint(buf, b)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// DecodePosition decodes a position EncodePosition made; anything else
// fails with ErrInvalidCursor.
func DecodePosition(s string) (a, b int64, err error) {
	buf, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(buf) < 3 || buf[0] != positionVersion {
		return 0, 0, ErrInvalidCursor
	}
	a, n := binary.Varint(buf[1:])
	if n <= 0 {
		return 0, 0, ErrInvalidCursor
	}
	b, m := binary.Varint(buf[1+n:])
	if m <= 0 || 1+n+m != len(buf) {
		return 0, 0, ErrInvalidCursor
	}
	return a, b, nil
}
