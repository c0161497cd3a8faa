package fleets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// loopName names the reconciler's shards (one per fleet); leaseName is
// the lease of its housekeeping (orphaned instances, expired tokens),
// once cluster-wide.
const (
	loopName  = "fleets"
	leaseName = "fleets-reconcile"
)

// Run runs the reconciler every Timings.ReconcileInterval (and soon after
// any change), sharded by fleet: each pass reconciles the fleets whose
// shards this replica holds, each fleet's writes fenced by its shard's
// lease; and the housekeeping while this replica holds its lease; until
// ctx ends.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = store.RunLeased(ctx, s.cfg.Store, store.Loop{Name: leaseName, Holder: s.cfg.ReplicaID,
			Interval: s.t.ReconcileInterval, TTL: s.t.LeaseTTL, Now: s.cfg.Now, Clock: s.cfg.Clock,
			Work: s.housekeep, Log: s.log.With("loop", "fleets housekeeping")})
	})
	err := store.RunSharded(ctx, s.cfg.Store, store.ShardedLoop{Name: loopName, Holder: s.cfg.ReplicaID,
		Interval: s.t.ReconcileInterval, TTL: s.t.LeaseTTL, Kick: s.kick, Keys: s.fleetIDs,
		Replicas: s.cfg.Replicas, Clock: s.cfg.Clock, Work: s.reconcileHeld, Log: s.log.With("loop", "fleets reconciler")})
	wg.Wait()
	return err
}

// fleetIDs lists every fleet's ID: the reconciler's shard keys.
func (s *Service) fleetIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		ids = ids[:0]
		return store.Each(ctx, tx, store.Query{Kind: hosting.KindFleet, NoData: true}, func(r store.Record) error {
			ids = append(ids, r.ID)
			return nil
		})
	})
	return ids, err
}

// Reconcile runs the reconciler once over every fleet, unfenced, stops
// instances nobody owns, forgets expired auth tokens, and evaluates the
// scaling policies when PolicyInterval has passed. Tests call it directly
// with a fake clock; Run's passes cover the fleets held (reconcileHeld)
// and the housekeeping under its lease.
func (s *Service) Reconcile(ctx context.Context) error {
	ids, err := s.fleetIDs(ctx)
	if err != nil {
		return err
	}
	return errors.Join(s.reconcileHeld(ctx, store.HoldAll(ids...)), s.housekeep(ctx))
}

// reconcileHeld reconciles each fleet held, then evaluates their scaling
// policies when PolicyInterval has passed, each fleet's writes fenced by
// its grant.
func (s *Service) reconcileHeld(ctx context.Context, held *store.Held) error {
	running := s.runningInstances()
	var errs []error
	for _, id := range held.Keys() {
		g, _ := held.Grant(id)
		if err := s.reconcileFleet(ctx, g, id, running); err != nil {
			errs = append(errs, fmt.Errorf("fleet %s: %w", id, err))
		}
	}
	if s.policiesDue() {
		if err := s.evaluateHeld(ctx, held); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// housekeep stops the instances nobody owns and forgets expired auth
// tokens.
func (s *Service) housekeep(ctx context.Context) error {
	return errors.Join(s.stopOrphans(ctx, s.runningInstances()), s.purgeTokens(ctx))
}

// runningInstances returns the instances the provider runs, by instance ID.
func (s *Service) runningInstances() map[string]InstanceRef {
	out := map[string]InstanceRef{}
	if s.cfg.Provider == nil {
		return out
	}
	for _, r := range s.cfg.Provider.Instances() {
		out[r.InstanceID] = r
	}
	return out
}

// reconcileFleet decides and applies one fleet's next actions in one
// transaction (fenced by g), then runs their side effects.
func (s *Service) reconcileFleet(ctx context.Context, g store.Grant, id string, running map[string]InstanceRef) error {
	var fx effects
	err := store.UpdateIn(ctx, s.cfg.Store, g, func(tx store.Tx) error {
		fx = effects{}
		f, err := getFleet(ctx, tx, id)
		if err != nil {
			return ignoreNotFound(err)
		}
		v, err := s.fleetView(ctx, tx, f, running)
		if err != nil {
			return err
		}
		return s.applyPlan(ctx, tx, f, decide(v), &fx)
	})
	if err != nil {
		return err
	}
	s.runEffects(ctx, &fx)
	return nil
}

// fleetView reads what decide needs about a fleet.
func (s *Service) fleetView(ctx context.Context, tx store.Tx, f *fleetRec, running map[string]InstanceRef) (fleetView, error) {
	now := s.now()
	v := fleetView{Fleet: &f.Fleet, Since: f.Own.Since, Now: now, Replica: s.cfg.ReplicaID,
		ActivationTimeout: s.t.ActivationTimeout, Retention: s.t.Retention, NotBefore: s.notBefore(f.id()),
		ActivatingSince: f.Own.ActivatingSince, FirstReadyTimeout: s.t.FirstReadyTimeout, Failures: f.Own.Failures}
	if f.status() == api.FleetStatusTerminated {
		return v, nil
	}
	comps, err := fleetComputes(ctx, tx, f.id(), "")
	if err != nil {
		return v, err
	}
	for _, c := range comps {
		_, run := running[c.ComputeName]
		v.Computes = append(v.Computes, computeView{Compute: *c, Running: run})
	}
	if !f.anywhere() {
		if err := s.hostStates(ctx, tx, v.Computes); err != nil {
			return v, err
		}
	}
	if err := s.fillComputeInfo(ctx, tx, f, v.Computes); err != nil {
		return v, err
	}
	if !f.anywhere() && f.status() != api.FleetStatusDeleting {
		v.BuildProblem = s.buildProblem(ctx, tx, api.ToString(f.Attributes.BuildId))
	}
	return v, nil
}

// buildProblem says why a build cannot be placed on a new instance ("" when
// it can).
func (s *Service) buildProblem(ctx context.Context, tx store.Tx, buildID string) string {
	if s.cfg.Builds == nil || s.cfg.Provider == nil {
		return "this Hoist has no build store or compute provider configured, so it cannot run EC2 fleets"
	}
	b, err := s.cfg.Builds.FleetBuild(ctx, tx, buildID)
	var nf *api.NotFoundException
	switch {
	case errors.As(err, &nf) || errors.Is(err, store.ErrNotFound):
		return fmt.Sprintf("build %s no longer exists", buildID)
	case err != nil:
		return fmt.Sprintf("build %s could not be read: %v", buildID, err)
	case b.Status != api.BuildStatusReady:
		return fmt.Sprintf("build %s is %s, not READY", buildID, b.Status)
	}
	return ""
}

// fillComputeInfo sets Ready (only needed for PENDING instances) and the
// game session counts (only needed when a location scales in or an
// instance's host drains).
func (s *Service) fillComputeInfo(ctx context.Context, tx store.Tx, f *fleetRec, cs []computeView) error {
	idx := map[string]*computeView{}
	pending, live := false, map[string]int{}
	for i := range cs {
		idx[cs[i].ComputeName] = &cs[i]
		pending = pending || cs[i].Status == api.ComputeStatusPending
		if cs[i].Status != api.ComputeStatusTerminating {
			live[cs[i].Location]++
		}
	}
	if pending {
		ready, err := readyComputes(ctx, tx, &f.Fleet)
		if err != nil {
			return err
		}
		for name := range ready {
			if c := idx[name]; c != nil {
				c.Ready = true
			}
		}
	}
	scaleIn := false
	for _, l := range f.Locations {
		scaleIn = scaleIn || live[l.Location] > int(l.Desired)
	}
	for i := range cs {
		scaleIn = scaleIn || cs[i].draining()
	}
	if !scaleIn {
		return nil
	}
	return eachLiveGameSession(ctx, tx, f.id(), func(gs *hosting.GameSession) {
		if c := idx[api.ToString(gs.Session.ComputeName)]; c != nil {
			c.Sessions++
			if gs.Session.Status == api.GameSessionStatusActive && gs.ProtectionPolicy == api.ProtectionPolicyFullprotection {
				c.Protected = true
			}
		}
	})
}

// readyComputes returns the computes of a fleet that have an ACTIVE server
// process.
func readyComputes(ctx context.Context, tx store.Tx, f *hosting.Fleet) (map[string]bool, error) {
	out := map[string]bool{}
	for _, l := range f.Locations {
		for _, idle := range []bool{true, false} {
			q := store.Query{Kind: hosting.KindProcess, Parent: api.ToString(f.Attributes.FleetId), HasParent: true,
				Key: hosting.ProcessKey(l.Location, hosting.ProcessActive, idle), HasKey: true}
			err := store.Each(ctx, tx, q, func(r store.Record) error {
				p := new(hosting.Process)
				if err := store.Decode(r, p); err != nil {
					return err
				}
				out[p.ComputeName] = true
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// liveSessionStatuses are the game session statuses that occupy a process.
var liveSessionStatuses = []api.GameSessionStatus{
	api.GameSessionStatusActivating, api.GameSessionStatusActive, api.GameSessionStatusTerminating,
}

// eachLiveGameSession calls fn for every game session of a fleet that has
// not ended.
func eachLiveGameSession(ctx context.Context, tx store.Tx, fleetID string, fn func(*hosting.GameSession)) error {
	for _, st := range liveSessionStatuses {
		q := store.Query{Kind: hosting.KindGameSession, Parent: fleetID, HasParent: true, Key: string(st), HasKey: true}
		err := store.Each(ctx, tx, q, func(r store.Record) error {
			gs := new(hosting.GameSession)
			if err := store.Decode(r, gs); err != nil {
				return err
			}
			fn(gs)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// stopOrphans stops instances the provider runs whose compute record is
// gone (their fleet was purged, or the record was removed by hand).
func (s *Service) stopOrphans(ctx context.Context, running map[string]InstanceRef) error {
	if len(running) == 0 {
		return nil
	}
	var orphans []string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		orphans = orphans[:0]
		for id, ref := range running {
			_, err := tx.Get(ctx, hosting.KindCompute, computeID(ref.FleetID, id))
			if errors.Is(err, store.ErrNotFound) {
				orphans = append(orphans, id)
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range orphans {
		if err := s.cfg.Provider.StopInstance(id, "its compute record is gone"); err != nil && !errors.Is(err, ErrUnknownInstance) {
			s.log.Warn("fleets: stopping an orphaned instance", "instance", id, "err", err)
		}
	}
	return nil
}

// purgeTokens deletes expired compute auth tokens.
func (s *Service) purgeTokens(ctx context.Context) error {
	now := ms(s.tokenNow())
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		q := store.Query{Kind: hosting.KindComputeAuthToken, HasKey: true, Order: store.OrderRankAsc,
			RankMax: now, HasRankMax: true, Limit: 256}
		recs, _, err := tx.List(ctx, q)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := tx.Delete(ctx, r.Kind, r.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return nil
	})
}

// policiesDue reports whether the scaling policies are due for evaluation,
// and if so, records that they are being evaluated now.
func (s *Service) policiesDue() bool {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lastPolicyRun.IsZero() && now.Sub(s.lastPolicyRun) < s.t.PolicyInterval {
		return false
	}
	s.lastPolicyRun = now
	return true
}

// notBefore returns, per location of a fleet, when its next instance may
// start.
func (s *Service) notBefore(fleetID string) map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]time.Time{}
	prefix := fleetID + "/"
	for k, b := range s.backoff {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			out[k[len(prefix):]] = b.until
		}
	}
	return out
}

// backOff delays the next instance start of a location after a failure:
// LaunchBackoff, doubling per failure in a row, at most 5 minutes.
func (s *Service) backOff(fleetID, loc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := fleetID + "/" + loc
	b := s.backoff[k]
	d := s.t.LaunchBackoff << min(b.failures, 10)
	d = min(d, 5*time.Minute)
	s.backoff[k] = backoffState{until: s.cfg.Now().Add(d), failures: b.failures + 1}
}

// clearBackoff forgets a location's failures once an instance works.
func (s *Service) clearBackoff(fleetID, loc string) {
	s.mu.Lock()
	delete(s.backoff, fleetID+"/"+loc)
	s.mu.Unlock()
}

func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
