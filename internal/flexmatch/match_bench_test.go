package flexmatch

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/flexmatch/flexbench"
)

// benchRuleSet is the benchmark's rule set (flexbench.RuleSet: 5v5, skill
// batchDistance 50 widened to 100 after 10 s, maxLatency 150).
func benchRuleSet(t testing.TB) *RuleSet { return mustParse(t, string(flexbench.RuleSet)) }

// benchTickets turns the benchmark's players into single-player tickets:
// ticket i ("t" and i in six digits) holds player i and starts at
// start(i).
func benchTickets(ps []flexbench.Player, start func(i int) time.Time) []Ticket {
	pool := make([]Ticket, len(ps))
	for i, p := range ps {
		skill := p.Skill
		pool[i] = Ticket{ID: benchID(i), Start: start(i), Players: []Player{{ID: p.ID,
			Attributes: map[string]Value{"skill": {N: &skill}}, Latencies: p.Latencies}}}
	}
	return pool
}

func benchID(i int) string { return "t" + strconv.Itoa(1_000_000 + i)[1:] }

// benchIndex is the inverse of benchID.
func benchIndex(id string) int {
	i, _ := strconv.Atoi(id[1:])
	return i
}

// benchPool is the one-pass pool of n tickets: flexbench's players (seed
// 1), with ages uniform over [0, 20 s) (seed 2), so that about half are
// past the expansion.
func benchPool(n int) ([]flexbench.Player, []Ticket) {
	ps := flexbench.Players(n, 1)
	r := rand.New(rand.NewPCG(2, 0))
	ages := make([]time.Duration, n)
	for i := range ages {
		ages[i] = time.Duration(r.Int64N(int64(20 * time.Second)))
	}
	return ps, benchTickets(ps, func(i int) time.Time { return t0.Add(-ages[i]) })
}

// benchPass measures one pass of rs over the pool of n tickets and
// reports matched/s (matched tickets per second of pass), tickets/s (pool
// tickets per second of pass), the share matched, and the share of the
// pass's work budget it spent (work-share, 1 or more when the pass stopped
// at its budget).
func benchPass(b *testing.B, rs *RuleSet, n int) {
	_, pool := benchPool(n)
	var res Result
	for b.Loop() {
		res = rs.Match(pool, t0, 1)
	}
	matched := len(matchedIDs(res))
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(matched)/sec, "matched/s")
	b.ReportMetric(float64(n)/sec, "tickets/s")
	b.ReportMetric(float64(matched)/float64(n), "matched-share")
	b.ReportMetric(float64(res.Work)/PassWork, "work-share")
}

func BenchmarkMatch10k(b *testing.B)  { benchPass(b, benchRuleSet(b), 10_000) }
func BenchmarkMatch100k(b *testing.B) { benchPass(b, benchRuleSet(b), 100_000) }

// leftovers are the players of pool's tickets (found by benchID).
func leftovers(ps []flexbench.Player, pool []Ticket) []flexbench.Player {
	out := make([]flexbench.Player, len(pool))
	for k, t := range pool {
		out[k] = ps[benchIndex(t.ID)]
	}
	return out
}

// BenchmarkMatchAll100k runs passes over the one-pass pool of 100,000,
// taking the matched tickets out and moving time on by a second after
// each, until no match can form any more: a pass formed none and every
// ticket left is past the expansion. It reports s-to-all, the matcher's
// time summed over the passes up to the last that formed a match, the
// passes, the share matched, and missed: the tickets left that the
// brute-force check (flexbench.Placeable at the final band) could still
// place, that is the matchable tickets not matched.
func BenchmarkMatchAll100k(b *testing.B) {
	rs := benchRuleSet(b)
	ps, full := benchPool(100_000)
	var toAll time.Duration
	var passes, matched, missed int
	for b.Loop() {
		pool, now := full, t0
		var spent time.Duration
		toAll, passes, matched = 0, 0, 0
		for {
			start := time.Now()
			res := rs.Match(pool, now, uint64(passes))
			spent += time.Since(start)
			passes++
			if len(res.Matches) > 0 {
				toAll = spent
				matched += len(matchedIDs(res))
			} else if !slices.ContainsFunc(pool, func(t Ticket) bool { return now.Sub(t.Start) < flexbench.ExpansionAfter }) {
				break
			}
			b.StopTimer()
			pool = without(pool, res)
			b.StartTimer()
			now = now.Add(time.Second)
		}
		b.StopTimer()
		missed = len(flexbench.Placeable(leftovers(ps, pool), flexbench.FinalDistance))
		b.StartTimer()
	}
	b.ReportMetric(toAll.Seconds(), "s-to-all")
	b.ReportMetric(float64(passes), "passes")
	b.ReportMetric(float64(matched)/float64(len(full)), "matched-share")
	b.ReportMetric(float64(missed), "missed")
}

// feed is the fed-over-time scenario of BenchmarkMatchFeed100k.
type feed struct {
	rate     float64       // tickets per second of simulated time
	interval time.Duration // between the starts of two passes
	timeout  time.Duration // a ticket not matched by then is given up
}

// feedResult is what a feed simulation measured, in simulated time.
type feedResult struct {
	waits      []time.Duration // of the matchable tickets
	matched    int
	toAll      time.Duration // from the first arrival to the last match
	lastArrive time.Duration
}

// simulate runs the feed: ticket i arrives at i/rate; a pass starts every
// interval (or as soon as the previous one ends, when it took longer) over
// the tickets arrived by then, at that simulated time; its matches take
// effect when it ends: its start plus the pass's measured time. A
// ticket's wait is from its arrival to then. It ends once every ticket
// has arrived and no ticket left could be placed (flexbench.Placeable at
// the final band), or a timeout after the last arrival; the matchable
// tickets still waiting then count with their wait so far.
func simulate(rs *RuleSet, ps []flexbench.Player, f feed) feedResult {
	arrive := func(i int) time.Duration { return time.Duration(float64(i) / f.rate * float64(time.Second)) }
	all := benchTickets(ps, func(i int) time.Time { return t0.Add(arrive(i)) })
	var res feedResult
	res.lastArrive = arrive(len(all) - 1)
	var pool []Ticket
	next, clock := 0, time.Duration(0)
	for pass := uint64(0); ; pass++ {
		for next < len(all) && arrive(next) <= clock {
			pool = append(pool, all[next])
			next++
		}
		start := time.Now()
		out := rs.Match(pool, t0.Add(clock), pass)
		end := clock + time.Since(start)
		for _, id := range matchedIDs(out) {
			res.waits = append(res.waits, end-arrive(benchIndex(id)))
			res.matched++
			res.toAll = end
		}
		pool = without(pool, out)
		if next == len(all) && (len(out.Matches) == 0 && len(flexbench.Placeable(leftovers(ps, pool), flexbench.FinalDistance)) == 0 ||
			end > res.lastArrive+f.timeout) {
			for _, k := range flexbench.Placeable(leftovers(ps, pool), flexbench.FinalDistance) {
				res.waits = append(res.waits, end-arrive(benchIndex(pool[k].ID)))
			}
			return res
		}
		clock = max(clock+f.interval, end)
	}
}

// benchFeed feeds n tickets at 10,000 a second of simulated time to
// passes every 200 ms (the matchmaking loop's interval) and reports, in
// simulated time, the p50, p99 and longest wait of the matchable tickets,
// the share of them that waited for the expansion, s-to-all (from the
// first arrival to the last match) and the share matched.
func benchFeed(b *testing.B, n int) {
	rs := benchRuleSet(b)
	ps := flexbench.Players(n, 1)
	var r feedResult
	for b.Loop() {
		r = simulate(rs, ps, feed{rate: 10_000, interval: 200 * time.Millisecond, timeout: 30 * time.Second})
	}
	slices.Sort(r.waits)
	q := func(p float64) float64 { return r.waits[min(len(r.waits)-1, int(p*float64(len(r.waits))))].Seconds() }
	late, _ := slices.BinarySearch(r.waits, flexbench.ExpansionAfter)
	b.ReportMetric(q(0.5), "p50-wait-s")
	b.ReportMetric(q(0.99), "p99-wait-s")
	b.ReportMetric(r.waits[len(r.waits)-1].Seconds(), "max-wait-s")
	b.ReportMetric(float64(len(r.waits)-late)/float64(len(r.waits)), "expanded-share")
	b.ReportMetric(r.toAll.Seconds(), "s-to-all")
	b.ReportMetric(float64(r.matched)/float64(len(ps)), "matched-share")
	b.ReportMetric(float64(len(r.waits)-r.matched), "missed")
}

func BenchmarkMatchFeed10k(b *testing.B)  { benchFeed(b, 10_000) }
func BenchmarkMatchFeed100k(b *testing.B) { benchFeed(b, 100_000) }

// BenchmarkMatchLarge10k: one pass over the 10,000-ticket pool on a
// large-match rule set (balanced strategy, two teams of 100, batchDistance
// 100 on skill, maxLatency 150).
func BenchmarkMatchLarge10k(b *testing.B) {
	benchPass(b, mustParse(b, ruleSet(`{"name":"red","minPlayers":100,"maxPlayers":100},{"name":"blue","minPlayers":100,"maxPlayers":100}`,
		`{"name":"band","type":"batchDistance","batchAttribute":"skill","maxDistance":100},`+lat150,
		`"algorithm":{"strategy":"balanced","balancedAttribute":"skill","batchingPreference":"largestPopulation"}`)), 10_000)
}

// BenchmarkMatchUnfair10k: one pass over the 10,000-ticket pool on the
// benchmark's rule set with an extra team-fairness rule that most
// candidates fail (every team's average skill within 0.0001 of the
// match's), so that most anchors exhaust their bounded retries.
func BenchmarkMatchUnfair10k(b *testing.B) {
	body := strings.Replace(string(flexbench.RuleSet), `{"name": "FastConnection"`,
		`{"name": "FairTeams", "type": "distance", "measurements": ["avg(teams[*].players.attributes[skill])"],
		  "referenceValue": "avg(flatten(teams[*].players.attributes[skill]))", "maxDistance": 0.0001},
		 {"name": "FastConnection"`, 1)
	if body == string(flexbench.RuleSet) {
		b.Fatal("the rule set has no FastConnection rule")
	}
	benchPass(b, mustParse(b, body), 10_000)
}
