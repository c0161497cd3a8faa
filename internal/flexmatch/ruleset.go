package flexmatch

import (
	"encoding/json"
	"fmt"
	"time"
)

// RuleSet is a parsed and validated rule set.
//
// PLACEHOLDER: this file holds a minimal parser (name, ruleLanguageVersion,
// playerAttributes, teams) and a matcher that fills teams in ticket order
// ignoring rules, so that the packages built on the contract compile and
// run. The rule language and the real matcher replace it; the exported
// names and signatures below stay.
type RuleSet struct {
	name       string
	attributes map[string]AttrType
	// attrs are the declared attributes in declaration order; attrIndex
	// maps a name to its index.
	attrs     []attrDef
	attrIndex map[string]int
	algo      algorithm
	teams     []teamSpec
	// rules are the rules as declared (before any expansion), in order.
	rules      []rule
	expansions []expansion
	// steps are the distinct expansion step times, increasing; views[0] is
	// the rule set before any step, views[i+1] with every step up to
	// steps[i] applied.
	steps   []float64
	views   []*view
	latency bool
}

// Parse parses and validates a rule set body (RuleSetBody). A rule set that
// does not follow the rule language is an *Error naming the field.
func Parse(body []byte) (*RuleSet, error) {
	var raw struct {
		Name                string `json:"name"`
		RuleLanguageVersion string `json:"ruleLanguageVersion"`
		PlayerAttributes    []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"playerAttributes"`
		Teams []struct {
			Name       string `json:"name"`
			MinPlayers int    `json:"minPlayers"`
			MaxPlayers int    `json:"maxPlayers"`
			Quantity   int    `json:"quantity"`
		} `json:"teams"`
		Rules []struct {
			Type string `json:"type"`
		} `json:"rules"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, &Error{Msg: "the rule set is not valid JSON: " + err.Error()}
	}
	if raw.RuleLanguageVersion != "1.0" {
		return nil, &Error{Path: "ruleLanguageVersion", Msg: `must be "1.0"`}
	}
	if len(raw.Teams) == 0 {
		return nil, &Error{Path: "teams", Msg: "at least one team is required"}
	}
	rs := &RuleSet{name: raw.Name, attributes: map[string]AttrType{}}
	for _, a := range raw.PlayerAttributes {
		rs.attributes[a.Name] = AttrType(a.Type)
	}
	for i, t := range raw.Teams {
		if t.MaxPlayers < 1 || t.MinPlayers > t.MaxPlayers {
			return nil, &Error{Path: fmt.Sprintf("teams[%d].maxPlayers", i), Msg: "must be at least 1 and at least minPlayers"}
		}
		q := max(t.Quantity, 1)
		for k := 1; k <= q; k++ {
			n := t.Name
			if t.Quantity > 1 {
				n = fmt.Sprintf("%s_%d", t.Name, k)
			}
			rs.teams = append(rs.teams, teamSpec{name: n, base: t.Name, min: t.MinPlayers, max: t.MaxPlayers})
		}
	}
	for _, r := range raw.Rules {
		if r.Type == "latency" {
			rs.latency = true
		}
	}
	return rs, nil
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

// MaxPlayers is the largest match the rule set allows (the sum of the teams'
// maxPlayers).
func (rs *RuleSet) MaxPlayers() int {
	n := 0
	for _, t := range rs.teams {
		n += t.max
	}
	return n
}

// Attributes are the declared player attributes and their types.
func (rs *RuleSet) Attributes() map[string]AttrType { return rs.attributes }

// HasLatencyRule reports whether the rule set has a latency rule (then a
// player without latency data cannot be matched).
func (rs *RuleSet) HasLatencyRule() bool { return rs.latency }

// CheckTicket checks a ticket against the rule set before it is queued:
// attribute types as declared, teams of backfill players that exist. The
// *Error's Path names the field as the API does, e.g.
// "Players[0].PlayerAttributes[skill]".
func (rs *RuleSet) CheckTicket(t Ticket) error {
	for i, p := range t.Players {
		for k, v := range p.Attributes {
			if want, ok := rs.attributes[k]; ok && v.Type() != want {
				return &Error{Path: fmt.Sprintf("Players[%d].PlayerAttributes[%s]", i, k),
					Msg: fmt.Sprintf("the rule set declares %s as %s", k, want)}
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
	var a time.Duration = -1
	for _, t := range c.tickets {
		if d := now.Sub(t.Start); a < 0 || d < a {
			a = d
		}
	}
	return max(a, 0)
}

// viewAt is the rule set at an age. It is cheap (views are computed once
// per expansion step) and safe for concurrent use.
func (rs *RuleSet) viewAt(time.Duration) *view { return &view{teams: rs.teams} }

// evaluate evaluates every rule of the view on a candidate whose team sizes
// are within the view's bounds, and returns the names of the rules that do
// not hold (none: the candidate is a valid match). metrics, when not nil,
// gets each rule's pass or fail counted.
func (v *view) evaluate(c *candidate, metrics map[string]*RuleMetric) (failed []string) {
	return nil
}
