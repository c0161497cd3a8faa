package search

import "strings"

// Key is a session's position in a search's order: its sort value (absent
// when the session lacks it) and its ID, which breaks ties. A page's last
// Key is what a NextToken remembers.
type Key struct {
	Present bool   `json:"p,omitempty"`
	Num     int64  `json:"n,omitempty"`
	Str     string `json:"s,omitempty"`
	ID      string `json:"i"`
}

// Order orders sessions for a search: by the sort's value in its direction,
// sessions lacking the value last, ties by ID ascending. The zero Order (no
// SortExpression) orders by ID alone.
type Order struct {
	sort *Sort
}

// OrderBy returns the order of a sort; nil means no SortExpression.
func OrderBy(s *Sort) Order { return Order{sort: s} }

// Key returns the session's position in the order.
func (o Order) Key(s *Session) Key {
	k := Key{ID: s.ID}
	if o.sort == nil {
		return k
	}
	v, ok := s.value(o.sort.Operand)
	if !ok {
		return k
	}
	k.Present = true
	switch v.Type {
	case TypeNumber:
		k.Num = v.Num
	case TypeBool:
		if v.Bool {
			k.Num = 1
		}
	default:
		k.Str = v.Str
	}
	return k
}

// Compare returns -1, 0 or 1 as a comes before, with or after b.
func (o Order) Compare(a, b Key) int {
	if o.sort != nil {
		switch {
		case a.Present && !b.Present:
			return -1
		case !a.Present && b.Present:
			return 1
		case a.Present:
			c := cmpInt(a.Num, b.Num)
			if c == 0 {
				c = strings.Compare(a.Str, b.Str)
			}
			if o.sort.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
	}
	return strings.Compare(a.ID, b.ID)
}

// Top keeps the first n sessions of an order that come after a cursor: a
// bounded max-heap, so choosing a page out of N sessions costs N log n.
type Top struct {
	order Order
	after *Key
	n     int
	items []topItem
}

type topItem struct {
	key Key
	ref int
}

// NewTop returns a Top that keeps n sessions positioned strictly after
// after (nil: from the start).
func NewTop(o Order, after *Key, n int) *Top {
	return &Top{order: o, after: after, n: n, items: make([]topItem, 0, n+1)}
}

// Offer considers the session with key k; ref is the caller's handle for it.
func (t *Top) Offer(k Key, ref int) {
	if t.after != nil && t.order.Compare(k, *t.after) <= 0 {
		return
	}
	if len(t.items) == t.n {
		if t.n == 0 || t.order.Compare(k, t.items[0].key) >= 0 {
			return
		}
		t.items[0] = topItem{k, ref}
		t.down(0)
		return
	}
	t.items = append(t.items, topItem{k, ref})
	t.up(len(t.items) - 1)
}

// Result returns the kept refs in order, with their keys.
func (t *Top) Result() ([]int, []Key) {
	items := append([]topItem(nil), t.items...)
	// Heap-sort in place: repeatedly move the greatest to the end.
	h := &Top{order: t.order, items: items}
	for end := len(items) - 1; end > 0; end-- {
		items[0], items[end] = items[end], items[0]
		h.items = items[:end]
		h.down(0)
	}
	refs, keys := make([]int, len(items)), make([]Key, len(items))
	for i, it := range items {
		refs[i], keys[i] = it.ref, it.key
	}
	return refs, keys
}

// less orders the heap with the greatest key on top.
func (t *Top) less(i, j int) bool { return t.order.Compare(t.items[i].key, t.items[j].key) > 0 }

func (t *Top) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.less(i, p) {
			return
		}
		t.items[i], t.items[p] = t.items[p], t.items[i]
		i = p
	}
}

func (t *Top) down(i int) {
	n := len(t.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && t.less(r, l) {
			m = r
		}
		if !t.less(m, i) {
			return
		}
		t.items[i], t.items[m] = t.items[m], t.items[i]
		i = m
	}
}
