package hosts

import (
	"context"
	"errors"

	"github.com/hoistgg/hoist/internal/store"
)

// leaseName is the store lease the liveness loop runs under.
const leaseName = "hosts-liveness"

// Run runs the liveness loop every Timings.Check while this replica holds
// its lease, until ctx ends. First it forgets the connections an earlier
// run of this replica recorded (none of them is open any more).
func (s *Service) Run(ctx context.Context) error {
	if err := s.forgetOwnConnections(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("hosts: forgetting an earlier run's connections", "err", err)
	}
	return store.RunLeased(ctx, s.cfg.Store, store.Loop{Name: leaseName, Holder: s.cfg.ReplicaID,
		Interval: s.t.Check, Now: s.cfg.Now, Work: s.CheckHosts, Log: s.log.With("loop", "hosts liveness")})
}

// CheckHosts declares LOST every host silent for longer than its
// heartbeat interval plus grace (judged from the store: its LastSeen), and
// deletes enrolment tokens expired for TokenRetention. Run calls it;
// tests call it with a fake clock.
func (s *Service) CheckHosts(ctx context.Context) error {
	now := s.now()
	var lost []string
	// Only hosts silent for the least interval plus the grace can be lost:
	// the range read leaves out every host heartbeating on time (a host
	// told a shorter interval by an earlier configuration is judged when it
	// falls in the range).
	silent := now.Add(-(s.t.HeartbeatMin + s.t.HeartbeatGrace)).UnixMilli()
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		lost = lost[:0]
		for _, st := range []Status{StatusActive, StatusDraining} {
			q := store.Query{Kind: KindHost, Key: string(st), HasKey: true, Order: store.OrderRankAsc,
				RankMax: silent, HasRankMax: true}
			err := store.Each(ctx, tx, q, func(r store.Record) error {
				h := new(Host)
				if err := store.Decode(r, h); err != nil {
					return err
				}
				if !s.t.isLost(h, now, s.started) {
					return nil
				}
				h.Status, h.LostAt = StatusLost, now
				h.Generation++
				lost = append(lost, h.HostID)
				return putHost(ctx, tx, h)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	for _, id := range lost {
		s.log.Warn("hosts: host LOST: it missed its heartbeats; its instances are lost and replaced", "host", id)
	}
	return errors.Join(err, s.purgeTokens(ctx, now))
}

// forgetOwnConnections clears the connections recorded as held by this
// replica: after a restart none of them is.
func (s *Service) forgetOwnConnections(ctx context.Context) error {
	s.mu.Lock()
	open := map[string]string{}
	for id, hc := range s.conns {
		open[id] = hc.connID
	}
	s.mu.Unlock()
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		hosts, err := allHosts(ctx, tx)
		if err != nil {
			return err
		}
		for _, h := range hosts {
			if h.ConnectedTo == s.cfg.ReplicaID && open[h.HostID] != h.ConnID {
				h.ConnectedTo, h.ConnID = "", ""
				if err := putHost(ctx, tx, h); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
