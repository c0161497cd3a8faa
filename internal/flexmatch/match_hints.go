package flexmatch

import (
	"math"
	"time"
)

// hints are what the matcher reads from a view to index the pool and prune
// candidates before the full evaluate. They never decide a match (evaluate
// does); a hint only has to be conservative enough that the tickets it
// keeps away could not have formed a valid match with the anchor.
type hints struct {
	// keyAttr is the number attribute candidates are gathered around
	// (a numeric batchDistance rule's batchAttribute, else a sort rule's
	// sortAttribute, else the first of sortByAttributes when batching is
	// sorted); keyAgg is how a party's values make one key (min, max or
	// avg, the default).
	keyAttr, keyAgg string
	// spread is the largest difference of keys within one match (a
	// numeric batchDistance rule's maxDistance; +Inf without one), named
	// spreadRule.
	spread     float64
	spreadRule string
	// side orders the gathering: 0 nearest key first; +1 larger keys
	// first, -1 smaller keys first (absoluteSort).
	side int
	// strAttr is a string batchDistance rule's attribute: a match's
	// tickets all have the same value (the pool is bucketed by it).
	strAttr, strRule string
	// maxLatency is the latency rule's maxLatency (0: no latency rule),
	// named latencyRule: a match's players are all at or under it in one
	// region.
	maxLatency  int
	latencyRule string
}

// algo is the rule set's algorithm block as the matcher uses it.
type algo struct {
	balanced          bool
	batching          string // random, sorted, largestPopulation, fastestRegion
	sortBy            []string
	balancedAttribute string
	backfillPriority  string // high, normal, low
	oldest            bool   // expansionAgeSelection oldest
}

// matcherAlgo reads the algorithm settings of the rule set.
func (rs *RuleSet) matcherAlgo() algo {
	return algo{batching: "random", backfillPriority: "normal"}
}

// expansionWaits are the distinct waitTimeSeconds of every expansion step,
// ascending: the ages at which the view changes.
func (rs *RuleSet) expansionWaits() []time.Duration { return nil }

// matcherHints reads the hints of a view.
func (rs *RuleSet) matcherHints(v *view, a algo) hints {
	_ = v
	h := hints{spread: math.Inf(1), keyAgg: "avg"}
	if a.batching == "sorted" && len(a.sortBy) > 0 {
		h.keyAttr = a.sortBy[0]
	}
	return h
}

// numValue is a player's number attribute, or its declared default.
func (rs *RuleSet) numValue(p *Player, attr string) (float64, bool) {
	if v, ok := p.Attributes[attr]; ok && v.N != nil {
		return *v.N, true
	}
	return 0, false
}

// strValue is a player's string attribute, or its declared default.
func (rs *RuleSet) strValue(p *Player, attr string) (string, bool) {
	if v, ok := p.Attributes[attr]; ok && v.S != nil {
		return *v.S, true
	}
	return "", false
}
