package flexmatch

import (
	"testing"
	"time"
)

// The benchmark of issue 15: single-player tickets with random skill
// (uniform over 0-1000) and latencies (uniform 20-300 ms) to four
// regions, ages up to 20 s, on testdata/bench-5v5.json (5v5, skill
// batchDistance 10 widened to 50 after 10 s, maxLatency 150).
func benchPool(n int) []Ticket {
	return genPool(1, poolSpec{n: n, skill: 1000, regions: benchRegions, maxAge: 20 * time.Second}, t0)
}

// benchPass measures one matcher pass over a fresh pool of n tickets and
// reports tickets/s (pool tickets per second of pass) and matched/s.
func benchPass(b *testing.B, n int) {
	rs := loadRuleSet(b, "testdata/bench-5v5.json")
	pool := benchPool(n)
	b.ResetTimer()
	matched := 0
	for b.Loop() {
		res := rs.Match(pool, t0, 1)
		matched = len(matchedIDs(res))
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(n)/sec, "tickets/s")
	b.ReportMetric(float64(matched)/sec, "matched/s")
	b.ReportMetric(float64(matched)/float64(n), "matched-share")
}

func BenchmarkMatch10k(b *testing.B)  { benchPass(b, 10_000) }
func BenchmarkMatch100k(b *testing.B) { benchPass(b, 100_000) }

// BenchmarkMatchAll100k runs passes over the 100,000-ticket pool, taking
// the matched tickets out after each and moving time on by a second, until
// a pass forms no match; it reports the matcher's total time (s-to-all),
// the passes, and the share matched.
func BenchmarkMatchAll100k(b *testing.B) {
	rs := loadRuleSet(b, "testdata/bench-5v5.json")
	full := benchPool(100_000)
	var total time.Duration
	var passes, matched int
	for b.Loop() {
		pool := full
		total, passes, matched = 0, 0, 0
		now := t0
		for {
			start := time.Now()
			res := rs.Match(pool, now, uint64(passes))
			total += time.Since(start)
			passes++
			if len(res.Matches) == 0 {
				break
			}
			matched += len(matchedIDs(res))
			b.StopTimer()
			pool = without(pool, res)
			b.StartTimer()
			now = now.Add(time.Second)
		}
	}
	b.ReportMetric(total.Seconds(), "s-to-all")
	b.ReportMetric(float64(passes), "passes")
	b.ReportMetric(float64(matched)/float64(len(full)), "matched-share")
}

// BenchmarkMatchLarge10k: one pass over 10,000 single-player tickets
// on a large-match rule set (balanced strategy, two teams of 100,
// batchDistance 100 on skill, maxLatency 150).
func BenchmarkMatchLarge10k(b *testing.B) {
	rs := mustParse(b, ruleSet(`{"name":"red","minPlayers":100,"maxPlayers":100},{"name":"blue","minPlayers":100,"maxPlayers":100}`,
		`{"name":"band","type":"batchDistance","batchAttribute":"skill","maxDistance":100},`+lat150,
		`"algorithm":{"strategy":"balanced","balancedAttribute":"skill","batchingPreference":"largestPopulation"}`))
	pool := benchPool(10_000)
	matched := 0
	for b.Loop() {
		matched = len(matchedIDs(rs.Match(pool, t0, 1)))
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(len(pool))/sec, "tickets/s")
	b.ReportMetric(float64(matched)/float64(len(pool)), "matched-share")
}
