package flexmatch

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/flexmatch/flexbench"
)

var t0 = time.Unix(1_700_000_000, 0)

// mkTicket builds a ticket of players "<id>-0", "<id>-1"... with the given
// skills, submitted age ago, with latencies lat (nil: none) for each.
func mkTicket(id string, age time.Duration, lat map[string]int, skills ...float64) Ticket {
	t := Ticket{ID: id, Start: t0.Add(-age)}
	for k, s := range skills {
		s := s
		t.Players = append(t.Players, Player{ID: fmt.Sprintf("%s-%d", id, k),
			Attributes: map[string]Value{"skill": {N: &s}}, Latencies: lat})
	}
	return t
}

func singles(prefix string, n int, lat map[string]int, skill func(i int) float64) []Ticket {
	var ts []Ticket
	for i := range n {
		ts = append(ts, mkTicket(fmt.Sprintf("%s%02d", prefix, i), time.Duration(n-i)*time.Millisecond, lat, skill(i)))
	}
	return ts
}

const skillAttr = `"playerAttributes":[{"name":"skill","type":"number","default":10}]`

func ruleSet(teams, rules, extra string) string {
	s := `{"ruleLanguageVersion":"1.0",` + skillAttr + `,"teams":[` + teams + `]`
	if rules != "" {
		s += `,"rules":[` + rules + `]`
	}
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

const (
	teams1v1 = `{"name":"red","minPlayers":1,"maxPlayers":1},{"name":"blue","minPlayers":1,"maxPlayers":1}`
	teams5v5 = `{"name":"red","minPlayers":5,"maxPlayers":5},{"name":"blue","minPlayers":5,"maxPlayers":5}`
	band10   = `{"name":"band","type":"batchDistance","batchAttribute":"skill","maxDistance":10}`
	lat150   = `{"name":"lat","type":"latency","maxLatency":150}`
)

var (
	east = map[string]int{"us-east-1": 40, "eu-west-1": 200}
	west = map[string]int{"us-west-2": 30, "eu-west-1": 180}
)

func TestMatchTable(t *testing.T) {
	cases := []struct {
		name    string
		rs      string
		pool    []Ticket
		matches int
		sizes   []int // players per team of every match
		held    map[string][]string
	}{
		{name: "1v1", rs: ruleSet(teams1v1, "", ""),
			pool: []Ticket{mkTicket("a", time.Second, nil, 1), mkTicket("b", 0, nil, 2)}, matches: 1, sizes: []int{1, 1}},
		{name: "1v1 odd ticket left", rs: ruleSet(teams1v1, "", ""),
			pool:    []Ticket{mkTicket("a", 2*time.Second, nil, 1), mkTicket("b", time.Second, nil, 2), mkTicket("c", 0, nil, 3)},
			matches: 1, sizes: []int{1, 1}, held: map[string][]string{"c": nil}},
		{name: "5v5 in band", rs: ruleSet(teams5v5, band10, ""),
			pool:    singles("s", 10, nil, func(i int) float64 { return 100 + float64(i) }),
			matches: 1, sizes: []int{5, 5}},
		{name: "5v5 two bands", rs: ruleSet(teams5v5, band10, ""),
			pool: append(singles("a", 10, nil, func(i int) float64 { return 100 + float64(i) }),
				singles("b", 10, nil, func(i int) float64 { return 500 + float64(i) })...),
			matches: 2, sizes: []int{5, 5}},
		{name: "5v5 out of band", rs: ruleSet(teams5v5, band10, ""),
			pool:    singles("s", 10, nil, func(i int) float64 { return 100 + 3*float64(i) }),
			matches: 0, held: map[string][]string{"s00": {"band"}}},
		{name: "5v5 too few", rs: ruleSet(teams5v5, band10, ""),
			pool:    singles("s", 9, nil, func(i int) float64 { return 100 }),
			matches: 0, held: map[string][]string{"s00": nil}},
		{name: "parties", rs: ruleSet(teams5v5, "", ""),
			pool: []Ticket{mkTicket("p3a", 4*time.Second, nil, 1, 2, 3), mkTicket("p2a", 3*time.Second, nil, 4, 5),
				mkTicket("p3b", 2*time.Second, nil, 6, 7, 8), mkTicket("p2b", time.Second, nil, 9, 10)},
			matches: 1, sizes: []int{5, 5}},
		{name: "party too large for a team", rs: ruleSet(teams1v1, "", ""),
			pool: []Ticket{mkTicket("p2", time.Second, nil, 1, 2), mkTicket("a", 0, nil, 1)}, matches: 0},
		{name: "quantity", rs: ruleSet(`{"name":"squad","minPlayers":2,"maxPlayers":2,"quantity":3}`, "", ""),
			pool:    singles("s", 6, nil, func(i int) float64 { return 1 }),
			matches: 1, sizes: []int{2, 2, 2}},
		{name: "latency one region", rs: ruleSet(teams1v1, lat150, ""),
			pool: []Ticket{mkTicket("e1", 3*time.Second, east, 1), mkTicket("w1", 2*time.Second, west, 1),
				mkTicket("e2", time.Second, east, 1), mkTicket("w2", 0, west, 1)},
			matches: 2, sizes: []int{1, 1}},
		{name: "latency missing", rs: ruleSet(teams1v1, lat150, ""),
			pool:    []Ticket{mkTicket("e1", time.Second, east, 1), mkTicket("none", 0, nil, 1)},
			matches: 0, held: map[string][]string{"none": {"lat"}, "e1": nil}},
		{name: "latency too high", rs: ruleSet(teams1v1, lat150, ""),
			pool:    []Ticket{mkTicket("e1", time.Second, east, 1), mkTicket("far", 0, map[string]int{"us-east-1": 400}, 1)},
			matches: 0, held: map[string][]string{"far": {"lat"}}},
		{name: "expansion widens the band for old tickets", rs: ruleSet(teams1v1, band10,
			`"expansions":[{"target":"rules[band].maxDistance","steps":[{"waitTimeSeconds":10,"value":100}]}]`),
			pool: []Ticket{mkTicket("old1", 20*time.Second, nil, 100), mkTicket("old2", 15*time.Second, nil, 150),
				mkTicket("young", time.Millisecond, nil, 140), mkTicket("young2", 0, nil, 300)},
			matches: 1, sizes: []int{1, 1}, held: map[string][]string{"young": {"band"}}},
		{name: "expansion lowers minPlayers", rs: ruleSet(teams5v5, "",
			`"expansions":[{"target":"teams[*].minPlayers","steps":[{"waitTimeSeconds":5,"value":2}]}]`),
			pool:    singles("s", 4, nil, func(i int) float64 { return 1 }),
			matches: 0},
		{name: "expansion lowers minPlayers, old tickets", rs: ruleSet(teams5v5, "",
			`"expansions":[{"target":"teams[*].minPlayers","steps":[{"waitTimeSeconds":5,"value":2}]}]`),
			pool: []Ticket{mkTicket("a", 9*time.Second, nil, 1), mkTicket("b", 8*time.Second, nil, 1),
				mkTicket("c", 7*time.Second, nil, 1), mkTicket("d", 6*time.Second, nil, 1)},
			matches: 1, sizes: []int{2, 2}},
		{name: "large match balanced", rs: ruleSet(`{"name":"red","minPlayers":30,"maxPlayers":30},{"name":"blue","minPlayers":30,"maxPlayers":30}`,
			`{"name":"band","type":"batchDistance","batchAttribute":"skill","maxDistance":100}`,
			`"algorithm":{"strategy":"balanced","balancedAttribute":"skill"}`),
			pool:    singles("s", 60, nil, func(i int) float64 { return float64(i) }),
			matches: 1, sizes: []int{30, 30}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := mustParse(t, c.rs)
			res := rs.Match(c.pool, t0, 1)
			checkResult(t, rs, c.pool, t0, res)
			if len(res.Matches) != c.matches {
				t.Fatalf("%d matches, want %d: %+v", len(res.Matches), c.matches, res)
			}
			for _, m := range res.Matches {
				var sizes []int
				for _, tm := range m.Teams {
					sizes = append(sizes, len(tm.Players))
				}
				if !slices.Equal(sizes, c.sizes) {
					t.Errorf("team sizes %v, want %v", sizes, c.sizes)
				}
			}
			for id, want := range c.held {
				got, ok := res.Held[id]
				if !ok {
					t.Errorf("ticket %s not held (held: %v)", id, res.Held)
				} else if !slices.Equal(got, want) {
					t.Errorf("ticket %s held by %v, want %v", id, got, want)
				}
			}
		})
	}
}

// TestMatchBalanced: balanced strategy evens the balanced attribute out
// over the teams.
func TestMatchBalanced(t *testing.T) {
	rs := mustParse(t, ruleSet(`{"name":"red","minPlayers":25,"maxPlayers":25},{"name":"blue","minPlayers":25,"maxPlayers":25}`,
		`{"name":"band","type":"batchDistance","batchAttribute":"skill","maxDistance":5000}`,
		`"algorithm":{"strategy":"balanced","balancedAttribute":"skill"}`))
	pool := singles("s", 50, nil, func(i int) float64 { return float64(i * i) })
	res := rs.Match(pool, t0, 3)
	checkResult(t, rs, pool, t0, res)
	if len(res.Matches) != 1 {
		t.Fatalf("%d matches", len(res.Matches))
	}
	skill := map[string]float64{}
	for _, tk := range pool {
		skill[tk.Players[0].ID] = *tk.Players[0].Attributes["skill"].N
	}
	var sums [2]float64
	for i, tm := range res.Matches[0].Teams {
		for _, p := range tm.Players {
			sums[i] += skill[p]
		}
	}
	if d := sums[0] - sums[1]; d > 0.05*sums[0] || -d > 0.05*sums[0] {
		t.Fatalf("team skill sums %v differ by more than 5%%", sums)
	}
}

// TestMatchOldestFirst: with more tickets than one match holds, the oldest
// tickets are matched.
func TestMatchOldestFirst(t *testing.T) {
	rs := mustParse(t, ruleSet(teams1v1, "", ""))
	pool := []Ticket{mkTicket("young", 0, nil, 1), mkTicket("old", 5*time.Second, nil, 1), mkTicket("mid", 2*time.Second, nil, 1)}
	res := rs.Match(pool, t0, 1)
	if got := matchedIDs(res); !slices.Equal(got, []string{"mid", "old"}) {
		t.Fatalf("matched %v", got)
	}
}

// TestMatchBackfill: a backfill ticket's seated players stay on their
// teams, new tickets fill the open slots, and a match holds one backfill
// ticket at most.
func TestMatchBackfill(t *testing.T) {
	rs := mustParse(t, ruleSet(`{"name":"red","minPlayers":3,"maxPlayers":3},{"name":"blue","minPlayers":3,"maxPlayers":3}`, "", ""))
	bf := mkTicket("bf", time.Second, nil, 1, 1, 1, 1, 1)
	bf.Backfill = true
	for k := range bf.Players {
		bf.Players[k].Team = []string{"red", "red", "blue", "blue", "blue"}[k]
	}
	bf2 := mkTicket("bf2", 2*time.Second, nil, 1, 1, 1, 1, 1)
	bf2.Backfill = true
	for k := range bf2.Players {
		bf2.Players[k].Team = []string{"red", "red", "red", "blue", "blue"}[k]
	}
	pool := []Ticket{bf, bf2, mkTicket("n1", 0, nil, 1), mkTicket("n2", 0, nil, 1)}
	res := rs.Match(pool, t0, 1)
	checkResult(t, rs, pool, t0, res)
	if len(res.Matches) != 2 {
		t.Fatalf("%d matches, want 2: %+v", len(res.Matches), res)
	}
	for _, m := range res.Matches {
		if len(m.Tickets) != 2 {
			t.Fatalf("match %v: want the backfill ticket and one new ticket", m.Tickets)
		}
	}
	// Alone, a backfill ticket with open slots does not match.
	res = rs.Match([]Ticket{bf}, t0, 1)
	if len(res.Matches) != 0 {
		t.Fatalf("a lone backfill ticket matched: %+v", res)
	}
}

// TestMatchBackfillPriority: with high priority the backfill ticket gets
// the only new ticket even though a new match is older; with low, the new
// match forms first.
func TestMatchBackfillPriority(t *testing.T) {
	for _, c := range []struct {
		prio string
		want []string
	}{{"high", []string{"bf", "n1"}}, {"low", []string{"n1", "n2"}}, {"normal", []string{"n1", "n2"}}} {
		t.Run(c.prio, func(t *testing.T) {
			rs := mustParse(t, ruleSet(teams1v1, "", `"algorithm":{"backfillPriority":"`+c.prio+`"}`))
			bf := mkTicket("bf", time.Second, nil, 1)
			bf.Backfill, bf.Players[0].Team = true, "red"
			pool := []Ticket{bf, mkTicket("n1", 3*time.Second, nil, 1), mkTicket("n2", 2*time.Second, nil, 1)}
			res := rs.Match(pool, t0, 1)
			checkResult(t, rs, pool, t0, res)
			if len(res.Matches) != 1 || !slices.Equal(slices.Sorted(slices.Values(res.Matches[0].Tickets)), c.want) {
				t.Fatalf("got %+v, want one match of %v", res.Matches, c.want)
			}
		})
	}
}

// TestMatchDeterministic: the same pool, time and seed give the same
// result, whatever the pool's order.
func TestMatchDeterministic(t *testing.T) {
	rs := benchRuleSet(t)
	pool := genPool(9, poolSpec{n: 3000, maxParty: 3, skill: 500, regions: flexbench.Regions, maxAge: 20 * time.Second, noLatency: 0.02}, t0)
	a := rs.Match(pool, t0, 42)
	b := rs.Match(pool, t0, 42)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs differ")
	}
	rev := slices.Clone(pool)
	slices.Reverse(rev)
	c := rs.Match(rev, t0, 42)
	if !reflect.DeepEqual(a, c) {
		t.Fatal("a reversed pool gives another result")
	}
	checkResult(t, rs, pool, t0, a)
	if len(a.Matches) == 0 {
		t.Fatal("no match")
	}
}

// TestMatchMetrics: a match carries its rules' evaluation counts in rule
// order.
func TestMatchMetrics(t *testing.T) {
	rs := mustParse(t, ruleSet(teams1v1, band10+","+lat150, ""))
	pool := []Ticket{mkTicket("a", time.Second, east, 1), mkTicket("b", 0, east, 5)}
	res := rs.Match(pool, t0, 1)
	if len(res.Matches) != 1 {
		t.Fatalf("%+v", res)
	}
	var names []string
	for _, m := range res.Matches[0].Metrics {
		names = append(names, m.Rule)
		if m.Passed < 1 {
			t.Errorf("rule %s: %+v", m.Rule, m)
		}
	}
	if strings.Join(names, ",") != "band,lat" {
		t.Fatalf("metrics %+v", res.Matches[0].Metrics)
	}
}

// TestMatchSortRules: sort rules order the tickets a match takes, relative
// to the anchor (the oldest ticket).
func TestMatchSortRules(t *testing.T) {
	pool := []Ticket{mkTicket("anchor", 5*time.Second, nil, 50), mkTicket("low", 0, nil, 10), mkTicket("high", 0, nil, 95), mkTicket("near", 0, nil, 60)}
	for _, c := range []struct{ rule, want string }{
		{`{"name":"s","type":"absoluteSort","sortDirection":"descending","sortAttribute":"skill"}`, "high"},
		{`{"name":"s","type":"absoluteSort","sortDirection":"ascending","sortAttribute":"skill"}`, "low"},
		{`{"name":"s","type":"distanceSort","sortDirection":"ascending","sortAttribute":"skill"}`, "near"},
		{`{"name":"s","type":"distanceSort","sortDirection":"descending","sortAttribute":"skill"}`, "high"},
	} {
		rs := mustParse(t, ruleSet(teams1v1, c.rule, ""))
		res := rs.Match(pool, t0, 1)
		checkResult(t, rs, pool, t0, res)
		if len(res.Matches) == 0 || !slices.Equal(slices.Sorted(slices.Values(res.Matches[0].Tickets)), slices.Sorted(slices.Values([]string{"anchor", c.want}))) {
			t.Errorf("%s: got %+v, want anchor with %s", c.rule, res.Matches, c.want)
		}
	}
}

// TestMatchRetryExcludes: when a candidate fails a rule the hints do not
// know, the matcher leaves out the ticket furthest from the anchor and
// gathers again; the match's metrics count both evaluations.
func TestMatchRetryExcludes(t *testing.T) {
	rs := mustParse(t, `{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"skill","type":"number"},{"name":"mode","type":"string"}],`+
		`"teams":[`+teams1v1+`],"rules":[`+band10+`,{"name":"same","type":"comparison","measurements":["flatten(teams[*].players.attributes[mode])"],"operation":"="}]}`)
	withMode := func(t Ticket, mode string) Ticket {
		t.Players[0].Attributes["mode"] = Value{S: &mode}
		return t
	}
	pool := []Ticket{
		withMode(mkTicket("a", 4*time.Second, nil, 100), "ctf"),
		withMode(mkTicket("b", 3*time.Second, nil, 101), "dm"),
		withMode(mkTicket("c", 2*time.Second, nil, 103), "ctf"),
	}
	res := rs.Match(pool, t0, 1)
	checkResult(t, rs, pool, t0, res)
	if len(res.Matches) != 1 || !slices.Equal(slices.Sorted(slices.Values(res.Matches[0].Tickets)), []string{"a", "c"}) {
		t.Fatalf("got %+v, want a with c", res.Matches)
	}
	// Once a and c are matched, only the lack of tickets holds b.
	if got, ok := res.Held["b"]; !ok || got != nil {
		t.Fatalf("b held by %v (%v)", got, ok)
	}
	var m RuleMetric
	for _, x := range res.Matches[0].Metrics {
		if x.Rule == "same" {
			m = x
		}
	}
	if m.Passed != 1 || m.Failed != 1 {
		t.Fatalf("metrics of same: %+v, want passed 1 failed 1", m)
	}
}

// TestMatchConcurrent: passes over one rule set may run at once (the
// matchmaking loop serves several configurations); run with -race.
func TestMatchConcurrent(t *testing.T) {
	rs := benchRuleSet(t)
	pool := genPool(3, poolSpec{n: 2000, skill: 300, regions: flexbench.Regions, maxAge: 20 * time.Second}, t0)
	want := rs.Match(pool, t0, 5)
	done := make(chan Result)
	for range 4 {
		go func() { done <- rs.Match(pool, t0, 5) }()
	}
	for range 4 {
		if got := <-done; !reflect.DeepEqual(got, want) {
			t.Fatal("a concurrent pass gave another result")
		}
	}
}

// TestMatchRetryLatency: when the latency rule fails (its maxDistance), a
// retry leaves out the slowest ticket rather than the furthest by skill.
func TestMatchRetryLatency(t *testing.T) {
	rs := mustParse(t, ruleSet(`{"name":"squad","minPlayers":3,"maxPlayers":3}`, band10+`,{"name":"lat","type":"latency","maxLatency":150,"maxDistance":20}`, ""))
	at := func(ms int) map[string]int { return map[string]int{"us-east-1": ms} }
	// The slow tickets are the nearest by skill for every anchor, and too
	// far apart in latency to match with anyone.
	pool := []Ticket{mkTicket("anchor", 9*time.Second, at(40), 100),
		mkTicket("slow1", 8*time.Second, at(100), 101), mkTicket("slow2", 7*time.Second, at(125), 101.5),
		mkTicket("slow3", 6*time.Second, at(75), 99),
		mkTicket("b", 2*time.Second, at(45), 104), mkTicket("c", time.Second, at(45), 96)}
	res := rs.Match(pool, t0, 1)
	checkResult(t, rs, pool, t0, res)
	if len(res.Matches) != 1 || !slices.Equal(slices.Sorted(slices.Values(res.Matches[0].Tickets)), []string{"anchor", "b", "c"}) {
		t.Fatalf("got %+v, want anchor, b and c", res.Matches)
	}
}

// TestMatchRegionPreference: fastestRegion tries the anchor's fastest
// region first, largestPopulation the region with the most tickets.
func TestMatchRegionPreference(t *testing.T) {
	lat := func(e, w int) map[string]int { return map[string]int{"east": e, "west": w} }
	pool := []Ticket{mkTicket("a", 5*time.Second, lat(100, 50), 1),
		mkTicket("b", 4*time.Second, lat(60, 200), 1), mkTicket("c", 3*time.Second, lat(60, 200), 1),
		mkTicket("d", 2*time.Second, lat(200, 60), 1)}
	for _, c := range []struct{ pref, want string }{{"fastestRegion", "d"}, {"largestPopulation", "b"}} {
		rs := mustParse(t, ruleSet(teams1v1, lat150,
			`"algorithm":{"strategy":"balanced","balancedAttribute":"skill","batchingPreference":"`+c.pref+`"}`))
		res := rs.Match(pool, t0, 1)
		checkResult(t, rs, pool, t0, res)
		if len(res.Matches) == 0 || !slices.Contains(res.Matches[0].Tickets, c.want) {
			t.Errorf("%s: first match %+v, want a with %s", c.pref, res.Matches, c.want)
		}
	}
}

// TestMatchTwoBatchRules: a second numeric batchDistance rule prunes the
// gathering too, so tickets nearest by the first rule's attribute but out
// of the second's band do not crowd out a valid match.
func TestMatchTwoBatchRules(t *testing.T) {
	rs := mustParse(t, `{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"skill","type":"number"},{"name":"level","type":"number"}],`+
		`"teams":[{"name":"squad","minPlayers":3,"maxPlayers":3}],"rules":[`+band10+
		`,{"name":"levels","type":"batchDistance","batchAttribute":"level","maxDistance":2}]}`)
	lv := func(tk Ticket, level float64) Ticket {
		tk.Players[0].Attributes["level"] = Value{N: &level}
		return tk
	}
	pool := []Ticket{lv(mkTicket("anchor", 9*time.Second, nil, 100), 5),
		lv(mkTicket("bad1", 8*time.Second, nil, 100.5), 20), lv(mkTicket("bad2", 7*time.Second, nil, 101), 30),
		lv(mkTicket("bad3", 6*time.Second, nil, 99.5), 40),
		lv(mkTicket("b", 2*time.Second, nil, 104), 6), lv(mkTicket("c", time.Second, nil, 96), 4)}
	res := rs.Match(pool, t0, 1)
	checkResult(t, rs, pool, t0, res)
	if len(res.Matches) != 1 || !slices.Equal(slices.Sorted(slices.Values(res.Matches[0].Tickets)), []string{"anchor", "b", "c"}) {
		t.Fatalf("got %+v, want anchor, b and c", res.Matches)
	}
	if got := res.Held["bad1"]; !slices.Equal(got, []string{"levels"}) {
		t.Fatalf("bad1 held by %v, want [levels]", got)
	}
}
