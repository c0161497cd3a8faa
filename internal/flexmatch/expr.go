package flexmatch

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Property expressions: the parser (names resolved against the rule set,
// static types checked) and the evaluator over a candidate.

var fnNames = map[string]fnKind{
	"min": fnMin, "max": fnMax, "avg": fnAvg, "median": fnMedian, "sum": fnSum,
	"count": fnCount, "stddev": fnStddev, "flatten": fnFlatten, "set_intersection": fnSetIntersection,
}

// exprParser parses one property expression.
type exprParser struct {
	rs  *RuleSet
	s   string
	pos int
}

// errorf is a property expression error: where (a 1-based character
// position) and what was expected.
func (p *exprParser) errorf(format string, args ...any) error {
	return errorAt(p.pos, p.s, format, args...)
}

// errorAt is an error at byte pos of s (the parsers of expressions and
// compound statements).
func errorAt(pos int, s, format string, args ...any) error {
	return fmt.Errorf("at character %d of %q: %s", pos+1, s, fmt.Sprintf(format, args...))
}

// appendTeams appends the indexes of the teams a name refers to (a team's
// name, or a quantity team's base name: all of its teams).
func (rs *RuleSet) appendTeams(to []int, name string) []int {
	for i, t := range rs.teams {
		if t.name == name || t.base == name {
			to = append(to, i)
		}
	}
	return to
}

// parseExpr parses a property expression over rs's teams and attributes.
// The error says where and what was expected; callers wrap it in an *Error
// naming the property.
func (rs *RuleSet) parseExpr(s string) (*expr, error) {
	p := &exprParser{rs: rs, s: s}
	e, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(p.s) {
		return nil, p.errorf("unexpected %q after the expression", p.s[p.pos:])
	}
	return e, nil
}

// looksLikeExpr reports whether a string referenceValue is a property
// expression (a function call or a teams path) rather than a literal.
func looksLikeExpr(s string) bool {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "teams[") || strings.HasPrefix(t, "team[") {
		return true
	}
	if i := strings.IndexByte(t, '('); i > 0 {
		_, ok := fnNames[strings.TrimSpace(t[:i])]
		return ok
	}
	return false
}

func (p *exprParser) space() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\n' || p.s[p.pos] == '\r') {
		p.pos++
	}
}

func (p *exprParser) ident() string {
	p.space()
	start := p.pos
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			p.pos++
			continue
		}
		break
	}
	return p.s[start:p.pos]
}

func (p *exprParser) eat(c byte) bool {
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// name reads a bracketed name up to ',' or ']'.
func (p *exprParser) name() string {
	p.space()
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] != ',' && p.s[p.pos] != ']' {
		p.pos++
	}
	return strings.TrimSpace(p.s[start:p.pos])
}

const maxExprDepth = 32

func (p *exprParser) expr(depth int) (*expr, error) {
	if depth > maxExprDepth {
		return nil, p.errorf("expressions nest at most %d functions deep", maxExprDepth)
	}
	start := p.pos
	id := p.ident()
	if id == "" {
		return nil, p.errorf("expected a function (min, max, avg, median, sum, count, stddev, flatten, set_intersection) or a path teams[...]")
	}
	if id == "teams" || id == "team" {
		return p.path()
	}
	fn, ok := fnNames[id]
	if !ok {
		p.pos = start
		p.space()
		return nil, p.errorf("unknown function %q: expected min, max, avg, median, sum, count, stddev, flatten, set_intersection or a path teams[...]", id)
	}
	if !p.eat('(') {
		return nil, p.errorf("expected ( after %s", id)
	}
	argPos := p.pos
	arg, err := p.expr(depth + 1)
	if err != nil {
		return nil, err
	}
	if !p.eat(')') {
		return nil, p.errorf("expected ) closing %s(", id)
	}
	e := &expr{fn: fn, arg: arg}
	bad := func(msg string) error {
		p.pos = argPos
		return p.errorf("%s: %s", id, msg)
	}
	switch fn {
	case fnMin, fnMax, fnAvg, fnMedian, fnSum, fnStddev:
		if !arg.num || arg.depth < 1 {
			return nil, bad("needs a list of numbers")
		}
		e.num, e.depth = true, arg.depth-1
	case fnCount:
		if arg.depth < 1 {
			return nil, bad("needs a list")
		}
		e.num, e.depth = true, arg.depth-1
	case fnFlatten:
		if arg.depth < 2 {
			return nil, bad("needs a list of lists")
		}
		e.num, e.depth = arg.num, arg.depth-1
	case fnSetIntersection:
		if arg.num || arg.depth < 2 {
			return nil, bad("needs a list of string lists")
		}
		e.num, e.depth = false, arg.depth-1
	}
	return e, nil
}

func (p *exprParser) path() (*expr, error) {
	e := &expr{}
	if !p.eat('[') {
		return nil, p.errorf("expected [ after teams")
	}
	if p.eat('*') {
		e.allTeams, e.nested = true, true
		for i := range p.rs.teams {
			e.teams = append(e.teams, i)
		}
		if !p.eat(']') {
			return nil, p.errorf("expected ] after teams[*")
		}
	} else {
		names := 0
		for {
			at := p.pos
			n := p.name()
			if n == "" {
				return nil, p.errorf("expected a team name or *")
			}
			k := len(e.teams)
			if e.teams = p.rs.appendTeams(e.teams, n); len(e.teams) == k {
				p.pos = at
				p.space()
				return nil, p.errorf("no team is named %q", n)
			}
			names++
			if p.eat(']') {
				break
			}
			if !p.eat(',') {
				return nil, p.errorf("expected , or ]")
			}
		}
		e.nested = names > 1 || len(e.teams) > 1
	}
	if !p.eat('.') || p.ident() != "players" {
		return nil, p.errorf("expected .players")
	}
	e.level = levelPlayers
	if p.eat('[') {
		if p.name() != "playerId" || !p.eat(']') {
			return nil, p.errorf("expected [playerId]")
		}
		e.level = levelPlayerID
	} else if p.eat('.') {
		if p.ident() != "attributes" || !p.eat('[') {
			return nil, p.errorf("expected attributes[")
		}
		at := p.pos
		n := p.name()
		i, ok := p.rs.attrIndex[n]
		if !ok {
			p.pos = at
			p.space()
			return nil, p.errorf("attribute %q is not declared in playerAttributes", n)
		}
		if !p.eat(']') {
			return nil, p.errorf("expected ]")
		}
		e.level, e.attr = levelAttr, i
	}
	e.depth = 1
	if e.nested {
		e.depth = 2
	}
	if e.level == levelAttr {
		switch p.rs.attrs[e.attr].typ {
		case TypeNumber:
			e.num = true
		case TypeStringList:
			e.depth++
		case TypeStringNumberMap:
			return nil, p.errorf("attribute %q is a string_number_map: expressions read number, string and string_list attributes", p.rs.attrs[e.attr].name)
		}
	}
	return e, nil
}

// Evaluation.

// valKind is the kind of an evaluated value.
type valKind uint8

const (
	kAbsent valKind = iota // no value (an aggregate of an empty list)
	kNum
	kStr
	kList
)

// val is an evaluated expression: a number, a string or a list.
type val struct {
	kind valKind
	n    float64
	s    string
	l    []val
}

// evalCtx evaluates expressions over one candidate. Its buffers are reused
// across evaluations (evaluate keeps them in a pool), so the common path
// does not allocate.
type evalCtx struct {
	rs   *RuleSet
	c    *candidate
	agg  aggregation
	vals []val
	strs []string
	nums []float64
	leaf []val
	// missing is set when a player lacks an attribute the expression reads
	// (and it has no default): the rule cannot hold.
	missing bool
	// work counts the values the evaluation visited since reset: the
	// matcher's work budget (match.go) is counted in it.
	work int
	// seen is scratch for the set operations on long string lists
	// (stamps: see stamp).
	seen  map[string]stamp
	round int32
}

// stamp is seen's entry for a string: the last round (collection) that
// held it, and in how many rounds it was.
type stamp struct{ last, n int32 }

// newRound starts a round of seen; the first round of a set operation
// clears it.
func (x *evalCtx) newRound(first bool) {
	if first {
		if x.seen == nil {
			x.seen = map[string]stamp{}
		}
		clear(x.seen)
		x.round = 0
	}
	x.round++
}

// mark records s in the current round: the first round adds it, later
// rounds count it only when an earlier round held it (add false). It
// reports whether s is new in this round and now in every round so far.
func (x *evalCtx) mark(s string, add bool) (fresh, all bool) {
	e, ok := x.seen[s]
	if !ok && !add {
		return false, false
	}
	if e.last == x.round {
		return false, e.n == x.round
	}
	e.last = x.round
	e.n++
	x.seen[s] = e
	return true, e.n == x.round
}

func (x *evalCtx) reset(rs *RuleSet, c *candidate) {
	x.rs, x.c = rs, c
	clear(x.vals)
	x.vals = x.vals[:0]
	x.strs = x.strs[:0]
	x.missing = false
	x.work = 0
}

// nextRule starts a rule: the values of the previous rule's expressions
// are dead (only its result is kept), so the arena is reused from its
// start. The arena thus holds one rule's values at a time.
func (x *evalCtx) nextRule() {
	x.vals = x.vals[:0]
	x.strs = x.strs[:0]
}

// maxPooledVals is the largest arena an evalCtx keeps when it goes back
// to the pool; a larger one (a hostile rule set's) is left to the GC.
const maxPooledVals = 1 << 16

// release returns x to the pool.
func (x *evalCtx) release() {
	x.rs, x.c = nil, nil
	if cap(x.vals) > maxPooledVals {
		x.vals = nil
	}
	if len(x.seen) > maxPooledVals {
		x.seen = nil
	}
	ctxPool.Put(x)
}

// alloc carves n values from the arena. Slices handed out earlier stay
// valid when the arena grows (they keep the old array).
func (x *evalCtx) alloc(n int) []val {
	x.work += n
	l := len(x.vals)
	if l+n > cap(x.vals) {
		x.vals = make([]val, 0, max(2*cap(x.vals), n, 64))
		l = 0
	}
	x.vals = x.vals[:l+n]
	return x.vals[l : l+n : l+n]
}

// attrOf is a member's value of attribute a with defaults applied; false
// when the player has none and there is no default.
func (rs *RuleSet) attrOf(m *member, a int) (Value, bool) {
	if m.vals != nil {
		v := m.vals[a]
		return v, v.Type() != ""
	}
	d := &rs.attrs[a]
	if v, ok := m.p.Attributes[d.name]; ok && v.Type() == d.typ {
		return v, true
	}
	if d.def != nil {
		return *d.def, true
	}
	return Value{}, false
}

func (x *evalCtx) eval(e *expr) val {
	if e.fn == fnNone {
		if !e.nested {
			return x.team(e, e.teams[0])
		}
		out := x.alloc(len(e.teams))
		for i, t := range e.teams {
			out[i] = x.team(e, t)
		}
		return val{kind: kList, l: out}
	}
	a := x.eval(e.arg)
	switch e.fn {
	case fnFlatten:
		return x.flatten(a, e.arg.depth)
	case fnSetIntersection:
		return x.setIntersection(a, e.arg.depth)
	}
	return x.aggregate(e.fn, a, e.arg.depth)
}

// team is a path's list for one team.
func (x *evalCtx) team(e *expr, t int) val {
	ms := x.c.teams[t]
	if e.level != levelAttr {
		out := x.alloc(len(ms))
		for i := range ms {
			out[i] = val{kind: kStr, s: ms[i].p.ID}
		}
		return val{kind: kList, l: out}
	}
	typ := x.rs.attrs[e.attr].typ
	party := x.agg != aggNone && (typ == TypeNumber || typ == TypeStringList)
	n := len(ms)
	if party {
		n = 0
		for i := range ms {
			if x.alone(ms, i) || firstOfTicket(ms, i) {
				n++
			}
		}
	}
	out := x.alloc(n)
	k := 0
	for i := range ms {
		if party && !x.alone(ms, i) {
			if !firstOfTicket(ms, i) {
				continue
			}
			out[k] = x.partyValue(ms, i, e.attr, typ)
			k++
			continue
		}
		if vals := ms[i].vals; vals != nil {
			// Prepared: read in place.
			v := &vals[e.attr]
			switch {
			case v.N != nil:
				out[k] = val{kind: kNum, n: *v.N}
			case v.S != nil:
				out[k] = val{kind: kStr, s: *v.S}
			default:
				if v.SL == nil {
					x.missing = true
				}
				out[k] = x.fromValue(v)
			}
			k++
			continue
		}
		v, ok := x.rs.attrOf(&ms[i], e.attr)
		if !ok {
			x.missing = true
		}
		out[k] = x.fromValue(&v)
		k++
	}
	return val{kind: kList, l: out}
}

// alone reports whether ms[i] is its ticket's only player (its party
// aggregate is its own value).
func (x *evalCtx) alone(ms []member, i int) bool {
	return len(x.c.tickets[ms[i].ticket].Players) == 1
}

// firstOfTicket reports whether ms[i] is the first member of its ticket
// in ms.
func firstOfTicket(ms []member, i int) bool {
	for j := 0; j < i; j++ {
		if ms[j].ticket == ms[i].ticket {
			return false
		}
	}
	return true
}

func (x *evalCtx) fromValue(v *Value) val {
	switch {
	case v.N != nil:
		return val{kind: kNum, n: *v.N}
	case v.S != nil:
		return val{kind: kStr, s: *v.S}
	case v.SL != nil:
		out := x.alloc(len(v.SL))
		for i, s := range v.SL {
			out[i] = val{kind: kStr, s: s}
		}
		return val{kind: kList, l: out}
	}
	return val{kind: kList} // missing: an empty list or no value
}

// partyValue aggregates the values of the members of ms[i]'s ticket.
func (x *evalCtx) partyValue(ms []member, i int, a int, typ AttrType) val {
	t := ms[i].ticket
	if typ == TypeNumber {
		var acc float64
		n := 0
		for j := i; j < len(ms); j++ {
			if ms[j].ticket != t {
				continue
			}
			v, ok := x.rs.attrOf(&ms[j], a)
			if !ok {
				x.missing = true
				continue
			}
			f := *v.N
			switch {
			case n == 0:
				acc = f
			case x.agg == aggMin:
				acc = min(acc, f)
			case x.agg == aggMax:
				acc = max(acc, f)
			default:
				acc += f
			}
			n++
		}
		if n == 0 {
			return val{}
		}
		if x.agg == aggAvg {
			acc /= float64(n)
		}
		return val{kind: kNum, n: acc}
	}
	// string lists: union or intersection of the party's lists, in the
	// order of first appearance, each string once.
	start := len(x.strs)
	first := true
	for j := i; j < len(ms); j++ {
		if ms[j].ticket != t {
			continue
		}
		v, ok := x.rs.attrOf(&ms[j], a)
		if !ok {
			x.missing = true
			continue
		}
		x.work += len(v.SL)
		if first || x.agg == aggUnion {
			x.newRound(first)
			for _, s := range v.SL {
				if fresh, _ := x.mark(s, true); fresh && x.seen[s].n == 1 {
					x.strs = append(x.strs, s)
				}
			}
			first = false
			continue
		}
		x.newRound(false)
		for _, s := range v.SL {
			x.mark(s, false)
		}
		k := start
		for _, s := range x.strs[start:] {
			if x.seen[s].n == x.round {
				x.strs[k] = s
				k++
			}
		}
		x.strs = x.strs[:k]
	}
	ss := x.strs[start:]
	out := x.alloc(len(ss))
	for i, s := range ss {
		out[i] = val{kind: kStr, s: s}
	}
	return val{kind: kList, l: out}
}

// flatten merges a list of lists into one list (per sublist when deeper:
// teams[*].players.attributes[roles] gives each team's roles).
func (x *evalCtx) flatten(a val, depth int) val {
	if depth > 2 {
		out := x.alloc(len(a.l))
		for i, s := range a.l {
			out[i] = x.flatten(s, depth-1)
		}
		return val{kind: kList, l: out}
	}
	n := 0
	for _, s := range a.l {
		n += len(s.l)
	}
	out := x.alloc(n)
	k := 0
	for _, s := range a.l {
		k += copy(out[k:], s.l)
	}
	return val{kind: kList, l: out}
}

// setIntersection intersects the string lists of a list (per sublist when
// deeper).
func (x *evalCtx) setIntersection(a val, depth int) val {
	if depth > 2 {
		out := x.alloc(len(a.l))
		for i, s := range a.l {
			out[i] = x.setIntersection(s, depth-1)
		}
		return val{kind: kList, l: out}
	}
	if len(a.l) == 0 {
		return val{kind: kList}
	}
	// The strings of the first list that every list holds, in the first
	// list's order, each once: one pass over every list.
	for i, l := range a.l {
		x.newRound(i == 0)
		x.work += len(l.l)
		for _, s := range l.l {
			if s.kind == kStr {
				x.mark(s.s, i == 0)
			}
		}
	}
	rounds := x.round
	out := x.alloc(len(a.l[0].l))
	k := 0
	for _, s := range a.l[0].l {
		if s.kind != kStr {
			continue
		}
		if e := x.seen[s.s]; e.n == rounds {
			e.n++ // taken once
			x.seen[s.s] = e
			out[k] = s
			k++
		}
	}
	return val{kind: kList, l: out[:k]}
}

func inVals(l []val, s string) bool {
	for _, v := range l {
		if v.kind == kStr && v.s == s {
			return true
		}
	}
	return false
}

// aggregate applies an aggregate function to a list (per sublist when
// deeper). An empty list has a sum and count of 0 and no other aggregate.
func (x *evalCtx) aggregate(fn fnKind, a val, depth int) val {
	if depth > 1 {
		out := x.alloc(len(a.l))
		for i, s := range a.l {
			out[i] = x.aggregate(fn, s, depth-1)
		}
		return val{kind: kList, l: out}
	}
	if fn == fnCount {
		n := 0
		for _, v := range a.l {
			if v.kind != kAbsent {
				n++
			}
		}
		return val{kind: kNum, n: float64(n)}
	}
	x.nums = x.nums[:0]
	for _, v := range a.l {
		if v.kind == kNum {
			x.nums = append(x.nums, v.n)
		}
	}
	return aggregateNums(fn, x.nums)
}

// aggregateNums is fn over ns (which it may reorder).
func aggregateNums(fn fnKind, ns []float64) val {
	if len(ns) == 0 {
		if fn == fnSum {
			return val{kind: kNum}
		}
		return val{}
	}
	var r float64
	switch fn {
	case fnMin:
		r = ns[0]
		for _, f := range ns[1:] {
			r = min(r, f)
		}
	case fnMax:
		r = ns[0]
		for _, f := range ns[1:] {
			r = max(r, f)
		}
	case fnSum, fnAvg, fnStddev:
		for _, f := range ns {
			r += f
		}
		if fn == fnSum {
			break
		}
		r /= float64(len(ns))
		if fn == fnStddev {
			m, sq := r, 0.0
			for _, f := range ns {
				sq += (f - m) * (f - m)
			}
			r = math.Sqrt(sq / float64(len(ns)))
		}
	case fnMedian:
		sort.Float64s(ns)
		h := len(ns) / 2
		if len(ns)%2 == 1 {
			r = ns[h]
		} else {
			r = (ns[h-1] + ns[h]) / 2
		}
	}
	return val{kind: kNum, n: r}
}
