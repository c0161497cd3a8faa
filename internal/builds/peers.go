package builds

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/peersign"
)

// PeerPath + build ID: GET a READY build's files from the replica holding
// them, as a zip archive (stored), signed both ways with the cluster key.
const PeerPath = "/hoist/replica/builds/"

// Headers of a peer build request (internal/peersign) and its response's
// trailer.
const (
	peerExpiresHeader   = peersign.ExpiresHeader
	peerSignatureHeader = peersign.SignatureHeader
	peerMACTrailer      = "X-Hoist-Build-Mac"
)

// peerMAC is the cluster key's MAC of parts (peersign.MAC).
var peerMAC = peersign.MAC

// ServePeer serves GET PeerPath<build ID> to another replica of the
// cluster: the build's files, if this replica holds them, as WriteZip
// writes them, with the trailer X-Hoist-Build-Mac (the HMAC of the build
// ID and the archive's SHA-256). The request must carry an expiry at most
// a minute ahead and its HMAC under the cluster key (compared in constant
// time); without a cluster key (one replica) the route is 404.
func (s *Service) ServePeer(w http.ResponseWriter, r *http.Request) {
	key := s.cfg.ClusterKey
	if len(key) == 0 {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	id := strings.TrimPrefix(r.URL.Path, PeerPath)
	if err := checkPeerRequest(key, id, r.Header, s.now()); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	dir, err := s.localBuildDir(r.Context(), id)
	if err != nil {
		http.Error(w, "build "+clip(id)+" is not held by this replica", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Trailer", peerMACTrailer)
	sum := sha256.New()
	if err := WriteZip(io.MultiWriter(w, sum), dir); err != nil {
		s.log.Warn("builds: sending a build to a replica failed", "build", id, "err", err)
		return // no trailer: the receiver refuses what it got
	}
	w.Header().Set(peerMACTrailer, hex.EncodeToString(peerMAC(key, "files", id, hex.EncodeToString(sum.Sum(nil)))))
}

// checkPeerRequest checks a peer build request's expiry and signature.
func checkPeerRequest(key []byte, id string, h http.Header, now time.Time) error {
	if id == "" {
		return errors.New("a replica's build request names a build ID")
	}
	return peersign.Check(key, id, h, now)
}

// clip shortens what a caller sent before it is quoted.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// fetchBuild makes a copy of a READY build held by another replica in
// this replica's builds directory, unless it has one, and returns it: the
// archive is fetched from the holder (its address from PeerURL), its MAC
// checked, and unpacked within the upload limits. Fetches run one at a
// time per replica.
func (s *Service) fetchBuild(ctx context.Context, r *Record) (string, error) {
	id := *r.BuildId
	dir := s.buildDir(id)
	s.fetchMu.Lock()
	defer s.fetchMu.Unlock()
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir, nil
	}
	base, err := s.cfg.PeerURL(ctx, r.Host)
	if err != nil {
		return "", fmt.Errorf("build %s is held by Hoist replica %q: %w", id, r.Host, err)
	}
	f, size, err := s.download(ctx, base, id)
	if err != nil {
		return "", fmt.Errorf("fetching build %s from replica %q: %w", id, r.Host, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	tmp, err := os.MkdirTemp(filepath.Join(s.buildsDir(), ".tmp"), id+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if _, err := Unpack(f, size, tmp, s.lim.MaxUnpackedSize, s.lim.MaxEntries); err != nil {
		return "", fmt.Errorf("build %s from replica %q: %w", id, r.Host, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	s.log.Info("builds: fetched a build's files from the replica holding them", "build", id, "replica", r.Host)
	return dir, syncDir(s.buildsDir())
}

// download GETs a build's archive from base into a temporary file, at most
// the upload limit's bytes, and checks the holder's MAC over it.
func (s *Service) download(ctx context.Context, base, id string) (*os.File, int64, error) {
	key := s.cfg.ClusterKey
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+PeerPath+id, nil)
	if err != nil {
		return nil, 0, err
	}
	peersign.Sign(req.Header, key, id, s.now())
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, 0, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	f, err := os.CreateTemp(filepath.Join(s.buildsDir(), ".tmp"), id+"-*.zip")
	if err != nil {
		return nil, 0, err
	}
	n, sum, err := copyBounded(f, resp.Body, s.maxPeerArchive())
	if err == nil {
		got, _ := hex.DecodeString(resp.Trailer.Get(peerMACTrailer))
		if !hmac.Equal(got, peerMAC(key, "files", id, hex.EncodeToString(sum.Sum(nil)))) {
			err = errors.New("the archive does not match the holder's signature")
		}
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, 0, err
	}
	return f, n, nil
}

// copyBounded copies r to w, at most max bytes, hashing what it copies.
func copyBounded(w io.Writer, r io.Reader, max int64) (int64, hash.Hash, error) {
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, sum), io.LimitReader(r, max+1))
	if err == nil && n > max {
		err = fmt.Errorf("the archive is over %d bytes", max)
	}
	return n, sum, err
}

// maxPeerArchive bounds a fetched archive: the unpacked size limit plus
// room for each entry's headers.
func (s *Service) maxPeerArchive() int64 {
	return s.lim.MaxUnpackedSize + int64(s.lim.MaxEntries)*1024 + 1<<20
}
