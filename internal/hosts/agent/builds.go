package agent

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/hoistgg/hoist/internal/builds"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
)

// maxBuildEntries bounds the entries of a downloaded build archive (as
// Hoist bounds uploaded ones).
const maxBuildEntries = 200_000

// buildCache keeps the builds of this host's instances, unpacked, one
// directory per build under dir; a build is downloaded once however many
// instances use it, and removed when the last of them stops.
type buildCache struct {
	a   *Agent
	dir string

	mu   sync.Mutex
	busy map[string]*sync.Mutex // a lock per build
	refs map[string]int         // instances using each build
}

// get returns the directory of a build's files, downloading it first if
// this host does not have it; the caller holds a reference (release).
func (c *buildCache) get(ctx context.Context, buildID string) (string, error) {
	c.mu.Lock()
	if c.refs == nil {
		c.refs = map[string]int{}
	}
	c.refs[buildID]++
	l := c.busy[buildID]
	if l == nil {
		l = &sync.Mutex{}
		c.busy[buildID] = l
	}
	c.mu.Unlock()
	l.Lock()
	defer l.Unlock()
	dir := filepath.Join(c.dir, buildID)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := c.download(ctx, buildID, dir); err != nil {
		return "", fmt.Errorf("downloading build %s from Hoist: %w", buildID, err)
	}
	return dir, nil
}

// release drops an instance's reference to a build; the last one removes
// it.
func (c *buildCache) release(buildID string) {
	c.mu.Lock()
	c.refs[buildID]--
	last := c.refs[buildID] <= 0
	if last {
		delete(c.refs, buildID)
	}
	l := c.busy[buildID]
	c.mu.Unlock()
	if !last || l == nil {
		return
	}
	l.Lock()
	defer l.Unlock()
	c.mu.Lock()
	again := c.refs[buildID] > 0
	c.mu.Unlock()
	if !again {
		_ = os.RemoveAll(filepath.Join(c.dir, buildID))
	}
}

// download fetches a build's archive into a temporary file (at most
// MaxBuildSize bytes), checks it against the SHA-256 Hoist sends in the
// trailer, and unpacks it with the checks Hoist unpacks uploads with.
func (c *buildCache) download(ctx context.Context, buildID, dir string) error {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(c.dir, ".download-*.zip")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	size, err := c.fetch(ctx, buildID, f)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(c.dir, ".unpack-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if _, err := builds.Unpack(f, size, tmp, c.a.cfg.MaxBuildSize, maxBuildEntries); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// fetch GETs a build's archive into w and returns its size.
func (c *buildCache) fetch(ctx context.Context, buildID string, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.a.url(hostproto.PathBuild+buildID), nil)
	if err != nil {
		return 0, err
	}
	cr := c.a.creds()
	hostproto.SetCredential(req.Header, cr.HostID, cr.HostSecret)
	resp, err := c.a.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return 0, fmt.Errorf("the download was refused: %s: %s", resp.Status, b)
	}
	sum := sha256.New()
	max := c.a.cfg.MaxBuildSize
	n, err := io.Copy(io.MultiWriter(w, sum), io.LimitReader(resp.Body, max+1))
	switch {
	case err != nil:
		return 0, err
	case n > max:
		return 0, fmt.Errorf("the build is larger than %d bytes (--max-build-size)", max)
	}
	want := resp.Trailer.Get(hostproto.BuildHashTrailer)
	got := hex.EncodeToString(sum.Sum(nil))
	if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
		return 0, errors.New("the build's SHA-256 does not match the one Hoist sent (a cut or damaged download)")
	}
	return n, nil
}
