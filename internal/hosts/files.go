package hosts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/builds"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/store"
)

// ServeBuild serves GET /hoist/host/builds/<build ID> to a host: the
// build's files as a zip archive (stored, not compressed), streamed from
// the unpacked build, with the SHA-256 of the bytes sent in the trailer
// hostproto.BuildHashTrailer. A host may download only the build of a
// fleet with an instance placed on it (403 otherwise).
func (s *Service) ServeBuild(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "download a build with GET", http.StatusMethodNotAllowed)
		return
	}
	h, err := s.authenticate(r.Context(), r.Header)
	if err != nil {
		refuse(w, err)
		return
	}
	buildID := strings.TrimPrefix(r.URL.Path, hostproto.PathBuild)
	if err := s.mayDownload(r.Context(), h.HostID, buildID); err != nil {
		refuse(w, err)
		return
	}
	dir, err := s.cfg.BuildDir(r.Context(), buildID)
	if err != nil {
		s.log.Warn("hosts: a host's build download", "host", h.HostID, "build", buildID, "err", err)
		refuse(w, &httpError{http.StatusNotFound, "build " + clip(buildID) + " is not available on this Hoist"})
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Trailer", hostproto.BuildHashTrailer)
	sum := sha256.New()
	if err := builds.WriteZip(io.MultiWriter(w, sum), dir); err != nil {
		// No trailer: the host refuses what it got.
		s.log.Warn("hosts: sending a build failed", "host", h.HostID, "build", buildID, "err", err)
		return
	}
	w.Header().Set(hostproto.BuildHashTrailer, hex.EncodeToString(sum.Sum(nil)))
	s.log.Info("hosts: build sent", "host", h.HostID, "build", buildID)
}

// mayDownload checks that a fleet with an instance placed on hostID (in
// its current generation) runs buildID.
func (s *Service) mayDownload(ctx context.Context, hostID, buildID string) error {
	ok := false
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		h, err := getHost(ctx, tx, hostID)
		if err != nil {
			return err
		}
		his, err := hostInstances(ctx, tx, hostID)
		if err != nil {
			return err
		}
		for _, hi := range his {
			if hi.Generation != h.Generation {
				continue
			}
			var f hosting.Fleet
			if _, err := store.GetJSON(ctx, tx, hosting.KindFleet, hi.FleetID, &f); err != nil {
				if ignoreNotFound(err) != nil {
					return err
				}
				continue
			}
			if api.ToString(f.Attributes.BuildId) == buildID {
				ok = true
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !ok {
		return &httpError{http.StatusForbidden, "no instance placed on this host runs build " + clip(buildID)}
	}
	return nil
}

// ServeOutput serves PUT /hoist/host/output?instance=...&process=...: the
// end of an ended process's output (at most hostproto.MaxOutputBytes), of
// an instance of this host's, which fleets quotes in its events and keeps
// for their PreSignedLogUrl.
func (s *Service) ServeOutput(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		w.Header().Set("Allow", http.MethodPut)
		http.Error(w, "upload with PUT", http.StatusMethodNotAllowed)
		return
	}
	h, err := s.authenticate(r.Context(), r.Header)
	if err != nil {
		refuse(w, err)
		return
	}
	q := r.URL.Query()
	inst, proc := q.Get("instance"), q.Get("process")
	if !validName(proc) {
		refuse(w, &httpError{http.StatusBadRequest, "process must name a process"})
		return
	}
	if _, err := s.ownInstance(r.Context(), h.HostID, inst, proc); err != nil {
		refuse(w, &httpError{http.StatusForbidden, "instance " + clip(inst) + " (process " + clip(proc) + ") is not one of this host's"})
		return
	}
	if err := receiveFile(r, s.outputPath(proc), hostproto.MaxOutputBytes); err != nil {
		refuse(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// receiveFile writes a request's body to path (through a temporary file),
// refusing one over max bytes (413).
func receiveFile(r *http.Request, path string, max int64) error {
	if path == "" {
		return &httpError{http.StatusServiceUnavailable, "this Hoist keeps no uploads"}
	}
	if r.ContentLength > max {
		return &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("at most %d bytes", max)}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".upload-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	n, err := io.Copy(f, io.LimitReader(r.Body, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return &httpError{http.StatusBadRequest, "the upload could not be read"}
	case n > max:
		return &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("at most %d bytes", max)}
	}
	return os.Rename(f.Name(), path)
}

// ServeGameSessionLogs serves PUT
// /hoist/host/gamesession-logs?gamesession=...: the logs of a game session
// hosted on an instance of this host, as a zip archive (at most
// hostproto.MaxGameSessionLogBytes and MaxGameSessionLogFiles files),
// unpacked with the build unpacker's checks where GetGameSessionLogUrl
// serves them from.
func (s *Service) ServeGameSessionLogs(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		w.Header().Set("Allow", http.MethodPut)
		http.Error(w, "upload with PUT", http.StatusMethodNotAllowed)
		return
	}
	h, err := s.authenticate(r.Context(), r.Header)
	if err != nil {
		refuse(w, err)
		return
	}
	gsID := r.URL.Query().Get("gamesession")
	if s.cfg.GameSessionLogs == nil || s.cfg.UploadDir == "" {
		refuse(w, &httpError{http.StatusServiceUnavailable, "this Hoist keeps no game session logs"})
		return
	}
	if err := s.ownGameSession(r.Context(), h.HostID, gsID); err != nil {
		refuse(w, err)
		return
	}
	if err := s.keepGameSessionLogs(r, gsID); err != nil {
		refuse(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ownGameSession checks that a game session's process ran on an instance
// placed on hostID.
func (s *Service) ownGameSession(ctx context.Context, hostID, gsID string) error {
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var gs hosting.GameSession
		if _, err := store.GetJSON(ctx, tx, hosting.KindGameSession, gsID, &gs); err != nil {
			return err
		}
		var p hosting.Process
		if _, err := store.GetJSON(ctx, tx, hosting.KindProcess, gs.ProcessID, &p); err != nil {
			return err
		}
		hi, err := getHostInstance(ctx, tx, p.ComputeName)
		if err != nil || hi.HostID != hostID {
			return errors.Join(err, errNotYours)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, errNotYours) || errors.Is(err, store.ErrNotFound) {
			return &httpError{http.StatusForbidden, "game session " + clip(gsID) + " was not hosted on this host"}
		}
		return err
	}
	return nil
}

// keepGameSessionLogs unpacks an uploaded archive of a game session's
// logs where sessions serves them, and records it.
func (s *Service) keepGameSessionLogs(r *http.Request, gsID string) error {
	tmpDir := filepath.Join(s.cfg.UploadDir, "gamesession-logs")
	sum := sha256.Sum256([]byte(gsID))
	archive := filepath.Join(tmpDir, hex.EncodeToString(sum[:16])+".zip")
	if err := receiveFile(r, archive, hostproto.MaxGameSessionLogBytes); err != nil {
		return err
	}
	defer os.Remove(archive)
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	unpacked, err := os.MkdirTemp(tmpDir, "unpack-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(unpacked)
	if _, err := builds.Unpack(f, st.Size(), unpacked, hostproto.MaxGameSessionLogBytes, hostproto.MaxGameSessionLogFiles); err != nil {
		var ae *builds.ArchiveError
		if errors.As(err, &ae) {
			return &httpError{http.StatusBadRequest, "the logs archive was refused: " + ae.Reason}
		}
		return err
	}
	dir := s.cfg.GameSessionLogs.LogDirFor(gsID)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return err
	}
	if err := os.Rename(unpacked, dir); err != nil {
		return err
	}
	return s.cfg.GameSessionLogs.SetCollectedLogs(r.Context(), gsID, dir)
}
