package agentconn

import (
	"context"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/store"
)

// leaseName is the lease of the lost-agent loop.
const leaseName = "agents-lost"

// lostBatch bounds the lost agents one turn handles (the next continues).
const lostBatch = 256

// lostLeaseTTL is the lost-agent loop's lease: two intervals, at most
// 10 s, so that the loop of a replica that died resumes on another within
// 15 s with the default 5 s interval (the work is one indexed read).
func lostLeaseTTL(interval time.Duration) time.Duration {
	return max(min(2*interval, 10*time.Second), interval+interval/2)
}

// Run runs the endpoint's loops until ctx ends: the lost-agent loop, once
// cluster-wide under a store lease, and this replica's check of its own
// connections.
func (s *Server) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.checkLoop(ctx)
	}()
	err := store.RunLeased(ctx, s.cfg.Store, store.Loop{Name: leaseName, Holder: s.cfg.ReplicaID,
		Interval: s.t.CheckInterval, TTL: lostLeaseTTL(s.t.CheckInterval), Now: s.cfg.Now, Work: s.FindLost,
		Log: s.log.With("loop", "lost agents")})
	<-done
	return err
}

// FindLost handles the agents whose heartbeats stopped for longer than
// HeartbeatTimeout: the compute of each is made IMPAIRED and the agent
// recorded lost (until it heartbeats again); the record of a compute that
// no longer exists is deleted. Nothing is declared lost in the first
// HeartbeatTimeout after this replica started: agents reconnect after a
// restart. Run calls it; tests call it directly.
func (s *Server) FindLost(ctx context.Context) error {
	now := s.cfg.Now()
	if now.Before(s.started.Add(s.t.HeartbeatTimeout)) {
		return nil
	}
	var due []agentRec
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		q := store.Query{Kind: kindAgent, Key: agentKey, HasKey: true, Order: store.OrderRankAsc,
			RankMax: now.UnixMilli(), HasRankMax: true, Limit: lostBatch}
		return store.Each(ctx, tx, q, func(r store.Record) error {
			var a agentRec
			if err := store.Decode(r, &a); err != nil {
				return err
			}
			due = append(due, a)
			return nil
		})
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range due {
		errs = append(errs, s.lose(ctx, a, now))
	}
	return errors.Join(errs...)
}

// lose declares one agent lost, unless it heartbeat meanwhile.
func (s *Server) lose(ctx context.Context, a agentRec, now time.Time) error {
	id := identity{a.FleetID, a.ComputeName}
	var lost *agentRec
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		lost = nil
		cur, err := getAgent(ctx, tx, id)
		if err != nil {
			return ignoreNotFound(err)
		}
		if ok, err := registered(ctx, tx, id); err != nil || !ok {
			if err == nil {
				err = ignoreNotFound(tx.Delete(ctx, kindAgent, id.key()))
			}
			return err
		}
		if cur.Lost || cur.LastHeartbeat.Add(s.t.HeartbeatTimeout).After(now) {
			return nil // it heartbeat meanwhile: its next heartbeat makes the compute ACTIVE again
		}
		cur.Lost, lost = true, cur
		if err := s.cfg.Fleets.SetComputeImpaired(ctx, tx, id.fleetID, id.computeName, true); err != nil {
			return err
		}
		return s.putAgent(ctx, tx, cur)
	})
	if err == nil && lost != nil {
		s.log.Warn("agent: no heartbeat; the compute is IMPAIRED", "fleet", id.fleetID, "compute", id.computeName,
			"lastHeartbeat", lost.LastHeartbeat)
	}
	return err
}

// checkLoop runs CheckComputes every CheckInterval until ctx ends.
func (s *Server) checkLoop(ctx context.Context) {
	t := time.NewTicker(s.t.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.CheckComputes(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("agent: checking connected computes", "err", err)
			}
		}
	}
}

// CheckComputes tells each agent connected to this replica whose compute
// was deregistered, or whose fleet is being deleted, to terminate
// (StartComputeTermination, once per socket).
func (s *Server) CheckComputes(ctx context.Context) error {
	conns := s.connected()
	if len(conns) == 0 {
		return nil
	}
	gone := map[identity]bool{}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		for _, c := range conns {
			if _, seen := gone[c.id]; seen {
				continue
			}
			ok, err := registered(ctx, tx, c.id)
			if err != nil {
				return err
			}
			gone[c.id] = !ok
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range conns {
		if !gone[c.id] || c.told.Swap(true) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		err := c.peer.Send(sctx, agentproto.ActionStartComputeTermination, agentproto.StartComputeTerminationMessage{})
		cancel()
		if err != nil {
			c.told.Store(false)
			c.log.Info("agent: StartComputeTermination not sent", "err", err)
			continue
		}
		c.log.Info("agent: the compute is deregistered; StartComputeTermination sent")
	}
	return nil
}
