package placement

import (
	"reflect"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

func lat(player, region string, ms float32) api.PlayerLatency {
	return api.PlayerLatency{PlayerId: api.String(player), RegionIdentifier: api.String(region), LatencyInMilliseconds: &ms}
}

func policy(maxMs, secs int32) api.PlayerLatencyPolicy {
	p := api.PlayerLatencyPolicy{MaximumIndividualPlayerLatencyMilliseconds: api.Int32(maxMs)}
	if secs > 0 {
		p.PolicyDurationSeconds = api.Int32(secs)
	}
	return p
}

// snap is two fleets: fleet-a (us-west-2 home, us-east-1) and fleet-b
// (eu-west-1 home, us-east-1), every location ACTIVE with a free process;
// fleet-b is cheaper.
func snap() []Destination {
	return []Destination{
		{FleetID: "fleet-a", Locations: []Location{{Name: "us-west-2", Active: true, Idle: 1, Cost: 2}, {Name: "us-east-1", Active: true, Idle: 1, Cost: 2}}},
		{FleetID: "fleet-b", Locations: []Location{{Name: "eu-west-1", Active: true, Idle: 1, Cost: 1}, {Name: "us-east-1", Active: true, Idle: 1, Cost: 1}}},
	}
}

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func TestChoose(t *testing.T) {
	full := snap()
	full[0].Locations[0].Idle = 0
	inactive := snap()
	inactive[1].Locations[0].Active = false
	tests := []struct {
		name     string
		queue    api.GameSessionQueue
		lats     []api.PlayerLatency
		override *api.PriorityConfigurationOverride
		fallback bool
		failed   []string
		elapsed  time.Duration
		snap     []Destination
		want     []string
	}{
		{name: "no latency data: destination order, then the fleet's location order",
			want: []string{"fleet-a/us-west-2", "fleet-a/us-east-1", "fleet-b/eu-west-1", "fleet-b/us-east-1"}},
		{name: "no free process or not ACTIVE: dropped", snap: full,
			want: []string{"fleet-a/us-east-1", "fleet-b/eu-west-1", "fleet-b/us-east-1"}},
		{name: "inactive location dropped", snap: inactive,
			want: []string{"fleet-a/us-west-2", "fleet-a/us-east-1", "fleet-b/us-east-1"}},
		{name: "latency data: lowest average first, then cost",
			lats: []api.PlayerLatency{lat("p1", "us-west-2", 90), lat("p1", "us-east-1", 20), lat("p1", "eu-west-1", 50),
				lat("p2", "us-west-2", 10), lat("p2", "us-east-1", 20), lat("p2", "eu-west-1", 150)},
			// us-east-1 20 (fleet-b cheaper), us-west-2 50, eu-west-1 100
			want: []string{"fleet-b/us-east-1", "fleet-a/us-east-1", "fleet-a/us-west-2", "fleet-b/eu-west-1"}},
		{name: "a location without data sorts last",
			lats: []api.PlayerLatency{lat("p1", "eu-west-1", 30), lat("p1", "us-west-2", 40)},
			want: []string{"fleet-b/eu-west-1", "fleet-a/us-west-2", "fleet-b/us-east-1", "fleet-a/us-east-1"}},
		{name: "latency policy drops slow locations and unknown ones",
			queue: api.GameSessionQueue{PlayerLatencyPolicies: []api.PlayerLatencyPolicy{policy(50, 10), policy(200, 0)}},
			lats:  []api.PlayerLatency{lat("p1", "eu-west-1", 30), lat("p1", "us-west-2", 100)},
			want:  []string{"fleet-b/eu-west-1"}},
		{name: "the policy relaxes after its duration",
			queue:   api.GameSessionQueue{PlayerLatencyPolicies: []api.PlayerLatencyPolicy{policy(200, 0), policy(50, 10)}},
			lats:    []api.PlayerLatency{lat("p1", "eu-west-1", 30), lat("p1", "us-west-2", 100)},
			elapsed: 10 * time.Second,
			want:    []string{"fleet-b/eu-west-1", "fleet-a/us-west-2"}},
		{name: "after the last timed policy: no limit",
			queue:   api.GameSessionQueue{PlayerLatencyPolicies: []api.PlayerLatencyPolicy{policy(50, 10)}},
			lats:    []api.PlayerLatency{lat("p1", "eu-west-1", 30), lat("p1", "us-west-2", 100)},
			elapsed: 11 * time.Second,
			want:    []string{"fleet-b/eu-west-1", "fleet-a/us-west-2", "fleet-b/us-east-1", "fleet-a/us-east-1"}},
		{name: "filter: allowed locations only",
			queue: api.GameSessionQueue{FilterConfiguration: &api.FilterConfiguration{AllowedLocations: []string{"us-east-1"}}},
			want:  []string{"fleet-a/us-east-1", "fleet-b/us-east-1"}},
		{name: "PriorityOrder COST first, missing criteria appended",
			queue: api.GameSessionQueue{PriorityConfiguration: &api.PriorityConfiguration{PriorityOrder: []api.PriorityType{api.PriorityTypeCost}}},
			want:  []string{"fleet-b/eu-west-1", "fleet-b/us-east-1", "fleet-a/us-west-2", "fleet-a/us-east-1"}},
		{name: "PriorityOrder LOCATION with LocationOrder",
			queue: api.GameSessionQueue{PriorityConfiguration: &api.PriorityConfiguration{
				PriorityOrder: []api.PriorityType{api.PriorityTypeLocation, api.PriorityTypeDestination},
				LocationOrder: []string{"us-east-1", "eu-west-1"}}},
			want: []string{"fleet-a/us-east-1", "fleet-b/us-east-1", "fleet-b/eu-west-1", "fleet-a/us-west-2"}},
		{name: "override: only its locations, in its order",
			queue: api.GameSessionQueue{PriorityConfiguration: &api.PriorityConfiguration{
				PriorityOrder: []api.PriorityType{api.PriorityTypeLocation}}},
			override: &api.PriorityConfigurationOverride{LocationOrder: []string{"eu-west-1", "us-west-2"},
				PlacementFallbackStrategy: api.PlacementFallbackStrategyNone},
			want: []string{"fleet-b/eu-west-1", "fleet-a/us-west-2"}},
		{name: "override after fallback: the queue's configuration",
			override: &api.PriorityConfigurationOverride{LocationOrder: []string{"eu-west-1"},
				PlacementFallbackStrategy: api.PlacementFallbackStrategyDefaultAfterSinglePass},
			fallback: true,
			want:     []string{"fleet-a/us-west-2", "fleet-a/us-east-1", "fleet-b/eu-west-1", "fleet-b/us-east-1"}},
		{name: "locations where an attempt failed come last, in their order",
			failed: []string{"fleet-a/us-west-2", "fleet-b/eu-west-1"},
			want:   []string{"fleet-a/us-east-1", "fleet-b/us-east-1", "fleet-a/us-west-2", "fleet-b/eu-west-1"}},
		{name: "failed locations after latency order",
			lats:   []api.PlayerLatency{lat("p1", "us-west-2", 10), lat("p1", "us-east-1", 20), lat("p1", "eu-west-1", 30)},
			failed: []string{"fleet-a/us-west-2"},
			want:   []string{"fleet-b/us-east-1", "fleet-a/us-east-1", "fleet-b/eu-west-1", "fleet-a/us-west-2"}},
		{name: "empty snapshot", snap: []Destination{}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.snap
			if s == nil {
				s = snap()
			}
			q := tt.queue
			got := Choose(Request{Queue: &q, Latencies: tt.lats, Override: tt.override, Fallback: tt.fallback,
				Failed: tt.failed, Started: t0, Now: t0.Add(tt.elapsed)}, s)
			var names []string
			for _, c := range got {
				names = append(names, c.FleetID+"/"+c.Location)
			}
			if !reflect.DeepEqual(names, tt.want) {
				t.Errorf("Choose = %v\nwant      %v", names, tt.want)
			}
		})
	}
}

func TestPolicyInForce(t *testing.T) {
	ps := []api.PlayerLatencyPolicy{policy(300, 0), policy(100, 5), policy(200, 10)}
	for _, tt := range []struct {
		elapsed time.Duration
		want    int32
		ok      bool
	}{{0, 100, true}, {4 * time.Second, 100, true}, {5 * time.Second, 200, true}, {14 * time.Second, 200, true},
		{15 * time.Second, 300, true}, {time.Hour, 300, true}} {
		got, ok := PolicyInForce(ps, tt.elapsed)
		if got != tt.want || ok != tt.ok {
			t.Errorf("after %s: %d %v, want %d %v", tt.elapsed, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := PolicyInForce(nil, 0); ok {
		t.Error("no policies: a limit in force")
	}
}
