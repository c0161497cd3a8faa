package fleetiq

import (
	"context"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// KindInstance is the record kind of a game server group's instances
// (internal/metrics counts game server interruptions from its Key:
// STATUS/0|1, Parent the group).
const KindInstance = kindInstance

// InstanceGameServers returns how many game servers an instance record's
// Data counts (available and busy).
func InstanceGameServers(data []byte) (int, error) {
	var i instanceRec
	if err := i.decodeJSON(data); err != nil {
		return 0, err
	}
	return i.Available + i.Busy, nil
}

// GroupMetrics are a game server group's FleetIQ metrics (GameLift's
// CloudWatch names): its game servers, AVAILABLE (claimed or not) or
// UTILIZED, on ACTIVE instances or on instances being drained (DRAINING or
// SPOT_TERMINATING).
type GroupMetrics struct {
	AvailableGameServers, UtilizedGameServers                 int
	DrainingAvailableGameServers, DrainingUtilizedGameServers int
}

// AllGroupMetrics returns the metrics of every game server group that is
// not DELETED, by name. It counts with the store's indexes, and reads the
// game servers of a group only when one of its instances is draining.
func AllGroupMetrics(ctx context.Context, tx store.Tx) (map[string]GroupMetrics, error) {
	out := map[string]GroupMetrics{}
	err := store.Each(ctx, tx, store.Query{Kind: kindGroup, NoData: true}, func(r store.Record) error {
		if r.Key == string(api.GameServerGroupStatusDeleted) {
			return nil
		}
		m, err := groupMetrics(ctx, tx, r.ID)
		out[r.ID] = m
		return err
	})
	return out, err
}

// groupMetrics counts one group's game servers.
func groupMetrics(ctx context.Context, tx store.Tx, group string) (GroupMetrics, error) {
	var m GroupMetrics
	draining := map[string]bool{}
	err := store.Each(ctx, tx, store.Query{Kind: kindInstance, Parent: group, HasParent: true}, func(r store.Record) error {
		i, err := decode[instanceRec](r)
		if err == nil && i.Status != api.GameServerInstanceStatusActive {
			draining[i.ID] = true
		}
		return err
	})
	if err != nil {
		return m, err
	}
	if len(draining) == 0 {
		all, err := tx.Count(ctx, store.Query{Kind: kindServer, Parent: group, HasParent: true})
		if err != nil {
			return m, err
		}
		m.UtilizedGameServers, err = tx.Count(ctx, store.Query{Kind: kindServer, Parent: group, HasParent: true, Key: keyUtilized, HasKey: true})
		m.AvailableGameServers = all - m.UtilizedGameServers
		return m, err
	}
	err = store.Each(ctx, tx, store.Query{Kind: kindServer, Parent: group, HasParent: true}, func(r store.Record) error {
		g, err := decode[serverRec](r)
		if err != nil {
			return err
		}
		switch d := draining[g.Instance]; {
		case g.Utilized && d:
			m.DrainingUtilizedGameServers++
		case g.Utilized:
			m.UtilizedGameServers++
		case d:
			m.DrainingAvailableGameServers++
		default:
			m.AvailableGameServers++
		}
		return nil
	})
	return m, err
}
