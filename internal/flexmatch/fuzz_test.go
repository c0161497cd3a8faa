package flexmatch

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// FuzzParse: Parse never panics, refuses with an *Error, and a rule set it
// accepts has consistent views and evaluates a candidate without panicking.
func FuzzParse(f *testing.F) {
	for _, b := range exampleRuleSets(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":1,"maxPlayers":1,"quantity":2}]}`))
	f.Add([]byte(`{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"s","type":"string_list"}],"teams":[{"name":"a","minPlayers":0,"maxPlayers":2}],"rules":[{"name":"c","type":"collection","measurements":"set_intersection(teams[a].players.attributes[s])","operation":"intersection","maxCount":3}]}`))
	f.Add([]byte(`{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":1,"maxPlayers":1}],"expansions":[{"target":"teams[*].minPlayers","steps":[{"waitTimeSeconds":1,"value":0}]}]}`))
	f.Add([]byte(`[1,2`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rs, err := Parse(body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		if len(rs.views) != len(rs.steps)+1 {
			t.Fatalf("%d views for %d steps", len(rs.views), len(rs.steps))
		}
		if n := rs.MaxPlayers(); n < 1 || n > maxMatch {
			t.Fatalf("MaxPlayers %d", n)
		}
		// One ticket per team slot up to minPlayers (at least one).
		var teams [][]*Ticket
		for i, ts := range rs.teams {
			var tt []*Ticket
			for k := range max(ts.min, 1) {
				p := withLat(pl(fmt.Sprintf("p%d_%d", i, k)), "r", 10*k)
				for _, a := range rs.attrs {
					switch a.typ {
					case TypeNumber:
						p.Attributes[a.name] = num(float64(k))
					case TypeString:
						p.Attributes[a.name] = str("x")
					case TypeStringList:
						p.Attributes[a.name] = list("x", "y")
					case TypeStringNumberMap:
						p.Attributes[a.name] = Value{SDM: map[string]float64{"x": 1}}
					}
				}
				tt = append(tt, tk(p.ID, p))
			}
			teams = append(teams, tt)
		}
		for _, prep := range []bool{false, true} {
			c := cand(rs, prep, teams...)
			for _, age := range append([]float64{0}, rs.steps...) {
				rs.viewAt(time.Duration(age*float64(time.Second))).evaluate(c, map[string]*RuleMetric{})
			}
			rs.sortKey(c.tickets[0], nil, c.tickets[len(c.tickets)-1], nil, nil)
		}
	})
}

// FuzzExpr: the expression parser never panics, and an expression it
// accepts evaluates over a candidate to a value of its static depth.
func FuzzExpr(f *testing.F) {
	for _, s := range []string{
		"teams[red].players.attributes[skill]",
		"avg(teams[*].players.attributes[skill])",
		"avg(flatten(teams[*].players.attributes[skill]))",
		"set_intersection(flatten(teams[red,blue].players.attributes[roles]))",
		"count(teams[green].players[playerId])",
		"stddev(median(teams[*].players.attributes[skill]))",
		"max(sum(teams[*].players.attributes[skill]))",
		"flatten(teams[*].players.attributes[mode])",
		"teams[green_1].players",
		"min(", "teams[", "avg(teams[red].players.attributes[roles])",
	} {
		f.Add(s)
	}
	rs := mustParse(f, exprRuleSet)
	c := cand(rs, true,
		[]*Ticket{tk("t1", pl("a", "skill", num(1), "roles", list("x")), pl("b", "skill", num(2), "roles", list("x", "y")))},
		[]*Ticket{tk("t2", pl("c", "skill", num(3), "mode", str("m"), "roles", list()))},
		nil,
		[]*Ticket{tk("t3", pl("d", "skill", num(4), "roles", list("y")))},
	)
	f.Fuzz(func(t *testing.T, s string) {
		e, err := rs.parseExpr(s)
		if err != nil {
			return
		}
		for _, agg := range []aggregation{aggNone, aggAvg, aggUnion} {
			x := &evalCtx{}
			x.reset(rs, c)
			x.agg = agg
			v := x.eval(e)
			if d := depthOf(v); v.kind != kAbsent && d > e.depth {
				t.Fatalf("%q: value depth %d above static depth %d", s, d, e.depth)
			}
		}
	})
}

func depthOf(v val) int {
	if v.kind != kList {
		return 0
	}
	d := 1
	for _, s := range v.l {
		d = max(d, 1+depthOf(s))
	}
	return d
}

// FuzzMatchRuleSet: any rule set Parse accepts, over a pool of tickets
// built from the fuzzer's bytes (parties of 1 to 4, every declared
// attribute with a value of its type or missing, string lists with
// repeats, latencies in two regions, some backfill tickets), gives a pass
// that does not panic, keeps the matcher's invariants and stays within
// its work budget (plus the one evaluation that crossed it).
func FuzzMatchRuleSet(f *testing.F) {
	for _, b := range exampleRuleSets(f) {
		f.Add(b, []byte{3, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200})
	}
	f.Add([]byte(`{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"s","type":"string_list"},{"name":"k","type":"number","default":1}],"teams":[{"name":"a","minPlayers":1,"maxPlayers":3,"quantity":2}],"rules":[{"name":"c","type":"collection","measurements":"flatten(teams[*].players.attributes[s])","operation":"intersection","minCount":1},{"name":"d","type":"comparison","measurements":"flatten(flatten(teams[*].players.attributes[s]))","operation":"!="}]}`),
		[]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30})
	f.Fuzz(func(t *testing.T, body, data []byte) {
		rs, err := Parse(body)
		if err != nil {
			return
		}
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		var pool []Ticket
		for i := 0; len(data) > 0 && i < 64; i++ {
			b := next()
			tkt := Ticket{ID: fmt.Sprintf("f%03d", i), Start: t0.Add(-time.Duration(next()) * time.Second)}
			for k := range 1 + int(b%4) {
				p := withLat(pl(fmt.Sprintf("f%03d-%d", i, k)), "r1", 1+int(next()), "r2", 1+int(next()))
				for _, a := range rs.attrs {
					v := next()
					if v%9 == 0 {
						continue // missing
					}
					switch a.typ {
					case TypeNumber:
						p.Attributes[a.name] = num(float64(v % 50))
					case TypeString:
						p.Attributes[a.name] = str(fmt.Sprintf("s%d", v%3))
					case TypeStringList:
						l := make([]string, int(v%16))
						for j := range l {
							l[j] = fmt.Sprintf("s%d", (int(v)+j*int(next()))%7)
						}
						p.Attributes[a.name] = list(l...)
					case TypeStringNumberMap:
						p.Attributes[a.name] = Value{SDM: map[string]float64{"x": float64(v), "y": float64(v / 2)}}
					}
				}
				if b%11 == 5 {
					p.Team = rs.teams[int(b/11)%len(rs.teams)].name
				}
				tkt.Players = append(tkt.Players, p)
			}
			tkt.Backfill = b%11 == 5
			pool = append(pool, tkt)
		}
		m := newMatcher(rs, pool, t0, uint64(len(body)))
		m.run()
		checkResult(t, rs, pool, t0, m.res)
		if m.work > 2*maxPassWork {
			t.Fatalf("work %d, budget %d", m.work, maxPassWork)
		}
	})
}
