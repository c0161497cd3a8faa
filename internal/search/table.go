package search

// Table holds many sessions column by column, for searches that scan them
// all: each attribute is a slice indexed by row, and each game property
// key a column of small codes into that key's dictionary of values. A
// filter is compiled against the columns once per search (Compile), so
// that testing a row is a few loads and compares: no string comparison
// for game properties, no per-session property lookup.
//
// A Table is not safe for concurrent use: callers lock around it (many
// concurrent Searches, or one writer).
type Table struct {
	rows     map[string]int // session ID -> row
	ids      []string
	locs     []string
	names    []string
	hasName  []bool
	max      []int64
	players  []int64
	created  []int64
	props    map[string]*propColumn
	locNames map[string]string // interned locations
}

// propColumn is one game property key's column: codes[row] is 0 when the
// row lacks the property, else an index into values.
type propColumn struct {
	codes  []uint32
	values []string          // code -> value; values[0] unused
	refs   []int             // code -> rows holding it
	code   map[string]uint32 // value -> code
	free   []uint32          // codes no row holds, for reuse
}

// NewTable returns an empty Table.
func NewTable() *Table {
	return &Table{rows: map[string]int{}, props: map[string]*propColumn{}, locNames: map[string]string{}}
}

// Len returns the number of sessions.
func (t *Table) Len() int { return len(t.ids) }

// Upsert adds a session, or replaces the one with its ID. location is the
// session's fleet location.
func (t *Table) Upsert(s *Session, location string) {
	row, ok := t.rows[s.ID]
	if !ok {
		row = len(t.ids)
		t.rows[s.ID] = row
		t.ids = append(t.ids, s.ID)
		t.locs = append(t.locs, "")
		t.names = append(t.names, "")
		t.hasName = append(t.hasName, false)
		t.max = append(t.max, 0)
		t.players = append(t.players, 0)
		t.created = append(t.created, 0)
		for _, c := range t.props {
			c.codes = append(c.codes, 0)
		}
	}
	loc, ok := t.locNames[location]
	if !ok {
		loc = location
		t.locNames[location] = loc
	}
	t.locs[row], t.names[row], t.hasName[row] = loc, s.Name, s.HasName
	t.max[row], t.players[row], t.created[row] = s.MaximumSessions, s.PlayerSessionCount, s.CreationTimeMillis
	// Properties: clear the row's old codes, then set the new ones.
	for _, c := range t.props {
		c.release(c.codes[row])
		c.codes[row] = 0
	}
	for _, p := range s.Properties {
		c := t.props[p.Key]
		if c == nil {
			c = &propColumn{codes: make([]uint32, len(t.ids)), values: []string{""}, refs: []int{0}, code: map[string]uint32{}}
			t.props[p.Key] = c
		}
		c.release(c.codes[row]) // a key given twice: the last value wins
		c.codes[row] = c.acquire(p.Value)
	}
}

// Remove takes the session with that ID out, if it is there.
func (t *Table) Remove(id string) {
	row, ok := t.rows[id]
	if !ok {
		return
	}
	last := len(t.ids) - 1
	for _, c := range t.props {
		c.release(c.codes[row])
		c.codes[row] = c.codes[last]
		c.codes = c.codes[:last]
	}
	t.ids[row], t.locs[row], t.names[row], t.hasName[row] = t.ids[last], t.locs[last], t.names[last], t.hasName[last]
	t.max[row], t.players[row], t.created[row] = t.max[last], t.players[last], t.created[last]
	t.rows[t.ids[row]] = row
	delete(t.rows, id)
	t.ids, t.locs, t.names, t.hasName = t.ids[:last], t.locs[:last], t.names[:last], t.hasName[:last]
	t.max, t.players, t.created = t.max[:last], t.players[:last], t.created[:last]
}

func (c *propColumn) acquire(v string) uint32 {
	code, ok := c.code[v]
	if !ok {
		if n := len(c.free); n > 0 {
			code, c.free = c.free[n-1], c.free[:n-1]
			c.values[code], c.refs[code] = v, 0
		} else {
			code = uint32(len(c.values))
			c.values, c.refs = append(c.values, v), append(c.refs, 0)
		}
		c.code[v] = code
	}
	c.refs[code]++
	return code
}

func (c *propColumn) release(code uint32) {
	if code == 0 {
		return
	}
	if c.refs[code]--; c.refs[code] == 0 {
		delete(c.code, c.values[code])
		c.values[code] = ""
		c.free = append(c.free, code)
	}
}

// rowFilter tests one row.
type rowFilter func(row int) bool

// Search returns the rows' session IDs and order keys of up to n sessions
// that match filter (nil: all) in location ("" : any), in order, strictly
// after after (nil: from the start).
func (t *Table) Search(filter Expr, location string, order Order, after *Key, n int) ([]string, []Key) {
	match := t.compile(filter)
	key := t.keyFunc(order)
	top := NewTop(order, after, n)
	for row := range t.ids {
		if location != "" && t.locs[row] != location {
			continue
		}
		if match != nil && !match(row) {
			continue
		}
		top.Offer(key(row), row)
	}
	refs, keys := top.Result()
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = t.ids[r]
	}
	return ids, keys
}

// Key returns the order key of the session with that ID.
func (t *Table) Key(id string, order Order) (Key, bool) {
	row, ok := t.rows[id]
	if !ok {
		return Key{}, false
	}
	return t.keyFunc(order)(row), true
}

// keyFunc returns a row's position in order.
func (t *Table) keyFunc(order Order) func(row int) Key {
	if order.sort == nil {
		return func(row int) Key { return Key{ID: t.ids[row]} }
	}
	num := func(col []int64) func(int) Key {
		return func(row int) Key { return Key{Present: true, Num: col[row], ID: t.ids[row]} }
	}
	switch o := order.sort.Operand; o.Attr {
	case AttrGameSessionID:
		return func(row int) Key { return Key{Present: true, Str: t.ids[row], ID: t.ids[row]} }
	case AttrGameSessionName:
		return func(row int) Key {
			return Key{Present: t.hasName[row], Str: t.names[row], ID: t.ids[row]}
		}
	case AttrMaximumSessions:
		return num(t.max)
	case AttrCreationTimeMillis:
		return num(t.created)
	case AttrPlayerSessionCount:
		return num(t.players)
	case AttrHasAvailablePlayerSessions:
		return func(row int) Key {
			k := Key{Present: true, ID: t.ids[row]}
			if t.players[row] < t.max[row] {
				k.Num = 1
			}
			return k
		}
	default:
		c := t.props[o.Key]
		if c == nil {
			return func(row int) Key { return Key{ID: t.ids[row]} }
		}
		return func(row int) Key {
			code := c.codes[row]
			return Key{Present: code != 0, Str: c.values[code], ID: t.ids[row]}
		}
	}
}

// compile turns a filter into a test of one row over the table's columns.
func (t *Table) compile(e Expr) rowFilter {
	switch e := e.(type) {
	case nil:
		return nil
	case *And:
		l, r := t.compile(e.L), t.compile(e.R)
		return func(row int) bool { return l(row) && r(row) }
	case *Or:
		l, r := t.compile(e.L), t.compile(e.R)
		return func(row int) bool { return l(row) || r(row) }
	case *Not:
		x := t.compile(e.X)
		return func(row int) bool { return !x(row) }
	case *Cond:
		return t.compileCond(e)
	}
	// Another Expr implementation: evaluate it on a view of the row.
	return func(row int) bool { s := t.session(row); return e.Match(&s) }
}

func constant(b bool) rowFilter { return func(int) bool { return b } }

func (t *Table) compileCond(c *Cond) rowFilter {
	eq := c.Op == Eq
	switch c.Operand.Attr {
	case AttrProperty:
		col := t.props[c.Operand.Key]
		if col == nil {
			return constant(!eq) // no row has the key: only <> holds
		}
		code, ok := col.code[c.Value.Str]
		if !ok {
			return constant(!eq) // no row has the value
		}
		codes := col.codes
		if eq {
			return func(row int) bool { return codes[row] == code }
		}
		return func(row int) bool { return codes[row] != code }
	case AttrGameSessionName:
		v := c.Value.Str
		if eq {
			return func(row int) bool { return t.hasName[row] && t.names[row] == v }
		}
		return func(row int) bool { return !t.hasName[row] || t.names[row] != v }
	case AttrGameSessionID:
		v := c.Value.Str
		return func(row int) bool { return (t.ids[row] == v) == eq }
	case AttrHasAvailablePlayerSessions:
		want := c.Value.Bool == eq // rows whose availability equals want match
		return func(row int) bool { return (t.players[row] < t.max[row]) == want }
	case AttrMaximumSessions:
		return numFilter(t.max, c.Op, c.Value.Num)
	case AttrCreationTimeMillis:
		return numFilter(t.created, c.Op, c.Value.Num)
	}
	return numFilter(t.players, c.Op, c.Value.Num)
}

func numFilter(col []int64, op Comparator, v int64) rowFilter {
	switch op {
	case Eq:
		return func(row int) bool { return col[row] == v }
	case Ne:
		return func(row int) bool { return col[row] != v }
	case Lt:
		return func(row int) bool { return col[row] < v }
	case Gt:
		return func(row int) bool { return col[row] > v }
	case Le:
		return func(row int) bool { return col[row] <= v }
	}
	return func(row int) bool { return col[row] >= v }
}

// session rebuilds the Session of a row.
func (t *Table) session(row int) Session {
	s := Session{ID: t.ids[row], Name: t.names[row], HasName: t.hasName[row], MaximumSessions: t.max[row],
		PlayerSessionCount: t.players[row], CreationTimeMillis: t.created[row]}
	for k, c := range t.props {
		if code := c.codes[row]; code != 0 {
			s.Properties = append(s.Properties, Property{k, c.values[code]})
		}
	}
	return s
}
