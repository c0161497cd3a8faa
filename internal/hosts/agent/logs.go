package agent

import (
	"archive/zip"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/fleets/local"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
)

// Limits of a game session's logs, as Hoist keeps them on its own
// machine: a file is cut at maxLogFile, collection stops at the total
// and file bounds of hostproto.
const (
	maxLogFile = 100 << 20
	gameMount  = "/local/game/"
	outputName = "process-output.log"
)

// uploadGameSessionLogs collects a game session's logs on this host (the
// output of its process and the files its log paths name under the game
// root) into a zip archive and PUTs it to Hoist.
func (a *Agent) uploadGameSessionLogs(m hostproto.CollectLogs) {
	a.mu.Lock()
	in := a.instances[m.InstanceId]
	a.mu.Unlock()
	if in == nil || !validName(m.ProcessId) {
		a.log.Info("agent: a game session's logs are gone with its instance", "gameSession", m.GameSessionId)
		return
	}
	layout := local.LayoutIn(a.instancesDir(), in.ref.FleetID, in.ref.InstanceID)
	if err := os.MkdirAll(a.spoolDir(), 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(a.spoolDir(), ".logs-*.zip")
	if err != nil {
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	lc := &logZip{zw: zip.NewWriter(f)}
	lc.addFile(outputName, filepath.Join(layout.Dir, "logs", m.ProcessId+".log"))
	lc.addGameLogs(layout.GameRoot, m.LogPaths)
	if err := lc.zw.Close(); err != nil || lc.files == 0 {
		return
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	q := url.Values{"gamesession": {m.GameSessionId}}
	if err := a.put(ctx, hostproto.PathGameSessionLogs+"?"+q.Encode(), f); err != nil {
		a.log.Warn("agent: uploading a game session's logs", "gameSession", m.GameSessionId, "err", err)
	}
}

// logZip writes log files into a zip archive within the limits.
type logZip struct {
	zw    *zip.Writer
	files int
	bytes int64
}

// add copies r to name in the archive, within the limits.
func (lz *logZip) add(name string, r io.Reader) bool {
	left := min(int64(maxLogFile), hostproto.MaxGameSessionLogBytes-lz.bytes)
	if lz.files >= hostproto.MaxGameSessionLogFiles || left <= 0 {
		return false
	}
	w, err := lz.zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Now()})
	if err != nil {
		return false
	}
	n, _ := io.Copy(w, io.LimitReader(r, left))
	lz.files++
	lz.bytes += n
	return true
}

// addFile adds a regular file (not through a link).
func (lz *logZip) addFile(name, path string) {
	f, err := openRegular(path)
	if err != nil {
		return
	}
	defer f.Close()
	lz.add(name, f)
}

// addGameLogs adds the files (or trees) the log paths name under the game
// root, read through an os.Root so nothing outside it is reached.
func (lz *logZip) addGameLogs(root string, logPaths []string) {
	if len(logPaths) == 0 {
		return
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return
	}
	defer r.Close()
	fsys := r.FS()
	for _, lp := range logPaths {
		rel, ok := gameRelative(lp)
		if !ok {
			continue
		}
		err := fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			f, err := fsys.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if !lz.add(path.Join("files", p), f) {
				return errLimit
			}
			return nil
		})
		if errors.Is(err, errLimit) {
			return
		}
	}
}

var errLimit = errors.New("log limit reached")

// gameRelative maps a log path as the game gave it (relative to its
// build, or under /local/game) to a path relative to the game root.
func gameRelative(p string) (string, bool) {
	p = filepath.ToSlash(p)
	if strings.HasPrefix(p, gameMount) {
		p = strings.TrimPrefix(p, gameMount)
	} else if path.IsAbs(p) {
		return "", false
	}
	p = path.Clean(p)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}
