package builds

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// outcome is how unpacking a build's archive ended.
type outcome struct {
	status api.BuildStatus
	reason string // FAILED: why, for the user
}

// startUnpack unpacks a received build archive in the background (once per
// build at a time) and returns a channel closed when it is done.
func (s *Service) startUnpack(buildID string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if done, ok := s.running[buildID]; ok {
		return done
	}
	done := make(chan struct{})
	s.running[buildID] = done
	s.work.Add(1)
	go func() {
		defer s.work.Done()
		s.unpackBuild(context.Background(), buildID)
		s.mu.Lock()
		delete(s.running, buildID)
		s.mu.Unlock()
		close(done)
	}()
	return done
}

// unpackBuild unpacks a received archive into the build's directory and
// records the outcome: READY with SizeOnDisk, or FAILED with a reason.
func (s *Service) unpackBuild(ctx context.Context, buildID string) {
	r, err := s.get(ctx, buildID)
	if err != nil || r.Status != api.BuildStatusInitialized || r.Archive == "" {
		return // deleted meanwhile, or already done
	}
	start := s.cfg.Now()
	size, dir, err := s.unpackArchive(r)
	out := outcome{status: api.BuildStatusReady}
	var ae *ArchiveError
	switch {
	case errors.As(err, &ae):
		out = outcome{status: api.BuildStatusFailed, reason: ae.Reason}
	case err != nil:
		s.log.Error("build unpack failed", "build", buildID, "err", err)
		out = outcome{status: api.BuildStatusFailed, reason: "Hoist could not store the build's files (see Hoist's log)"}
	}
	if err := s.finishUnpack(ctx, r, out, size, dir); err != nil {
		s.log.Error("recording the build's status failed", "build", buildID, "err", err)
		s.removeBuildDir(buildID)
		return
	}
	s.blobs.remove(r.Archive)
	if out.status == api.BuildStatusFailed {
		s.log.Warn("build FAILED: archive rejected", "build", buildID, "reason", out.reason)
		return
	}
	s.log.Info("build READY", "build", buildID, "size_on_disk", size, "took", s.cfg.Now().Sub(start).Round(time.Millisecond))
}

// unpackArchive unpacks r's archive into a fresh temporary directory and
// moves it to the build's directory.
func (s *Service) unpackArchive(r *Record) (int64, string, error) {
	f, err := s.blobs.open(r.Archive)
	if err != nil {
		return 0, "", fmt.Errorf("open archive: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	tmp, err := os.MkdirTemp(filepath.Join(s.buildsDir(), ".tmp"), *r.BuildId+"-")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return 0, "", err
	}
	size, err := Unpack(f, st.Size(), tmp, s.lim.MaxUnpackedSize, s.lim.MaxEntries)
	if err != nil {
		return 0, "", err
	}
	dir := s.buildDir(*r.BuildId)
	if err := os.RemoveAll(dir); err != nil { // left by an attempt cut short
		return 0, "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return 0, "", err
	}
	return size, dir, syncDir(s.buildsDir())
}

// finishUnpack records the outcome, if the build still waits for it.
func (s *Service) finishUnpack(ctx context.Context, r *Record, out outcome, size int64, dir string) error {
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		cur, err := Get(ctx, tx, *r.BuildId)
		if err != nil {
			return err
		}
		if cur.Status != api.BuildStatusInitialized || cur.Archive != r.Archive {
			return fmt.Errorf("build %s changed while unpacking", *r.BuildId)
		}
		cur.Status, cur.StatusReason, cur.Archive = out.status, out.reason, ""
		if out.status == api.BuildStatusReady {
			cur.Dir = dir
			if !cur.FromObject {
				cur.SizeOnDisk = api.Int64(size)
			}
		}
		if _, err := deleteChildren(ctx, tx, KindUploadCredentials, *cur.BuildId); err != nil {
			return err
		}
		return putBuild(ctx, tx, cur)
	})
}

func (s *Service) removeBuildDir(buildID string) {
	if err := os.RemoveAll(s.buildDir(buildID)); err != nil {
		s.log.Warn("removing a build's files failed", "build", buildID, "err", err)
	}
}

// Recover resumes what a previous run of this replica left undone: it
// unpacks archives that were received but not unpacked, and removes
// blobs no record names and unpack directories cut short. Run calls it
// first; it must run before uploads are served.
func (s *Service) Recover(ctx context.Context) error {
	owned := map[string]bool{}
	var pending []string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		pending, err = s.collectOwned(ctx, tx, owned)
		return err
	})
	if err != nil {
		return err
	}
	if err := s.removeOrphanBlobs(owned); err != nil {
		return err
	}
	tmp := filepath.Join(s.buildsDir(), ".tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	for _, id := range pending {
		s.log.Info("resuming the unpacking of a received build", "build", id)
		s.startUnpack(id)
	}
	return nil
}

// removeOrphanBlobs removes the blobs no record names that were written
// before this Service started (newer ones may be uploads in progress).
func (s *Service) removeOrphanBlobs(owned map[string]bool) error {
	names, err := s.blobs.list()
	if err != nil {
		return err
	}
	for _, n := range names {
		if owned[n] {
			continue
		}
		if st, err := os.Stat(s.blobs.path(n)); err == nil && st.ModTime().Before(s.started) {
			s.blobs.remove(n)
		}
	}
	return nil
}

// collectOwned marks every blob a record of this replica names and returns
// the builds whose archive waits to be unpacked.
func (s *Service) collectOwned(ctx context.Context, tx store.Tx, owned map[string]bool) ([]string, error) {
	var pending []string
	err := store.Each(ctx, tx, store.Query{Kind: hosting.KindBuild, Key: string(api.BuildStatusInitialized), HasKey: true}, func(rec store.Record) error {
		var r Record
		if err := store.Decode(rec, &r); err != nil || r.Archive == "" || r.Host != s.cfg.ReplicaID {
			return err
		}
		owned[r.Archive] = true
		pending = append(pending, *r.BuildId)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = store.Each(ctx, tx, store.Query{Kind: KindUploadObject}, func(rec store.Record) error {
		var o objectRecord
		err := store.Decode(rec, &o)
		owned[o.Blob] = true
		return err
	})
	if err != nil {
		return nil, err
	}
	return pending, store.Each(ctx, tx, store.Query{Kind: KindUploadPart}, func(rec store.Record) error {
		var p partRecord
		err := store.Decode(rec, &p)
		owned[p.Blob] = true
		return err
	})
}
