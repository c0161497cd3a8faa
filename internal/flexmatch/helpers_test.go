package flexmatch

import (
	"os"
	"path/filepath"
	"testing"
)

func num(f float64) Value { return Value{N: &f} }
func str(s string) Value  { return Value{S: &s} }
func list(s ...string) Value {
	if s == nil {
		s = []string{}
	}
	return Value{SL: s}
}

func mustParse(t testing.TB, body string) *RuleSet {
	t.Helper()
	rs, err := Parse([]byte(body))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return rs
}

// pl is a player with attributes given as name, value pairs.
func pl(id string, kv ...any) Player {
	p := Player{ID: id, Attributes: map[string]Value{}}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Attributes[kv[i].(string)] = kv[i+1].(Value)
	}
	return p
}

// withLat sets a player's latencies (region, ms pairs).
func withLat(p Player, kv ...any) Player {
	p.Latencies = map[string]int{}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Latencies[kv[i].(string)] = kv[i+1].(int)
	}
	return p
}

func tk(id string, ps ...Player) *Ticket { return &Ticket{ID: id, Players: ps} }

// cand builds a candidate: teams[i] are the tickets placed on team i.
// With prep, every ticket's prepared form is used.
func cand(rs *RuleSet, prep bool, teams ...[]*Ticket) *candidate {
	c := &candidate{}
	for i, ts := range teams {
		for _, t := range ts {
			var pr *prepared
			if prep {
				pr = rs.prepare(t)
			}
			rs.addTicket(c, t, pr, i)
		}
	}
	if c.teams == nil {
		c.teams = make([][]member, len(rs.teams))
	}
	return c
}

func exampleRuleSets(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "rulesets", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example rule sets: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}
