package hosts

import (
	"context"
	"fmt"
	"slices"

	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/fleets/local"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// PlaceInstance picks the host of a new instance in the reconciler's
// transaction (fleets.Placer) and records it there (a HostInstance), so
// the next placement in the same transaction counts it.
func (s *Service) PlaceInstance(ctx context.Context, tx store.Tx, req fleets.PlaceRequest) (fleets.Placement, error) {
	loads, err := s.loads(ctx, tx, req.FleetID)
	if err != nil {
		return fleets.Placement{}, err
	}
	ch := choose(loads, req.Location, string(req.InstanceType))
	switch {
	case ch.InProcess && s.cfg.NoInProcess:
		return fleets.Placement{}, &fleets.NoCapacityError{Location: req.Location,
			Reason: "no host serves " + req.Location + " and this Hoist's own machine runs no instance (--local-hosting off, or its local agent is not enrolled yet)"}
	case ch.InProcess:
		return fleets.Placement{Host: s.cfg.ReplicaID, IPAddress: s.cfg.InstanceIP,
			Layout: s.cfg.Local.Layout(req.FleetID, req.InstanceID)}, nil
	case ch.NoCapacity != "":
		return fleets.Placement{}, &fleets.NoCapacityError{Location: req.Location, Reason: ch.NoCapacity}
	}
	i := slices.IndexFunc(loads, func(l hostLoad) bool { return l.Host.HostID == ch.HostID })
	h := loads[i].Host
	hi := &HostInstance{InstanceID: req.InstanceID, HostID: h.HostID, FleetID: req.FleetID, Location: req.Location,
		InstanceType: string(req.InstanceType), Generation: h.Generation}
	if err := putHostInstance(ctx, tx, hi); err != nil {
		return fleets.Placement{}, err
	}
	return fleets.Placement{Host: h.HostID, IPAddress: h.Address, DNSName: h.DNSName,
		Layout: local.LayoutIn(h.InstancesDir, req.FleetID, req.InstanceID)}, nil
}

// loads reads every host with what runs on it (fleetID's instances
// counted apart).
func (s *Service) loads(ctx context.Context, tx store.Tx, fleetID string) ([]hostLoad, error) {
	hosts, err := allHosts(ctx, tx)
	if err != nil {
		return nil, err
	}
	out := make([]hostLoad, 0, len(hosts))
	for _, h := range hosts {
		l := hostLoad{Host: h, Used: map[string]int{}}
		if h.Status != StatusLost {
			if err := s.countLoad(ctx, tx, &l, fleetID); err != nil {
				return nil, err
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// countLoad counts a host's live instances.
func (s *Service) countLoad(ctx context.Context, tx store.Tx, l *hostLoad, fleetID string) error {
	his, err := hostInstances(ctx, tx, l.Host.HostID)
	if err != nil {
		return err
	}
	for _, hi := range his {
		c, err := liveInstance(ctx, tx, l.Host, hi)
		if err != nil {
			return err
		}
		if c == nil {
			continue
		}
		l.Used[capacityKey(l.Host, hi.InstanceType)]++
		if hi.FleetID == fleetID {
			l.Fleet++
		}
	}
	return nil
}

// InstanceHost says whether the instance of c, on a pool host, is lost,
// or its host drains (fleets.InstanceHosts), from the store alone.
func (s *Service) InstanceHost(ctx context.Context, tx store.Tx, c *hosting.Compute) (fleets.HostState, error) {
	if s.isLocal(c) {
		return fleets.HostState{}, nil
	}
	h, err := getHost(ctx, tx, c.Host)
	if err != nil {
		if ignoreNotFound(err) != nil {
			return fleets.HostState{}, err
		}
		return fleets.HostState{Lost: fmt.Sprintf("its host %s was removed", c.Host)}, nil
	}
	hi, err := getHostInstance(ctx, tx, c.ComputeName)
	if err != nil && ignoreNotFound(err) != nil {
		return fleets.HostState{}, err
	}
	return fleets.HostState{Lost: s.lostReason(h, hi, c), Draining: h.Status == StatusDraining}, nil
}

// lostReason says why an instance of host h is lost ("" when it is not):
// h was declared lost since the instance was placed, or h's heartbeats no
// longer list it (once it had ReportWindow to appear in them).
func (s *Service) lostReason(h *Host, hi *HostInstance, c *hosting.Compute) string {
	switch {
	case hi == nil || hi.HostID != h.HostID:
		return fmt.Sprintf("its host %s does not know it", h.HostID)
	case h.Status == StatusLost || hi.Generation != h.Generation:
		return fmt.Sprintf("its host %s was lost at %s", h.HostID, h.LostAt.Format("2006-01-02T15:04:05.000Z07:00"))
	case h.ReportedAt.After(c.CreationTime.Add(s.t.ReportWindow)) && !slices.Contains(h.Reported, c.ComputeName):
		return fmt.Sprintf("its host %s no longer runs it", h.HostID)
	}
	return ""
}
