package flexmatch

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/flexmatch/flexbench"
)

// propRuleSets are the rule sets the property tests draw pools for.
var propRuleSets = map[string]string{
	"1v1": ruleSet(teams1v1, "", ""),
	"5v5 band latency expansion": ruleSet(teams5v5, band10+","+lat150,
		`"expansions":[{"target":"rules[band].maxDistance","steps":[{"waitTimeSeconds":10,"value":50}]}]`),
	"3 teams of 2-4, oldest": ruleSet(`{"name":"t","minPlayers":2,"maxPlayers":4,"quantity":3}`, band10,
		`"algorithm":{"expansionAgeSelection":"oldest"},"expansions":[{"target":"teams[t].minPlayers","steps":[{"waitTimeSeconds":5,"value":1}]}]`),
	"string batch": `{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"skill","type":"number"},{"name":"mode","type":"string"}],` +
		`"teams":[` + teams5v5 + `],"rules":[{"name":"same","type":"batchDistance","batchAttribute":"mode"},` + lat150 + `]}`,
	"fair teams":     ruleSet(teams5v5, band10+`,{"name":"fair","type":"distance","measurements":["avg(teams[*].players.attributes[skill])"],"referenceValue":"avg(flatten(teams[*].players.attributes[skill]))","maxDistance":2}`, ""),
	"backfill first": ruleSet(teams5v5, band10, `"algorithm":{"backfillPriority":"high"}`),
	"large balanced": ruleSet(`{"name":"red","minPlayers":20,"maxPlayers":50},{"name":"blue","minPlayers":20,"maxPlayers":50}`,
		`{"name":"band","type":"batchDistance","batchAttribute":"skill","maxDistance":50},`+lat150,
		`"algorithm":{"strategy":"balanced","balancedAttribute":"skill","batchingPreference":"largestPopulation"}`),
	"sorted with sort rule": ruleSet(teams5v5, `{"name":"near","type":"distanceSort","sortAttribute":"skill"}`,
		`"algorithm":{"batchingPreference":"sorted","sortByAttributes":["skill"]}`),
}

// manySteps is a 5v5 rule set whose band widens every second for 300 s.
func manySteps() string {
	var steps []string
	for i := 1; i <= 300; i++ {
		steps = append(steps, fmt.Sprintf(`{"waitTimeSeconds":%d,"value":%d}`, i, 10+i))
	}
	return ruleSet(teams5v5, band10+","+lat150,
		`"expansions":[{"target":"rules[band].maxDistance","steps":[`+strings.Join(steps, ",")+`]}]`)
}

func init() { propRuleSets["300 expansion steps"] = manySteps() }

// TestMatchProperties runs the matcher over random pools of every rule set
// of propRuleSets, with parties, tickets without latency data and a few
// backfill tickets, and checks the invariants of checkResult on every
// pass until no more matches form.
func TestMatchProperties(t *testing.T) {
	for name, body := range propRuleSets {
		t.Run(name, func(t *testing.T) {
			rs := mustParse(t, body)
			for seed := range uint64(8) {
				pool := genPool(seed, poolSpec{n: 400, maxParty: 3, skill: 200, regions: flexbench.Regions[:3],
					noLatency: 0.05, maxAge: 30 * time.Second, strAttr: []string{"ctf", "dm"}}, t0)
				addBackfills(rs, pool, int(seed))
				now := t0
				for pass := 0; pass < 20 && len(pool) > 0; pass++ {
					res := rs.Match(pool, now, seed+uint64(pass))
					checkResult(t, rs, pool, now, res)
					if len(res.Matches) == 0 {
						break
					}
					t.Logf("seed %d pass %d: %d matches, %d held", seed, pass, len(res.Matches), len(res.Held))
					pool = without(pool, res)
					now = now.Add(2 * time.Second)
				}
			}
		})
	}
}

// addBackfills turns every 40th ticket into a backfill ticket whose
// players sit on the first teams.
func addBackfills(rs *RuleSet, pool []Ticket, seed int) {
	for i := seed % 40; i < len(pool); i += 40 {
		t := &pool[i]
		t.Backfill = true
		for k := range t.Players {
			t.Players[k].Team = rs.teams[k%len(rs.teams)].name
		}
	}
}

func without(pool []Ticket, res Result) []Ticket {
	used := map[string]bool{}
	for _, id := range matchedIDs(res) {
		used[id] = true
	}
	var rest []Ticket
	for _, t := range pool {
		if !used[t.ID] {
			rest = append(rest, t)
		}
	}
	return rest
}

// FuzzMatch decodes a pool from the fuzzer's bytes (each ticket: party
// size, skill, latency, age, backfill flag) and checks the matcher's
// invariants on it.
func FuzzMatch(f *testing.F) {
	f.Add([]byte{1, 10, 50, 0, 0, 1, 12, 60, 0, 0})
	f.Add([]byte{3, 200, 100, 30, 1, 2, 190, 140, 2, 0, 1, 180, 255, 0, 0})
	f.Add(make([]byte, 200))
	names := slices.Sorted(maps.Keys(propRuleSets))
	sets := make([]*RuleSet, len(names))
	for i, n := range names {
		rs, err := Parse([]byte(propRuleSets[n]))
		if err != nil {
			f.Fatal(err)
		}
		sets[i] = rs
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		rs := sets[int(data[0])%len(sets)]
		data = data[1:]
		var pool []Ticket
		for i := 0; len(data) >= 5 && i < 300; i++ {
			size := 1 + int(data[0])%4
			skill := float64(data[1])
			lat := 2 * int(data[2])
			age := time.Duration(data[3]) * time.Second / 4
			t := mkTicket(fmt.Sprintf("f%03d", i), age, map[string]int{"us-east-1": lat, "eu-west-1": 300 - lat}, make([]float64, size)...)
			mode := []string{"ctf", "dm"}[data[4]%2]
			for k := range t.Players {
				s := skill + float64(k)
				t.Players[k].Attributes["skill"] = Value{N: &s}
				t.Players[k].Attributes["mode"] = Value{S: &mode}
			}
			if data[4]%7 == 1 {
				t.Backfill = true
				for k := range t.Players {
					t.Players[k].Team = rs.teams[k%len(rs.teams)].name
				}
			}
			pool = append(pool, t)
			data = data[5:]
		}
		seed := uint64(0)
		if len(data) >= 8 {
			seed = binary.LittleEndian.Uint64(data)
		}
		checkResult(t, rs, pool, t0, rs.Match(pool, t0, seed))
	})
}

// TestMatchLeavesNoMatch: after one pass over the benchmark's pool of
// 10,000, the brute-force check finds no ten unmatched tickets in one
// region under 150 ms within the skill band (10, or 50 when all are at
// least 10 s old): the pass formed every 5v5 the pool held.
func TestMatchLeavesNoMatch(t *testing.T) {
	rs := benchRuleSet(t)
	ps, pool := benchPool(10_000)
	res := rs.Match(pool, t0, 1)
	checkResult(t, rs, pool, t0, res)
	rest := without(pool, res)
	var old []Ticket
	for _, tk := range rest {
		if t0.Sub(tk.Start) >= flexbench.ExpansionAfter {
			old = append(old, tk)
		}
	}
	if n := len(flexbench.Placeable(leftovers(ps, rest), flexbench.FirstDistance)); n > 0 {
		t.Errorf("%d of the %d tickets left could form matches within %v", n, len(rest), flexbench.FirstDistance)
	}
	if n := len(flexbench.Placeable(leftovers(ps, old), flexbench.FinalDistance)); n > 0 {
		t.Errorf("%d of the %d tickets left past the expansion could form matches within %v", n, len(old), flexbench.FinalDistance)
	}
	if len(rest) > len(pool)/10 {
		t.Errorf("%d of %d tickets left", len(rest), len(pool))
	}
}
