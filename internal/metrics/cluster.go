package metrics

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/fleetiq"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts"
	"github.com/hoistgg/hoist/internal/matchmaking"
	"github.com/hoistgg/hoist/internal/placement"
	"github.com/hoistgg/hoist/internal/store"
)

// Cluster computes the cluster's state from the store, for the gauges
// (and the console): every replica reads the same store, so every
// replica reports the same. A computation is reused for up to MaxAge.
type Cluster struct {
	// Store is read in one View per computation.
	Store store.Store
	// Now is the clock of AverageWaitTime. Default time.Now.
	Now func() time.Time
	// MaxAge is how long a computed State is reused (at most a second;
	// default a second).
	MaxAge time.Duration
	// Backlog, when set, counts the webhook deliveries waiting (read in
	// the computation's transaction).
	Backlog func(ctx context.Context, tx store.Tx) (int, error)

	mu   sync.Mutex
	last *State
	took time.Time // when last was computed, by the wall clock
}

// State is the cluster's state at one time.
type State struct {
	// At is when it was read (the Cluster's clock).
	At time.Time
	// Fleets holds every location of every fleet that is not
	// TERMINATED.
	Fleets []FleetLocation
	// Queues holds every game session queue.
	Queues []Queue
	// Configurations holds every matchmaking configuration.
	Configurations []Configuration
	// Groups holds every FleetIQ game server group not DELETED.
	Groups []Group
	// Hosts counts the hosts (pool hosts and the replicas' own machines) by
	// status (ACTIVE, DRAINING, LOST).
	Hosts map[string]int
	// WebhookBacklog counts the webhook deliveries waiting.
	WebhookBacklog int
}

// FleetLocation is one fleet location's figures.
type FleetLocation struct {
	FleetID, Location string
	fleets.Metrics
	// HealthyServerProcesses are ACTIVE server processes whose last
	// health report was healthy.
	HealthyServerProcesses int
	// Desired, Min and Max are the location's capacity settings.
	Desired, Min, Max int
}

// Queue is one game session queue's figures.
type Queue struct {
	Name string
	// Depth counts its PENDING placements; AverageWait is their mean
	// wait so far, in seconds (0 without any).
	Depth       int
	AverageWait float64
}

// Configuration is one matchmaking configuration's figures.
type Configuration struct {
	Name string
	// CurrentTickets counts its tickets that have not ended.
	CurrentTickets int
}

// Group is one game server group's figures.
type Group struct {
	Name string
	fleetiq.GroupMetrics
}

// State returns the cluster's state, computed afresh unless the last
// computation is younger than MaxAge.
func (c *Cluster) State(ctx context.Context) (*State, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	maxAge := c.MaxAge
	if maxAge <= 0 || maxAge > time.Second {
		maxAge = time.Second
	}
	if c.last != nil && time.Since(c.took) < maxAge {
		return c.last, nil
	}
	st, err := c.compute(ctx)
	if err != nil {
		return nil, err
	}
	c.last, c.took = st, time.Now()
	return st, nil
}

// compute reads the state in one View.
func (c *Cluster) compute(ctx context.Context) (*State, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	var st *State
	err := c.Store.View(ctx, func(tx store.Tx) error {
		st = &State{At: now(), Hosts: map[string]int{}}
		steps := []func(context.Context, store.Tx, *State) error{
			readFleets, readQueues, readConfigurations, readGroups, readHosts, c.readBacklog}
		for _, step := range steps {
			if err := step(ctx, tx, st); err != nil {
				return err
			}
		}
		return nil
	})
	return st, err
}

// readFleets reads every live fleet's locations.
func readFleets(ctx context.Context, tx store.Tx, st *State) error {
	return store.Each(ctx, tx, store.Query{Kind: hosting.KindFleet}, func(r store.Record) error {
		if r.Key == string(api.FleetStatusTerminated) {
			return nil
		}
		f := new(hosting.Fleet)
		if err := store.Decode(r, f); err != nil {
			return err
		}
		ms, err := fleets.LocationMetrics(ctx, tx, f)
		if err != nil {
			return err
		}
		for _, l := range f.Locations {
			fl := FleetLocation{FleetID: r.ID, Location: l.Location, Desired: int(l.Desired), Min: int(l.Min), Max: int(l.Max)}
			if m := ms[l.Location]; m != nil {
				fl.Metrics = *m
			}
			if fl.HealthyServerProcesses, err = healthyProcesses(ctx, tx, r.ID, l.Location); err != nil {
				return err
			}
			st.Fleets = append(st.Fleets, fl)
		}
		return nil
	})
}

// unhealthyField is how a process record's JSON holds a count of
// unhealthy reports: hosting.Process omits it when 0 (healthy). A
// string value cannot hold it (its quotes would be escaped).
var unhealthyField = []byte(`"unhealthyReports":`)

// healthyProcesses counts a fleet location's ACTIVE processes whose last
// health report was healthy.
func healthyProcesses(ctx context.Context, tx store.Tx, fleetID, loc string) (int, error) {
	n := 0
	for _, idle := range []bool{true, false} {
		q := store.Query{Kind: hosting.KindProcess, Parent: fleetID, HasParent: true,
			Key: hosting.ProcessKey(loc, hosting.ProcessActive, idle), HasKey: true}
		err := store.Each(ctx, tx, q, func(r store.Record) error {
			if !bytes.Contains(r.Data, unhealthyField) {
				n++
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

// readQueues reads every queue's PENDING placements.
func readQueues(ctx context.Context, tx store.Tx, st *State) error {
	byName := map[string]*Queue{}
	err := store.Each(ctx, tx, store.Query{Kind: placement.KindQueue, NoData: true}, func(r store.Record) error {
		st.Queues = append(st.Queues, Queue{Name: r.ID})
		return nil
	})
	if err != nil {
		return err
	}
	for i := range st.Queues {
		byName[st.Queues[i].Name] = &st.Queues[i]
	}
	waited := map[string]float64{}
	q := store.Query{Kind: placement.KindPlacement, Key: string(api.GameSessionPlacementStatePending), HasKey: true}
	err = store.Each(ctx, tx, q, func(r store.Record) error {
		var p struct {
			Placement struct {
				StartTime *api.Timestamp `json:"StartTime"`
			} `json:"placement"`
		}
		if err := store.Decode(r, &p); err != nil {
			return err
		}
		if qu := byName[r.Parent]; qu != nil {
			qu.Depth++
			if p.Placement.StartTime != nil {
				waited[r.Parent] += max(st.At.Sub(p.Placement.StartTime.Time).Seconds(), 0)
			}
		}
		return nil
	})
	for name, w := range waited {
		if qu := byName[name]; qu.Depth > 0 {
			qu.AverageWait = w / float64(qu.Depth)
		}
	}
	return err
}

// readConfigurations counts every configuration's current tickets.
func readConfigurations(ctx context.Context, tx store.Tx, st *State) error {
	return store.Each(ctx, tx, store.Query{Kind: matchmaking.KindConfiguration, NoData: true}, func(r store.Record) error {
		n, err := matchmaking.ActiveTickets(ctx, tx, r.ID)
		st.Configurations = append(st.Configurations, Configuration{Name: r.ID, CurrentTickets: n})
		return err
	})
}

// readGroups reads every game server group's game servers.
func readGroups(ctx context.Context, tx store.Tx, st *State) error {
	ms, err := fleetiq.AllGroupMetrics(ctx, tx)
	for name, m := range ms {
		st.Groups = append(st.Groups, Group{Name: name, GroupMetrics: m})
	}
	return err
}

// readHosts counts the hosts (pool hosts and the replicas' own machines)
// by status.
func readHosts(ctx context.Context, tx store.Tx, st *State) error {
	for _, s := range []hosts.Status{hosts.StatusActive, hosts.StatusDraining, hosts.StatusLost} {
		n, err := tx.Count(ctx, store.Query{Kind: hosts.KindHost, Key: string(s), HasKey: true})
		if err != nil {
			return err
		}
		st.Hosts[string(s)] = n
	}
	return nil
}

// readBacklog counts the webhook deliveries waiting.
func (c *Cluster) readBacklog(ctx context.Context, tx store.Tx, st *State) error {
	if c.Backlog == nil {
		return nil
	}
	var err error
	st.WebhookBacklog, err = c.Backlog(ctx, tx)
	return err
}
