package flexmatch

import (
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Evaluation of a view's rules over a candidate: the matcher's inner loop.

// prepared is a ticket's precomputed form, built once per ticket (prepare)
// so that evaluating candidates does no map lookups per player:
//
//   - vals[k] are player k's attribute values by attribute index with
//     defaults applied (a zero Value where the player has none); a member
//     built from the ticket sets member.vals = vals[k];
//   - key[r] is, for a batchDistance, absoluteSort or distanceSort rule at
//     index r, the ticket's party-aggregated number (NaN when missing),
//     and keyStr[r] a string batchDistance rule's value (keyOK[r] false
//     when the party has no common value);
//   - lat[r] is, for a latency rule at index r, the ticket's latency per
//     region (party aggregated, sorted by region).
//
// A candidate whose prep is set (parallel to tickets) uses it; without it
// evaluate computes the same from the tickets.
type prepared struct {
	vals   [][]Value
	key    []float64
	keyStr []string
	keyOK  []bool
	lat    [][]regionLatency
}

// prepare computes a ticket's prepared form.
func (rs *RuleSet) prepare(t *Ticket) *prepared {
	n := len(rs.attrs)
	pr := &prepared{
		vals:   make([][]Value, len(t.Players)),
		key:    make([]float64, len(rs.rules)),
		keyStr: make([]string, len(rs.rules)),
		keyOK:  make([]bool, len(rs.rules)),
	}
	flat := make([]Value, len(t.Players)*n)
	for i := range t.Players {
		pr.vals[i] = flat[i*n : (i+1)*n : (i+1)*n]
		m := member{p: &t.Players[i]}
		for a := range rs.attrs {
			pr.vals[i][a], _ = rs.attrOf(&m, a)
		}
	}
	for r, ru := range rs.rules {
		switch ru := ru.(type) {
		case *batchDistanceRule:
			if ru.str {
				pr.keyStr[r], pr.keyOK[r] = rs.partyString(t, pr, ru.attr)
			} else {
				pr.key[r] = rs.partyNumber(t, pr, ru.attr, ru.agg, mapKeyNone)
				pr.keyOK[r] = !math.IsNaN(pr.key[r])
			}
		case *absoluteSortRule:
			pr.key[r] = rs.partyNumber(t, pr, ru.attr, ru.agg, ru.mapKey)
			pr.keyOK[r] = !math.IsNaN(pr.key[r])
		case *distanceSortRule:
			pr.key[r] = rs.partyNumber(t, pr, ru.attr, ru.agg, ru.mapKey)
			pr.keyOK[r] = !math.IsNaN(pr.key[r])
		case *latencyRule:
			if pr.lat == nil {
				pr.lat = make([][]regionLatency, len(rs.rules))
			}
			pr.lat[r] = ticketLatencies(t, ru.agg)
		}
	}
	return pr
}

// playerValue is player k of t's attribute a (from pr when not nil).
func (rs *RuleSet) playerValue(t *Ticket, pr *prepared, k, a int) (Value, bool) {
	if pr != nil {
		v := pr.vals[k][a]
		return v, v.Type() != ""
	}
	m := member{p: &t.Players[k]}
	return rs.attrOf(&m, a)
}

// partyNumber aggregates a number (or, with mapKey, a string_number_map's
// smallest or largest value) over a ticket's players; NaN when a player has
// no value.
func (rs *RuleSet) partyNumber(t *Ticket, pr *prepared, a int, agg aggregation, mapKey int) float64 {
	acc := math.NaN()
	for k := range t.Players {
		v, ok := rs.playerValue(t, pr, k, a)
		if !ok {
			return math.NaN()
		}
		var f float64
		switch {
		case v.N != nil:
			f = *v.N
		case len(v.SDM) > 0:
			f = math.NaN()
			for _, x := range v.SDM {
				if math.IsNaN(f) || (mapKey == mapKeyMin && x < f) || (mapKey != mapKeyMin && x > f) {
					f = x
				}
			}
		default:
			return math.NaN()
		}
		switch {
		case k == 0:
			acc = f
		case agg == aggMin:
			acc = min(acc, f)
		case agg == aggMax:
			acc = max(acc, f)
		default:
			acc += f
		}
	}
	if agg == aggAvg && len(t.Players) > 0 {
		acc /= float64(len(t.Players))
	}
	return acc
}

// partyString is a ticket's string value: its players' common value; false
// when they differ or one has none.
func (rs *RuleSet) partyString(t *Ticket, pr *prepared, a int) (string, bool) {
	var s string
	for k := range t.Players {
		v, ok := rs.playerValue(t, pr, k, a)
		if !ok || v.S == nil || (k > 0 && *v.S != s) {
			return "", false
		}
		s = *v.S
	}
	return s, len(t.Players) > 0
}

// ticketKey is a ticket's key for rule r (see prepared).
func (rs *RuleSet) ticketKey(c *candidate, i, r int, attr int, agg aggregation, mapKey int) float64 {
	if i < len(c.prep) && c.prep[i] != nil {
		return c.prep[i].key[r]
	}
	return rs.partyNumber(c.tickets[i], nil, attr, agg, mapKey)
}

func (rs *RuleSet) ticketKeyStr(c *candidate, i, r, attr int) (string, bool) {
	if i < len(c.prep) && c.prep[i] != nil {
		return c.prep[i].keyStr[r], c.prep[i].keyOK[r]
	}
	return rs.partyString(c.tickets[i], nil, attr)
}

// sortKey writes ticket t's sort keys into dst (one per absoluteSort or
// distanceSort rule, in rule order, the first most significant) and
// returns it: the matcher orders a batch by ascending keys. An
// absoluteSort key is the ticket's value (negated for descending); a
// distanceSort key is its distance from first's, the batch's first ticket
// (negated for descending). A ticket without a value sorts last (+Inf).
// pr and firstPr may be nil.
func (rs *RuleSet) sortKey(t *Ticket, pr *prepared, first *Ticket, firstPr *prepared, dst []float64) []float64 {
	dst = dst[:0]
	for r, ru := range rs.rules {
		var k float64
		switch ru := ru.(type) {
		case *absoluteSortRule:
			k = rs.keyOf(t, pr, r, ru.attr, ru.agg, ru.mapKey)
			if ru.descending {
				k = -k
			}
		case *distanceSortRule:
			k = math.Abs(rs.keyOf(t, pr, r, ru.attr, ru.agg, ru.mapKey) - rs.keyOf(first, firstPr, r, ru.attr, ru.agg, ru.mapKey))
			if ru.descending {
				k = -k
			}
		default:
			continue
		}
		if math.IsNaN(k) {
			k = math.Inf(1)
		}
		dst = append(dst, k)
	}
	return dst
}

func (rs *RuleSet) keyOf(t *Ticket, pr *prepared, r, attr int, agg aggregation, mapKey int) float64 {
	if pr != nil {
		return pr.key[r]
	}
	return rs.partyNumber(t, nil, attr, agg, mapKey)
}

var ctxPool = sync.Pool{New: func() any { return new(evalCtx) }}

// evaluate evaluates every rule of the view on a candidate whose team sizes
// are within the view's bounds, and returns the names of the rules that do
// not hold (none: the candidate is a valid match). metrics, when not nil,
// gets each rule's pass or fail counted. Sort rules never fail and are not
// counted; a rule a compound rule reads is counted but decides only
// through the compound rule.
func (v *view) evaluate(c *candidate, metrics map[string]*RuleMetric) (failed []string) {
	return v.evaluateCounted(c, metrics, nil)
}

// evaluateCounted is evaluate that, when work is not nil, adds the
// values the evaluation visited to *work (the matcher's budget).
func (v *view) evaluateCounted(c *candidate, metrics map[string]*RuleMetric, work *int) (failed []string) {
	var buf [32]bool
	results := buf[:0]
	if len(v.rules) > len(buf) {
		results = make([]bool, 0, len(v.rules))
	}
	var x *evalCtx
	for i, r := range v.rules {
		ok := true
		switch r.(type) {
		case *absoluteSortRule, *distanceSortRule:
			results = append(results, true)
			continue
		case *comparisonRule, *distanceRule, *collectionRule:
			if x == nil {
				x = ctxPool.Get().(*evalCtx)
				x.reset(v.rs, c)
			}
		}
		if x != nil {
			x.nextRule()
		}
		ok = v.holdsRule(i, c, x, results)
		results = append(results, ok)
		if metrics != nil {
			name := r.ruleName()
			m := metrics[name]
			if m == nil {
				m = &RuleMetric{Rule: name}
				metrics[name] = m
			}
			if ok {
				m.Passed++
			} else {
				m.Failed++
			}
		}
		if !ok && !v.rs.inCompound[i] {
			failed = append(failed, r.ruleName())
		}
	}
	if x != nil {
		if work != nil {
			*work += x.work
		}
		x.release()
	}
	return failed
}

// holds reports whether every rule of the view holds for the candidate
// (evaluate returns no names), stopping at the first failure: the cheap
// rules (batchDistance, and latency outside compound rules) go first.
func (v *view) holds(c *candidate) bool { return v.holdsCounted(c, nil) }

// holdsCounted is holds that, when work is not nil, adds the values the
// evaluation visited to *work.
func (v *view) holdsCounted(c *candidate, work *int) bool {
	for i, r := range v.rules {
		switch r.(type) {
		case *batchDistanceRule, *latencyRule:
			if !v.rs.inCompound[i] && !v.holdsRule(i, c, nil, nil) {
				return false
			}
		}
	}
	var buf [32]bool
	results := buf[:0]
	if len(v.rules) > len(buf) {
		results = make([]bool, 0, len(v.rules))
	}
	var x *evalCtx
	ok := true
	for i, r := range v.rules {
		res := true
		switch r.(type) {
		case *absoluteSortRule, *distanceSortRule, *batchDistanceRule:
		case *latencyRule:
			if v.rs.inCompound[i] {
				res = v.holdsRule(i, c, nil, results)
			}
		default:
			if x == nil {
				x = ctxPool.Get().(*evalCtx)
				x.reset(v.rs, c)
			}
			x.nextRule()
			res = v.holdsRule(i, c, x, results)
		}
		results = append(results, res)
		if !res && !v.rs.inCompound[i] {
			ok = false
			break
		}
	}
	if x != nil {
		if work != nil {
			*work += x.work
		}
		x.release()
	}
	return ok
}

// holdsRule evaluates rule i. results holds the outcomes of rules 0..i-1
// (for compound rules); x is an evaluation context for expression rules.
func (v *view) holdsRule(i int, c *candidate, x *evalCtx, results []bool) bool {
	rs := v.rs
	switch r := v.rules[i].(type) {
	case *batchDistanceRule:
		if r.str {
			first := ""
			for t := range c.tickets {
				s, ok := rs.ticketKeyStr(c, t, i, r.attr)
				if !ok || (t > 0 && s != first) {
					return false
				}
				first = s
			}
			return true
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for t := range c.tickets {
			k := rs.ticketKey(c, t, i, r.attr, r.agg, mapKeyNone)
			if math.IsNaN(k) {
				return false
			}
			lo, hi = min(lo, k), max(hi, k)
		}
		return len(c.tickets) == 0 || hi-lo <= r.maxDistance
	case *comparisonRule:
		return x.comparison(r)
	case *distanceRule:
		return x.distance(r)
	case *collectionRule:
		return x.collection(r)
	case *compoundRule:
		return compound(r.stmt, results)
	case *latencyRule:
		return latencyHolds(r, i, c)
	}
	return true
}

func compound(b *boolExpr, results []bool) bool {
	switch b.op {
	case boolRule:
		return results[b.rule]
	case boolNot:
		return !compound(b.args[0], results)
	case boolAnd:
		for _, a := range b.args {
			if !compound(a, results) {
				return false
			}
		}
		return true
	case boolOr:
		for _, a := range b.args {
			if compound(a, results) {
				return true
			}
		}
		return false
	}
	// xor: exactly one argument holds.
	n := 0
	for _, a := range b.args {
		if compound(a, results) {
			n++
		}
	}
	return n == 1
}

// collectLeaves appends v's number and string leaves to dst.
func collectLeaves(v val, dst []val) []val {
	switch v.kind {
	case kList:
		for _, s := range v.l {
			dst = collectLeaves(s, dst)
		}
	case kNum, kStr:
		dst = append(dst, v)
	}
	return dst
}

// collections appends v's innermost lists (depth is v's static depth).
func collections(v val, depth int, dst []val) []val {
	if v.kind != kList {
		return dst
	}
	if depth <= 1 {
		return append(dst, v)
	}
	for _, s := range v.l {
		dst = collections(s, depth-1, dst)
	}
	return dst
}

// measure evaluates measurements into x.leaf (leaves) or, with colls,
// x.leaf as collections; false when a player lacks an attribute read.
func (x *evalCtx) measure(ms []*expr, agg aggregation, colls bool) bool {
	x.agg = agg
	x.leaf = x.leaf[:0]
	for _, m := range ms {
		v := x.eval(m)
		if colls {
			x.leaf = collections(v, m.depth, x.leaf)
		} else {
			x.leaf = collectLeaves(v, x.leaf)
		}
	}
	return !x.missing
}

// reference is a rule's reference value; false when it cannot be had.
func (x *evalCtx) reference(ref *operand) (val, bool) {
	switch ref.kind {
	case operandNumber:
		return val{kind: kNum, n: ref.num}, true
	case operandString:
		return val{kind: kStr, s: ref.str}, true
	case operandExpr:
		v := x.eval(ref.expr)
		return v, !x.missing && (v.kind == kNum || v.kind == kStr)
	}
	return val{}, false
}

func compareVals(a, b val, op cmpOp) bool {
	if a.kind == kStr {
		if op == opEq {
			return a.s == b.s
		}
		return a.s != b.s
	}
	switch op {
	case opEq:
		return a.n == b.n
	case opNe:
		return a.n != b.n
	case opLt:
		return a.n < b.n
	case opLe:
		return a.n <= b.n
	case opGt:
		return a.n > b.n
	}
	return a.n >= b.n
}

func (x *evalCtx) comparison(r *comparisonRule) bool {
	if !x.measure(r.measurements, r.agg, false) {
		return false
	}
	ls := x.leaf
	if r.reference != nil {
		ref, ok := x.reference(r.reference)
		if !ok {
			return false
		}
		for _, l := range ls {
			if l.kind != ref.kind || !compareVals(l, ref, r.op) {
				return false
			}
		}
		return true
	}
	x.work += len(ls)
	if len(ls) > 8 && sameKind(ls) {
		return x.allEqualOrDistinct(ls, r.op == opEq)
	}
	for i := range ls {
		x.work += len(ls) - i
		for j := i + 1; j < len(ls); j++ {
			if !compareVals(ls[i], ls[j], r.op) {
				return false
			}
		}
	}
	return true
}

// sameKind reports whether every value of ls has the first's kind.
func sameKind(ls []val) bool {
	for _, l := range ls {
		if l.kind != ls[0].kind {
			return false
		}
	}
	return true
}

// allEqualOrDistinct is the comparison of every pair of ls (values of one
// kind) with = (eq) or != in linear time, or n log n for distinct
// numbers.
func (x *evalCtx) allEqualOrDistinct(ls []val, eq bool) bool {
	if eq {
		for _, l := range ls[1:] {
			if !compareVals(l, ls[0], opEq) {
				return false
			}
		}
		return true
	}
	if ls[0].kind == kStr {
		x.newRound(true)
		for _, l := range ls {
			if fresh, _ := x.mark(l.s, true); !fresh {
				return false
			}
		}
		return true
	}
	x.nums = x.nums[:0]
	for _, l := range ls {
		x.nums = append(x.nums, l.n)
	}
	sort.Float64s(x.nums)
	for i := 1; i < len(x.nums); i++ {
		if x.nums[i] == x.nums[i-1] {
			return false
		}
	}
	return true
}

func (x *evalCtx) distance(r *distanceRule) bool {
	if !x.measure(r.measurements, r.agg, false) {
		return false
	}
	within := func(d float64) bool {
		return (!r.minDistance.set || d >= r.minDistance.v) && (!r.maxDistance.set || d <= r.maxDistance.v)
	}
	if r.reference != nil {
		ref, ok := x.reference(r.reference)
		if !ok || ref.kind != kNum {
			return false
		}
		for _, l := range x.leaf {
			if !within(math.Abs(l.n - ref.n)) {
				return false
			}
		}
		return true
	}
	// Without a reference every pair of values is within the bounds.
	x.nums = x.nums[:0]
	for _, l := range x.leaf {
		x.nums = append(x.nums, l.n)
	}
	if len(x.nums) < 2 {
		return true
	}
	sort.Float64s(x.nums)
	if r.maxDistance.set && x.nums[len(x.nums)-1]-x.nums[0] > r.maxDistance.v {
		return false
	}
	if r.minDistance.set {
		for i := 1; i < len(x.nums); i++ {
			if x.nums[i]-x.nums[i-1] < r.minDistance.v {
				return false
			}
		}
	}
	return true
}

func (x *evalCtx) collection(r *collectionRule) bool {
	if !x.measure(r.measurements, r.agg, true) {
		return false
	}
	within := func(n int) bool {
		f := float64(n)
		return (!r.minCount.set || f >= r.minCount.v) && (!r.maxCount.set || f <= r.maxCount.v)
	}
	for _, c := range x.leaf {
		x.work += len(c.l)
	}
	switch r.op {
	case collIntersection:
		// The distinct strings of the first collection that every other
		// holds: one pass over each.
		n := 0
		for i, c := range x.leaf {
			x.newRound(i == 0)
			for _, s := range c.l {
				if s.kind != kStr {
					continue
				}
				if fresh, all := x.mark(s.s, i == 0); fresh && all && i == len(x.leaf)-1 {
					n++
				}
			}
		}
		return within(n)
	case collContains:
		n := 0
		for _, c := range x.leaf {
			if inVals(c.l, r.reference.str) {
				n++
			}
		}
		return within(n)
	}
	// reference_intersection_count: the reference's strings are round 1;
	// each collection's distinct strings among them are counted.
	ref := r.reference.list
	x.work += len(ref)
	x.newRound(true)
	for _, s := range ref {
		x.mark(s, true)
	}
	for _, c := range x.leaf {
		x.newRound(false)
		n := 0
		for _, s := range c.l {
			if s.kind != kStr {
				continue
			}
			if fresh, _ := x.mark(s.s, false); fresh {
				n++
			}
		}
		if !within(n) {
			return false
		}
	}
	return true
}

// regionLatency is a ticket's (party aggregated) latency in one region.
type regionLatency struct {
	region string
	ms     float64
}

// ticketLatencies is a ticket's latency per region under a latency rule's
// party aggregation, sorted by region: the regions every player of the
// ticket has a latency for.
func ticketLatencies(t *Ticket, agg aggregation) []regionLatency {
	if len(t.Players) == 0 {
		return nil
	}
	out := make([]regionLatency, 0, len(t.Players[0].Latencies))
	for region := range t.Players[0].Latencies {
		if l, ok := ticketLatency(t, region, agg); ok {
			out = append(out, regionLatency{region, l})
		}
	}
	slices.SortFunc(out, func(a, b regionLatency) int { return strings.Compare(a.region, b.region) })
	return out
}

// ticketLatency is a ticket's latency in a region, aggregated over its
// players; false when a player has no latency for the region.
func ticketLatency(t *Ticket, region string, agg aggregation) (float64, bool) {
	var acc float64
	for k := range t.Players {
		l, ok := t.Players[k].Latencies[region]
		if !ok {
			return 0, false
		}
		f := float64(l)
		switch {
		case k == 0:
			acc = f
		case agg == aggMin:
			acc = min(acc, f)
		case agg == aggAvg:
			acc += f
		default:
			acc = max(acc, f)
		}
	}
	if agg == aggAvg && len(t.Players) > 0 {
		acc /= float64(len(t.Players))
	}
	return acc, len(t.Players) > 0
}

// latencyOK reports whether the latencies of the tickets of one region
// (lowest lo, highest hi, sum over n tickets) meet the rule.
func latencyOK(r *latencyRule, lo, hi, sum float64, n int) bool {
	if hi > r.maxLatency {
		return false
	}
	if !r.maxDistance.set {
		return true
	}
	ref := lo
	if r.refAvg {
		ref = sum / float64(n)
	}
	return hi-ref <= r.maxDistance.v && ref-lo <= r.maxDistance.v
}

// maxMergedRegions is how many regions of the first ticket the prepared
// latency check tracks on the stack; more fall back to map lookups.
const maxMergedRegions = 32

// latencyHolds reports whether some region meets latency rule i for every
// ticket of the candidate.
func latencyHolds(r *latencyRule, i int, c *candidate) bool {
	if len(c.tickets) == 0 {
		return true
	}
	if c.prep != nil {
		if ok, done := latencyPrepared(r, i, c); done {
			return ok
		}
	}
	first := c.tickets[0]
	if len(first.Players) == 0 {
		return false
	}
	for region := range first.Players[0].Latencies {
		if latencyRegion(r, c, region) {
			return true
		}
	}
	return false
}

// latencyPrepared is latencyHolds over prepared region lists: one merge
// walk per ticket, no map lookups. done is false when it cannot decide
// (a ticket without prepared form, or too many regions).
func latencyPrepared(r *latencyRule, i int, c *candidate) (ok, done bool) {
	if len(c.prep) != len(c.tickets) {
		return false, false
	}
	for _, pr := range c.prep {
		if pr == nil || pr.lat == nil {
			return false, false
		}
	}
	r0 := c.prep[0].lat[i]
	if len(r0) > maxMergedRegions {
		return false, false
	}
	var lo, hi, sum [maxMergedRegions]float64
	var alive [maxMergedRegions]bool
	for k, rl := range r0 {
		lo[k], hi[k], sum[k], alive[k] = rl.ms, rl.ms, rl.ms, rl.ms <= r.maxLatency
	}
	for _, pr := range c.prep[1:] {
		rt := pr.lat[i]
		j := 0
		for k, rl := range r0 {
			for j < len(rt) && rt[j].region < rl.region {
				j++
			}
			if j == len(rt) || rt[j].region != rl.region {
				alive[k] = false
				continue
			}
			l := rt[j].ms
			lo[k], hi[k], sum[k] = min(lo[k], l), max(hi[k], l), sum[k]+l
		}
	}
	for k := range r0 {
		if alive[k] && latencyOK(r, lo[k], hi[k], sum[k], len(c.tickets)) {
			return true, true
		}
	}
	return false, true
}

// latencyRegion reports whether a region meets the latency rule.
func latencyRegion(r *latencyRule, c *candidate, region string) bool {
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, t := range c.tickets {
		l, ok := ticketLatency(t, region, r.agg)
		if !ok || l > r.maxLatency {
			return false
		}
		lo, hi, sum = min(lo, l), max(hi, l), sum+l
	}
	return latencyOK(r, lo, hi, sum, len(c.tickets))
}

// regions appends to dst the regions where every latency rule of the view
// holds for the candidate (the regions a match may be placed in); with no
// latency rule it returns dst unchanged.
func (v *view) regions(c *candidate, dst []string) []string {
	if !v.rs.latency || len(c.tickets) == 0 || len(c.tickets[0].Players) == 0 {
		return dst
	}
next:
	for region := range c.tickets[0].Players[0].Latencies {
		for _, r := range v.rules {
			if l, ok := r.(*latencyRule); ok && !latencyRegion(l, c, region) {
				continue next
			}
		}
		dst = append(dst, region)
	}
	sort.Strings(dst)
	return dst
}

// addTicket appends a ticket to a candidate: its players go on team (a
// backfill ticket's players with a Team on that team instead), with their
// prepared values when pr is not nil. With pr, every ticket of the
// candidate must have one (c.prep stays parallel to c.tickets).
func (rs *RuleSet) addTicket(c *candidate, t *Ticket, pr *prepared, team int) {
	if len(c.teams) < len(rs.teams) {
		c.teams = append(c.teams, make([][]member, len(rs.teams)-len(c.teams))...)
	}
	idx := len(c.tickets)
	for k := range t.Players {
		p := &t.Players[k]
		tm := team
		if p.Team != "" {
			if i, ok := rs.teamIndex[p.Team]; ok {
				tm = i
			}
		}
		m := member{p: p, ticket: idx}
		if pr != nil {
			m.vals = pr.vals[k]
		}
		c.teams[tm] = append(c.teams[tm], m)
	}
	c.tickets = append(c.tickets, t)
	if pr != nil {
		c.prep = append(c.prep, pr)
	}
}

// pop removes the candidate's last ticket (the last addTicket).
func (c *candidate) pop() {
	idx := len(c.tickets) - 1
	if idx < 0 {
		return
	}
	for i, ms := range c.teams {
		for len(ms) > 0 && ms[len(ms)-1].ticket == idx {
			ms = ms[:len(ms)-1]
		}
		c.teams[i] = ms
	}
	c.tickets = c.tickets[:idx]
	if len(c.prep) > idx {
		c.prep = c.prep[:idx]
	}
}
