package fleetiq

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

const (
	active   = api.GameServerInstanceStatusActive
	draining = api.GameServerInstanceStatusDraining
	spotTerm = api.GameServerInstanceStatusSpotTerminating
)

// The oracle: where ClaimGameServer places a claim, stated as pure
// functions. claim.go follows the same order through the store's indexes
// (instance Key "<status>/1" by Rank, minus the busy count, ascending, then game server Key
// "A/<instance>" by Rank ascending); TestIndexFollowsOrder checks that the
// two agree.

// candidate is what placement knows of an instance.
type candidate struct {
	ID        string
	Status    api.GameServerInstanceStatus
	Available int
	Busy      int
}

// instanceBefore reports whether a claim prefers instance a to b, given the
// statuses it may use (both must be usable):
//  1. status, in the order of statuses (ACTIVE before DRAINING);
//  2. more busy (claimed or utilized) game servers first, to pack game
//     sessions onto few instances and leave others empty for scale-in;
//  3. instance ID ascending (byte-wise).
func instanceBefore(a, b candidate, statuses []api.GameServerInstanceStatus) bool {
	if ia, ib := slices.Index(statuses, a.Status), slices.Index(statuses, b.Status); ia != ib {
		return ia < ib
	}
	if a.Busy != b.Busy {
		return a.Busy > b.Busy
	}
	return a.ID < b.ID
}

// pickInstance returns the instance a claim takes a game server from: the
// first, in instanceBefore's order, of those with an available game server
// and a usable status.
func pickInstance(cands []candidate, statuses []api.GameServerInstanceStatus) (candidate, bool) {
	var best candidate
	found := false
	for _, c := range cands {
		if c.Available <= 0 || !slices.Contains(statuses, c.Status) {
			continue
		}
		if !found || instanceBefore(c, best, statuses) {
			best, found = c, true
		}
	}
	return best, found
}

// serverBefore reports whether a claim prefers game server a to b on the
// same instance: the earliest registered first, then game server ID
// ascending.
func serverBefore(a, b *serverRec) bool {
	if a.Registered != b.Registered {
		return a.Registered < b.Registered
	}
	return a.ID < b.ID
}

func TestClaimStatuses(t *testing.T) {
	tests := map[string]struct {
		filter  *api.ClaimFilterOption
		want    []api.GameServerInstanceStatus
		invalid bool
	}{
		"no filter":            {nil, []api.GameServerInstanceStatus{active}, false},
		"empty list":           {&api.ClaimFilterOption{}, []api.GameServerInstanceStatus{active}, false},
		"active":               {&api.ClaimFilterOption{InstanceStatuses: []api.FilterInstanceStatus{"ACTIVE"}}, []api.GameServerInstanceStatus{active}, false},
		"active and draining":  {&api.ClaimFilterOption{InstanceStatuses: []api.FilterInstanceStatus{"DRAINING", "ACTIVE"}}, []api.GameServerInstanceStatus{active, draining}, false},
		"repeated active":      {&api.ClaimFilterOption{InstanceStatuses: []api.FilterInstanceStatus{"ACTIVE", "ACTIVE"}}, []api.GameServerInstanceStatus{active}, false},
		"draining only":        {&api.ClaimFilterOption{InstanceStatuses: []api.FilterInstanceStatus{"DRAINING"}}, nil, true},
		"active missing twice": {&api.ClaimFilterOption{InstanceStatuses: []api.FilterInstanceStatus{"DRAINING", "DRAINING"}}, nil, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := claimStatuses(tc.filter)
			if tc.invalid {
				if !isErr[*api.InvalidRequestException](err) {
					t.Fatalf("err = %v, want InvalidRequestException", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("claimStatuses = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestPickInstance(t *testing.T) {
	activeOnly := []api.GameServerInstanceStatus{active}
	both := []api.GameServerInstanceStatus{active, draining}
	tests := map[string]struct {
		cands    []candidate
		statuses []api.GameServerInstanceStatus
		want     string // "" for none
	}{
		"nothing": {nil, activeOnly, ""},
		"busiest first": {[]candidate{
			{"i-a", active, 3, 1}, {"i-b", active, 1, 3}, {"i-c", active, 5, 0},
		}, activeOnly, "i-b"},
		"ties by instance ID": {[]candidate{
			{"i-c", active, 1, 2}, {"i-a", active, 1, 2}, {"i-b", active, 1, 2},
		}, activeOnly, "i-a"},
		"full instances are skipped": {[]candidate{
			{"i-a", active, 0, 9}, {"i-b", active, 1, 1},
		}, activeOnly, "i-b"},
		"draining not allowed": {[]candidate{
			{"i-a", draining, 4, 4}, {"i-b", active, 1, 0},
		}, activeOnly, "i-b"},
		"active before a busier draining": {[]candidate{
			{"i-a", draining, 4, 4}, {"i-b", active, 1, 0},
		}, both, "i-b"},
		"draining when no active has room": {[]candidate{
			{"i-a", draining, 1, 0}, {"i-b", active, 0, 5}, {"i-c", draining, 1, 2},
		}, both, "i-c"},
		"spot terminating never": {[]candidate{
			{"i-a", spotTerm, 5, 5},
		}, both, ""},
		"only draining, not allowed": {[]candidate{
			{"i-a", draining, 5, 0},
		}, activeOnly, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := pickInstance(tc.cands, tc.statuses)
			if (tc.want == "") == ok || (ok && got.ID != tc.want) {
				t.Fatalf("pickInstance = %v %v, want %q", got.ID, ok, tc.want)
			}
		})
	}
}

func TestServerBefore(t *testing.T) {
	tests := map[string]struct {
		a, b serverRec
		want bool
	}{
		"older first":         {serverRec{ID: "z", Registered: 1}, serverRec{ID: "a", Registered: 2}, true},
		"newer later":         {serverRec{ID: "a", Registered: 2}, serverRec{ID: "z", Registered: 1}, false},
		"same time: by ID":    {serverRec{ID: "a", Registered: 1}, serverRec{ID: "b", Registered: 1}, true},
		"same time: by ID 2":  {serverRec{ID: "b", Registered: 1}, serverRec{ID: "a", Registered: 1}, false},
		"identical: not less": {serverRec{ID: "a", Registered: 1}, serverRec{ID: "a", Registered: 1}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := serverBefore(&tc.a, &tc.b); got != tc.want {
				t.Errorf("serverBefore = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestProgress(t *testing.T) {
	base := time.Unix(1000, 0).UTC()
	step, keep := time.Second, time.Minute
	tests := map[string]struct {
		status api.GameServerGroupStatus
		after  time.Duration
		step   time.Duration
		want   api.GameServerGroupStatus
		since  time.Duration
		gone   bool
	}{
		"new at once":               {statusNew, 0, step, statusNew, 0, false},
		"new just before a step":    {statusNew, step - time.Millisecond, step, statusNew, 0, false},
		"activating after one step": {statusNew, step, step, statusActivating, step, false},
		"active after two steps":    {statusNew, 2 * step, step, statusActive, 2 * step, false},
		"active stays active":       {statusNew, time.Hour, step, statusActive, 2 * step, false},
		"no step: active at once":   {statusNew, 0, 0, statusActive, 0, false},
		"delete scheduled":          {statusDeleteScheduled, 0, step, statusDeleteScheduled, 0, false},
		"deleting":                  {statusDeleteScheduled, step, step, statusDeleting, step, false},
		"deleted":                   {statusDeleteScheduled, 2 * step, step, statusDeleted, 2 * step, false},
		"deleted, kept":             {statusDeleteScheduled, 2*step + keep - time.Millisecond, step, statusDeleted, 2 * step, false},
		"deleted, gone":             {statusDeleteScheduled, 2*step + keep, step, statusDeleted, 2 * step, true},
		"no step: deleted at once":  {statusDeleteScheduled, 0, 0, statusDeleted, 0, false},
		"error stays":               {api.GameServerGroupStatusError, time.Hour, step, api.GameServerGroupStatusError, 0, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := progress(tc.status, base, base.Add(tc.after), tc.step, keep)
			want := groupState{status: tc.want, since: base.Add(tc.since), gone: tc.gone}
			if got != want {
				t.Errorf("progress = %+v, want %+v", got, want)
			}
		})
	}
}

func TestDueAt(t *testing.T) {
	base := time.Unix(1000, 0).UTC()
	tests := map[string]struct {
		status api.GameServerGroupStatus
		want   time.Time
	}{
		"new":        {statusNew, base.Add(time.Second)},
		"activating": {statusActivating, base.Add(time.Second)},
		"active":     {statusActive, time.Time{}},
		"deleting":   {statusDeleting, base.Add(time.Second)},
		"deleted":    {statusDeleted, base.Add(time.Minute)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := dueAt(tc.status, base, time.Second, time.Minute); !got.Equal(tc.want) {
				t.Errorf("dueAt = %v, want %v", got, tc.want)
			}
		})
	}
}
