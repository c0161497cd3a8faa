package fleetiq

import (
	"context"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// DeleteGameServerGroup deletes a group. SAFE_DELETE (the default) and
// RETAIN refuse, with InvalidRequestException, while any of its game
// servers is UTILIZED; FORCE_DELETE does not. The group's game servers,
// instances and tags are removed at once; the group then reads
// DELETE_SCHEDULED, DELETING and DELETED one StatusStep apart and disappears
// DeletedRetention later. Deleting a group already being deleted returns it
// unchanged.
func (s *Service) DeleteGameServerGroup(ctx context.Context, in *api.DeleteGameServerGroupInput) (*api.DeleteGameServerGroupOutput, error) {
	option := in.DeleteOption
	if option == "" {
		option = api.GameServerGroupDeleteOptionSafeDelete
	}
	now := s.now()
	var out *api.GameServerGroup
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		g, st, err := s.findGroup(ctx, tx, api.ToString(in.GameServerGroupName), now)
		if err != nil {
			return err
		}
		if !st.live() {
			out = s.groupOut(g, st)
			return nil
		}
		if option != api.GameServerGroupDeleteOptionForceDelete {
			if err := checkNoneUtilized(ctx, tx, g.Name, option); err != nil {
				return err
			}
		}
		if err := removeMembers(ctx, tx, g.Name); err != nil {
			return err
		}
		if err := tags.DeleteAll(ctx, tx, s.groupARN(g.Name)); err != nil {
			return err
		}
		g.Status, g.Since, g.Updated, g.DeleteOption = statusDeleteScheduled, ms(now), ms(now), option
		if err := s.putGroup(ctx, tx, g); err != nil {
			return err
		}
		out = s.groupOut(g, s.status(g, now))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.DeleteGameServerGroupOutput{GameServerGroup: out}, nil
}

// checkNoneUtilized refuses a safe delete of a group with UTILIZED game
// servers.
func checkNoneUtilized(ctx context.Context, tx store.Tx, group string, option api.GameServerGroupDeleteOption) error {
	n, err := tx.Count(ctx, store.Query{Kind: kindServer, Parent: group, HasParent: true, Key: keyUtilized, HasKey: true})
	if err != nil {
		return err
	}
	if n > 0 {
		return api.NewInvalidRequestException("Game server group %s has %d UTILIZED game servers; DeleteOption %s deletes only a group without UTILIZED game servers (FORCE_DELETE deletes it anyway)", group, n, option)
	}
	return nil
}

// memberBatch is how many records removeMembers lists at a time.
const memberBatch = 512

// removeMembers deletes every game server (with its health record) and
// every instance of a group.
func removeMembers(ctx context.Context, tx store.Tx, group string) error {
	for _, kind := range []store.Kind{kindServer, kindHealth, kindInstance} {
		q := store.Query{Kind: kind, Parent: group, HasParent: true, Limit: memberBatch}
		for {
			recs, _, err := tx.List(ctx, q)
			if err != nil {
				return err
			}
			for _, rec := range recs {
				if err := tx.Delete(ctx, kind, rec.ID); err != nil {
					return err
				}
			}
			if len(recs) < memberBatch {
				break
			}
		}
	}
	return nil
}
