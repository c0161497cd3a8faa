// Package flexbench is the FlexMatch benchmark scenario shared by the
// matcher's benchmarks (internal/flexmatch) and the end-to-end load tool
// (e2e/matchload): the rule set, the player generator, and the brute-force
// check that says which unmatched tickets a valid match could still hold.
// It does not depend on the matcher, so that the matcher's own tests can
// use it.
package flexbench

import (
	"cmp"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// RuleSet is the benchmark's rule set (bench-5v5.json): two teams of 5, a
// batchDistance rule on the number attribute "skill" with maxDistance 50
// widened to 100 after 10 seconds, and a latency rule with maxLatency 150.
//
//go:embed bench-5v5.json
var RuleSet []byte

// The rule set's figures, for the brute-force check (a test checks them
// against RuleSet).
const (
	MatchSize      = 10               // players in a match (5v5)
	FirstDistance  = 50.0             // the skill band before the expansion
	FinalDistance  = 100.0            // the skill band after it
	ExpansionAfter = 10 * time.Second // when the expansion applies
	MaxLatency     = 150              // ms, to one region for every player
)

// Regions are the regions players report latencies to.
var Regions = []string{"us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1"}

// Player is a generated player (each is a single-player ticket).
type Player struct {
	ID    string
	Skill float64
	// Latencies are in milliseconds, one for every region.
	Latencies map[string]int
}

// Players returns n players, the same for a seed: skill uniform over
// [0, 1000); one region drawn uniformly is the player's home, with a
// latency uniform over [20, 150) ms, and every other region a latency
// uniform over [20, 300) ms (under MaxLatency with a chance of 130/280).
// Every player thus has at least one region under MaxLatency.
func Players(n int, seed uint64) []Player {
	rng := rand.New(rand.NewPCG(seed, 0x6d61746368))
	ps := make([]Player, n)
	for i := range ps {
		skill := rng.Float64() * 1000
		home := rng.IntN(len(Regions))
		lat := make(map[string]int, len(Regions))
		for k, r := range Regions {
			if k == home {
				lat[r] = 20 + rng.IntN(MaxLatency-20)
			} else {
				lat[r] = 20 + rng.IntN(280)
			}
		}
		ps[i] = Player{ID: fmt.Sprintf("player-%07d", i), Skill: skill, Latencies: lat}
	}
	return ps
}

// Placeable returns the indexes (into ps, ascending) of the players that
// matches of MatchSize players within a skill band of maxDistance, all
// under MaxLatency to one region, can hold, formed greedily region by
// region from the lowest skill up. Ten players within the band in a region
// exist exactly when ten consecutive ones (by skill) are, so an empty
// result means no valid match can be formed from ps at that band; a
// non-empty one is a lower bound of what a perfect matcher could place.
// (Taking players out never makes another region's band denser, so one
// sweep over the regions is enough.)
func Placeable(ps []Player, maxDistance float64) []int {
	used := make([]bool, len(ps))
	var out, idx []int
	for _, r := range Regions {
		idx = idx[:0]
		for i, p := range ps {
			if l, ok := p.Latencies[r]; ok && l <= MaxLatency && !used[i] {
				idx = append(idx, i)
			}
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Or(cmp.Compare(ps[a].Skill, ps[b].Skill), a-b) })
		for k := 0; k+MatchSize <= len(idx); {
			if ps[idx[k+MatchSize-1]].Skill-ps[idx[k]].Skill > maxDistance {
				k++
				continue
			}
			for _, i := range idx[k : k+MatchSize] {
				used[i] = true
				out = append(out, i)
			}
			k += MatchSize
		}
	}
	slices.Sort(out)
	return out
}
