package flexmatch

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// hostileRuleSet is the costliest rule set the language allows that
// Hoist knows of: 40 players in two teams of 20 (parties of 10), and
// as many collection rules as fit in the 65,535-character body, each
// intersecting every team's roles (20 players' 100-entry string lists
// flattened) against a long reference list, plus (neverHolds) one rule that never
// holds, so that every candidate is evaluated in full and fails.
func hostileRuleSet(t testing.TB, neverHolds bool) (*RuleSet, string) {
	var rules []string
	ref := make([]string, 60)
	for i := range ref {
		ref[i] = fmt.Sprintf(`"r%02d"`, i)
	}
	refList := "[" + strings.Join(ref, ",") + "]"
	head := `{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"skill","type":"number","default":10},` +
		`{"name":"roles","type":"string_list","default":[]}],` +
		`"teams":[{"name":"t","minPlayers":20,"maxPlayers":20,"quantity":2}],"rules":[`
	never := `{"name":"always","type":"comparison","measurements":["avg(flatten(teams[*].players.attributes[skill]))"],"operation":">","referenceValue":-1}`
	if neverHolds {
		never = `{"name":"never","type":"comparison","measurements":["avg(flatten(teams[*].players.attributes[skill]))"],"operation":">","referenceValue":1e9}`
	}
	tail := `]}`
	size := len(head) + len(never) + len(tail)
	for i := 0; ; i++ {
		var r string
		switch i % 3 {
		case 0:
			r = fmt.Sprintf(`{"name":"c%d","type":"collection","measurements":["flatten(teams[*].players.attributes[roles])"],"operation":"intersection","minCount":0}`, i)
		case 1:
			r = fmt.Sprintf(`{"name":"c%d","type":"collection","measurements":["flatten(teams[*].players.attributes[roles])"],"operation":"reference_intersection_count","referenceValue":%s,"minCount":0}`, i, refList)
		default:
			r = fmt.Sprintf(`{"name":"c%d","type":"distance","measurements":["stddev(flatten(teams[*].players.attributes[skill]))"],"referenceValue":"median(flatten(teams[*].players.attributes[skill]))","maxDistance":1e12}`, i)
		}
		if size+len(r)+1 > 65535 {
			break
		}
		size += len(r) + 1
		rules = append(rules, r)
	}
	body := head + strings.Join(append(rules, never), ",") + tail
	return mustParse(t, body), body
}

// hostilePool is n tickets of 10 players, each with a 100-entry string
// list of 100-character roles (distinct per player, so that no
// intersection ends early) and a skill, all in one region.
func hostilePool(n int) []Ticket {
	pool := make([]Ticket, n)
	for i := range pool {
		t := Ticket{ID: fmt.Sprintf("h%06d", i), Start: t0.Add(-time.Duration(n-i) * time.Millisecond)}
		for k := range 10 {
			roles := make([]string, 100)
			for j := range roles {
				roles[j] = fmt.Sprintf("%04d-%02d-%03d-%s", i, k, j, strings.Repeat("x", 88))
			}
			skill := float64(i % 100)
			t.Players = append(t.Players, Player{ID: fmt.Sprintf("h%06d-%d", i, k),
				Attributes: map[string]Value{"skill": {N: &skill}, "roles": {SL: roles}}})
		}
		pool[i] = t
	}
	return pool
}

// TestPassWorkBudget: with the hostile rule set every candidate fails
// after a full evaluation (about 2 million units of work); the pass stops
// after its budget, having served the oldest tickets, and holds the rest
// without a rule. Before the budget (and the linear set operations) one
// pass over these 40 tickets did not end within the 10-minute test
// timeout.
func TestPassWorkBudget(t *testing.T) {
	rs, _ := hostileRuleSet(t, true)
	pool := hostilePool(40)
	m := newMatcher(rs, pool, t0, 1)
	m.run()
	res := m.res
	if !res.Exhausted {
		t.Fatalf("the pass was not cut short (work %d)", m.work)
	}
	if m.work > 2*maxPassWork {
		t.Errorf("work %d, more than twice the budget %d", m.work, maxPassWork)
	}
	if got := res.Held[pool[0].ID]; len(got) != 1 || got[0] != "never" {
		t.Errorf("the oldest ticket is held by %v, want [never]", got)
	}
	if got, ok := res.Held[pool[len(pool)-1].ID]; !ok || len(got) != 0 {
		t.Errorf("the youngest ticket is held by %v (listed %v), want no rule", got, ok)
	}
	if len(res.Held) != len(pool) {
		t.Errorf("%d held, want all %d", len(res.Held), len(pool))
	}
	// The same inputs give the same cut.
	again := rs.Match(pool, t0, 1)
	if len(again.Held) != len(res.Held) || again.Exhausted != res.Exhausted || again.Work != m.work {
		t.Errorf("a second pass differs: %d held, exhausted %v, work %d (first %d)", len(again.Held), again.Exhausted, again.Work, m.work)
	}
}

// TestPassWorkBudgetProgress: with the hostile rule set's rules all
// holding, each pass can afford only a few of the costly evaluations;
// every pass still matches the oldest ticket left, and the passes match
// the whole pool.
func TestPassWorkBudgetProgress(t *testing.T) {
	rs, _ := hostileRuleSet(t, false)
	pool := hostilePool(40)
	passes := 0
	for len(pool) > 0 {
		passes++
		if passes > 20 {
			t.Fatalf("%d tickets left after 20 passes", len(pool))
		}
		res := rs.Match(pool, t0, uint64(passes))
		checkResult(t, rs, pool, t0, res)
		ids := matchedIDs(res)
		if !slices.Contains(ids, pool[0].ID) {
			t.Fatalf("pass %d did not match the oldest ticket %s (%d matches, exhausted %v)", passes, pool[0].ID, len(res.Matches), res.Exhausted)
		}
		pool = without(pool, res)
	}
	if passes < 2 {
		t.Errorf("one pass matched everything: the budget did not apply")
	}
	t.Logf("%d passes", passes)
}

// BenchmarkMatchHostile is one pass of the hostile rule set over 40
// tickets that never match: the longest pass Hoist knows a rule set can
// cause (bounded by maxPassWork).
func BenchmarkMatchHostile(b *testing.B) {
	rs, _ := hostileRuleSet(b, true)
	pool := hostilePool(40)
	for b.Loop() {
		rs.Match(pool, t0, 1)
	}
}

// TestTenMeasurements: ten measurements per rule is the limit, and
// allowed.
func TestTenMeasurements(t *testing.T) {
	m := strings.TrimSuffix(strings.Repeat(`"avg(teams[*].players.attributes[skill])",`, maxMeasurements), ",")
	mustParse(t, rsWith(stdAttrs, twoTeams, `{"name":"x","type":"distance","measurements":[`+m+`],"maxDistance":3}`))
}
