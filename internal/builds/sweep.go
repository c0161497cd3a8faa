package builds

import (
	"context"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// SweepInterval is how often Run cleans up.
const SweepInterval = time.Hour

// Run recovers what an earlier run left undone (see Recover), then, every
// SweepInterval until ctx ends, deletes expired upload credentials and the
// multipart uploads this replica holds that were started more than
// UploadRetention ago, and every RetainedCheck removes the files of
// deleted builds that no fleet uses any more. When ctx ends it waits for unpacks in progress.
// Every replica runs it (the uploads it removes are its own files; expired
// credentials are dead everywhere), so it takes no lease.
func (s *Service) Run(ctx context.Context) error {
	defer s.work.Wait()
	if err := s.Recover(ctx); err != nil {
		return err
	}
	t := time.NewTicker(SweepInterval)
	defer t.Stop()
	rt := time.NewTicker(s.cfg.RetainedCheck)
	defer rt.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.sweep(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("builds sweep failed", "err", err)
			}
		case <-rt.C:
			if err := s.releaseRetained(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("releasing deleted builds' files failed", "err", err)
			}
		}
	}
}

// sweep deletes expired credentials and stale multipart uploads.
func (s *Service) sweep(ctx context.Context) error {
	now := s.cfg.Now()
	var blobs []string
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		blobs = nil
		if err := store.Each(ctx, tx, store.Query{Kind: KindUploadCredentials}, func(rec store.Record) error {
			var c credRecord
			if err := store.Decode(rec, &c); err == nil && now.Before(c.Expires) {
				return nil
			}
			return tx.Delete(ctx, KindUploadCredentials, rec.ID)
		}); err != nil {
			return err
		}
		return store.Each(ctx, tx, store.Query{Kind: KindMultipartUpload}, func(rec store.Record) error {
			var up uploadRecord
			if err := store.Decode(rec, &up); err != nil || up.Host != s.cfg.ReplicaID || now.Sub(up.Created) < s.cfg.UploadRetention {
				return err
			}
			if err := tx.Delete(ctx, KindMultipartUpload, rec.ID); err != nil {
				return err
			}
			b, err := deleteParts(ctx, tx, rec.ID)
			blobs = append(blobs, b...)
			return err
		})
	})
	if err != nil {
		return err
	}
	s.blobs.remove(blobs...)
	return nil
}
