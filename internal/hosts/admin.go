package hosts

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// HostInfo is a host as `hoist admin list-hosts` shows it.
type HostInfo struct {
	HostId, Pool, Location, Address, Status string
	DnsName                                 string         `json:",omitempty"`
	Hostname                                string         `json:",omitempty"`
	Capacity                                map[string]int `json:",omitempty"`
	Instances                               int
	Connected                               bool
	Local                                   bool `json:",omitempty"`
	EnrolledAt, LastSeen                    time.Time
	LostAt                                  *time.Time `json:",omitempty"`
}

// ListHosts lists every host, by ID.
func (s *Service) ListHosts(ctx context.Context) ([]HostInfo, error) {
	out := []HostInfo{}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		hosts, err := allHosts(ctx, tx)
		if err != nil {
			return err
		}
		for _, h := range hosts {
			l := hostLoad{Host: h, Used: map[string]int{}}
			if err := s.countLoad(ctx, tx, &l, ""); err != nil {
				return err
			}
			out = append(out, info(h, total(l.Used)))
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].HostId < out[j].HostId })
	return out, err
}

func info(h *Host, instances int) HostInfo {
	i := HostInfo{HostId: h.HostID, Pool: h.Pool, Location: h.Location, Address: h.Address, Status: string(h.Status),
		DnsName: h.DNSName, Hostname: h.Hostname, Capacity: h.Capacity, Instances: instances,
		Connected: h.ConnectedTo != "", Local: h.Local, EnrolledAt: h.EnrolledAt, LastSeen: h.LastSeen}
	if !h.LostAt.IsZero() {
		t := h.LostAt
		i.LostAt = &t
	}
	return i
}

// adminHost reads the host an admin action names: NotFoundException
// when there is none.
func adminHost(ctx context.Context, tx store.Tx, hostID string) (*Host, error) {
	h, err := getHost(ctx, tx, hostID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.NewNotFoundException("host %s does not exist (hoist admin list-hosts lists them)", clip(hostID))
	}
	return h, err
}

// DrainHost drains a host: it takes no new instance, and each instance
// it runs takes no new game session, is replaced on another host and
// stops once it hosts none. Draining a LOST host is refused (it has
// nothing left to drain).
func (s *Service) DrainHost(ctx context.Context, hostID string) (HostInfo, error) {
	var out HostInfo
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		h, err := adminHost(ctx, tx, hostID)
		if err != nil {
			return err
		}
		if h.Status == StatusLost {
			return api.NewInvalidRequestException("host %s is LOST: its instances were already replaced", hostID)
		}
		h.Status, h.Drained = StatusDraining, true
		out = info(h, 0)
		return putHost(ctx, tx, h)
	})
	if err == nil {
		s.log.Info("hosts: host draining", "host", hostID)
	}
	return out, err
}

// UndrainHost ends a host's draining: it takes new instances again (a
// LOST host that was drained comes back ACTIVE). The instances that drained
// keep draining: they were replaced, and each stops once it hosts no game
// session. Undraining an ACTIVE host changes nothing.
func (s *Service) UndrainHost(ctx context.Context, hostID string) (HostInfo, error) {
	var out HostInfo
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		h, err := adminHost(ctx, tx, hostID)
		if err != nil {
			return err
		}
		if h.Status == StatusDraining {
			h.Status = StatusActive
		}
		h.Drained = false
		out = info(h, 0)
		return putHost(ctx, tx, h)
	})
	if err == nil {
		s.log.Info("hosts: host undrained", "host", hostID, "status", out.Status)
	}
	return out, err
}

// RemoveHost removes a host: its record and its instances' placements are
// deleted, its connection to this replica is closed, and its credential
// no longer opens one (its agent then ends what it runs and exits). A
// host that runs instances is refused unless force: its instances are
// then lost (fleets ends their game sessions INTERRUPTED and replaces
// them). Once no host is enrolled in its location, Hoist's own machine
// serves the location again (choose).
func (s *Service) RemoveHost(ctx context.Context, hostID string, force bool) (HostInfo, error) {
	var out HostInfo
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		h, err := adminHost(ctx, tx, hostID)
		if err != nil {
			return err
		}
		l := hostLoad{Host: h, Used: map[string]int{}}
		if err := s.countLoad(ctx, tx, &l, ""); err != nil {
			return err
		}
		if n := total(l.Used); n > 0 && !force {
			return api.NewInvalidRequestException("host %s runs %d instances: drain it (hoist admin drain-host) and remove it once they ended, or remove it with --force (Force), which loses them", hostID, n)
		}
		out = info(h, total(l.Used))
		his, err := hostInstances(ctx, tx, hostID)
		if err != nil {
			return err
		}
		for _, hi := range his {
			if err := tx.Delete(ctx, KindHostInstance, hi.InstanceID); ignoreNotFound(err) != nil {
				return err
			}
		}
		return tx.Delete(ctx, KindHost, hostID)
	})
	if err != nil {
		return out, err
	}
	s.log.Warn("hosts: host removed", "host", hostID, "instancesLost", out.Instances)
	s.mu.Lock()
	hc := s.conns[hostID]
	s.mu.Unlock()
	if hc != nil {
		hc.peer.Abort() // its next connection is refused: the host is gone
	}
	return out, nil
}

// purgeTokens deletes enrolment tokens that expired TokenRetention ago.
func (s *Service) purgeTokens(ctx context.Context, now time.Time) error {
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		q := store.Query{Kind: KindEnrolmentToken, Order: store.OrderRankAsc,
			RankMax: now.Add(-s.t.TokenRetention).UnixMilli(), HasRankMax: true, Limit: 256}
		recs, _, err := tx.List(ctx, q)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := tx.Delete(ctx, r.Kind, r.ID); ignoreNotFound(err) != nil {
				return err
			}
		}
		return nil
	})
}
