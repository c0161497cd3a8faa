package flexmatch

import (
	"math"
	"time"
)

// hints are what the matcher reads from a view to index the pool and prune
// candidates before the full evaluate. They never decide a match (evaluate
// does); a hint only keeps away tickets that could not have formed a valid
// match with the anchor.
type hints struct {
	// keyAttr is the attribute (index into RuleSet.attrs, -1: none)
	// candidates are gathered around: a numeric batchDistance rule's
	// batchAttribute, else a sort rule's sortAttribute, else the first of
	// sortByAttributes when batching is sorted. keyAgg folds a party's
	// values into one key; keyMap picks a string_number_map's value.
	keyAttr int
	keyAgg  aggregation
	keyMap  int
	// spread is the largest difference of keys within one match (a
	// numeric batchDistance rule's maxDistance; +Inf without one), named
	// spreadRule.
	spread     float64
	spreadRule string
	// side orders the gathering: 0 nearest key first; +1 larger keys
	// first, -1 smaller keys first (absoluteSort).
	side int
	// strAttr is a string batchDistance rule's attribute (-1: none): a
	// match's tickets all have the same value (the pool is bucketed by
	// it), named strRule.
	strAttr int
	strRule string
	// maxLatency is the latency rule's maxLatency (0: no latency rule),
	// named latencyRule; latAgg folds a party's latencies in a region.
	maxLatency  int
	latencyRule string
	latAgg      aggregation
}

// algo is the rule set's algorithm block as the matcher uses it.
type algo struct {
	balanced bool
	batching string
	sortBy   int // first sortByAttributes (-1: none)
	// balancedAttribute is the attribute teams are balanced on (-1: the
	// gathering key).
	balancedAttribute int
	backfillPriority  string
	oldest            bool
}

// matcherAlgo reads the algorithm settings of the rule set.
func (rs *RuleSet) matcherAlgo() algo {
	a := rs.algo
	g := algo{balanced: a.strategy == strategyBalanced, batching: a.batchingPreference,
		sortBy: -1, balancedAttribute: -1, backfillPriority: a.backfillPriority,
		oldest: a.expansionAgeSelection == ageOldest}
	if g.batching == "" {
		g.batching = batchRandom
	}
	if len(a.sortByAttributes) > 0 {
		g.sortBy = a.sortByAttributes[0]
	}
	if g.balanced && a.balancedAttribute >= 0 && a.balancedAttribute < len(rs.attrs) {
		g.balancedAttribute = a.balancedAttribute
	}
	return g
}

// expansionWaits are the distinct waitTimeSeconds of every expansion step,
// ascending: the ages at which the view changes.
func (rs *RuleSet) expansionWaits() []time.Duration {
	w := make([]time.Duration, len(rs.steps))
	for i, s := range rs.steps {
		w[i] = time.Duration(s * float64(time.Second))
	}
	return w
}

// matcherHints reads the hints of a view.
func (rs *RuleSet) matcherHints(v *view, a algo) hints {
	h := hints{keyAttr: -1, strAttr: -1, keyAgg: aggAvg, spread: math.Inf(1)}
	sortKey := false
	for _, r := range v.rules {
		switch r := r.(type) {
		case *batchDistanceRule:
			switch {
			case r.str && h.strAttr < 0:
				h.strAttr, h.strRule = r.attr, r.name
			case !r.str && (h.keyAttr < 0 || sortKey):
				h.keyAttr, h.keyAgg, h.keyMap, h.side, sortKey = r.attr, r.agg, mapKeyNone, 0, false
				h.spread, h.spreadRule = r.maxDistance, r.name
			}
		case *latencyRule:
			if h.maxLatency == 0 || int(math.Ceil(r.maxLatency)) < h.maxLatency {
				h.maxLatency, h.latencyRule, h.latAgg = int(math.Ceil(r.maxLatency)), r.name, r.agg
			}
		case *distanceSortRule:
			if h.keyAttr < 0 {
				h.keyAttr, h.keyAgg, h.keyMap, h.side, sortKey = r.attr, r.agg, r.mapKey, 0, true
			}
		case *absoluteSortRule:
			if h.keyAttr < 0 {
				h.keyAttr, h.keyAgg, h.keyMap, sortKey = r.attr, r.agg, r.mapKey, true
				h.side = -1
				if r.descending {
					h.side = 1
				}
			}
		}
	}
	if h.keyAttr < 0 && a.batching == batchSorted && a.sortBy >= 0 {
		h.keyAttr = a.sortBy
	}
	if h.keyAgg == aggNone {
		h.keyAgg = aggAvg
	}
	if h.latAgg == aggNone {
		h.latAgg = aggMax
	}
	return h
}

// value is a player's attribute (by index), or its declared default.
func (rs *RuleSet) value(p *Player, attr int) (Value, bool) {
	if attr < 0 || attr >= len(rs.attrs) {
		return Value{}, false
	}
	d := &rs.attrs[attr]
	if v, ok := p.Attributes[d.name]; ok && v.Type() == d.typ {
		return v, true
	}
	if d.def != nil {
		return *d.def, true
	}
	return Value{}, false
}

// numValue is a player's number attribute (or default); for a
// string_number_map, its smallest or largest value as mapKey says.
func (rs *RuleSet) numValue(p *Player, attr, mapKey int) (float64, bool) {
	v, ok := rs.value(p, attr)
	switch {
	case !ok:
		return 0, false
	case v.N != nil:
		return *v.N, true
	case v.SDM != nil && mapKey != mapKeyNone && len(v.SDM) > 0:
		first, acc := true, 0.0
		for _, x := range v.SDM {
			if first || (mapKey == mapKeyMin && x < acc) || (mapKey == mapKeyMax && x > acc) {
				acc, first = x, false
			}
		}
		return acc, true
	}
	return 0, false
}

// strValue is a player's string attribute, or its declared default.
func (rs *RuleSet) strValue(p *Player, attr int) (string, bool) {
	if v, ok := rs.value(p, attr); ok && v.S != nil {
		return *v.S, true
	}
	return "", false
}

// ruleIndex is a rule's position in the rule set (for ordering metrics).
func (rs *RuleSet) ruleIndex(name string) int {
	for i, r := range rs.rules {
		if r.ruleName() == name {
			return i
		}
	}
	return len(rs.rules)
}
