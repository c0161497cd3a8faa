package flexmatch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// plain turns an evaluated value into float64, string, nil (absent) or
// []any for comparisons.
func plain(v val) any {
	switch v.kind {
	case kNum:
		return v.n
	case kStr:
		return v.s
	case kList:
		out := []any{}
		for _, s := range v.l {
			out = append(out, plain(s))
		}
		return out
	}
	return nil
}

const exprRuleSet = `{"ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"number"},{"name":"mode","type":"string","default":"ffa"},{"name":"roles","type":"string_list"}],
 "teams":[{"name":"red","minPlayers":1,"maxPlayers":3},{"name":"blue","minPlayers":0,"maxPlayers":3},{"name":"green","minPlayers":0,"maxPlayers":3,"quantity":2}]}`

func TestExpressions(t *testing.T) {
	rs := mustParse(t, exprRuleSet)
	c := cand(rs, false,
		[]*Ticket{tk("t1", pl("a", "skill", num(10), "roles", list("tank", "dps")), pl("b", "skill", num(20), "roles", list("dps")))},
		[]*Ticket{tk("t2", pl("c", "skill", num(40), "mode", str("ctf"), "roles", list("dps", "healer")))},
		nil,
		[]*Ticket{tk("t3", pl("d", "skill", num(1), "roles", list()))},
	)
	cases := []struct {
		src  string
		agg  aggregation
		want any
	}{
		{"teams[red].players.attributes[skill]", aggNone, []any{10.0, 20.0}},
		{"teams[red].players.attributes[skill]", aggAvg, []any{15.0}},
		{"teams[red].players.attributes[skill]", aggMax, []any{20.0}},
		{"teams[*].players.attributes[skill]", aggNone, []any{[]any{10.0, 20.0}, []any{40.0}, []any{}, []any{1.0}}},
		{"teams[red,blue].players.attributes[skill]", aggNone, []any{[]any{10.0, 20.0}, []any{40.0}}},
		{"teams[green].players.attributes[skill]", aggNone, []any{[]any{}, []any{1.0}}},
		{"teams[green_2].players.attributes[skill]", aggNone, []any{1.0}},
		{"avg(teams[*].players.attributes[skill])", aggNone, []any{15.0, 40.0, nil, 1.0}},
		{"sum(teams[*].players.attributes[skill])", aggNone, []any{30.0, 40.0, 0.0, 1.0}},
		{"count(teams[*].players)", aggNone, []any{2.0, 1.0, 0.0, 1.0}},
		{"count(teams[red].players[playerId])", aggNone, 2.0},
		{"teams[blue].players[playerId]", aggNone, []any{"c"}},
		{"min(flatten(teams[*].players.attributes[skill]))", aggNone, 1.0},
		{"max(flatten(teams[*].players.attributes[skill]))", aggNone, 40.0},
		{"avg(flatten(teams[*].players.attributes[skill]))", aggNone, 71.0 / 4},
		{"median(flatten(teams[*].players.attributes[skill]))", aggNone, 15.0},
		{"median(teams[red].players.attributes[skill])", aggNone, 15.0},
		{"stddev(teams[red].players.attributes[skill])", aggNone, 5.0},
		{"max(avg(teams[*].players.attributes[skill]))", aggNone, 40.0},
		{"flatten(teams[*].players.attributes[mode])", aggNone, []any{"ffa", "ffa", "ctf", "ffa"}},
		{"set_intersection(teams[red].players.attributes[roles])", aggNone, []any{"dps"}},
		{"set_intersection(flatten(teams[*].players.attributes[roles]))", aggNone, []any{}},
		{"set_intersection(flatten(teams[red,blue].players.attributes[roles]))", aggNone, []any{"dps"}},
		{"set_intersection(teams[*].players.attributes[roles])", aggNone, []any{[]any{"dps"}, []any{"dps", "healer"}, []any{}, []any{}}},
		{"flatten(teams[red].players.attributes[roles])", aggNone, []any{"tank", "dps", "dps"}},
		{"flatten(teams[*].players.attributes[roles])", aggNone, []any{[]any{"tank", "dps", "dps"}, []any{"dps", "healer"}, []any{}, []any{}}},
		{"flatten(flatten(teams[red,blue].players.attributes[roles]))", aggNone, []any{"tank", "dps", "dps", "dps", "healer"}},
		{"teams[red].players.attributes[roles]", aggUnion, []any{[]any{"tank", "dps"}}},
		{"teams[red].players.attributes[roles]", aggIntersection, []any{[]any{"dps"}}},
		{" count ( teams [ red ] . players ) ", aggNone, 2.0},
	}
	for _, cs := range cases {
		t.Run(fmt.Sprintf("%s/%d", cs.src, cs.agg), func(t *testing.T) {
			e, err := rs.parseExpr(cs.src)
			if err != nil {
				t.Fatal(err)
			}
			x := &evalCtx{}
			x.reset(rs, c)
			x.agg = cs.agg
			got := plain(x.eval(e))
			if !reflect.DeepEqual(got, cs.want) {
				t.Errorf("got %#v, want %#v", got, cs.want)
			}
			if x.missing {
				t.Error("missing set")
			}
		})
	}
	// A player without the attribute and no default: missing.
	c2 := cand(rs, false, []*Ticket{tk("t1", pl("a", "skill", num(1)), pl("b"))})
	e, _ := rs.parseExpr("teams[red].players.attributes[skill]")
	x := &evalCtx{}
	x.reset(rs, c2)
	x.eval(e)
	if !x.missing {
		t.Error("missing attribute not reported")
	}
}

func TestExpressionErrors(t *testing.T) {
	rs := mustParse(t, exprRuleSet)
	cases := []struct{ src, want string }{
		{"", "at character 1"},
		{"avg(", "at character 5"},
		{"avg teams[red].players", "expected ( after avg"},
		{"teams[red", "expected , or ]"},
		{"teams[]", "expected a team name"},
		{"teams[*", "expected ] after teams[*"},
		{"teams[red].players[id]", "expected [playerId]"},
		{"teams[red].players.attr[skill]", "expected attributes["},
		{"teams[red].players.attributes[skill", "expected ]"},
		{"sum(teams[red].players)", "needs a list of numbers"},
		{"count(count(teams[red].players))", "needs a list"},
		{"set_intersection(teams[red].players.attributes[skill])", "string lists"},
		{strings.Repeat("max(", 40) + "teams[red].players.attributes[skill]" + strings.Repeat(")", 40), "nest at most"},
	}
	for _, c := range cases {
		if _, err := rs.parseExpr(c.src); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseExpr(%q) = %v, want %q", c.src, err, c.want)
		}
	}
}

// ruleCase is one candidate for a rule: tickets per team and whether the
// rule should hold.
type ruleCase struct {
	name  string
	teams [][]*Ticket
	holds bool
}

// checkRule evaluates a one-rule set (plus any earlier rules) on each case,
// with and without prepared tickets.
func checkRule(t *testing.T, body string, cases []ruleCase) {
	t.Helper()
	rs := mustParse(t, body)
	last := rs.rules[len(rs.rules)-1].ruleName()
	for _, c := range cases {
		for _, prep := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/prep=%v", c.name, prep), func(t *testing.T) {
				cd := cand(rs, prep, c.teams...)
				metrics := map[string]*RuleMetric{}
				failed := rs.viewAt(0).evaluate(cd, metrics)
				if h := rs.viewAt(0).holds(cd); h != (len(failed) == 0) {
					t.Errorf("holds = %v, evaluate failed %v", h, failed)
				}
				if got := !slices.Contains(failed, last); got != c.holds {
					t.Errorf("%s holds = %v, want %v (failed %v)", last, got, c.holds, failed)
				}
				if m := metrics[last]; m == nil || (m.Passed == 1) != c.holds || m.Passed+m.Failed != 1 {
					t.Errorf("metrics = %+v", m)
				}
			})
		}
	}
}

func rsWith(attrs, teams, rules string) string {
	return `{"ruleLanguageVersion":"1.0","playerAttributes":[` + attrs + `],"teams":[` + teams + `],"rules":[` + rules + `]}`
}

const twoTeams = `{"name":"red","minPlayers":1,"maxPlayers":4},{"name":"blue","minPlayers":1,"maxPlayers":4}`
const stdAttrs = `{"name":"skill","type":"number"},{"name":"mode","type":"string"},{"name":"roles","type":"string_list","default":[]},{"name":"ranks","type":"string_number_map"}`

func one(id string, kv ...any) *Ticket { return tk(id, pl(id+"p", kv...)) }

func TestBatchDistanceRule(t *testing.T) {
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"batchDistance","batchAttribute":"skill","maxDistance":10}`), []ruleCase{
		{"within", [][]*Ticket{{one("a", "skill", num(10))}, {one("b", "skill", num(20))}}, true},
		{"outside", [][]*Ticket{{one("a", "skill", num(10))}, {one("b", "skill", num(20.5))}}, false},
		{"party avg", [][]*Ticket{{tk("a", pl("p1", "skill", num(0)), pl("p2", "skill", num(30)))}, {one("b", "skill", num(25))}}, true},
		{"missing", [][]*Ticket{{one("a", "skill", num(10))}, {one("b")}}, false},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"batchDistance","batchAttribute":"skill","maxDistance":10,"partyAggregation":"max"}`), []ruleCase{
		{"party max", [][]*Ticket{{tk("a", pl("p1", "skill", num(0)), pl("p2", "skill", num(30)))}, {one("b", "skill", num(25))}}, true},
		{"party max far", [][]*Ticket{{tk("a", pl("p1", "skill", num(0)), pl("p2", "skill", num(40)))}, {one("b", "skill", num(25))}}, false},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"batchDistance","batchAttribute":"mode"}`), []ruleCase{
		{"same", [][]*Ticket{{one("a", "mode", str("ctf"))}, {one("b", "mode", str("ctf"))}}, true},
		{"differ", [][]*Ticket{{one("a", "mode", str("ctf"))}, {one("b", "mode", str("dm"))}}, false},
		{"party differs", [][]*Ticket{{tk("a", pl("p1", "mode", str("ctf")), pl("p2", "mode", str("dm")))}, {one("b", "mode", str("ctf"))}}, false},
	})
}

func TestComparisonRule(t *testing.T) {
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"comparison","measurements":["flatten(teams[*].players.attributes[mode])"],"operation":"="}`), []ruleCase{
		{"all equal", [][]*Ticket{{one("a", "mode", str("x")), one("c", "mode", str("x"))}, {one("b", "mode", str("x"))}}, true},
		{"one differs", [][]*Ticket{{one("a", "mode", str("x"))}, {one("b", "mode", str("y"))}}, false},
		{"missing", [][]*Ticket{{one("a", "mode", str("x"))}, {one("b")}}, false},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"comparison","measurements":["flatten(teams[*].players.attributes[mode])"],"operation":"!="}`), []ruleCase{
		{"all differ", [][]*Ticket{{one("a", "mode", str("x")), one("c", "mode", str("z"))}, {one("b", "mode", str("y"))}}, true},
		{"two same", [][]*Ticket{{one("a", "mode", str("x")), one("c", "mode", str("y"))}, {one("b", "mode", str("y"))}}, false},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"comparison","measurements":"avg(teams[*].players.attributes[skill])","referenceValue":50,"operation":">="}`), []ruleCase{
		{"both teams", [][]*Ticket{{one("a", "skill", num(40)), one("c", "skill", num(60))}, {one("b", "skill", num(50))}}, true},
		{"one team low", [][]*Ticket{{one("a", "skill", num(40))}, {one("b", "skill", num(50))}}, false},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"comparison","measurements":"teams[red].players.attributes[skill]","referenceValue":"max(teams[blue].players.attributes[skill])","operation":"<"}`), []ruleCase{
		{"below", [][]*Ticket{{one("a", "skill", num(40))}, {one("b", "skill", num(50)), one("c", "skill", num(10))}}, true},
		{"equal", [][]*Ticket{{one("a", "skill", num(50))}, {one("b", "skill", num(50))}}, false},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"comparison","measurements":"teams[*].players.attributes[mode]","referenceValue":"ranked","operation":"="}`), []ruleCase{
		{"literal string", [][]*Ticket{{one("a", "mode", str("ranked"))}, {one("b", "mode", str("ranked"))}}, true},
		{"literal string differs", [][]*Ticket{{one("a", "mode", str("ranked"))}, {one("b", "mode", str("casual"))}}, false},
	})
	// Party aggregation: a party's skills count as their average.
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"comparison","measurements":"flatten(teams[*].players.attributes[skill])","referenceValue":20,"operation":"<="}`), []ruleCase{
		{"party average", [][]*Ticket{{tk("a", pl("p1", "skill", num(10)), pl("p2", "skill", num(30)))}, {one("b", "skill", num(5))}}, true},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"comparison","measurements":"flatten(teams[*].players.attributes[skill])","referenceValue":20,"operation":"<=","partyAggregation":"max"}`), []ruleCase{
		{"party max", [][]*Ticket{{tk("a", pl("p1", "skill", num(10)), pl("p2", "skill", num(30)))}, {one("b", "skill", num(5))}}, false},
	})
}

func TestDistanceRule(t *testing.T) {
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"distance","measurements":["avg(teams[*].players.attributes[skill])"],"referenceValue":"avg(flatten(teams[*].players.attributes[skill]))","maxDistance":10}`), []ruleCase{
		{"fair", [][]*Ticket{{one("a", "skill", num(10)), one("c", "skill", num(30))}, {one("b", "skill", num(25)), one("d", "skill", num(15))}}, true},
		{"unfair", [][]*Ticket{{one("a", "skill", num(10)), one("c", "skill", num(10))}, {one("b", "skill", num(40)), one("d", "skill", num(40))}}, false},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"distance","measurements":"flatten(teams[*].players.attributes[skill])","maxDistance":10,"minDistance":2}`), []ruleCase{
		{"spread ok", [][]*Ticket{{one("a", "skill", num(10)), one("c", "skill", num(13))}, {one("b", "skill", num(20))}}, true},
		{"spread too wide", [][]*Ticket{{one("a", "skill", num(10))}, {one("b", "skill", num(21))}}, false},
		{"too close", [][]*Ticket{{one("a", "skill", num(10)), one("c", "skill", num(11))}, {one("b", "skill", num(20))}}, false},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"distance","measurements":"teams[red].players.attributes[skill]","referenceValue":100,"minDistance":50}`), []ruleCase{
		{"far enough", [][]*Ticket{{one("a", "skill", num(10))}, {one("b", "skill", num(99))}}, true},
		{"too near", [][]*Ticket{{one("a", "skill", num(60))}, {one("b", "skill", num(99))}}, false},
	})
}

func TestCollectionRule(t *testing.T) {
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"collection","measurements":"flatten(teams[*].players.attributes[roles])","operation":"intersection","minCount":1}`), []ruleCase{
		{"common", [][]*Ticket{{one("a", "roles", list("x", "y"))}, {one("b", "roles", list("y", "z"))}}, true},
		{"none common", [][]*Ticket{{one("a", "roles", list("x"))}, {one("b", "roles", list("y", "z"))}}, false},
		{"default empty", [][]*Ticket{{one("a", "roles", list("x"))}, {one("b")}}, false},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"collection","measurements":"flatten(teams[*].players.attributes[roles])","operation":"contains","referenceValue":"healer","minCount":1,"maxCount":1}`), []ruleCase{
		{"one healer", [][]*Ticket{{one("a", "roles", list("tank", "healer"))}, {one("b", "roles", list("dps"))}}, true},
		{"no healer", [][]*Ticket{{one("a", "roles", list("tank"))}, {one("b", "roles", list("dps"))}}, false},
		{"two healers", [][]*Ticket{{one("a", "roles", list("healer"))}, {one("b", "roles", list("healer"))}}, false},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"collection","measurements":"teams[*].players.attributes[mode]","operation":"contains","referenceValue":"sniper","maxCount":1}`), []ruleCase{
		{"string attr per team", [][]*Ticket{{one("a", "mode", str("sniper")), one("c", "mode", str("sniper"))}, {one("b", "mode", str("x"))}}, true},
		{"both teams", [][]*Ticket{{one("a", "mode", str("sniper"))}, {one("b", "mode", str("sniper"))}}, false},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"collection","measurements":"flatten(teams[*].players.attributes[roles])","operation":"reference_intersection_count","referenceValue":["a","b"],"minCount":1}`), []ruleCase{
		{"each has one", [][]*Ticket{{one("a", "roles", list("a", "z"))}, {one("b", "roles", list("b"))}}, true},
		{"one has none", [][]*Ticket{{one("a", "roles", list("a"))}, {one("b", "roles", list("z"))}}, false},
	})
	// Party aggregation of lists: union (default) or intersection.
	party := [][]*Ticket{{tk("a", pl("p1", "roles", list("x", "y")), pl("p2", "roles", list("y")))}, {one("b", "roles", list("x", "y"))}}
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"collection","measurements":"flatten(teams[*].players.attributes[roles])","operation":"intersection","minCount":2}`), []ruleCase{
		{"union", party, true},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"collection","measurements":"flatten(teams[*].players.attributes[roles])","operation":"intersection","minCount":2,"partyAggregation":"intersection"}`), []ruleCase{
		{"intersection", party, false},
	})
}

func TestCompoundRule(t *testing.T) {
	rules := `{"name":"close","type":"distance","measurements":"flatten(teams[*].players.attributes[skill])","maxDistance":10},
	{"name":"same","type":"comparison","measurements":"flatten(teams[*].players.attributes[mode])","operation":"="},`
	close := [][]*Ticket{{one("a", "skill", num(1), "mode", str("x"))}, {one("b", "skill", num(5), "mode", str("y"))}}
	same := [][]*Ticket{{one("a", "skill", num(1), "mode", str("x"))}, {one("b", "skill", num(50), "mode", str("x"))}}
	both := [][]*Ticket{{one("a", "skill", num(1), "mode", str("x"))}, {one("b", "skill", num(5), "mode", str("x"))}}
	neither := [][]*Ticket{{one("a", "skill", num(1), "mode", str("x"))}, {one("b", "skill", num(50), "mode", str("y"))}}
	for _, c := range []struct {
		stmt                       string
		close, same, both, neither bool
	}{
		{"or(close, same)", true, true, true, false},
		{"and(close, same)", false, false, true, false},
		{"xor(close, same)", true, true, false, false},
		{"not(close)", false, true, false, true},
		{"and(or(close, same), not(and(close, same)))", true, true, false, false},
	} {
		checkRule(t, rsWith(stdAttrs, twoTeams, rules+`{"name":"c","type":"compound","statement":"`+c.stmt+`"}`), []ruleCase{
			{c.stmt + " close", close, c.close}, {c.stmt + " same", same, c.same}, {c.stmt + " both", both, c.both}, {c.stmt + " neither", neither, c.neither},
		})
	}
	// The rules a compound reads do not fail the match on their own.
	rs := mustParse(t, rsWith(stdAttrs, twoTeams, rules+`{"name":"c","type":"compound","statement":"or(close, same)"}`))
	if failed := rs.viewAt(0).evaluate(cand(rs, false, close...), nil); len(failed) != 0 {
		t.Errorf("failed = %v, want none", failed)
	}
	if failed := rs.viewAt(0).evaluate(cand(rs, false, neither...), nil); !slices.Equal(failed, []string{"c"}) {
		t.Errorf("failed = %v, want [c]", failed)
	}
}

func TestLatencyRule(t *testing.T) {
	lat := func(id string, kv ...any) *Ticket { return tk(id, withLat(pl(id+"p"), kv...)) }
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"latency","maxLatency":100}`), []ruleCase{
		{"shared region", [][]*Ticket{{lat("a", "us", 50, "eu", 150)}, {lat("b", "us", 90, "eu", 20)}}, true},
		{"no shared region", [][]*Ticket{{lat("a", "us", 50, "eu", 150)}, {lat("b", "us", 190, "eu", 20)}}, false},
		{"region missing for one", [][]*Ticket{{lat("a", "us", 50)}, {lat("b", "eu", 20)}}, false},
		{"no latency data", [][]*Ticket{{lat("a", "us", 50)}, {one("b")}}, false},
		{"party every player", [][]*Ticket{{tk("a", withLat(pl("p1"), "us", 50), withLat(pl("p2"), "us", 120))}, {lat("b", "us", 20)}}, false},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"latency","maxLatency":100,"partyAggregation":"avg"}`), []ruleCase{
		{"party avg", [][]*Ticket{{tk("a", withLat(pl("p1"), "us", 50), withLat(pl("p2"), "us", 120))}, {lat("b", "us", 20)}}, true},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"latency","maxLatency":200,"maxDistance":30}`), []ruleCase{
		{"close to min", [][]*Ticket{{lat("a", "us", 50)}, {lat("b", "us", 80)}}, true},
		{"far from min", [][]*Ticket{{lat("a", "us", 50)}, {lat("b", "us", 81)}}, false},
		{"other region close", [][]*Ticket{{lat("a", "us", 50, "eu", 100)}, {lat("b", "us", 150, "eu", 110)}}, true},
	})
	checkRule(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"latency","maxLatency":200,"maxDistance":20,"distanceReference":"avg"}`), []ruleCase{
		{"close to avg", [][]*Ticket{{lat("a", "us", 50)}, {lat("b", "us", 90)}}, true},
		{"far from avg", [][]*Ticket{{lat("a", "us", 50)}, {lat("b", "us", 91)}}, false},
	})
	rs := mustParse(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"latency","maxLatency":100}`))
	c := cand(rs, false, []*Ticket{lat("a", "us", 50, "eu", 60, "ap", 10)}, []*Ticket{lat("b", "us", 90, "eu", 20, "ap", 300)})
	if got := rs.viewAt(0).regions(c, nil); !slices.Equal(got, []string{"eu", "us"}) {
		t.Errorf("regions = %v", got)
	}
}

func TestSortRules(t *testing.T) {
	rs := mustParse(t, rsWith(stdAttrs, twoTeams, `{"name":"abs","type":"absoluteSort","sortAttribute":"skill","sortDirection":"descending"},
		{"name":"dist","type":"distanceSort","sortAttribute":"ranks","mapKey":"maxValue"},
		{"name":"abs2","type":"absoluteSort","sortAttribute":"ranks","mapKey":"minValue","partyAggregation":"min"}`))
	first := one("f", "skill", num(10), "ranks", Value{SDM: map[string]float64{"a": 5, "b": 7}})
	t1 := tk("t", pl("p1", "skill", num(20), "ranks", Value{SDM: map[string]float64{"a": 1, "b": 2}}), pl("p2", "skill", num(40), "ranks", Value{SDM: map[string]float64{"a": 3}}))
	t2 := one("u")
	for _, prep := range []bool{false, true} {
		var pf, p1, p2 *prepared
		if prep {
			pf, p1, p2 = rs.prepare(first), rs.prepare(t1), rs.prepare(t2)
		}
		if got := rs.sortKey(t1, p1, first, pf, nil); !slices.Equal(got, []float64{-30, 4.5, 1}) {
			t.Errorf("prep %v: sortKey = %v", prep, got)
		}
		if got := rs.sortKey(t2, p2, first, pf, nil); !slices.Equal(got, []float64{math.Inf(1), math.Inf(1), math.Inf(1)}) {
			t.Errorf("prep %v: sortKey of a ticket without values = %v", prep, got)
		}
	}
	// Sort rules never fail and are not counted.
	metrics := map[string]*RuleMetric{}
	if failed := rs.viewAt(0).evaluate(cand(rs, false, []*Ticket{t2}, []*Ticket{t1}), metrics); len(failed) != 0 || len(metrics) != 0 {
		t.Errorf("failed %v, metrics %v", failed, metrics)
	}
}

func TestDefaults(t *testing.T) {
	body := rsWith(`{"name":"skill","type":"number","default":"50"},{"name":"mode","type":"string","default":"ffa"},{"name":"elo","type":"number"}`, twoTeams,
		`{"name":"s","type":"distance","measurements":"flatten(teams[*].players.attributes[skill])","referenceValue":50,"maxDistance":0},
		 {"name":"m","type":"comparison","measurements":"flatten(teams[*].players.attributes[mode])","referenceValue":"ffa","operation":"="},
		 {"name":"e","type":"batchDistance","batchAttribute":"elo","maxDistance":1000}`)
	rs := mustParse(t, body)
	for _, prep := range []bool{false, true} {
		c := cand(rs, prep, []*Ticket{one("a", "elo", num(1))}, []*Ticket{one("b", "elo", num(2))})
		if failed := rs.viewAt(0).evaluate(c, nil); len(failed) != 0 {
			t.Errorf("prep %v: defaults: failed %v", prep, failed)
		}
		// A player missing an attribute without a default cannot satisfy a
		// rule reading it.
		c = cand(rs, prep, []*Ticket{one("a", "elo", num(1))}, []*Ticket{one("b")})
		if failed := rs.viewAt(0).evaluate(c, nil); !slices.Equal(failed, []string{"e"}) {
			t.Errorf("prep %v: missing: failed %v", prep, failed)
		}
	}
}

func TestExpansions(t *testing.T) {
	rs := mustParse(t, string(exampleRuleSets(t)["5v5-latency.json"]))
	at := func(s float64) *view { return rs.viewAt(time.Duration(s * float64(time.Second))) }
	bd := func(v *view) float64 { return v.rules[0].(*batchDistanceRule).maxDistance }
	lat := func(v *view) float64 { return v.rules[4].(*latencyRule).maxLatency }
	cases := []struct {
		age           float64
		dist, latency float64
		min           int
	}{
		{0, 100, 150, 5}, {9.9, 100, 150, 5}, {10, 200, 150, 5}, {19, 200, 150, 5}, {20, 400, 250, 5}, {30, 400, 250, 4}, {1e6, 400, 250, 4},
	}
	for _, c := range cases {
		v := at(c.age)
		if bd(v) != c.dist || lat(v) != c.latency || v.teams[0].min != c.min || v.teams[1].min != c.min || v.teams[0].max != 5 {
			t.Errorf("age %v: maxDistance %v maxLatency %v teams %+v", c.age, bd(v), lat(v), v.teams)
		}
	}
	if at(10) != at(15) || at(0) == at(10) {
		t.Error("views are not precomputed per step")
	}
	// The rule set itself is not changed by expansions.
	if rs.rules[0].(*batchDistanceRule).maxDistance != 100 || rs.teams[0].min != 5 {
		t.Error("expansion changed the base rule set")
	}
	// referenceValue expansions, and targets by base name of quantity teams.
	rs = mustParse(t, `{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"skill","type":"number"}],
	  "teams":[{"name":"t","minPlayers":2,"maxPlayers":3,"quantity":2},{"name":"x","minPlayers":1,"maxPlayers":1}],
	  "rules":[{"name":"r","type":"comparison","measurements":"flatten(teams[*].players.attributes[skill])","referenceValue":10,"operation":"<="}],
	  "expansions":[{"target":"rules[r].referenceValue","steps":[{"waitTimeSeconds":3,"value":20}]},{"target":"teams[t].minPlayers","steps":[{"waitTimeSeconds":4,"value":1}]}]}`)
	v := rs.viewAt(3 * time.Second)
	if v.rules[0].(*comparisonRule).reference.num != 20 || v.teams[0].min != 2 {
		t.Errorf("at 3s: %+v %+v", v.rules[0], v.teams)
	}
	v = rs.viewAt(4 * time.Second)
	if v.teams[0].min != 1 || v.teams[1].min != 1 || v.teams[2].min != 1 || v.teams[2].name != "x" {
		t.Errorf("at 4s: %+v", v.teams)
	}
	if rs.MaxPlayers() != 7 {
		t.Errorf("MaxPlayers = %d", rs.MaxPlayers())
	}
	rs2 := mustParse(t, `{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":1,"maxPlayers":2,"quantity":2}],"expansions":[{"target":"teams[a_2].maxPlayers","steps":[{"waitTimeSeconds":9,"value":5}]}]}`)
	if rs2.MaxPlayers() != 7 {
		t.Errorf("MaxPlayers with an expansion = %d, want 7", rs2.MaxPlayers())
	}
	if rs.MaxExpansionWait() != 4*time.Second {
		t.Errorf("MaxExpansionWait = %v", rs.MaxExpansionWait())
	}
}

func TestAge(t *testing.T) {
	now := time.Unix(1000, 0)
	newest := mustParse(t, rsWith(stdAttrs, twoTeams, ""))
	oldest := mustParse(t, `{"ruleLanguageVersion":"1.0","algorithm":{"expansionAgeSelection":"oldest"},"teams":[`+twoTeams+`]}`)
	c := &candidate{tickets: []*Ticket{{Start: now.Add(-10 * time.Second)}, {Start: now.Add(-3 * time.Second)}, {Start: now.Add(-7 * time.Second)}}}
	if a := newest.age(c, now); a != 3*time.Second {
		t.Errorf("newest age = %v", a)
	}
	if a := oldest.age(c, now); a != 10*time.Second {
		t.Errorf("oldest age = %v", a)
	}
	if a := newest.age(&candidate{tickets: []*Ticket{{Start: now.Add(time.Second)}}}, now); a != 0 {
		t.Errorf("future ticket age = %v", a)
	}
}

// TestEvaluateAllocs: evaluating a 5v5 candidate with prepared tickets
// does not allocate.
func TestEvaluateAllocs(t *testing.T) {
	rs, c := bench5v5(t)
	v := rs.viewAt(0)
	if failed := v.evaluate(c, nil); len(failed) != 0 {
		t.Fatalf("failed %v", failed)
	}
	if raceEnabled {
		t.Skip("allocation counts do not hold under the race detector")
	}
	if n := testing.AllocsPerRun(100, func() { v.evaluate(c, nil) }); n != 0 {
		t.Errorf("evaluate allocates %v times per run", n)
	}
	// holds does not allocate on a failing candidate either.
	c.tickets[0].Players[0].Attributes["skill"] = num(5000)
	c.prep[0] = rs.prepare(c.tickets[0])
	c.teams[0][0].vals = c.prep[0].vals[0]
	if v.holds(c) {
		t.Fatal("holds on a far ticket")
	}
	if n := testing.AllocsPerRun(100, func() { v.holds(c) }); n != 0 {
		t.Errorf("holds allocates %v times per run", n)
	}
}

func bench5v5(t testing.TB) (*RuleSet, *candidate) {
	rs := mustParse(t, string(exampleRuleSets(t)["5v5-latency.json"]))
	var teams [2][]*Ticket
	for i := range 10 {
		p := withLat(pl(fmt.Sprintf("p%d", i), "skill", num(float64(1000+i*5)), "roles", list("dps", "tank")), "us-east-1", 40+i, "eu-west-1", 90+i)
		teams[i%2] = append(teams[i%2], tk(fmt.Sprintf("t%d", i), p))
	}
	return rs, cand(rs, true, teams[0], teams[1])
}

func BenchmarkEvaluate5v5(b *testing.B) {
	rs, c := bench5v5(b)
	v := rs.viewAt(0)
	b.ReportAllocs()
	for b.Loop() {
		v.evaluate(c, nil)
	}
}

func TestCandidateAddPop(t *testing.T) {
	rs := mustParse(t, rsWith(stdAttrs, twoTeams, `{"name":"r","type":"batchDistance","batchAttribute":"skill","maxDistance":10}`))
	c := &candidate{}
	a, b := one("a", "skill", num(1)), one("b", "skill", num(5))
	far := one("far", "skill", num(50))
	bf := &Ticket{ID: "bf", Backfill: true, Players: []Player{{ID: "x", Team: "blue", Attributes: map[string]Value{"skill": num(3)}}, {ID: "y", Team: "red", Attributes: map[string]Value{"skill": num(3)}}}}
	rs.addTicket(c, a, rs.prepare(a), 0)
	rs.addTicket(c, bf, rs.prepare(bf), 0)
	if len(c.teams[0]) != 2 || len(c.teams[1]) != 1 || c.teams[1][0].p.ID != "x" {
		t.Fatalf("backfill players not on their teams: %+v", c.teams)
	}
	rs.addTicket(c, far, rs.prepare(far), 1)
	if rs.viewAt(0).holds(c) {
		t.Fatal("far ticket holds")
	}
	c.pop()
	if len(c.tickets) != 2 || len(c.prep) != 2 || len(c.teams[1]) != 1 {
		t.Fatalf("after pop: %+v", c)
	}
	rs.addTicket(c, b, rs.prepare(b), 1)
	if !rs.viewAt(0).holds(c) {
		t.Fatal("close tickets fail")
	}
	c.pop()
	c.pop()
	c.pop()
	c.pop()
	if len(c.tickets) != 0 || len(c.teams[0]) != 0 || len(c.teams[1]) != 0 {
		t.Fatalf("after popping all: %+v", c)
	}
}

// TestPreparedMatchesUnprepared: on random candidates, evaluate and holds
// give the same answers with and without prepared tickets.
func TestPreparedMatchesUnprepared(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	regions := []string{"us", "eu", "ap"}
	for name, body := range exampleRuleSets(t) {
		rs := mustParse(t, string(body))
		for n := range 300 {
			teams := make([][]*Ticket, len(rs.teams))
			for i := range teams {
				for k := range 1 + r.IntN(2) {
					var ps []Player
					for j := range 1 + r.IntN(2) {
						p := pl(fmt.Sprintf("p%d_%d_%d", i, k, j))
						p.Latencies = map[string]int{}
						for _, reg := range regions {
							if r.IntN(4) > 0 {
								p.Latencies[reg] = r.IntN(300)
							}
						}
						if r.IntN(5) > 0 {
							p.Attributes["skill"] = num(float64(r.IntN(2000)))
						}
						if r.IntN(5) > 0 {
							p.Attributes["mode"] = str(regions[r.IntN(2)])
						}
						if r.IntN(5) > 0 {
							p.Attributes["roles"] = list(regions[:r.IntN(3)]...)
						}
						if r.IntN(5) > 0 {
							p.Attributes["maps"] = list(regions[r.IntN(3):]...)
						}
						if r.IntN(5) > 0 {
							p.Attributes["region"] = str(regions[r.IntN(2)])
						}
						if r.IntN(5) > 0 {
							p.Attributes["ranks"] = Value{SDM: map[string]float64{"a": float64(r.IntN(10)), "b": float64(r.IntN(10))}}
						}
						ps = append(ps, p)
					}
					teams[i] = append(teams[i], tk(fmt.Sprintf("t%d_%d", i, k), ps...))
				}
			}
			a, b := cand(rs, false, teams...), cand(rs, true, teams...)
			for _, age := range []time.Duration{0, 10 * time.Second, time.Hour} {
				v := rs.viewAt(age)
				fa, fb := v.evaluate(a, nil), v.evaluate(b, nil)
				if !slices.Equal(fa, fb) || v.holds(a) != (len(fa) == 0) || v.holds(b) != (len(fb) == 0) {
					t.Fatalf("%s #%d at %v: unprepared %v, prepared %v", name, n, age, fa, fb)
				}
			}
		}
	}
}

func BenchmarkHolds5v5(b *testing.B) {
	rs, c := bench5v5(b)
	v := rs.viewAt(0)
	b.ReportAllocs()
	for b.Loop() {
		v.holds(c)
	}
}

// TestLargeMatch: the 100-player example evaluates a full match, and its
// latency expansion lets a slower region in.
func TestLargeMatch(t *testing.T) {
	rs := mustParse(t, string(exampleRuleSets(t)["large-100-balanced.json"]))
	teams := make([][]*Ticket, len(rs.teams))
	for i := range 100 {
		p := withLat(pl(fmt.Sprintf("p%d", i), "skill", num(float64(i%30)), "mode", str("solo")), "eu", 50+i, "us", 150)
		teams[i%len(teams)] = append(teams[i%len(teams)], tk(p.ID, p))
	}
	c := cand(rs, true, teams...)
	if failed := rs.viewAt(0).evaluate(c, nil); !slices.Equal(failed, []string{"Region"}) {
		t.Fatalf("at 0s failed %v, want [Region] (eu reaches 149 ms, us is 150 ms)", failed)
	}
	if got := rs.viewAt(0).regions(c, nil); len(got) != 0 {
		t.Fatalf("regions at 0s = %v, want none", got)
	}
	if failed := rs.viewAt(30*time.Second).evaluate(c, nil); len(failed) != 0 {
		t.Fatalf("at 30s failed %v", failed)
	}
	c.teams[0][0].vals[rs.attrIndex["mode"]] = str("duo")
	c.prep[0].keyStr[1] = "duo"
	if failed := rs.viewAt(30*time.Second).evaluate(c, nil); !slices.Equal(failed, []string{"Mode"}) {
		t.Fatalf("one duo: failed %v", failed)
	}
	c.prep[0].keyStr[1] = "solo"
	if got := rs.viewAt(30*time.Second).regions(c, nil); !slices.Equal(got, []string{"eu", "us"}) {
		t.Fatalf("regions at 30s = %v", got)
	}
}

// TestConcurrentEvaluate: views and prepared tickets are shared by
// concurrent evaluations (run with -race).
func TestConcurrentEvaluate(t *testing.T) {
	rs, c := bench5v5(t)
	v := rs.viewAt(0)
	done := make(chan bool)
	for range 4 {
		go func() {
			ok := true
			for range 200 {
				ok = ok && v.holds(c) && len(v.evaluate(c, nil)) == 0
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Error("a concurrent evaluation failed")
		}
	}
}

func BenchmarkPrepare(b *testing.B) {
	rs, c := bench5v5(b)
	t := c.tickets[0]
	b.ReportAllocs()
	for b.Loop() {
		rs.prepare(t)
	}
}
