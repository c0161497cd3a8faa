package flexmatch

import (
	"testing"
	"time"
)

// TestContract: a 1v1 rule set parses and two tickets make one match.
func TestContract(t *testing.T) {
	rs, err := Parse([]byte(`{"ruleLanguageVersion":"1.0","teams":[{"name":"red","minPlayers":1,"maxPlayers":1},{"name":"blue","minPlayers":1,"maxPlayers":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	res := rs.Match([]Ticket{{ID: "a", Start: now, Players: []Player{{ID: "p1"}}}, {ID: "b", Start: now, Players: []Player{{ID: "p2"}}}}, now, 1)
	if len(res.Matches) != 1 || len(res.Matches[0].Tickets) != 2 {
		t.Fatalf("got %+v", res)
	}
}
