package placement

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// Destination is one queue destination in a capacity snapshot: the fleet
// it resolves to (directly or through an alias) and the fleet's locations.
type Destination struct {
	FleetID   string
	Locations []Location // the fleet's locations, home first
}

// Location is one fleet location in a capacity snapshot.
type Location struct {
	Name string
	// Active: the fleet and the location are ACTIVE.
	Active bool
	// Idle counts the ready, connected processes that host no game session.
	Idle int
	// Cost is the price of an hour of an instance of the fleet (see
	// Config.Costs).
	Cost float64
}

// Request is what Choose decides on besides the snapshot.
type Request struct {
	Queue     *api.GameSessionQueue
	Latencies []api.PlayerLatency
	Override  *api.PriorityConfigurationOverride
	// Fallback: the override's LocationOrder was tried once and its
	// PlacementFallbackStrategy is DEFAULT_AFTER_SINGLE_PASS, so the queue's
	// own configuration applies now.
	Fallback bool
	// Failed are the fleet locations ("<fleet ID>/<location>") where an
	// earlier attempt's game session failed to activate: they are tried
	// after every other candidate.
	Failed []string
	// Started is when the placement started; Now the current time (the
	// latency policy in force depends on the time between them).
	Started, Now time.Time
}

// Candidate is a fleet location a placement may go to.
type Candidate struct {
	FleetID, Location string
	// Latency is the players' average latency to the location in
	// milliseconds (NaN without latency data for it).
	Latency float64
	Cost    float64
	// Dest and LocRank are the destination's index in the queue and the
	// location's rank in the location order.
	Dest, LocRank int
}

// defaultOrder is GameLift's default PriorityOrder.
var defaultOrder = []api.PriorityType{api.PriorityTypeLatency, api.PriorityTypeCost, api.PriorityTypeDestination, api.PriorityTypeLocation}

// Choose orders the fleet locations a placement may go to, best first. It
// drops locations that are not ACTIVE or have no idle process, that the
// queue's FilterConfiguration does not allow, that the override's
// LocationOrder does not name (until fallback), and that break the latency
// policy in force. The rest are sorted by the queue's PriorityOrder (the
// missing criteria appended in the default order LATENCY, COST,
// DESTINATION, LOCATION); without latency data and without a PriorityOrder
// it is destination order, then location order. Locations where an attempt
// of the placement failed (Request.Failed) come after the others, in the
// same order among themselves.
func Choose(req Request, snap []Destination) []Candidate {
	q := req.Queue
	var allowed map[string]bool
	if q.FilterConfiguration != nil && len(q.FilterConfiguration.AllowedLocations) > 0 {
		allowed = make(map[string]bool)
		for _, l := range q.FilterConfiguration.AllowedLocations {
			allowed[strings.ToLower(l)] = true
		}
	}
	var locOrder []string
	if q.PriorityConfiguration != nil {
		locOrder = q.PriorityConfiguration.LocationOrder
	}
	var only map[string]bool
	if o := req.Override; o != nil && len(o.LocationOrder) > 0 && !req.Fallback {
		locOrder = o.LocationOrder
		only = make(map[string]bool)
		for _, l := range o.LocationOrder {
			only[strings.ToLower(l)] = true
		}
	}
	rank := make(map[string]int, len(locOrder))
	for i, l := range locOrder {
		if _, dup := rank[strings.ToLower(l)]; !dup {
			rank[strings.ToLower(l)] = i
		}
	}
	lat := latencyTable(req.Latencies)
	limit, hasLimit := PolicyInForce(q.PlayerLatencyPolicies, req.Now.Sub(req.Started))

	var out []Candidate
	for di, d := range snap {
		for li, l := range d.Locations {
			name := strings.ToLower(l.Name)
			if !l.Active || l.Idle <= 0 || (allowed != nil && !allowed[name]) || (only != nil && !only[name]) {
				continue
			}
			avg, max, known := lat.of(name)
			if hasLimit && len(lat) > 0 && (!known || max > float64(limit)) {
				continue
			}
			c := Candidate{FleetID: d.FleetID, Location: l.Name, Latency: math.NaN(), Cost: l.Cost, Dest: di,
				LocRank: len(locOrder) + li}
			if known {
				c.Latency = avg
			}
			if r, ok := rank[name]; ok {
				c.LocRank = r
			}
			out = append(out, c)
		}
	}
	order := priorityOrder(q, len(lat) > 0)
	sort.SliceStable(out, func(i, j int) bool { return less(order, &out[i], &out[j]) })
	return demoteFailed(out, req.Failed)
}

// demoteFailed moves the candidates named in failed after the others,
// keeping the order within each group.
func demoteFailed(cands []Candidate, failed []string) []Candidate {
	if len(failed) == 0 || len(cands) == 0 {
		return cands
	}
	out := make([]Candidate, 0, len(cands))
	var last []Candidate
	for _, c := range cands {
		if slices.Contains(failed, c.FleetID+"/"+c.Location) {
			last = append(last, c)
		} else {
			out = append(out, c)
		}
	}
	return append(out, last...)
}

// priorityOrder is the order of criteria: the queue's, completed with the
// missing ones in default order; without latency data and without a
// PriorityOrder, destination then location.
func priorityOrder(q *api.GameSessionQueue, hasLatency bool) []api.PriorityType {
	var given []api.PriorityType
	if q.PriorityConfiguration != nil {
		given = q.PriorityConfiguration.PriorityOrder
	}
	if len(given) == 0 && !hasLatency {
		return []api.PriorityType{api.PriorityTypeDestination, api.PriorityTypeLocation}
	}
	out := slices.Clone(given)
	for _, p := range defaultOrder {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// less compares two candidates criterion by criterion. A location without
// latency data sorts after every location with some.
func less(order []api.PriorityType, a, b *Candidate) bool {
	for _, p := range order {
		switch p {
		case api.PriorityTypeLatency:
			an, bn := math.IsNaN(a.Latency), math.IsNaN(b.Latency)
			switch {
			case an && bn:
			case an != bn:
				return bn
			case a.Latency != b.Latency:
				return a.Latency < b.Latency
			}
		case api.PriorityTypeCost:
			if a.Cost != b.Cost {
				return a.Cost < b.Cost
			}
		case api.PriorityTypeDestination:
			if a.Dest != b.Dest {
				return a.Dest < b.Dest
			}
		case api.PriorityTypeLocation:
			if a.LocRank != b.LocRank {
				return a.LocRank < b.LocRank
			}
		}
	}
	return false
}

// PolicyInForce returns the maximum individual player latency the queue's
// policies allow after elapsed (and false when none applies any more, or
// there are none). Policies apply from the strictest (lowest limit) up,
// each for its PolicyDurationSeconds; one without a duration lasts until
// the placement times out.
func PolicyInForce(policies []api.PlayerLatencyPolicy, elapsed time.Duration) (int32, bool) {
	ps := slices.Clone(policies)
	sort.SliceStable(ps, func(i, j int) bool {
		return api.ToInt32(ps[i].MaximumIndividualPlayerLatencyMilliseconds) < api.ToInt32(ps[j].MaximumIndividualPlayerLatencyMilliseconds)
	})
	var end time.Duration
	for _, p := range ps {
		if p.PolicyDurationSeconds == nil || *p.PolicyDurationSeconds <= 0 {
			return api.ToInt32(p.MaximumIndividualPlayerLatencyMilliseconds), true
		}
		end += time.Duration(*p.PolicyDurationSeconds) * time.Second
		if elapsed < end {
			return api.ToInt32(p.MaximumIndividualPlayerLatencyMilliseconds), true
		}
	}
	return 0, false
}

// latencies holds, per player, the latency reported to each location
// (lower-case names).
type latencies map[string]map[string]float64

func latencyTable(in []api.PlayerLatency) latencies {
	out := make(latencies)
	for _, l := range in {
		if l.PlayerId == nil || l.RegionIdentifier == nil || l.LatencyInMilliseconds == nil {
			continue
		}
		p := out[*l.PlayerId]
		if p == nil {
			p = make(map[string]float64)
			out[*l.PlayerId] = p
		}
		p[strings.ToLower(*l.RegionIdentifier)] = float64(*l.LatencyInMilliseconds)
	}
	return out
}

// of returns the players' average and highest latency to loc; known is
// false when some player who reported latencies reported none for loc.
func (t latencies) of(loc string) (avg, max float64, known bool) {
	if len(t) == 0 {
		return 0, 0, false
	}
	var sum float64
	for _, p := range t {
		v, ok := p[loc]
		if !ok {
			return 0, 0, false
		}
		sum += v
		if v > max {
			max = v
		}
	}
	return sum / float64(len(t)), max, true
}
