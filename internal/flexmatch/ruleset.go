package flexmatch

import (
	"encoding/json"
	"fmt"
	"sort"
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
	teams      []teamSpec
	latency    bool
}

type teamSpec struct {
	name     string
	min, max int
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
			rs.teams = append(rs.teams, teamSpec{name: n, min: t.MinPlayers, max: t.MaxPlayers})
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

// Match runs one matcher pass over the pool of searching tickets at time
// now. The same (pool, now, seed) always gives the same result. No ticket is
// in two matches.
func (rs *RuleSet) Match(pool []Ticket, now time.Time, seed uint64) Result {
	ts := append([]Ticket(nil), pool...)
	sort.SliceStable(ts, func(i, j int) bool {
		if !ts[i].Start.Equal(ts[j].Start) {
			return ts[i].Start.Before(ts[j].Start)
		}
		return ts[i].ID < ts[j].ID
	})
	var res Result
	for len(ts) > 0 {
		m := Match{Teams: make([]Team, len(rs.teams))}
		for i, t := range rs.teams {
			m.Teams[i].Name = t.name
		}
		var rest []Ticket
		for _, t := range ts {
			placed := false
			for i, spec := range rs.teams {
				if len(m.Teams[i].Players) < spec.min && len(m.Teams[i].Players)+len(t.Players) <= spec.max {
					for _, p := range t.Players {
						m.Teams[i].Players = append(m.Teams[i].Players, p.ID)
					}
					m.Tickets = append(m.Tickets, t.ID)
					placed = true
					break
				}
			}
			if !placed {
				rest = append(rest, t)
			}
		}
		full := len(m.Tickets) > 0
		for i, spec := range rs.teams {
			if len(m.Teams[i].Players) < spec.min {
				full = false
			}
		}
		if !full {
			break
		}
		res.Matches = append(res.Matches, m)
		ts = rest
	}
	return res
}
