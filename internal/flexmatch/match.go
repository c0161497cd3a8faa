package flexmatch

import (
	"sort"
	"time"
)

// Match runs one matcher pass over the pool of searching tickets at time
// now. The same (pool, now, seed) always gives the same result. No ticket is
// in two matches.
func (rs *RuleSet) Match(pool []Ticket, now time.Time, seed uint64) Result {
	ts := append([]Ticket(nil), pool...)
	sort.SliceStable(ts, func(i, j int) bool {
		if !ts[i].Start.Equal(ts[j].Start) {
			return ts[i].Start.Before(ts[j].Start)
		}
		return ts[i].ID < ts[j].ID
	})
	var res Result
	for len(ts) > 0 {
		m := Match{Teams: make([]Team, len(rs.teams))}
		for i, t := range rs.teams {
			m.Teams[i].Name = t.name
		}
		c := &candidate{teams: make([][]member, len(rs.teams))}
		var rest []Ticket
		for _, t := range ts {
			placed := false
			for i, spec := range rs.teams {
				if len(m.Teams[i].Players) < spec.min && len(m.Teams[i].Players)+len(t.Players) <= spec.max {
					for k, p := range t.Players {
						m.Teams[i].Players = append(m.Teams[i].Players, p.ID)
						c.teams[i] = append(c.teams[i], member{p: &t.Players[k], ticket: len(c.tickets)})
					}
					c.tickets = append(c.tickets, &t)
					m.Tickets = append(m.Tickets, t.ID)
					placed = true
					break
				}
			}
			if !placed {
				rest = append(rest, t)
			}
		}
		full := len(m.Tickets) > 0
		for i, spec := range rs.teams {
			if len(m.Teams[i].Players) < spec.min {
				full = false
			}
		}
		if !full || len(rs.viewAt(rs.age(c, now)).evaluate(c, nil)) > 0 {
			break
		}
		res.Matches = append(res.Matches, m)
		ts = rest
	}
	return res
}
