package builds

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// KindRetainedBuild: a deleted build whose files are kept because fleets
// created from it still run (they launch new instances from the files).
// ID = build ID; the data is the build's Record as it was when deleted.
// The record goes, and the files with it, once no such fleet is left.
const KindRetainedBuild store.Kind = "RetainedBuild"

// DefaultRetainedCheck is how often Run looks for retained build files no
// fleet uses any more.
const DefaultRetainedCheck = time.Minute

// fleetsUsing returns the IDs of the fleets created from buildID that are
// not DELETING or TERMINATED.
func fleetsUsing(ctx context.Context, tx store.Tx, buildID string) ([]string, error) {
	var ids []string
	err := store.Each(ctx, tx, store.Query{Kind: hosting.KindFleet}, func(rec store.Record) error {
		switch api.FleetStatus(rec.Key) {
		case api.FleetStatusDeleting, api.FleetStatusTerminated:
			return nil
		}
		var f hosting.Fleet
		if err := store.Decode(rec, &f); err != nil {
			return err
		}
		if api.ToString(f.Attributes.BuildId) == buildID {
			ids = append(ids, rec.ID)
		}
		return nil
	})
	return ids, err
}

// retainIfUsed keeps a READY build's files, in the transaction that
// deletes the build, when fleets use them; it reports whether it did.
func retainIfUsed(ctx context.Context, tx store.Tx, r *Record) (bool, error) {
	if r.Status != api.BuildStatusReady || r.Dir == "" {
		return false, nil
	}
	users, err := fleetsUsing(ctx, tx, *r.BuildId)
	if err != nil || len(users) == 0 {
		return false, err
	}
	return true, store.PutJSON(ctx, tx, store.Record{Kind: KindRetainedBuild, ID: *r.BuildId}, r)
}

// retained reads the retained record of a deleted build, or returns an
// *api.NotFoundException.
func retained(ctx context.Context, tx store.Tx, buildID string) (*Record, error) {
	var r Record
	_, err := store.GetJSON(ctx, tx, KindRetainedBuild, buildID, &r)
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.NewNotFoundException("Build %s not found", buildID)
	}
	return &r, err
}

// FleetBuild returns a build as the fleets created from it see it: the
// build DescribeBuild reports, or, for a build deleted while fleets used
// it, the build as it was (READY), its files kept for them. CreateFleet
// checks a build with Build instead, which knows no deleted build.
func (s *Service) FleetBuild(ctx context.Context, tx store.Tx, buildID string) (api.Build, error) {
	r, err := Get(ctx, tx, buildID)
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		if rr, rerr := retained(ctx, tx, buildIDOf(buildID)); rerr == nil {
			return rr.Build, nil
		}
	}
	if err != nil {
		return api.Build{}, err
	}
	return r.Build, nil
}

// releaseRetained removes the retained build files of this replica that no
// fleet uses any more.
func (s *Service) releaseRetained(ctx context.Context) error {
	var candidates []Record
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		return store.Each(ctx, tx, store.Query{Kind: KindRetainedBuild}, func(rec store.Record) error {
			var r Record
			if err := store.Decode(rec, &r); err != nil || r.Host != s.cfg.ReplicaID {
				return err
			}
			candidates = append(candidates, r)
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, r := range candidates {
		var release bool
		err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
			users, err := fleetsUsing(ctx, tx, *r.BuildId)
			if release = err == nil && len(users) == 0; !release {
				return err
			}
			return tx.Delete(ctx, KindRetainedBuild, *r.BuildId)
		})
		if err != nil {
			return err
		}
		if release {
			if err := os.RemoveAll(r.Dir); err != nil {
				s.log.Warn("removing a deleted build's files failed", "build", *r.BuildId, "err", err)
				continue
			}
			s.log.Info("deleted build's files removed: no fleet uses them any more", "build", *r.BuildId)
		}
	}
	return nil
}
