package agent

import (
	"archive/zip"
	"context"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/hoistgg/hoist/internal/fleets/local"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
)

// Limits of a game session's logs, as Hoist keeps them on its own
// machine: a file is cut at maxLogFile, collection stops at the total
// and file bounds of hostproto.
const (
	maxLogFile = 100 << 20
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
// root (hosting.WalkGameLogs: nothing outside it is reached).
func (lz *logZip) addGameLogs(root string, logPaths []string) {
	_ = hosting.WalkGameLogs(root, logPaths, func(name string, r io.Reader) error {
		if !lz.add(name, r) {
			return fs.SkipAll
		}
		return nil
	})
}
