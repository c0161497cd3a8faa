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
	// keyRule is the index of the rule keyAttr comes from (-1: from
	// sortByAttributes): prepare computes the ticket's key for it.
	keyRule int
	// spread is the largest difference of keys within one match (a
	// numeric batchDistance rule's maxDistance; +Inf without one), named
	// spreadRule.
	spread     float64
	spreadRule string
	// extra are the other numeric batchDistance rules: each also bounds
	// the spread of its own key (prepared.key) within a match.
	extra []spreadHint
	// side orders the gathering: 0 nearest key first; +1 larger keys
	// first, -1 smaller keys first (absoluteSort).
	side int
	// strAttr is a string batchDistance rule's attribute (-1: none): a
	// match's tickets all have the same value (the pool is bucketed by
	// it), named strRule.
	strAttr int
	strRule string
	// strIdx is that rule's index.
	strIdx int
	// sorts is true when the view has sort rules: the gathered tickets
	// are then ordered by RuleSet.sortKey.
	sorts bool
	// maxLatency is the latency rule's maxLatency (0: no latency rule),
	// named latencyRule; latAgg folds a party's latencies in a region.
	maxLatency  int
	latencyRule string
	// latIdx is that rule's index (prepared.lat), -1 without one.
	latIdx int
}

// spreadHint is a numeric batchDistance rule beside the gathering key's.
type spreadHint struct {
	idx  int // rule index (prepared.key)
	max  float64
	name string
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
	h := hints{keyAttr: -1, keyRule: -1, strAttr: -1, latIdx: -1, keyAgg: aggAvg, spread: math.Inf(1)}
	sortKey := false
	for i, r := range v.rules {
		switch r := r.(type) {
		case *batchDistanceRule:
			switch {
			case r.str && h.strAttr < 0:
				h.strAttr, h.strRule, h.strIdx = r.attr, r.name, i
			case !r.str && (h.keyAttr < 0 || sortKey):
				h.keyAttr, h.keyAgg, h.keyMap, h.side, sortKey = r.attr, r.agg, mapKeyNone, 0, false
				h.keyRule = i
				h.spread, h.spreadRule = r.maxDistance, r.name
			}
		case *latencyRule:
			if h.maxLatency == 0 || int(math.Ceil(r.maxLatency)) < h.maxLatency {
				h.maxLatency, h.latencyRule, h.latIdx = int(math.Ceil(r.maxLatency)), r.name, i
			}
		case *distanceSortRule:
			h.sorts = true
			if h.keyAttr < 0 {
				h.keyAttr, h.keyAgg, h.keyMap, h.side, sortKey = r.attr, r.agg, r.mapKey, 0, true
				h.keyRule = i
			}
		case *absoluteSortRule:
			h.sorts = true
			if h.keyAttr < 0 {
				h.keyAttr, h.keyAgg, h.keyMap, sortKey = r.attr, r.agg, r.mapKey, true
				h.keyRule = i
				h.side = -1
				if r.descending {
					h.side = 1
				}
			}
		}
	}
	for i, r := range v.rules {
		if r, ok := r.(*batchDistanceRule); ok && !r.str && i != h.keyRule {
			h.extra = append(h.extra, spreadHint{idx: i, max: r.maxDistance, name: r.name})
		}
	}
	if h.keyAttr < 0 && a.batching == batchSorted && a.sortBy >= 0 {
		h.keyAttr = a.sortBy
	}
	if h.keyAgg == aggNone {
		h.keyAgg = aggAvg
	}
	return h
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
