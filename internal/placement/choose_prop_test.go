package placement

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// TestChooseProperties checks Choose over random queues, snapshots and
// latencies (seeded, so a failure names the seed that reproduces it):
// every candidate is ACTIVE, has an idle process, is allowed by the filter
// and the override and keeps the latency policy in force; every location
// that meets all of that is a candidate, exactly once; and the candidates
// are in the order of the priority criteria.
func TestChooseProperties(t *testing.T) {
	locs := []string{"us-west-2", "us-east-1", "eu-west-1", "ap-south-1", "custom-lab"}
	several := 0 // runs with more than one candidate: the order was checked
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 14))
		pick := func() []string {
			var out []string
			for _, l := range locs {
				if r.IntN(2) == 0 {
					out = append(out, l)
				}
			}
			return out
		}
		var snap []Destination
		for d := range r.IntN(4) {
			dest := Destination{FleetID: fmt.Sprintf("fleet-%d", d)}
			for _, l := range pick() {
				dest.Locations = append(dest.Locations, Location{Name: l, Active: r.IntN(5) > 0, Idle: r.IntN(3), Cost: float64(r.IntN(3))})
			}
			snap = append(snap, dest)
		}
		q := &api.GameSessionQueue{}
		if r.IntN(3) == 0 {
			q.FilterConfiguration = &api.FilterConfiguration{AllowedLocations: pick()}
		}
		if r.IntN(2) == 0 {
			all := slices.Clone(defaultOrder)
			r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
			q.PriorityConfiguration = &api.PriorityConfiguration{PriorityOrder: all[:r.IntN(5)], LocationOrder: pick()}
		}
		for range r.IntN(3) {
			p := policy(int32(20+r.IntN(200)), int32(r.IntN(20)))
			q.PlayerLatencyPolicies = append(q.PlayerLatencyPolicies, p)
		}
		var lats []api.PlayerLatency
		for p := range r.IntN(3) {
			for _, l := range pick() {
				lats = append(lats, lat(fmt.Sprint("p", p), l, float32(r.IntN(250))))
			}
		}
		var override *api.PriorityConfigurationOverride
		if r.IntN(3) == 0 {
			override = &api.PriorityConfigurationOverride{LocationOrder: pick(), PlacementFallbackStrategy: api.PlacementFallbackStrategyNone}
		}
		req := Request{Queue: q, Latencies: lats, Override: override, Fallback: r.IntN(2) == 0,
			Started: t0, Now: t0.Add(time.Duration(r.IntN(40)) * time.Second)}
		got := Choose(req, snap)

		// Which locations qualify, computed independently.
		limit, hasLimit := PolicyInForce(q.PlayerLatencyPolicies, req.Now.Sub(req.Started))
		perPlayer := map[string]map[string]float64{}
		for _, l := range lats {
			if perPlayer[*l.PlayerId] == nil {
				perPlayer[*l.PlayerId] = map[string]float64{}
			}
			perPlayer[*l.PlayerId][*l.RegionIdentifier] = float64(*l.LatencyInMilliseconds)
		}
		in := func(list []string, l string) bool { return slices.Contains(list, l) }
		want := map[string]bool{}
		for _, d := range snap {
			for _, l := range d.Locations {
				ok := l.Active && l.Idle > 0
				if q.FilterConfiguration != nil && len(q.FilterConfiguration.AllowedLocations) > 0 {
					ok = ok && in(q.FilterConfiguration.AllowedLocations, l.Name)
				}
				if override != nil && len(override.LocationOrder) > 0 && !req.Fallback {
					ok = ok && in(override.LocationOrder, l.Name)
				}
				if hasLimit && len(perPlayer) > 0 {
					for _, m := range perPlayer {
						v, known := m[l.Name]
						ok = ok && known && v <= float64(limit)
					}
				}
				if ok {
					want[d.FleetID+"/"+l.Name] = true
				}
			}
		}
		seen := map[string]bool{}
		for _, c := range got {
			k := c.FleetID + "/" + c.Location
			if seen[k] {
				t.Fatalf("seed %d: %s twice", seed, k)
			}
			seen[k] = true
			if !want[k] {
				t.Fatalf("seed %d: %s is a candidate but does not qualify", seed, k)
			}
		}
		if len(seen) != len(want) {
			t.Fatalf("seed %d: %d candidates, %d locations qualify: %v", seed, len(seen), len(want), strings.Join(keys(want), ","))
		}
		if len(got) > 1 {
			several++
		}
		order := priorityOrder(q, len(perPlayer) > 0)
		for i := 1; i < len(got); i++ {
			if less(order, &got[i], &got[i-1]) {
				t.Fatalf("seed %d: %+v sorts before %+v", seed, got[i], got[i-1])
			}
			a, b := got[i-1].Latency, got[i].Latency
			if order[0] == api.PriorityTypeLatency && (math.IsNaN(a) && !math.IsNaN(b) || a > b) {
				t.Fatalf("seed %d: LATENCY first, yet %v ms before %v ms", seed, a, b)
			}
			if order[0] == api.PriorityTypeDestination && got[i-1].Dest > got[i].Dest {
				t.Fatalf("seed %d: DESTINATION first, yet destination %d before %d", seed, got[i-1].Dest, got[i].Dest)
			}
		}
	}
	if several < 200 {
		t.Errorf("only %d of 2000 random cases had several candidates: the generator is too narrow", several)
	}
	t.Logf("%d of 2000 cases had several candidates", several)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
