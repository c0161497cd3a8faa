package fleetiq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// RegisterGameServer registers a game server: AVAILABLE, on an instance that
// joins the group as ACTIVE if the group does not have it yet. Game server
// IDs are unique across all groups (ConflictException). A group that does
// not exist is an InvalidRequestException (RegisterGameServer's modeled
// errors have no NotFoundException); a group being deleted a
// ConflictException. A group still NEW or ACTIVATING accepts game servers.
func (s *Service) RegisterGameServer(ctx context.Context, in *api.RegisterGameServerInput) (*api.RegisterGameServerOutput, error) {
	now := s.now()
	g := &serverRec{
		ID:         api.ToString(in.GameServerId),
		Group:      groupName(api.ToString(in.GameServerGroupName)),
		Instance:   api.ToString(in.InstanceId),
		Conn:       in.ConnectionInfo,
		Data:       in.GameServerData,
		Registered: ms(now),
		LastHealth: ms(now),
	}
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		_, st, err := s.findGroup(ctx, tx, api.ToString(in.GameServerGroupName), now)
		if nf := (*api.NotFoundException)(nil); errors.As(err, &nf) {
			return api.NewInvalidRequestException("%s", nf.Message)
		}
		if err != nil {
			return err
		}
		if !st.live() {
			return api.NewConflictException("Game server group %s is being deleted (status %s)", g.Group, st.status)
		}
		return s.insertServer(ctx, tx, g)
	})
	if err != nil {
		return nil, err
	}
	s.known.note(g)
	return &api.RegisterGameServerOutput{GameServer: s.serverOut(g, now)}, nil
}

// insertServer stores a new game server, its health deadline and its place
// on its instance.
func (s *Service) insertServer(ctx context.Context, tx store.Tx, g *serverRec) error {
	rec, err := g.record()
	if err != nil {
		return err
	}
	if err := tx.Insert(ctx, rec); errors.Is(err, store.ErrExists) {
		where := ""
		if old, err := loadServer(ctx, tx, g.ID); err == nil && old != nil {
			where = " in game server group " + old.Group
		}
		return api.NewConflictException("Game server %s is already registered%s", g.ID, where)
	} else if err != nil {
		return err
	}
	if err := s.putHealth(ctx, tx, g); err != nil {
		return err
	}
	inst, err := loadInstance(ctx, tx, g.Group, g.Instance)
	if err != nil {
		return err
	}
	if inst == nil {
		inst = &instanceRec{Group: g.Group, ID: g.Instance, Status: api.GameServerInstanceStatusActive}
	}
	inst.Available++
	return putInstance(ctx, tx, inst)
}

// serverOut returns the API view of g at now: ClaimStatus is present only
// while a claim holds; GameServerData is "" when there is none (as in
// GameLift's sample responses).
func (s *Service) serverOut(g *serverRec, now time.Time) *api.GameServer {
	out := &api.GameServer{
		ConnectionInfo:      g.Conn,
		GameServerData:      api.String(api.ToString(g.Data)),
		GameServerGroupArn:  api.String(s.groupARN(g.Group)),
		GameServerGroupName: api.String(g.Group),
		GameServerId:        api.String(g.ID),
		InstanceId:          api.String(g.Instance),
		RegistrationTime:    api.Time(fromMS(g.Registered)),
		UtilizationStatus:   api.GameServerUtilizationStatusAvailable,
	}
	if g.LastClaim != 0 {
		out.LastClaimTime = api.Time(fromMS(g.LastClaim))
	}
	if g.LastHealth != 0 {
		out.LastHealthCheckTime = api.Time(fromMS(g.LastHealth))
	}
	if g.Utilized {
		out.UtilizationStatus = api.GameServerUtilizationStatusUtilized
	} else if g.claimActive(now) {
		out.ClaimStatus = api.GameServerClaimStatusClaimed
	}
	return out
}

// findServer loads a game server of a group; one that does not exist or is
// in another group is a NotFoundException.
func findServer(ctx context.Context, tx store.Tx, groupNameOrARN, id string) (*serverRec, error) {
	g, err := loadServer(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if err := serverIn(g, groupNameOrARN, id); err != nil {
		return nil, err
	}
	return g, nil
}

// serverIn is the NotFoundException for game server id, read as g (nil
// when missing), unless g exists in the group groupNameOrARN names.
func serverIn(g *serverRec, groupNameOrARN, id string) error {
	if g == nil || g.Group != groupName(groupNameOrARN) {
		return api.NewNotFoundException("Game server %s not found in game server group %s", id, groupNameOrARN)
	}
	return nil
}

// recount moves g between its instance's counters when it changed from busy
// to not busy or back.
func recount(ctx context.Context, tx store.Tx, g *serverRec, wasBusy bool) error {
	return recountOn(ctx, tx, g, wasBusy, nil)
}

// recountOn is recount with g's instance already read as inst (held, as
// the transaction's reads are); nil reads it.
func recountOn(ctx context.Context, tx store.Tx, g *serverRec, wasBusy bool, inst *instanceRec) error {
	if wasBusy == g.busy() {
		return nil
	}
	if inst == nil {
		var err error
		if inst, err = loadInstance(ctx, tx, g.Group, g.Instance); err != nil {
			return err
		}
	}
	if inst == nil {
		return fmt.Errorf("fleetiq: instance %s of game server %s missing", g.Instance, g.ID)
	}
	inst.count(wasBusy, g.busy())
	return putInstance(ctx, tx, inst)
}

// UpdateGameServer changes a game server's utilization status (UTILIZED
// ends a claim; AVAILABLE leaves a claim that still holds in place),
// records a HEALTHY health check and replaces its game server data. It
// runs as a store Claim, as claims do: it holds the game server, then its
// instance, while it changes them (a claim passes over a game server being
// updated), so that updates and claims of one instance wait for each other
// briefly instead of failing over and running again. An update to
// AVAILABLE reads both in one round trip where it can (readForUpdate).
func (s *Service) UpdateGameServer(ctx context.Context, in *api.UpdateGameServerInput) (*api.UpdateGameServerOutput, error) {
	now := s.now()
	var g *serverRec
	err := s.cfg.Store.Claim(ctx, func(tx store.Tx) error {
		var inst *instanceRec
		var err error
		if g, inst, err = s.readForUpdate(ctx, tx, in); err != nil {
			return err
		}
		wasBusy := g.busy()
		g.settle(now)
		switch in.UtilizationStatus {
		case api.GameServerUtilizationStatusUtilized:
			g.Utilized, g.Claimed = true, false
		case api.GameServerUtilizationStatusAvailable:
			g.Utilized = false
		}
		if in.GameServerData != nil {
			g.Data = in.GameServerData
		}
		if in.HealthCheck == api.GameServerHealthCheckHealthy {
			g.LastHealth = ms(now)
			if err := s.putHealth(ctx, tx, g); err != nil {
				return err
			}
		}
		if err := putServer(ctx, tx, g); err != nil {
			return err
		}
		return recountOn(ctx, tx, g, wasBusy, inst)
	})
	if err != nil {
		return nil, err
	}
	return &api.UpdateGameServerOutput{GameServer: s.serverOut(g, now)}, nil
}

// DeregisterGameServer removes a game server (whatever its status).
func (s *Service) DeregisterGameServer(ctx context.Context, in *api.DeregisterGameServerInput) error {
	s.known.forget(api.ToString(in.GameServerId))
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		g, err := findServer(ctx, tx, api.ToString(in.GameServerGroupName), api.ToString(in.GameServerId))
		if err != nil {
			return err
		}
		return removeServer(ctx, tx, g)
	})
}

// removeServer deletes g, its health record and its place on its instance.
func removeServer(ctx context.Context, tx store.Tx, g *serverRec) error {
	if err := tx.Delete(ctx, kindServer, g.ID); err != nil {
		return err
	}
	if err := ignoreNotFound(tx.Delete(ctx, kindHealth, g.ID)); err != nil {
		return err
	}
	inst, err := loadInstance(ctx, tx, g.Group, g.Instance)
	if err != nil || inst == nil {
		return err
	}
	if g.busy() {
		inst.Busy--
	} else {
		inst.Available--
	}
	return putInstance(ctx, tx, inst)
}

// DescribeGameServer returns a game server.
func (s *Service) DescribeGameServer(ctx context.Context, in *api.DescribeGameServerInput) (*api.DescribeGameServerOutput, error) {
	now := s.now()
	var out *api.GameServer
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		g, err := findServer(ctx, tx, api.ToString(in.GameServerGroupName), api.ToString(in.GameServerId))
		if err == nil {
			out = s.serverOut(g, now)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.DescribeGameServerOutput{GameServer: out}, nil
}

// ListGameServers lists a group's game servers by registration time, oldest
// first unless SortOrder is DESCENDING. A group that does not exist is an
// InvalidRequestException (the operation's modeled errors have no
// NotFoundException).
func (s *Service) ListGameServers(ctx context.Context, in *api.ListGameServersInput) (*api.ListGameServersOutput, error) {
	now := s.now()
	out := &api.ListGameServersOutput{GameServers: []api.GameServer{}}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		grp, _, err := s.findGroup(ctx, tx, api.ToString(in.GameServerGroupName), now)
		if nf := (*api.NotFoundException)(nil); errors.As(err, &nf) {
			return api.NewInvalidRequestException("%s", nf.Message)
		}
		if err != nil {
			return err
		}
		q := store.Query{Kind: kindServer, Parent: grp.Name, HasParent: true, Order: store.OrderCreated,
			Desc: in.SortOrder == api.SortOrderDescending}
		recs, next, err := page(ctx, tx, q, api.ToString(in.NextToken), limitOf(in.Limit), nil)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			g, err := decode[serverRec](rec)
			if err != nil {
				return err
			}
			out.GameServers = append(out.GameServers, *s.serverOut(g, now))
		}
		if next != "" {
			out.NextToken = api.String(next)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
