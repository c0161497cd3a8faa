package fleets

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// view builds a fleetView of an EC2 fleet whose home location us-west-2
// has status st and desired count desired.
func view(st api.FleetStatus, desired int32, comps ...computeView) fleetView {
	f := &hosting.Fleet{Attributes: api.FleetAttributes{FleetId: api.String("fleet-1"), Status: st, ComputeType: api.ComputeTypeEc2},
		HomeLocation: "us-west-2",
		Locations:    []hosting.FleetLocation{{Location: "us-west-2", Status: st, Desired: desired, Max: 10}}}
	if st == api.FleetStatusDeleting || st == api.FleetStatusTerminated {
		f.Locations[0].Status = st
	}
	return fleetView{Fleet: f, Computes: comps, Now: t0, Replica: "r1", ActivationTimeout: time.Hour,
		Retention: time.Hour, Since: map[string]time.Time{"us-west-2": t0.Add(-time.Minute)}}
}

// comp is a running managed instance of this replica.
func comp(name string, st api.ComputeStatus, mod ...func(*computeView)) computeView {
	c := computeView{Compute: hosting.Compute{FleetID: "fleet-1", ComputeName: name, Location: "us-west-2", Status: st,
		Host: "r1", CreationTime: t0}, Running: true}
	for _, m := range mod {
		m(&c)
	}
	return c
}

func ready(c *computeView)     { c.Ready = true }
func protected(c *computeView) { c.Protected, c.Sessions = true, 1 }
func busy(n int) func(*computeView) {
	return func(c *computeView) { c.Sessions = n }
}
func newer(d time.Duration) func(*computeView) {
	return func(c *computeView) { c.CreationTime = t0.Add(d) }
}

func TestDecide(t *testing.T) {
	tests := map[string]struct {
		v    fleetView
		mod  func(*fleetView)
		want plan
	}{
		"new fleet starts its first instance": {
			v:    view(api.FleetStatusNew, 1),
			want: plan{Launch: []string{"us-west-2"}, Moves: []move{{Location: "us-west-2", To: api.FleetStatusDownloading}}},
		},
		"new fleet without its build fails": {
			v:   view(api.FleetStatusNew, 1),
			mod: func(v *fleetView) { v.BuildProblem = "build gone" },
			want: plan{Moves: []move{{Location: "us-west-2", To: api.FleetStatusError,
				Code: api.EventCodeFleetBinaryDownloadFailed, Message: "build gone"}}},
		},
		"creating fleet waits for its instance": {
			v: view(api.FleetStatusValidating, 1, comp("i-1", api.ComputeStatusPending)),
		},
		"creating fleet times out": {
			v:   view(api.FleetStatusActivating, 1, comp("i-1", api.ComputeStatusPending)),
			mod: func(v *fleetView) { v.Since["us-west-2"] = t0.Add(-time.Hour) },
			want: plan{Moves: []move{{Location: "us-west-2", To: api.FleetStatusError, Code: api.EventCodeFleetActivationFailed,
				Message: "location us-west-2 did not become ACTIVE within 1h0m0s: no server process became ready"}}},
		},
		"ready instance becomes active": {
			v:    view(api.FleetStatusActive, 1, comp("i-1", api.ComputeStatusPending, ready)),
			want: plan{Activate: []string{"i-1"}},
		},
		"scale out": {
			v:    view(api.FleetStatusActive, 3, comp("i-1", api.ComputeStatusActive, ready)),
			want: plan{Launch: []string{"us-west-2", "us-west-2"}},
		},
		"scale out waits for backoff": {
			v:   view(api.FleetStatusActive, 2, comp("i-1", api.ComputeStatusActive, ready)),
			mod: func(v *fleetView) { v.NotBefore = map[string]time.Time{"us-west-2": t0.Add(time.Second)} },
		},
		"terminating instances do not count": {
			v:    view(api.FleetStatusActive, 1, comp("i-1", api.ComputeStatusTerminating)),
			want: plan{Launch: []string{"us-west-2"}},
		},
		"scale in picks idle, then newest": {
			v: view(api.FleetStatusActive, 1,
				comp("i-1", api.ComputeStatusActive, ready, busy(1)),
				comp("i-2", api.ComputeStatusActive, ready),
				comp("i-3", api.ComputeStatusActive, ready, newer(time.Second))),
			want: plan{Stop: []stopReq{{"i-3", reasonScaleIn}, {"i-2", reasonScaleIn}}},
		},
		"scale in prefers instances not ready": {
			v: view(api.FleetStatusActive, 1,
				comp("i-1", api.ComputeStatusActive, ready),
				comp("i-2", api.ComputeStatusPending)),
			want: plan{Stop: []stopReq{{"i-2", reasonScaleIn}}},
		},
		"scale in spares protected sessions": {
			v: view(api.FleetStatusActive, 0,
				comp("i-1", api.ComputeStatusActive, ready, protected),
				comp("i-2", api.ComputeStatusActive, ready, busy(3))),
			want: plan{Stop: []stopReq{{"i-2", reasonScaleIn}}},
		},
		"lost instance": {
			v:    view(api.FleetStatusActive, 1, comp("i-1", api.ComputeStatusActive, func(c *computeView) { c.Running = false })),
			want: plan{Lost: []string{"i-1"}, Launch: []string{"us-west-2"}},
		},
		"another replica's instance is not lost": {
			v: view(api.FleetStatusActive, 1, comp("i-1", api.ComputeStatusActive, func(c *computeView) {
				c.Running, c.Host = false, "r2"
			})),
		},
		"instance of a lost host is interrupted and replaced": {
			v: view(api.FleetStatusActive, 1, comp("i-1", api.ComputeStatusActive, func(c *computeView) {
				c.Host, c.Running, c.Lost = "host-a", false, "its host host-a was lost"
			})),
			want: plan{Interrupted: []lostInstance{{"i-1", "its host host-a was lost"}}, Launch: []string{"us-west-2"}},
		},
		"instance of a live host is kept": {
			v: view(api.FleetStatusActive, 1, comp("i-1", api.ComputeStatusActive, func(c *computeView) {
				c.Host, c.Running = "host-a", false
			})),
		},
		"instance of a lost host is forgotten when deleting": {
			v: view(api.FleetStatusDeleting, 1, comp("i-1", api.ComputeStatusActive, func(c *computeView) {
				c.Host, c.Lost = "host-a", "its host host-a was lost"
			})),
			want: plan{Interrupted: []lostInstance{{"i-1", "its host host-a was lost"}},
				Moves: []move{{Location: "us-west-2", To: api.FleetStatusTerminated}}},
		},
		"draining host: its instance is marked, replaced, and kept while busy": {
			v: view(api.FleetStatusActive, 1, comp("i-1", api.ComputeStatusActive, ready, busy(1), func(c *computeView) {
				c.Host, c.HostDraining = "host-a", true
			})),
			want: plan{Drain: []string{"i-1"}, Launch: []string{"us-west-2"}},
		},
		"draining host: an idle instance stops": {
			v: view(api.FleetStatusActive, 1,
				comp("i-1", api.ComputeStatusActive, ready, func(c *computeView) {
					c.Host, c.HostDraining, c.Draining = "host-a", true, true
				}),
				comp("i-2", api.ComputeStatusActive, ready)),
			want: plan{Stop: []stopReq{{"i-1", reasonDrained}}},
		},
		"undrained host: an instance that drained keeps draining, the fleet keeps its replacement": {
			v: view(api.FleetStatusActive, 1,
				comp("i-1", api.ComputeStatusActive, ready, busy(1), func(c *computeView) {
					c.Host, c.Draining = "host-a", true
				}),
				comp("i-2", api.ComputeStatusActive, ready)),
		},
		"undrained host: an idle instance that drained stops": {
			v: view(api.FleetStatusActive, 1,
				comp("i-1", api.ComputeStatusActive, ready, func(c *computeView) {
					c.Host, c.Draining = "host-a", true
				}),
				comp("i-2", api.ComputeStatusActive, ready)),
			want: plan{Stop: []stopReq{{"i-1", reasonDrained}}},
		},
		"deleting fleet stops its instances": {
			v:    view(api.FleetStatusDeleting, 1, comp("i-1", api.ComputeStatusActive), comp("i-2", api.ComputeStatusTerminating)),
			want: plan{Stop: []stopReq{{"i-1", reasonDeleting}}},
		},
		"deleted fleet without instances terminates": {
			v:    view(api.FleetStatusDeleting, 1),
			want: plan{Moves: []move{{Location: "us-west-2", To: api.FleetStatusTerminated}}},
		},
		"error fleet stops its instances": {
			v:    view(api.FleetStatusError, 1, comp("i-1", api.ComputeStatusPending)),
			want: plan{Stop: []stopReq{{"i-1", reasonError}}},
		},
		"terminated fleet is kept for its retention": {
			v: view(api.FleetStatusTerminated, 0),
			mod: func(v *fleetView) {
				v.Fleet.Attributes.TerminationTime = api.Time(t0.Add(-time.Hour + time.Millisecond))
			},
		},
		"terminated fleet is purged after its retention": {
			v:    view(api.FleetStatusTerminated, 0),
			mod:  func(v *fleetView) { v.Fleet.Attributes.TerminationTime = api.Time(t0.Add(-time.Hour)) },
			want: plan{Purge: true},
		},
		"anywhere location activates at once": {
			v: view(api.FleetStatusNew, 0),
			mod: func(v *fleetView) {
				v.Fleet.Attributes.ComputeType = api.ComputeTypeAnywhere
			},
			want: plan{Moves: []move{{Location: "us-west-2", To: api.FleetStatusActive, Direct: true}}},
		},
		"anywhere computes are deregistered when deleting": {
			v: view(api.FleetStatusDeleting, 0, comp("box", api.ComputeStatusActive)),
			mod: func(v *fleetView) {
				v.Fleet.Attributes.ComputeType = api.ComputeTypeAnywhere
			},
			want: plan{Deregister: []string{"box"}, Moves: []move{{Location: "us-west-2", To: api.FleetStatusTerminated}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := tc.v
			if tc.mod != nil {
				tc.mod(&v)
			}
			if got := decide(v); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decide\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDecideRemoteLocationDeleting(t *testing.T) {
	v := view(api.FleetStatusActive, 1, comp("i-1", api.ComputeStatusActive, ready))
	v.Fleet.Locations = append(v.Fleet.Locations, hosting.FleetLocation{Location: "eu-west-1", Status: api.FleetStatusDeleting, Desired: 1})
	c := comp("i-2", api.ComputeStatusActive, ready)
	c.Location = "eu-west-1"
	v.Computes = append(v.Computes, c)
	if got := decide(v); !reflect.DeepEqual(got, plan{Stop: []stopReq{{"i-2", reasonLocation}}}) {
		t.Fatalf("decide = %+v", got)
	}
	v.Computes = v.Computes[:1]
	if got := decide(v); !reflect.DeepEqual(got, plan{Moves: []move{{Location: "eu-west-1", To: api.FleetStatusTerminated}}}) {
		t.Fatalf("decide without instances = %+v", got)
	}
}

func TestPath(t *testing.T) {
	tests := []struct {
		from, to api.FleetStatus
		want     []api.FleetStatus
	}{
		{api.FleetStatusNew, api.FleetStatusDownloading, []api.FleetStatus{api.FleetStatusDownloading}},
		{api.FleetStatusDownloading, api.FleetStatusActive, []api.FleetStatus{api.FleetStatusValidating,
			api.FleetStatusBuilding, api.FleetStatusActivating, api.FleetStatusActive}},
		{api.FleetStatusActivating, api.FleetStatusDownloading, nil},
		{api.FleetStatusActive, api.FleetStatusActive, nil},
		{api.FleetStatusActive, api.FleetStatusDeleting, []api.FleetStatus{api.FleetStatusDeleting}},
		{api.FleetStatusBuilding, api.FleetStatusError, []api.FleetStatus{api.FleetStatusError}},
	}
	for _, tc := range tests {
		if got := path(tc.from, tc.to); !slices.Equal(got, tc.want) {
			t.Errorf("path(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestTransitionEvents(t *testing.T) {
	tests := []struct {
		home bool
		to   api.FleetStatus
		want api.EventCode
	}{
		{true, api.FleetStatusActivating, api.EventCodeFleetStateActivating},
		{true, api.FleetStatusTerminated, api.EventCodeFleetDeleted},
		{true, api.FleetStatusDeleting, api.EventCodeGenericEvent},
		{false, api.FleetStatusDownloading, api.EventCodeLocationStateCreating},
		{false, api.FleetStatusActive, api.EventCodeLocationStateActive},
		{false, api.FleetStatusTerminated, api.EventCodeLocationStateDeleted},
	}
	for _, tc := range tests {
		if got := transitionEvent(tc.home, tc.to); got != tc.want {
			t.Errorf("transitionEvent(%v, %s) = %s, want %s", tc.home, tc.to, got, tc.want)
		}
	}
}
