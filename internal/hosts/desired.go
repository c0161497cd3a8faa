package hosts

import (
	"context"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// maxReported bounds the instances one report may list.
const maxReported = 1000

// hello serves a connection's Hello: the host is recorded as connected to
// this replica (ACTIVE again if it was LOST, or DRAINING if it was
// drained: what it ran then is no longer its), and is told its heartbeat interval and what to run; the
// processes of the instances it keeps are compared with sessions'
// records (reconcileProcesses).
func (s *Service) hello(ctx context.Context, hc *hostConn, r *wsrpc.Request) (any, error) {
	var in hostproto.Hello
	if err := r.Decode(&in); err != nil {
		return nil, err
	}
	if in.ProtocolVersion != hostproto.Version {
		return nil, wsrpc.Errorf(400, "this Hoist speaks host protocol version %d, the agent %d: run the same Hoist version on both", hostproto.Version, in.ProtocolVersion)
	}
	if len(in.Instances) > maxReported || len(in.InstancesDir) > 4096 || len(in.AgentVersion) > 256 {
		return nil, wsrpc.Errorf(400, "the Hello is too large")
	}
	interval, err := s.interval(ctx)
	if err != nil {
		return nil, err
	}
	var out hostproto.HelloReply
	err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		h, err := getHost(ctx, tx, hc.hostID)
		if err != nil {
			return err
		}
		if h.Status == StatusLost {
			h.Status = StatusActive
			if h.Drained {
				h.Status = StatusDraining
			}
			s.log.Warn("hosts: a lost host is back: it is told to end what it still runs", "host", h.HostID, "status", h.Status)
		}
		h.ConnectedTo, h.ConnID = s.cfg.ReplicaID, hc.connID
		h.InstancesDir, h.AgentVersion = in.InstancesDir, in.AgentVersion
		desired, err := s.seen(ctx, tx, h, in.Instances, interval)
		out = hostproto.HelloReply{ProtocolVersion: hostproto.Version, HostId: h.HostID,
			HeartbeatIntervalMs: interval.Milliseconds(), Desired: desired}
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, wsrpc.Errorf(401, "host %s was removed", hc.hostID)
	}
	if err != nil {
		return nil, err
	}
	hc.heard(interval + s.t.HeartbeatGrace)
	s.log.Info("hosts: host connected", "host", hc.hostID, "instances", len(in.Instances), "desired", len(out.Desired))
	s.reconcileProcesses(ctx, hc.hostID, in.Instances, out.Desired)
	if s.cfg.HostReady != nil {
		s.cfg.HostReady()
	}
	return out, nil
}

// heartbeat serves a Heartbeat: the host is seen, and told what to run.
func (s *Service) heartbeat(ctx context.Context, hc *hostConn, r *wsrpc.Request) (any, error) {
	var in hostproto.Heartbeat
	if err := r.Decode(&in); err != nil {
		return nil, err
	}
	if len(in.Instances) > maxReported {
		return nil, wsrpc.Errorf(400, "a heartbeat lists at most %d instances", maxReported)
	}
	interval, err := s.interval(ctx)
	if err != nil {
		return nil, err
	}
	var out hostproto.HeartbeatReply
	err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		h, err := getHost(ctx, tx, hc.hostID)
		if err != nil {
			return err
		}
		if h.ConnID != hc.connID {
			h.ConnectedTo, h.ConnID = s.cfg.ReplicaID, hc.connID
		}
		desired, err := s.seen(ctx, tx, h, in.Instances, interval)
		out = hostproto.HeartbeatReply{HeartbeatIntervalMs: interval.Milliseconds(), Desired: desired}
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, wsrpc.Errorf(401, "host %s was removed", hc.hostID)
	}
	if err != nil {
		return nil, err
	}
	hc.heard(interval + s.t.HeartbeatGrace)
	s.log.Debug("hosts: heartbeat", "host", hc.hostID, "instances", len(in.Instances), "desired", len(out.Desired))
	return out, nil
}

// seen records in tx that h reported the instances it runs now, and
// returns what it should run.
func (s *Service) seen(ctx context.Context, tx store.Tx, h *Host, running []hostproto.Instance, interval time.Duration) ([]hostproto.Desired, error) {
	now := s.now()
	h.LastSeen, h.Interval, h.ReportedAt = now, interval, now
	h.Reported = h.Reported[:0]
	versions := make(map[string]string, len(running))
	for _, in := range running {
		h.Reported = append(h.Reported, in.InstanceId)
		versions[in.InstanceId] = in.RuntimeVersion
	}
	desired, err := s.desiredTx(ctx, tx, h, versions)
	if err != nil {
		return nil, err
	}
	return desired, putHost(ctx, tx, h)
}

// desiredTx lists the instances h should run: those placed on it in its
// current generation whose compute records still name it (none while it
// is LOST), with their stop reasons; records of the others are deleted.
// An instance the host reported running another runtime configuration
// than its fleet's (versions: the host's RuntimeVersion of each) is sent
// the fleet's (runtimeFor).
func (s *Service) desiredTx(ctx context.Context, tx store.Tx, h *Host, versions map[string]string) ([]hostproto.Desired, error) {
	his, err := hostInstances(ctx, tx, h.HostID)
	if err != nil {
		return nil, err
	}
	out := []hostproto.Desired{}
	runtimes := map[string]*api.RuntimeConfiguration{}
	for _, hi := range his {
		c, err := liveInstance(ctx, tx, h, hi)
		if err != nil {
			return nil, err
		}
		if c == nil {
			if err := tx.Delete(ctx, KindHostInstance, hi.InstanceID); ignoreNotFound(err) != nil {
				return nil, err
			}
			continue
		}
		if h.Status == StatusLost {
			continue
		}
		d := hostproto.Desired{FleetId: hi.FleetID, InstanceId: hi.InstanceID, Drain: h.Status == StatusDraining}
		if c.Status == api.ComputeStatusTerminating {
			d.Stop = c.StopReason
			if d.Stop == "" {
				d.Stop = "Hoist stops it"
			}
		} else if v, ok := versions[hi.InstanceID]; ok {
			if d.RuntimeConfiguration, err = runtimeFor(ctx, tx, hi.FleetID, v, runtimes); err != nil {
				return nil, err
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// runtimeFor returns fleet fleetID's runtime configuration when its
// RuntimeVersion is not have (nil when it is, or the fleet is gone);
// cache holds the fleets already read.
func runtimeFor(ctx context.Context, tx store.Tx, fleetID, have string, cache map[string]*api.RuntimeConfiguration) (*api.RuntimeConfiguration, error) {
	rc, ok := cache[fleetID]
	if !ok {
		var f hosting.Fleet
		_, err := store.GetJSON(ctx, tx, hosting.KindFleet, fleetID, &f)
		if err != nil && ignoreNotFound(err) != nil {
			return nil, err
		}
		if err == nil {
			rc = &f.RuntimeConfiguration
		}
		cache[fleetID] = rc
	}
	if rc == nil || hostproto.RuntimeVersion(*rc) == have {
		return nil, nil
	}
	return rc, nil
}

// countTTL is how long the count of hosts behind the heartbeat interval
// is reused.
const countTTL = 10 * time.Second

// interval is the heartbeat interval hosts are told now: it grows with
// the number of live hosts (counted at most once per countTTL).
func (s *Service) interval(ctx context.Context) (time.Duration, error) {
	now := s.cfg.Now()
	s.mu.Lock()
	n, fresh := s.count, now.Sub(s.countAt) < countTTL && !s.countAt.IsZero()
	s.mu.Unlock()
	if !fresh {
		err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
			n = 0
			for _, st := range []Status{StatusActive, StatusDraining} {
				c, err := tx.Count(ctx, store.Query{Kind: KindHost, Key: string(st), HasKey: true})
				if err != nil {
					return err
				}
				n += c
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		s.mu.Lock()
		s.count, s.countAt = n, now
		s.mu.Unlock()
	}
	return heartbeatInterval(n, s.t.HeartbeatMin, s.t.HeartbeatRate), nil
}
