package fleetiq

import (
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// Group statuses, short names.
const (
	statusNew             = api.GameServerGroupStatusNew
	statusActivating      = api.GameServerGroupStatusActivating
	statusActive          = api.GameServerGroupStatusActive
	statusDeleteScheduled = api.GameServerGroupStatusDeleteScheduled
	statusDeleting        = api.GameServerGroupStatusDeleting
	statusDeleted         = api.GameServerGroupStatusDeleted
)

// nextStatus is the successor of each transient group status: Hoist has no
// instances to launch or terminate, so each lasts one StatusStep.
var nextStatus = map[api.GameServerGroupStatus]api.GameServerGroupStatus{
	statusNew:             statusActivating,
	statusActivating:      statusActive,
	statusDeleteScheduled: statusDeleting,
	statusDeleting:        statusDeleted,
}

// groupState is a group's status as of some time.
type groupState struct {
	status api.GameServerGroupStatus
	// since is when the group entered status.
	since time.Time
	// gone: DELETED for longer than the retention; the group reads as
	// missing.
	gone bool
}

// live reports whether the group accepts game servers and changes (it is
// neither being deleted nor deleted).
func (st groupState) live() bool {
	switch st.status {
	case statusNew, statusActivating, statusActive:
		return true
	}
	return false
}

// progress returns the state at now of a group stored with status since
// since: it walks nextStatus one step at a time. Pure.
func progress(status api.GameServerGroupStatus, since, now time.Time, step, retention time.Duration) groupState {
	for {
		next, ok := nextStatus[status]
		if !ok || now.Before(since.Add(step)) {
			break
		}
		status, since = next, since.Add(step)
	}
	gone := status == statusDeleted && !now.Before(since.Add(retention))
	return groupState{status: status, since: since, gone: gone}
}

// dueAt returns when a group stored with status since since next needs the
// sweep: its next status change, or (DELETED) its removal; zero for none.
func dueAt(status api.GameServerGroupStatus, since time.Time, step, retention time.Duration) time.Time {
	if _, ok := nextStatus[status]; ok {
		return since.Add(step)
	}
	if status == statusDeleted {
		return since.Add(retention)
	}
	return time.Time{}
}

// status returns g's state at now.
func (s *Service) status(g *groupRec, now time.Time) groupState {
	return progress(g.Status, fromMS(g.Since), now, s.cfg.Timings.StatusStep, s.cfg.Timings.DeletedRetention)
}
