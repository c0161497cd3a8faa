package sessions

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// Limits of log collection: bigger files are cut at maxLogFile, and
// collection stops at maxLogFiles files or maxLogTotal bytes.
const (
	maxLogFile  = 100 << 20
	maxLogTotal = 500 << 20
	maxLogFiles = 1000
	// outputName is the collected copy of the process's stdout and stderr.
	outputName = "process-output.log"
)

// collectReq asks for a game session's logs to be collected.
type collectReq struct {
	gameSessionID string
	gameRoot      string   // where /local/game is on this host ("" = none)
	logPaths      []string // as the process gave them in ProcessReady
	outputPath    string   // the process's captured stdout/stderr
}

// planCollectTx plans collecting the logs of p's game session gs, when the
// compute's files are on this replica.
func (s *Service) planCollectTx(ctx context.Context, tx store.Tx, fx *effects, p *hosting.Process, gs *hosting.GameSession) error {
	if s.cfg.DataDir == "" || gs.LogDir != "" {
		return nil
	}
	comp, err := getCompute(ctx, tx, p.FleetID, p.ComputeName)
	if err != nil {
		return ignoreNotFound(err)
	}
	if comp.Host != "" && comp.Host != s.cfg.ReplicaID {
		if s.cfg.RemoteLogs != nil {
			fx.remote = append(fx.remote, hosting.LogRequest{GameSessionID: p.GameSessionID, ProcessID: p.ID,
				FleetID: p.FleetID, ComputeName: p.ComputeName, Host: comp.Host, LogPaths: logPathsOf(p, gs)})
		}
		return nil
	}
	if comp.GameRoot == "" && p.OutputPath == "" {
		return nil
	}
	fx.collect = append(fx.collect, collectReq{gameSessionID: p.GameSessionID, gameRoot: comp.GameRoot,
		logPaths: logPathsOf(p, gs), outputPath: p.OutputPath})
	return nil
}

// logPathsOf are the log paths of a game session: its process's, else its
// own.
func logPathsOf(p *hosting.Process, gs *hosting.GameSession) []string {
	if len(p.LogPaths) > 0 {
		return p.LogPaths
	}
	return gs.LogPaths
}

// LogDirFor returns where the logs of a game session are kept (a host
// uploads those of game sessions on its instances there).
func (s *Service) LogDirFor(gameSessionID string) string { return s.logDir(gameSessionID) }

// SetCollectedLogs records that a game session's logs were collected in
// dir (by its host: GetGameSessionLogUrl then serves them).
func (s *Service) SetCollectedLogs(ctx context.Context, gameSessionID, dir string) error {
	return s.update(ctx, func(tx store.Tx, _ *effects) error {
		gs, err := getGameSession(ctx, tx, gameSessionID)
		if err != nil {
			return err
		}
		gs.LogDir, gs.LogReplica = dir, s.cfg.ReplicaID
		return s.putGameSession(ctx, tx, gs)
	})
}

// logDir is where a game session's logs are collected.
func (s *Service) logDir(gameSessionID string) string {
	sum := sha256.Sum256([]byte(gameSessionID))
	return filepath.Join(s.cfg.DataDir, "gamesession-logs", hex.EncodeToString(sum[:16]))
}

// collectLogs copies a game session's log files into the data directory
// and records where they are.
func (s *Service) collectLogs(ctx context.Context, c collectReq) {
	dir := s.logDir(c.gameSessionID)
	n, err := copyLogs(dir, c)
	if err != nil {
		s.log.Warn("sessions: collecting game session logs", "gameSession", c.gameSessionID, "err", err)
	}
	if n == 0 {
		return
	}
	err = s.update(ctx, func(tx store.Tx, _ *effects) error {
		gs, err := getGameSession(ctx, tx, c.gameSessionID)
		if err != nil {
			return ignoreNotFound(err)
		}
		gs.LogDir, gs.LogReplica = dir, s.cfg.ReplicaID
		return s.putGameSession(ctx, tx, gs)
	})
	if err != nil {
		s.log.Warn("sessions: recording collected logs", "gameSession", c.gameSessionID, "err", err)
	}
}

// logCopier copies files into one destination root within its limits.
type logCopier struct {
	dst               *os.Root
	maxFile, maxTotal int64
	maxFiles          int
	files             int
	bytes             int64
}

// copyLogs collects c's files into dir and returns how many it copied.
func copyLogs(dir string, c collectReq) (int, error) {
	if err := os.RemoveAll(dir); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return 0, err
	}
	dst, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer dst.Close()
	lc := &logCopier{dst: dst, maxFile: maxLogFile, maxTotal: maxLogTotal, maxFiles: maxLogFiles}
	var errs []error
	if c.outputPath != "" {
		if f, err := os.Open(c.outputPath); err == nil {
			errs = append(errs, lc.copy(outputName, f))
			f.Close()
		} else if !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if c.gameRoot != "" && len(c.logPaths) > 0 {
		errs = append(errs, lc.copyGameLogs(c.gameRoot, c.logPaths))
	}
	return lc.files, errors.Join(errs...)
}

// copyGameLogs copies the files (or directory trees) named by logPaths from
// under root (hosting.WalkGameLogs: nothing outside root is reached).
func (lc *logCopier) copyGameLogs(root string, logPaths []string) error {
	return hosting.WalkGameLogs(root, logPaths, func(name string, r io.Reader) error {
		err := lc.copy(name, r)
		if errors.Is(err, errLogLimit) {
			return fs.SkipAll // the limits are documented: collection ends there
		}
		return err
	})
}

var errLogLimit = errors.New("log collection limit reached")

// copy writes r to name under the destination, within the limits.
func (lc *logCopier) copy(name string, r io.Reader) error {
	left := min(lc.maxFile, lc.maxTotal-lc.bytes)
	if lc.files >= lc.maxFiles || left <= 0 {
		return errLogLimit
	}
	if dir := path.Dir(name); dir != "." {
		if err := lc.dst.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	w, err := lc.dst.Create(name)
	if err != nil {
		return err
	}
	n, err := io.Copy(w, io.LimitReader(r, left))
	lc.files++
	lc.bytes += n
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteLogArchive writes the logs collected for a game session to w as a
// zip archive (what the URL from GetGameSessionLogUrl serves).
// NotFoundException when there are none; *hosting.LogsElsewhere when
// they are in another replica's data directory.
func (s *Service) WriteLogArchive(ctx context.Context, w io.Writer, gameSessionID string) error {
	var dir, holder string
	err := s.view(ctx, func(tx store.Tx) error {
		gs, err := findGameSession(ctx, tx, gameSessionID)
		if err == nil {
			dir, holder = gs.LogDir, gs.LogReplica
		}
		return err
	})
	if err != nil {
		return err
	}
	if dir == "" {
		return api.NewNotFoundException("no logs were collected for game session %s", gameSessionID)
	}
	if holder != "" && holder != s.cfg.ReplicaID {
		return &hosting.LogsElsewhere{Replica: holder}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return api.NewNotFoundException("the logs of game session %s are not on this Hoist replica", gameSessionID)
	}
	defer root.Close()
	zw := zip.NewWriter(w)
	fsys := root.FS()
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := fsys.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		zf, err := zw.Create(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(zf, f)
		return err
	})
	if err != nil {
		return err
	}
	return zw.Close()
}
