package flexmatch

import (
	"fmt"
	"strings"
	"time"
)

// RuleSet is a parsed and validated rule set. It is immutable and safe for
// concurrent use.
type RuleSet struct {
	name       string
	attributes map[string]AttrType
	// attrs are the declared attributes in declaration order; attrIndex
	// maps a name to its index.
	attrs     []attrDef
	attrIndex map[string]int
	algo      algorithm
	teams     []teamSpec
	// teamIndex maps a (quantity expanded) team name to its index.
	teamIndex map[string]int
	// rules are the rules as declared (before any expansion), in order.
	rules []rule
	// inCompound marks the rules a compound rule reads: they decide only
	// through it, not on their own.
	inCompound []bool
	expansions []expansion
	// steps are the distinct expansion step times in seconds, increasing;
	// views[0] is the rule set before any step, views[i+1] with every step
	// up to steps[i] applied.
	steps   []float64
	views   []*view
	latency bool
}

// Name is the rule set's name property ("" when it has none).
func (rs *RuleSet) Name() string { return rs.name }

// TeamNames are the match's team names, quantity expanded, in order.
func (rs *RuleSet) TeamNames() []string {
	n := make([]string, len(rs.teams))
	for i, t := range rs.teams {
		n[i] = t.name
	}
	return n
}

// MaxPlayers is the largest match the rule set allows: the sum of the
// teams' maxPlayers, at the largest any expansion step makes it.
func (rs *RuleSet) MaxPlayers() int {
	largest := 0
	for _, v := range rs.views {
		n := 0
		for _, t := range v.teams {
			n += t.max
		}
		largest = max(largest, n)
	}
	return largest
}

// Attributes are the declared player attributes and their types.
func (rs *RuleSet) Attributes() map[string]AttrType { return rs.attributes }

// HasLatencyRule reports whether the rule set has a latency rule (then a
// player without latency data cannot be matched).
func (rs *RuleSet) HasLatencyRule() bool { return rs.latency }

// BackfillPriority is the algorithm's backfillPriority: "normal" (the
// default), "high" or "low".
func (rs *RuleSet) BackfillPriority() string { return rs.algo.backfillPriority }

// Rules are the rules' names, in rule set order.
func (rs *RuleSet) Rules() []string {
	n := make([]string, len(rs.rules))
	for i, r := range rs.rules {
		n[i] = r.ruleName()
	}
	return n
}

// MaxExpansionWait is the waitTimeSeconds of the last expansion step (0
// without expansions): from that age on the rule set no longer changes.
func (rs *RuleSet) MaxExpansionWait() time.Duration {
	if len(rs.steps) == 0 {
		return 0
	}
	return time.Duration(rs.steps[len(rs.steps)-1] * float64(time.Second))
}

// MaxRegions bounds the regions of a player's latencies, and
// maxRegionName a region's name (Hoist's own bounds: the model sets none,
// and the matcher puts a ticket in a bucket per region on every pass).
const (
	MaxRegions    = 100
	maxRegionName = 128
)

// CheckTicket checks a ticket against the rule set before it is queued:
// regions of latencies within MaxRegions, attribute types as declared,
// teams of backfill players that exist. The
// *Error's Path names the field as the API does, e.g.
// "Players[0].PlayerAttributes[skill]".
func (rs *RuleSet) CheckTicket(t Ticket) error {
	for i, p := range t.Players {
		if n := len(p.Latencies); n > MaxRegions {
			return &Error{Path: fmt.Sprintf("Players[%d].LatencyInMs", i),
				Msg: fmt.Sprintf("has %d regions: at most %d are allowed", n, MaxRegions)}
		}
		for r := range p.Latencies {
			if len(r) > maxRegionName {
				return &Error{Path: fmt.Sprintf("Players[%d].LatencyInMs", i),
					Msg: fmt.Sprintf("a region name is %d characters: at most %d are allowed", len(r), maxRegionName)}
			}
		}
		for _, a := range rs.attrs {
			if v, ok := p.Attributes[a.name]; ok && v.Type() != a.typ {
				return &Error{Path: fmt.Sprintf("Players[%d].PlayerAttributes[%s]", i, a.name),
					Msg: fmt.Sprintf("the rule set declares %s as %s", a.name, a.typ)}
			}
		}
		if p.Team != "" {
			if _, found := rs.teamIndex[p.Team]; !found {
				return &Error{Path: fmt.Sprintf("Players[%d].Team", i),
					Msg: fmt.Sprintf("the rule set has no team %q (its teams are %s)", p.Team, strings.Join(rs.TeamNames(), ", "))}
			}
		}
	}
	return nil
}

// The rule language (parse, validate, evaluate) and the matcher (search)
// meet in these package-internal types.

// teamSpec is one team of a match, quantity expanded.
type teamSpec struct {
	name string
	// base is the team's name in the rule set (before quantity expansion).
	base     string
	min, max int
}

// member is a player of a candidate match and the index of its ticket in
// candidate.tickets.
type member struct {
	p      *Player
	ticket int
	// vals, when not nil, are the player's attribute values by attribute
	// index with defaults applied (a zero Value: missing), as prepare
	// computes them once per ticket; evaluate then does no map lookups.
	vals []Value
}

// candidate is a proposed match: its tickets and, for each team of the
// rule set (quantity expanded, in order), the players on it. A party's
// players are all on one team; a backfill ticket's players sit on their
// Team.
type candidate struct {
	tickets []*Ticket
	teams   [][]member
	// prep, when not nil, holds each ticket's prepared form (parallel to
	// tickets; see prepare); evaluate then reads values from it.
	prep []*prepared
}

// view is the rule set as it stands for a candidate of one age: team sizes
// and rule properties with the expansions whose waitTimeSeconds the age
// has reached applied.
type view struct {
	rs    *RuleSet
	teams []teamSpec
	// rules are the rule set's rules with this view's expansions applied,
	// in declaration order (a compound rule refers to earlier indexes).
	rules []rule
}

// age is the candidate's age at now for expansions: the age of its newest
// ticket, or its oldest with expansionAgeSelection "oldest".
func (rs *RuleSet) age(c *candidate, now time.Time) time.Duration {
	oldest := rs.algo.expansionAgeSelection == ageOldest
	var a time.Duration = -1
	for _, t := range c.tickets {
		d := now.Sub(t.Start)
		if a < 0 || (!oldest && d < a) || (oldest && d > a) {
			a = d
		}
	}
	return max(a, 0)
}

// viewAt is the rule set at an age: every expansion step whose
// waitTimeSeconds the age has reached is applied. It is a lookup (views are
// computed once per distinct step time at parse time) and safe for
// concurrent use.
func (rs *RuleSet) viewAt(age time.Duration) *view {
	sec := age.Seconds()
	i := 0
	for i < len(rs.steps) && rs.steps[i] <= sec {
		i++
	}
	return rs.views[i]
}
