package flexmatch

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// strSet is a set of strings for the naive oracle of TestSetOpsOracle.
type strSet map[string]bool

func setOf(l []string) strSet {
	s := strSet{}
	for _, x := range l {
		s[x] = true
	}
	return s
}

func (s strSet) and(o strSet) strSet {
	r := strSet{}
	for x := range s {
		if o[x] {
			r[x] = true
		}
	}
	return r
}

func (s strSet) or(o strSet) strSet {
	r := strSet{}
	for x := range s {
		r[x] = true
	}
	for x := range o {
		r[x] = true
	}
	return r
}

// TestSetOpsOracle checks the set operations (party union and
// intersection of string lists, collection intersection and
// reference_intersection_count, set_intersection, comparison = and != on
// many strings) against set arithmetic on random teams of parties whose
// lists are long and repeat strings, so the hashed paths run.
func TestSetOpsOracle(t *testing.T) {
	const teams = `{"name":"red","minPlayers":1,"maxPlayers":6},{"name":"blue","minPlayers":1,"maxPlayers":6}`
	ref := []string{"s0", "s3", "s5", "s7", "s11", "s13", "s17", "s19"}
	r := rand.New(rand.NewPCG(7, 7))
	for iter := range 300 {
		alpha := 3 + r.IntN(40)
		var ts [2][]*Ticket
		var playerLists [2][][][]string // team, party, player
		for team := range 2 {
			for p := range 1 + r.IntN(3) {
				var players []Player
				var lists [][]string
				for k := range 1 + r.IntN(2) {
					l := make([]string, r.IntN(30))
					for i := range l {
						l[i] = fmt.Sprintf("s%d", r.IntN(alpha))
					}
					lists = append(lists, l)
					players = append(players, pl(fmt.Sprintf("p%d-%d-%d", team, p, k), "roles", list(l...)))
				}
				ts[team] = append(ts[team], tk(fmt.Sprintf("t%d-%d", team, p), players...))
				playerLists[team] = append(playerLists[team], lists)
			}
		}
		for _, agg := range []string{"union", "intersection"} {
			// Each team's set: the union of its parties' aggregated lists.
			var teamSet [2]strSet
			for team := range 2 {
				teamSet[team] = strSet{}
				for _, party := range playerLists[team] {
					ps := setOf(party[0])
					for _, l := range party[1:] {
						if agg == "union" {
							ps = ps.or(setOf(l))
						} else {
							ps = ps.and(setOf(l))
						}
					}
					teamSet[team] = teamSet[team].or(ps)
				}
			}
			inter := len(teamSet[0].and(teamSet[1]))
			refs := setOf(ref)
			c0, c1 := len(teamSet[0].and(refs)), len(teamSet[1].and(refs))
			rules := []struct {
				rule string
				n    int
			}{
				{`"measurements":"flatten(teams[*].players.attributes[roles])","operation":"intersection"`, inter},
			}
			for _, ru := range rules {
				for _, d := range []int{0, 1} {
					body := rsWith(stdAttrs, teams, fmt.Sprintf(`{"name":"r","type":"collection",%s,"minCount":%d,"maxCount":%d,"partyAggregation":%q}`, ru.rule, ru.n+d, ru.n+d, agg))
					checkOracle(t, iter, body, ts, d == 0)
				}
			}
			body := rsWith(stdAttrs, teams, fmt.Sprintf(`{"name":"r","type":"collection","measurements":"flatten(teams[*].players.attributes[roles])","operation":"reference_intersection_count","referenceValue":["s0","s3","s5","s7","s11","s13","s17","s19"],"minCount":%d,"maxCount":%d,"partyAggregation":%q}`, min(c0, c1), max(c0, c1), agg))
			checkOracle(t, iter, body, ts, true)
			body = rsWith(stdAttrs, teams, fmt.Sprintf(`{"name":"r","type":"collection","measurements":"flatten(teams[*].players.attributes[roles])","operation":"reference_intersection_count","referenceValue":["s0","s3","s5","s7","s11","s13","s17","s19"],"minCount":%d,"partyAggregation":%q}`, min(c0, c1)+1, agg))
			checkOracle(t, iter, body, ts, false)
		}
		// comparison over every string: = holds when all are one string,
		// != when no string repeats. With partyAggregation avg a party of
		// several players counts with the strings all its players hold,
		// once each; a player alone with its list as it is.
		var all []string
		for team := range 2 {
			for _, party := range playerLists[team] {
				if len(party) == 1 {
					all = append(all, party[0]...)
					continue
				}
				ps := setOf(party[0])
				for _, l := range party[1:] {
					ps = ps.and(setOf(l))
				}
				for x := range ps {
					all = append(all, x)
				}
			}
		}
		distinct := len(setOf(all))
		for _, op := range []string{"=", "!="} {
			want := len(all) < 2 || (op == "=" && distinct == 1) || (op == "!=" && distinct == len(all))
			body := rsWith(stdAttrs, teams, fmt.Sprintf(`{"name":"r","type":"comparison","measurements":"flatten(flatten(teams[*].players.attributes[roles]))","operation":%q,"partyAggregation":"avg"}`, op))
			if _, err := Parse([]byte(body)); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			checkOracle(t, iter, body, ts, want)
		}
	}
}

func checkOracle(t *testing.T, iter int, body string, ts [2][]*Ticket, want bool) {
	t.Helper()
	rs := mustParse(t, body)
	for _, prep := range []bool{false, true} {
		c := cand(rs, prep, ts[0], ts[1])
		if got := len(rs.viewAt(0).evaluate(c, nil)) == 0; got != want {
			t.Fatalf("iteration %d, prepared %v: %s holds %v, want %v", iter, prep, body, got, want)
		}
	}
}

// TestSetIntersectionOracle checks set_intersection on lists of lists
// against set arithmetic: the first list's strings every list holds, in
// the first list's order, once each.
func TestSetIntersectionOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for iter := range 500 {
		var lists [][]string
		var in []val
		for range 1 + r.IntN(4) {
			l := make([]string, r.IntN(40))
			vs := make([]val, len(l))
			for i := range l {
				l[i] = fmt.Sprintf("s%d", r.IntN(12))
				vs[i] = val{kind: kStr, s: l[i]}
			}
			lists = append(lists, l)
			in = append(in, val{kind: kList, l: vs})
		}
		every := setOf(lists[0])
		for _, l := range lists[1:] {
			every = every.and(setOf(l))
		}
		var want []string
		for _, s := range lists[0] {
			if every[s] {
				want = append(want, s)
				delete(every, s)
			}
		}
		x := &evalCtx{}
		got := x.setIntersection(val{kind: kList, l: in}, 2)
		if len(got.l) != len(want) {
			t.Fatalf("iteration %d: %v, want %v", iter, plain(got), want)
		}
		for i := range want {
			if got.l[i].s != want[i] {
				t.Fatalf("iteration %d: %v, want %v", iter, plain(got), want)
			}
		}
	}
}
