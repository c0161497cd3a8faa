// Package flexmatch is FlexMatch's pure core: the rule set language (parse
// and validate) and the matcher, a deterministic function
// (tickets, rule set, now, seed) -> matches. It knows nothing of the store,
// the API or the clock: internal/matchmaking feeds it, and `hoist match
// simulate` runs it over simulated time.
//
// This file is the contract the rest of Hoist builds on.
package flexmatch

import (
	"fmt"
	"time"
)

// AttrType is a player attribute's type as a rule set declares it.
type AttrType string

// Attribute types of the rule language.
const (
	TypeString          AttrType = "string"
	TypeNumber          AttrType = "number"
	TypeStringList      AttrType = "string_list"
	TypeStringNumberMap AttrType = "string_number_map"
)

// Value is a player attribute value: exactly one of the fields is set,
// as in GameLift's AttributeValue (S, N, SL, SDM).
type Value struct {
	S   *string
	N   *float64
	SL  []string
	SDM map[string]float64
}

// Type is the value's attribute type ("" when no field is set).
func (v Value) Type() AttrType {
	switch {
	case v.S != nil:
		return TypeString
	case v.N != nil:
		return TypeNumber
	case v.SL != nil:
		return TypeStringList
	case v.SDM != nil:
		return TypeStringNumberMap
	}
	return ""
}

// Player is one player of a ticket.
type Player struct {
	ID         string
	Attributes map[string]Value
	// Latencies is the player's latency in milliseconds per region.
	Latencies map[string]int
	// Team is set only on a backfill ticket's players who are already in
	// the game session: the (expanded) team they are on.
	Team string
}

// Ticket is a matchmaking request: one or more players (a party) who are
// matched together, always on the same team.
type Ticket struct {
	ID string
	// Start is when the ticket was submitted; now - Start is its age, which
	// drives expansions.
	Start   time.Time
	Players []Player
	// Backfill marks a backfill ticket: its players with Team set are
	// already in a game session, and the match fills that session's open
	// slots. A match holds at most one backfill ticket, with at least one
	// other ticket.
	Backfill bool
}

// Match is one match the matcher formed.
type Match struct {
	// Tickets are the IDs of the match's tickets.
	Tickets []string
	// Teams are every team of the rule set (quantity expanded, in rule set
	// order) with the IDs of the players on it.
	Teams []Team
	// Metrics say, per rule, how the match's evaluation went (GameLift's
	// ruleEvaluationMetrics).
	Metrics []RuleMetric
}

// Team is a team of a match.
type Team struct {
	Name    string
	Players []string
}

// RuleMetric counts how often a rule passed and failed.
type RuleMetric struct {
	Rule           string
	Passed, Failed int
}

// Result is what one matcher pass produced.
type Result struct {
	Matches []Match
	// Held names, for tickets the pass left unmatched, the rules that kept
	// them out of the best candidate match the pass found for them (empty
	// when only the lack of other tickets did).
	Held map[string][]string
	// Exhausted is set when the pass ran out of its work budget before
	// serving every ticket: the tickets it did not try are in Held with
	// no rule, and the next pass tries them.
	Exhausted bool
	// Work is the units of work the pass spent (its budget is PassWork;
	// docs/flexmatch-matcher.md says what a unit is).
	Work int
}

// PassWork is the work budget of one Match pass, in the units of
// Result.Work.
const PassWork = maxPassWork

// Error is a rule set (or ticket) that does not follow the rules: Path is
// the offending field's JSON path, such as "rules[2].maxDistance" or
// "teams[0].maxPlayers", and Msg says what was expected.
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}
