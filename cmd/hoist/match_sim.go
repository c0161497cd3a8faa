package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hoistgg/hoist/internal/flexmatch"
)

// simOptions are a simulation's settings.
type simOptions struct {
	RequestTimeout time.Duration
	Tick           time.Duration
	Seed           uint64
}

// Ticket outcomes, named as DescribeMatchmaking names the statuses.
const (
	statusCompleted = "COMPLETED"
	statusTimedOut  = "TIMED_OUT"
)

// simReport is what a simulation found; --json prints it as is. Times are
// in seconds from the start of the simulation.
type simReport struct {
	RuleSet               string       `json:"ruleSet"`
	TickSeconds           float64      `json:"tickSeconds"`
	RequestTimeoutSeconds float64      `json:"requestTimeoutSeconds"`
	Seed                  uint64       `json:"seed"`
	Passes                int          `json:"passes"`
	Matches               []simMatch   `json:"matches"`
	Tickets               []simOutcome `json:"tickets"`
	Summary               simSummary   `json:"summary"`
}

// simMatch is a match formed during the simulation.
type simMatch struct {
	Number  int         `json:"match"`
	At      float64     `json:"atSeconds"`
	Tickets []string    `json:"tickets"`
	Teams   []simTeam   `json:"teams"`
	Metrics []simMetric `json:"ruleEvaluationMetrics"`
	at      time.Duration
}

type simTeam struct {
	Name    string   `json:"name"`
	Players []string `json:"players"`
}

type simMetric struct {
	Rule   string `json:"ruleName"`
	Passed int    `json:"passedCount"`
	Failed int    `json:"failedCount"`
}

// simOutcome is what became of a ticket.
type simOutcome struct {
	TicketID  string  `json:"ticketId"`
	Submitted float64 `json:"submittedAtSeconds"`
	// Status is COMPLETED (matched) or TIMED_OUT.
	Status string  `json:"status"`
	Ended  float64 `json:"endedAtSeconds"`
	Wait   float64 `json:"waitSeconds"`
	// Match is the number of the ticket's match (0: none).
	Match int `json:"match,omitempty"`
	// HeldBy are the rules that held the ticket back, in the order they
	// first did.
	HeldBy []simHeld `json:"heldBy"`

	submitted, ended time.Duration
}

// simHeld is a rule that held a ticket back: for how long (from each pass
// that named it to the next pass that did not, or to the ticket's end),
// and in how many passes.
type simHeld struct {
	Rule    string  `json:"rule"`
	Seconds float64 `json:"seconds"`
	Passes  int     `json:"passes"`

	held, since time.Duration
	open        bool
}

// simSummary sums the simulation up. Waits are those of the matched
// tickets (a timed-out ticket's wait is the request timeout).
type simSummary struct {
	Tickets  int     `json:"tickets"`
	Matches  int     `json:"matches"`
	Matched  int     `json:"matched"`
	TimedOut int     `json:"timedOut"`
	WaitP50  float64 `json:"waitP50Seconds"`
	WaitP99  float64 `json:"waitP99Seconds"`
	WaitMax  float64 `json:"waitMaxSeconds"`

	p50, p99, max time.Duration
}

// simOrigin is the simulated clock's start: any fixed time, so that a
// simulation is reproducible.
var simOrigin = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// invariantError is the matcher breaking its contract (a bug in Hoist,
// not in the input).
type invariantError struct{ msg string }

func (e *invariantError) Error() string { return "the matcher broke its contract: " + e.msg }

// matcher is what simulate runs: a *flexmatch.RuleSet (tests use fakes).
type matcher interface {
	Name() string
	Match(pool []flexmatch.Ticket, now time.Time, seed uint64) flexmatch.Result
}

// simulate runs the matcher over simulated time: a pass every o.Tick from
// 0, each over the tickets submitted at or before it that are neither
// matched nor timed out. A ticket times out at its submission time plus
// o.RequestTimeout (a pass at that very time no longer sees it). tickets
// are in submission order (as parseTickets returns them).
func simulate(rs matcher, tickets []simTicket, o simOptions) (*simReport, error) {
	rep := &simReport{RuleSet: rs.Name(), TickSeconds: secs(o.Tick), RequestTimeoutSeconds: secs(o.RequestTimeout),
		Seed: o.Seed, Matches: []simMatch{}, Tickets: make([]simOutcome, len(tickets))}
	held := make([][]*simHeld, len(tickets))
	index := make(map[string]int, len(tickets))
	for i, t := range tickets {
		index[t.ID] = i
		rep.Tickets[i] = simOutcome{TicketID: t.ID, submitted: t.Submitted, Submitted: secs(t.Submitted), HeldBy: []simHeld{}}
	}
	end := func(i int, status string, at time.Duration) {
		out := &rep.Tickets[i]
		out.Status, out.ended = status, at
		for _, h := range held[i] {
			if h.open {
				h.held += at - h.since
				h.open = false
			}
			out.HeldBy = append(out.HeldBy, simHeld{Rule: h.Rule, Seconds: secs(h.held), Passes: h.Passes, held: h.held})
		}
	}
	var (
		next      int   // the next ticket to enter the pool
		searching []int // the pool, in submission order
		inPool    = make([]bool, len(tickets))
		pool      []flexmatch.Ticket
	)
	for pass := int64(0); next < len(tickets) || len(searching) > 0; pass++ {
		now := time.Duration(pass) * o.Tick
		if len(searching) == 0 && tickets[next].Submitted > now {
			// Nothing to match until the next submission: skip to the
			// first pass at or after it.
			pass = int64((tickets[next].Submitted+o.Tick-1)/o.Tick) - 1
			continue
		}
		kept := searching[:0]
		for _, i := range searching {
			if deadline := tickets[i].Submitted + o.RequestTimeout; deadline <= now {
				end(i, statusTimedOut, deadline)
				inPool[i] = false
			} else {
				kept = append(kept, i)
			}
		}
		searching = kept
		for ; next < len(tickets) && tickets[next].Submitted <= now; next++ {
			if deadline := tickets[next].Submitted + o.RequestTimeout; deadline <= now {
				end(next, statusTimedOut, deadline) // timed out between two passes
				continue
			}
			searching = append(searching, next)
			inPool[next] = true
		}
		if len(searching) == 0 {
			continue
		}
		pool = pool[:0]
		for _, i := range searching {
			t := tickets[i]
			pool = append(pool, flexmatch.Ticket{ID: t.ID, Start: simOrigin.Add(t.Submitted), Players: t.Players})
		}
		res := rs.Match(pool, simOrigin.Add(now), o.Seed+uint64(pass)*0x9E3779B97F4A7C15)
		rep.Passes++
		for _, m := range res.Matches {
			sm := simMatch{Number: len(rep.Matches) + 1, At: secs(now), at: now, Tickets: slices.Clone(m.Tickets),
				Teams: make([]simTeam, len(m.Teams)), Metrics: make([]simMetric, len(m.Metrics))}
			if len(m.Tickets) == 0 {
				return rep, &invariantError{fmt.Sprintf("match %d at %v has no tickets", sm.Number, now)}
			}
			for _, id := range m.Tickets {
				i, ok := index[id]
				if !ok || !inPool[i] {
					return rep, &invariantError{fmt.Sprintf("match %d at %v holds ticket %q, which is not in the pool", sm.Number, now, id)}
				}
				inPool[i] = false
				end(i, statusCompleted, now)
				rep.Tickets[i].Match = sm.Number
			}
			for k, t := range m.Teams {
				sm.Teams[k] = simTeam{Name: t.Name, Players: append([]string{}, t.Players...)}
			}
			for k, r := range m.Metrics {
				sm.Metrics[k] = simMetric{Rule: r.Rule, Passed: r.Passed, Failed: r.Failed}
			}
			rep.Matches = append(rep.Matches, sm)
		}
		kept = searching[:0]
		for _, i := range searching {
			if !inPool[i] {
				continue
			}
			kept = append(kept, i)
			rules := res.Held[tickets[i].ID]
			for _, h := range held[i] {
				if h.open && !slices.Contains(rules, h.Rule) {
					h.held += now - h.since
					h.open = false
				}
			}
			for _, r := range rules {
				k := slices.IndexFunc(held[i], func(h *simHeld) bool { return h.Rule == r })
				if k < 0 {
					held[i] = append(held[i], &simHeld{Rule: r})
					k = len(held[i]) - 1
				}
				h := held[i][k]
				h.Passes++
				if !h.open {
					h.open, h.since = true, now
				}
			}
		}
		searching = kept
	}
	var waits []time.Duration
	for i := range rep.Tickets {
		out := &rep.Tickets[i]
		out.Ended = secs(out.ended)
		out.Wait = secs(out.ended - out.submitted)
		switch out.Status {
		case statusCompleted:
			rep.Summary.Matched++
			waits = append(waits, out.ended-out.submitted)
		case statusTimedOut:
			rep.Summary.TimedOut++
		}
	}
	s := &rep.Summary
	s.Tickets, s.Matches = len(tickets), len(rep.Matches)
	if len(waits) > 0 {
		slices.Sort(waits)
		s.p50, s.p99, s.max = percentile(waits, 0.50), percentile(waits, 0.99), waits[len(waits)-1]
		s.WaitP50, s.WaitP99, s.WaitMax = secs(s.p50), secs(s.p99), secs(s.max)
	}
	return rep, nil
}

// percentile is the nearest-rank percentile of sorted values: the smallest
// value with at least p of all values at or below it.
func percentile(sorted []time.Duration, p float64) time.Duration {
	k := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// print writes the report for people.
func (rep *simReport) print(w io.Writer) {
	name := rep.RuleSet
	if name == "" {
		name = "(unnamed)"
	}
	fmt.Fprintf(w, "rule set %s: %d tickets, a pass every %v, request timeout %v, seed %d, %d passes\n",
		name, len(rep.Tickets), dur(rep.TickSeconds), dur(rep.RequestTimeoutSeconds), rep.Seed, rep.Passes)

	fmt.Fprintf(w, "\nmatches (%d)\n", len(rep.Matches))
	for _, m := range rep.Matches {
		fmt.Fprintf(w, "  match %d at %v: tickets %s\n", m.Number, m.at, strings.Join(m.Tickets, ", "))
		for _, t := range m.Teams {
			fmt.Fprintf(w, "    %s: %s\n", t.Name, strings.Join(t.Players, ", "))
		}
		if len(m.Metrics) > 0 {
			var ms []string
			for _, r := range m.Metrics {
				ms = append(ms, fmt.Sprintf("%s %d passed %d failed", r.Rule, r.Passed, r.Failed))
			}
			fmt.Fprintf(w, "    rules: %s\n", strings.Join(ms, "; "))
		}
	}

	var heldLines []string
	for _, t := range rep.Tickets {
		if len(t.HeldBy) == 0 {
			continue
		}
		var hs []string
		for _, h := range t.HeldBy {
			hs = append(hs, fmt.Sprintf("%s for %v (%d passes)", h.Rule, h.held, h.Passes))
		}
		heldLines = append(heldLines, fmt.Sprintf("  %s: %s\n", t.TicketID, strings.Join(hs, ", ")))
	}
	fmt.Fprintf(w, "\nheld back by rules (%d tickets)\n", len(heldLines))
	for _, l := range heldLines {
		fmt.Fprint(w, l)
	}

	fmt.Fprintln(w, "\ntickets")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ticket\tsubmitted\tstatus\tended\twait\tmatch")
	for _, t := range rep.Tickets {
		match := "-"
		if t.Match > 0 {
			match = fmt.Sprint(t.Match)
		}
		fmt.Fprintf(tw, "  %s\t%v\t%s\t%v\t%v\t%s\n", t.TicketID, t.submitted, t.Status, t.ended, t.ended-t.submitted, match)
	}
	tw.Flush()

	s := rep.Summary
	fmt.Fprintf(w, "\nsummary: %d tickets, %d matched in %s, %d timed out", s.Tickets, s.Matched, plural(s.Matches, "match", "matches"), s.TimedOut)
	if s.Matched > 0 {
		fmt.Fprintf(w, "; wait of matched tickets p50 %v, p99 %v, max %v", s.p50, s.p99, s.max)
	}
	fmt.Fprintln(w)
}

// dur turns seconds back into a duration for printing.
func dur(seconds float64) time.Duration { return time.Duration(math.Round(seconds * 1e9)) }

// plural returns "1 match", "2 matches".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// secs is d in seconds, as the closest float64 to the exact value (so that
// 1.636s prints as 1.636, as time.Duration.Seconds does not promise).
func secs(d time.Duration) float64 { return float64(d) / 1e9 }
