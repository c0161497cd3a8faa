package matchmaking

import (
	"slices"
	"sync"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/flexmatch"
)

// ruleTally counts, for each SEARCHING ticket, how the rule set's rules
// went for the best candidate match each matcher pass found for it without
// matching it (flexmatch.Result.Held): a rule the candidate broke failed,
// every other rule passed. It gives the ruleEvaluationMetrics of a ticket
// that ends without a match (MatchmakingTimedOut, MatchmakingCancelled),
// every rule of the rule set listed, as GameLift's events do.
//
// It is diagnostic data in the memory of the replica that runs the
// matchmaker, not state: nothing is decided from it, and after a restart
// or a move of the matchmaker's lease it counts from zero again (a ticket
// ended on another replica reports zeros, or no metrics when that replica
// never ran a pass of its configuration).
type ruleTally struct {
	mu sync.Mutex
	m  map[string]*configTally // configuration name -> tally
}

// configTally is one configuration's tally: its rule set's rules and, per
// ticket ID, each rule's passed and failed counts (in rules' order).
type configTally struct {
	rules   []string
	tickets map[string][]flexmatch.RuleMetric
}

// prune is how many tickets beyond the pool a configuration's tally may
// keep (those matched or ended meanwhile) before it drops them.
const prune = 1024

// pass records one matcher pass over pool: each held ticket's candidate.
func (r *ruleTally) pass(config string, rules []string, pool []flexmatch.Ticket, held map[string][]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]*configTally{}
	}
	ct := r.m[config]
	if ct == nil || !slices.Equal(ct.rules, rules) {
		ct = &configTally{rules: rules, tickets: map[string][]flexmatch.RuleMetric{}}
		r.m[config] = ct
	}
	for id, broke := range held {
		if !anyRule(broke, rules) {
			continue // no candidate, or one refused before its rules were evaluated
		}
		ms := ct.tickets[id]
		if ms == nil {
			ms = make([]flexmatch.RuleMetric, len(rules))
			for i, name := range rules {
				ms[i].Rule = name
			}
			ct.tickets[id] = ms
		}
		for i := range ms {
			if slices.Contains(broke, ms[i].Rule) {
				ms[i].Failed++
			} else {
				ms[i].Passed++
			}
		}
	}
	if len(ct.tickets) > len(pool)+prune {
		keep := make(map[string][]flexmatch.RuleMetric, len(pool))
		for _, t := range pool {
			if ms, ok := ct.tickets[t.ID]; ok {
				keep[t.ID] = ms
			}
		}
		ct.tickets = keep
	}
}

// anyRule reports whether names holds one of rules.
func anyRule(names, rules []string) bool {
	for _, n := range names {
		if slices.Contains(rules, n) {
			return true
		}
	}
	return false
}

// metrics returns a ticket's counts (every rule, zeros for a ticket never
// held) and forgets them; nil when this replica knows nothing of the
// configuration.
func (r *ruleTally) metrics(config, ticketID string) []flexmatch.RuleMetric {
	r.mu.Lock()
	defer r.mu.Unlock()
	ct := r.m[config]
	if ct == nil {
		return nil
	}
	if ms, ok := ct.tickets[ticketID]; ok {
		delete(ct.tickets, ticketID)
		return ms
	}
	out := make([]flexmatch.RuleMetric, len(ct.rules))
	for i, name := range ct.rules {
		out[i].Rule = name
	}
	return out
}

// keep drops the tallies of configurations that no longer exist.
func (r *ruleTally) keep(cfgs []*api.MatchmakingConfiguration) {
	names := make(map[string]bool, len(cfgs))
	for _, c := range cfgs {
		names[api.ToString(c.Name)] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for n := range r.m {
		if !names[n] {
			delete(r.m, n)
		}
	}
}
