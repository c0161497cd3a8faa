package flexmatch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// poolSpec says how genPool draws a pool.
type poolSpec struct {
	n         int           // tickets
	maxParty  int           // players per ticket: 1..maxParty
	skill     float64       // skills uniform in [0, skill)
	regions   []string      // latencies uniform in [20, 300) to each
	noLatency float64       // share of tickets without latency data
	maxAge    time.Duration // ages uniform in [0, maxAge)
	strAttr   []string      // values of a string attribute "mode" (none: not set)
}

// genPool draws a pool of tickets from a seeded generator.
func genPool(seed uint64, s poolSpec, now time.Time) []Ticket {
	r := rand.New(rand.NewPCG(seed, 7))
	pool := make([]Ticket, s.n)
	np := 0
	for i := range pool {
		t := &pool[i]
		t.ID = fmt.Sprintf("t%06d", i)
		if s.maxAge > 0 {
			t.Start = now.Add(-time.Duration(r.Int64N(int64(s.maxAge))))
		} else {
			t.Start = now
		}
		size := 1
		if s.maxParty > 1 {
			size = 1 + r.IntN(s.maxParty)
		}
		noLat := r.Float64() < s.noLatency
		mode := ""
		if len(s.strAttr) > 0 {
			mode = s.strAttr[r.IntN(len(s.strAttr))]
		}
		t.Players = make([]Player, size)
		for k := range t.Players {
			p := &t.Players[k]
			p.ID = fmt.Sprintf("p%07d", np)
			np++
			skill := r.Float64() * s.skill
			p.Attributes = map[string]Value{"skill": {N: &skill}}
			if mode != "" {
				p.Attributes["mode"] = Value{S: &mode}
			}
			if len(s.regions) > 0 && !noLat {
				p.Latencies = make(map[string]int, len(s.regions))
				for _, reg := range s.regions {
					p.Latencies[reg] = 20 + r.IntN(280)
				}
			}
		}
	}
	return pool
}

// checkResult checks the matcher's invariants on a result: every ticket
// of a match is in the pool and in no other match, each ticket's players
// are on one team (a backfill ticket's seated players on their own), every
// team is within the bounds of the view at the match's age, a match holds
// at most one backfill ticket and, with one, another ticket, every rule
// holds, and every ticket of the pool is matched or held.
func checkResult(t testing.TB, rs *RuleSet, pool []Ticket, now time.Time, res Result) {
	t.Helper()
	byID := map[string]*Ticket{}
	for i := range pool {
		byID[pool[i].ID] = &pool[i]
	}
	seen := map[string]bool{}
	for mi, m := range res.Matches {
		c := &candidate{teams: make([][]member, len(rs.teams))}
		if len(m.Teams) != len(rs.teams) {
			t.Fatalf("match %d: %d teams, want %d", mi, len(m.Teams), len(rs.teams))
		}
		playerTeam := map[string]int{}
		for ti, tm := range m.Teams {
			if tm.Name != rs.teams[ti].name {
				t.Fatalf("match %d: team %d named %q, want %q", mi, ti, tm.Name, rs.teams[ti].name)
			}
			for _, p := range tm.Players {
				if _, dup := playerTeam[p]; dup {
					t.Fatalf("match %d: player %s twice", mi, p)
				}
				playerTeam[p] = ti
			}
		}
		backfills, players := 0, 0
		for n, id := range m.Tickets {
			tk := byID[id]
			if tk == nil {
				t.Fatalf("match %d: ticket %s not in the pool", mi, id)
			}
			if seen[id] {
				t.Fatalf("match %d: ticket %s in two matches", mi, id)
			}
			seen[id] = true
			if tk.Backfill {
				backfills++
			}
			c.tickets = append(c.tickets, tk)
			team := -1
			for k := range tk.Players {
				p := &tk.Players[k]
				ti, ok := playerTeam[p.ID]
				if !ok {
					t.Fatalf("match %d: player %s of ticket %s on no team", mi, p.ID, id)
				}
				players++
				if tk.Backfill && p.Team != "" {
					if rs.teams[ti].name != p.Team {
						t.Fatalf("match %d: seated player %s moved from %s to %s", mi, p.ID, p.Team, rs.teams[ti].name)
					}
				} else {
					if team >= 0 && team != ti {
						t.Fatalf("match %d: party %s split over teams", mi, id)
					}
					team = ti
				}
				c.teams[ti] = append(c.teams[ti], member{p: p, ticket: n})
			}
		}
		if players != len(playerTeam) {
			t.Fatalf("match %d: %d players on teams, %d in its tickets", mi, len(playerTeam), players)
		}
		if backfills > 1 || (backfills == 1 && len(m.Tickets) < 2) {
			t.Fatalf("match %d: %d backfill tickets among %d", mi, backfills, len(m.Tickets))
		}
		v := rs.viewAt(rs.age(c, now))
		for ti, ts := range v.teams {
			if n := len(c.teams[ti]); n < ts.min || n > ts.max {
				t.Fatalf("match %d: team %s has %d players, bounds %d-%d", mi, ts.name, n, ts.min, ts.max)
			}
		}
		if failed := v.evaluate(c, nil); len(failed) > 0 {
			t.Fatalf("match %d: rules %v fail", mi, failed)
		}
	}
	for id := range res.Held {
		if seen[id] {
			t.Fatalf("ticket %s matched and held", id)
		}
		if byID[id] == nil {
			t.Fatalf("held ticket %s not in the pool", id)
		}
	}
	for id := range byID {
		if _, held := res.Held[id]; !held && !seen[id] {
			t.Fatalf("ticket %s neither matched nor held", id)
		}
	}
}

// matchedIDs lists every matched ticket, sorted.
func matchedIDs(res Result) []string {
	var ids []string
	for _, m := range res.Matches {
		ids = append(ids, m.Tickets...)
	}
	slices.Sort(ids)
	return ids
}
