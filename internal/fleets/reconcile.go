package fleets

import (
	"sort"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// fleetView is everything the reconciler decides one fleet's next actions
// from: a snapshot of its records and the time.
type fleetView struct {
	Fleet    *hosting.Fleet
	Since    map[string]time.Time // when each location entered its status (creation: when it began)
	Computes []computeView
	Now      time.Time
	// Replica is this Hoist replica: computes it hosts but whose instance
	// its provider does not run are lost.
	Replica string
	// BuildProblem, when not "", says why the fleet's build cannot be
	// placed on a new instance (missing, FAILED, ...).
	BuildProblem string
	// NotBefore holds, per location, when the next instance may start
	// after a failed one.
	NotBefore map[string]time.Time
	// ActivationTimeout bounds a location's creation; Retention how long a
	// TERMINATED fleet stays.
	ActivationTimeout time.Duration
	Retention         time.Duration
	// ActivatingSince is when each location being created entered
	// ACTIVATING; FirstReadyTimeout bounds how long it may stay there with
	// no process ready.
	ActivatingSince   map[string]time.Time
	FirstReadyTimeout time.Duration
	// Failures are, per location being created, its processes that ended
	// before any became ready.
	Failures map[string]creationFailures
}

// computeView is one compute with what the reconciler needs to know of it.
type computeView struct {
	hosting.Compute
	// Running: the provider runs its instance (meaningful only when the
	// compute's Host is this replica).
	Running bool
	// Ready: one of its server processes is ACTIVE.
	Ready bool
	// Sessions counts its game sessions that have not ended; Protected is
	// set when one of them is ACTIVE with FullProtection.
	Sessions  int
	Protected bool
	// Lost (why, when not "") and Draining: the state of its host, when
	// that is not this replica (InstanceHosts).
	Lost         string
	HostDraining bool
}

// draining reports whether the instance drains: its host does, or did
// when the instance was marked (an instance that drained keeps draining
// after its host is undrained: it was replaced, and runs no new process).
func (c computeView) draining() bool { return c.HostDraining || c.Draining }

// plan is what the reconciler decided for one fleet.
type plan struct {
	// Moves are location status changes, in order.
	Moves []move
	// Launch holds one location per instance to start.
	Launch []string
	// Stop are instances to stop (managed fleets).
	Stop []stopReq
	// Deregister are computes to remove at once (Anywhere fleets, and
	// instances that are lost).
	Deregister []string
	// Lost are instances of this replica that its provider no longer runs
	// (Hoist restarted): their processes are gone.
	Lost []string
	// Interrupted are instances whose host is lost (or no longer runs
	// them): their game sessions end INTERRUPTED.
	Interrupted []lostInstance
	// Drain are instances whose host drains, not yet marked so.
	Drain []string
	// Activate are PENDING instances with a ready process.
	Activate []string
	// Purge: the fleet was TERMINATED long enough ago to be forgotten.
	Purge bool
}

// move is a location status change; Code and Message, when set, are an
// event recording its cause, written before the status events.
type move struct {
	Location string
	To       api.FleetStatus
	Code     api.EventCode
	Message  string
	// Direct: go straight to To (Anywhere locations skip the creation
	// states).
	Direct bool
	// ProcessLog, when set, names the server process whose kept output
	// the cause event's PreSignedLogUrl serves.
	ProcessLog string
}

// lostInstance is an instance lost with its host, and why.
type lostInstance struct {
	ComputeName string
	Reason      string
}

// stopReq is an instance to stop and why.
type stopReq struct {
	ComputeName string
	Reason      string
}

// Reasons for stopping an instance.
const (
	reasonScaleIn  = "scale-in"
	reasonDeleting = "fleet deleting"
	reasonLocation = "location deleting"
	reasonError    = "location in ERROR"
	reasonDrained  = "its host was drained and it hosts no game session"
)

// decide returns the next actions for a fleet: pure, so that every rule is
// a table test.
func decide(v fleetView) plan {
	var p plan
	f := v.Fleet
	switch f.Attributes.Status {
	case api.FleetStatusTerminated:
		if t := f.Attributes.TerminationTime; t != nil && !v.Now.Before(t.Add(v.Retention)) {
			p.Purge = true
		}
		return p
	case api.FleetStatusDeleting:
		decideDeleting(v, &p)
		return p
	}
	live := v.liveComputes(&p)
	for _, l := range f.Locations {
		decideLocation(v, l, live[l.Location], &p)
	}
	return p
}

// liveComputes sorts out computes that are lost or can be activated, and
// returns the others by location.
func (v fleetView) liveComputes(p *plan) map[string][]computeView {
	anywhere := v.Fleet.Attributes.ComputeType == api.ComputeTypeAnywhere
	byLoc := map[string][]computeView{}
	for _, c := range v.Computes {
		if !anywhere && lost(v, c, p) {
			continue
		}
		if !anywhere && c.Status == api.ComputeStatusPending && c.Ready {
			p.Activate = append(p.Activate, c.ComputeName)
		}
		if c.HostDraining && !c.Draining {
			p.Drain = append(p.Drain, c.ComputeName)
		}
		byLoc[c.Location] = append(byLoc[c.Location], c)
	}
	return byLoc
}

// lost adds c to p's lost instances when it is lost: its host is lost (or
// no longer runs it), or it is this replica's and its provider does not
// run it.
func lost(v fleetView, c computeView, p *plan) bool {
	switch {
	case c.Lost != "":
		p.Interrupted = append(p.Interrupted, lostInstance{c.ComputeName, c.Lost})
	case c.Host == v.Replica && !c.Running:
		p.Lost = append(p.Lost, c.ComputeName)
	default:
		return false
	}
	return true
}

// decideDeleting stops every instance of a DELETING fleet; once none is
// left, the fleet is TERMINATED.
func decideDeleting(v fleetView, p *plan) {
	anywhere := v.Fleet.Attributes.ComputeType == api.ComputeTypeAnywhere
	left := 0
	for _, c := range v.Computes {
		switch {
		case anywhere:
			p.Deregister = append(p.Deregister, c.ComputeName)
		case lost(v, c, p):
		case c.Status != api.ComputeStatusTerminating:
			p.Stop = append(p.Stop, stopReq{c.ComputeName, reasonDeleting})
			left++
		default:
			left++
		}
	}
	if left == 0 {
		p.Moves = append(p.Moves, move{Location: v.Fleet.HomeLocation, To: api.FleetStatusTerminated})
	}
}

// decideLocation handles one location of a live fleet.
func decideLocation(v fleetView, l hosting.FleetLocation, cs []computeView, p *plan) {
	anywhere := v.Fleet.Attributes.ComputeType == api.ComputeTypeAnywhere
	switch {
	case l.Status == api.FleetStatusDeleting || l.Status == api.FleetStatusError:
		reason := reasonLocation
		if l.Status == api.FleetStatusError {
			reason = reasonError
		}
		left := stopAll(cs, anywhere, reason, p)
		if left == 0 && l.Status == api.FleetStatusDeleting {
			p.Moves = append(p.Moves, move{Location: l.Location, To: api.FleetStatusTerminated})
		}
	case l.Status == api.FleetStatusTerminated:
		stopAll(cs, anywhere, reasonLocation, p)
	case anywhere:
		if creating(l.Status) {
			p.Moves = append(p.Moves, move{Location: l.Location, To: api.FleetStatusActive, Direct: true})
		}
	case creating(l.Status):
		decideCreating(v, l, cs, p)
	default: // ACTIVE
		scale(v, l, cs, p)
	}
}

// stopAll stops every compute of a location and returns how many are left.
func stopAll(cs []computeView, anywhere bool, reason string, p *plan) int {
	for _, c := range cs {
		switch {
		case anywhere:
			p.Deregister = append(p.Deregister, c.ComputeName)
		case c.Status != api.ComputeStatusTerminating:
			p.Stop = append(p.Stop, stopReq{c.ComputeName, reason})
		}
	}
	if anywhere {
		return 0
	}
	return len(cs)
}

// decideCreating drives a location through creation: it goes to ERROR when
// the build cannot be used or creation took too long, else it gets its
// desired instances.
func decideCreating(v fleetView, l hosting.FleetLocation, cs []computeView, p *plan) {
	if m, failed := decideActivation(v, l); failed {
		p.Moves = append(p.Moves, m)
		return
	}
	since, ok := v.Since[l.Location]
	if l.Status != api.FleetStatusNew && ok && v.ActivationTimeout > 0 && !v.Now.Before(since.Add(v.ActivationTimeout)) {
		p.Moves = append(p.Moves, move{Location: l.Location, To: api.FleetStatusError,
			Code:    api.EventCodeFleetActivationFailed,
			Message: "location " + l.Location + " did not become ACTIVE within " + v.ActivationTimeout.String() + ": no server process became ready"})
		return
	}
	if v.BuildProblem != "" && len(cs) < int(l.Desired) {
		p.Moves = append(p.Moves, move{Location: l.Location, To: api.FleetStatusError,
			Code: api.EventCodeFleetBinaryDownloadFailed, Message: v.BuildProblem})
		return
	}
	scale(v, l, cs, p)
	if l.Status == api.FleetStatusNew && launches(p, l.Location) > 0 {
		p.Moves = append(p.Moves, move{Location: l.Location, To: api.FleetStatusDownloading})
	}
}

// launches counts the instances p starts in a location.
func launches(p *plan, loc string) int {
	n := 0
	for _, l := range p.Launch {
		if l == loc {
			n++
		}
	}
	return n
}

// scale starts or stops instances so that a location has its desired
// count. Scale-in stops the least busy unprotected instances first.
func scale(v fleetView, l hosting.FleetLocation, cs []computeView, p *plan) {
	var live []computeView
	for _, c := range cs {
		switch {
		case c.Status == api.ComputeStatusTerminating:
		case c.draining() && c.Sessions == 0:
			p.Stop = append(p.Stop, stopReq{c.ComputeName, reasonDrained})
		case !c.draining():
			live = append(live, c)
		}
	}
	want := int(l.Desired)
	switch {
	case len(live) < want:
		if v.BuildProblem != "" || v.Now.Before(v.NotBefore[l.Location]) {
			return
		}
		for range want - len(live) {
			p.Launch = append(p.Launch, l.Location)
		}
	case len(live) > want:
		for _, c := range victims(live, len(live)-want) {
			p.Stop = append(p.Stop, stopReq{c.ComputeName, reasonScaleIn})
		}
	}
}

// victims picks up to n instances to stop on scale-in: never one hosting an
// ACTIVE game session with FullProtection; first those not ready yet, then
// the ones with the fewest game sessions, the newest first.
func victims(cs []computeView, n int) []computeView {
	var cands []computeView
	for _, c := range cs {
		if !c.Protected {
			cands = append(cands, c)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.Ready != b.Ready {
			return !a.Ready
		}
		if a.Sessions != b.Sessions {
			return a.Sessions < b.Sessions
		}
		if !a.CreationTime.Equal(b.CreationTime) {
			return a.CreationTime.After(b.CreationTime)
		}
		return a.ComputeName < b.ComputeName
	})
	if len(cands) > n {
		cands = cands[:n]
	}
	return cands
}
