package fleets

import (
	"context"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// Metrics are one fleet location's figures, computed from the Compute,
// Process, GameSession and PlayerSession counts in the store. They feed
// DescribeFleetUtilization, DescribeFleetCapacity and the scaling policies.
type Metrics struct {
	// Instances counts live instances (PENDING or ACTIVE); Pending,
	// Active and Terminating count them by status.
	Instances, Pending, Active, Terminating int
	// ActiveInstances are ACTIVE instances hosting at least one game
	// session; IdleInstances those hosting none.
	ActiveInstances, IdleInstances int
	// ActiveServerProcesses are ACTIVE (ready) server processes;
	// AvailableGameSessions those of them that are free to host.
	ActiveServerProcesses, AvailableGameSessions int
	ActivatingGameSessions, ActiveGameSessions   int
	// CurrentPlayerSessions and MaximumPlayerSessions sum the ACTIVE game
	// sessions' counts; AvailablePlayerSessions is the difference.
	CurrentPlayerSessions, MaximumPlayerSessions, AvailablePlayerSessions int
	// ConcurrentActivatable is how many game sessions could start
	// activating now (MaxConcurrentGameSessionActivations per instance,
	// bounded by the free processes).
	ConcurrentActivatable int
}

// Value returns the scaling metric called name; ok is false when the
// metric has no data (a percentage of nothing).
func (m Metrics) Value(name api.MetricName) (v float64, ok bool) {
	switch name {
	case api.MetricNameActivatinggamesessions:
		return float64(m.ActivatingGameSessions), true
	case api.MetricNameActivegamesessions:
		return float64(m.ActiveGameSessions), true
	case api.MetricNameActiveinstances:
		return float64(m.ActiveInstances), true
	case api.MetricNameAvailablegamesessions:
		return float64(m.AvailableGameSessions), true
	case api.MetricNameAvailableplayersessions:
		return float64(m.AvailablePlayerSessions), true
	case api.MetricNameCurrentplayersessions:
		return float64(m.CurrentPlayerSessions), true
	case api.MetricNameIdleinstances:
		return float64(m.IdleInstances), true
	case api.MetricNameConcurrentactivatablegamesessions:
		return float64(m.ConcurrentActivatable), true
	case api.MetricNameQueuedepth, api.MetricNameWaittime:
		return 0, true // Hoist has no game session queues yet
	case api.MetricNamePercentavailablegamesessions:
		total := m.AvailableGameSessions + m.ActiveGameSessions + m.ActivatingGameSessions
		if total == 0 {
			return 0, false
		}
		return 100 * float64(m.AvailableGameSessions) / float64(total), true
	case api.MetricNamePercentidleinstances:
		total := m.ActiveInstances + m.IdleInstances
		if total == 0 {
			return 0, false
		}
		return 100 * float64(m.IdleInstances) / float64(total), true
	}
	return 0, false
}

// fleetMetrics computes the metrics of every location of a fleet.
func fleetMetrics(ctx context.Context, tx store.Tx, f *hosting.Fleet) (map[string]*Metrics, error) {
	fid := api.ToString(f.Attributes.FleetId)
	out := map[string]*Metrics{}
	for _, l := range f.Locations {
		out[l.Location] = &Metrics{}
	}
	get := func(loc string) *Metrics {
		if out[loc] == nil {
			out[loc] = &Metrics{}
		}
		return out[loc]
	}
	comps, err := fleetComputes(ctx, tx, fid, "")
	if err != nil {
		return nil, err
	}
	sessions, activating := map[string]int{}, map[string]int{}
	err = eachCountedSession(ctx, tx, fid, func(gs countedSession) {
		m, cn := get(gs.location), gs.compute
		switch gs.status {
		case api.GameSessionStatusActivating:
			m.ActivatingGameSessions++
			activating[cn]++
			sessions[cn]++
		case api.GameSessionStatusActive:
			m.ActiveGameSessions++
			sessions[cn]++
			m.CurrentPlayerSessions += gs.current
			m.MaximumPlayerSessions += gs.maximum
			m.AvailablePlayerSessions += max(gs.maximum-gs.current, 0)
		}
	})
	if err != nil {
		return nil, err
	}
	limit := int(api.ToInt32(f.RuntimeConfiguration.MaxConcurrentGameSessionActivations))
	activatable := map[string]int{}
	for _, c := range comps {
		m := get(c.Location)
		countInstance(m, c, sessions[c.ComputeName])
		if c.Status == api.ComputeStatusActive && limit > 0 {
			activatable[c.Location] += max(limit-activating[c.ComputeName], 0)
		}
	}
	for loc, m := range out {
		if err := countProcesses(ctx, tx, fid, loc, m); err != nil {
			return nil, err
		}
		m.ConcurrentActivatable = m.AvailableGameSessions
		if limit > 0 {
			m.ConcurrentActivatable = min(activatable[loc], m.AvailableGameSessions)
		}
	}
	return out, nil
}

// countInstance adds one compute to a location's instance counts.
func countInstance(m *Metrics, c *hosting.Compute, sessions int) {
	switch c.Status {
	case api.ComputeStatusTerminating:
		m.Terminating++
		return
	case api.ComputeStatusActive:
		m.Active++
		if sessions > 0 {
			m.ActiveInstances++
		} else {
			m.IdleInstances++
		}
	default:
		m.Pending++
	}
	m.Instances++
}

// countProcesses counts a location's ready server processes, and the free
// ones among them.
func countProcesses(ctx context.Context, tx store.Tx, fleetID, loc string, m *Metrics) error {
	for _, idle := range []bool{true, false} {
		n, err := tx.Count(ctx, store.Query{Kind: hosting.KindProcess, Parent: fleetID, HasParent: true,
			Key: hosting.ProcessKey(loc, hosting.ProcessActive, idle), HasKey: true})
		if err != nil {
			return err
		}
		m.ActiveServerProcesses += n
		if idle {
			m.AvailableGameSessions = n
		}
	}
	return nil
}

// LocationMetrics returns the metrics of every location of fleet f, read
// in tx (internal/metrics exports them).
func LocationMetrics(ctx context.Context, tx store.Tx, f *hosting.Fleet) (map[string]*Metrics, error) {
	return fleetMetrics(ctx, tx, f)
}
