package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/peersign"
)

// LogPeerPath: GET a log held in this replica's data directory, for
// another replica of the cluster (?gameSessionId= for a game session's
// logs, ?fleetId=&processId= for a server process's kept output), signed
// with the cluster key (internal/peersign).
const LogPeerPath = "/hoist/replica/logs"

const (
	// logPeerMACTrailer carries the holder's MAC over what it sent.
	logPeerMACTrailer = "X-Hoist-Log-Mac"
	// logRelayTimeout bounds one relayed download.
	logRelayTimeout = 10 * time.Minute
	// maxLogIDLen bounds each ID of a peer log request.
	maxLogIDLen = 1024
	// maxRelayedArchive bounds a relayed game session log archive: the
	// collection limit (500 MiB) and room for its entries' headers.
	maxRelayedArchive = 600 << 20
	// maxRelayedOutput bounds a relayed process output (1 MiB is kept).
	maxRelayedOutput = 2 << 20
)

// peerLog is one log a replica asks another for.
type peerLog struct {
	gameSessionID, fleetID, processID string
}

// parsePeerLog reads a peer log request's query: a gameSessionId alone,
// or a fleetId and a processId, each at most maxLogIDLen bytes.
func parsePeerLog(q url.Values) (peerLog, error) {
	l := peerLog{gameSessionID: q.Get("gameSessionId"), fleetID: q.Get("fleetId"), processID: q.Get("processId")}
	for _, v := range q {
		if len(v) != 1 || len(v[0]) > maxLogIDLen {
			return peerLog{}, errors.New("each parameter of a replica's log request is given once, of at most 1024 bytes")
		}
	}
	game, proc := l.gameSessionID != "", l.fleetID != "" && l.processID != ""
	if game == proc || len(q) != map[bool]int{true: 1, false: 2}[game] {
		return peerLog{}, errors.New("a replica's log request names a gameSessionId, or a fleetId and a processId")
	}
	return l, nil
}

// query is the query string that asks for l.
func (l peerLog) query() url.Values {
	if l.gameSessionID != "" {
		return url.Values{"gameSessionId": {l.gameSessionID}}
	}
	return url.Values{"fleetId": {l.fleetID}, "processId": {l.processID}}
}

// subject is what a peer request for l signs (no build ID contains ':',
// so no build request's signature verifies for it).
func (l peerLog) subject() string {
	if l.gameSessionID != "" {
		return "gamesession-logs:" + l.gameSessionID
	}
	return processLogSubject(l.fleetID, l.processID)
}

// limit is the most bytes relayed for l.
func (l peerLog) limit() int64 {
	if l.gameSessionID != "" {
		return maxRelayedArchive
	}
	return maxRelayedOutput
}

// write writes l from this replica's data directory.
func (s *Server) writeLocalLog(ctx context.Context, w io.Writer, l peerLog) error {
	if l.gameSessionID != "" {
		return s.sessions.WriteLogArchive(ctx, w, l.gameSessionID)
	}
	return s.fleets.WriteProcessOutput(ctx, w, l.fleetID, l.processID)
}

// serveLogPeer serves GET LogPeerPath to another replica: a log this
// replica holds, with the trailer X-Hoist-Log-Mac (the cluster key's HMAC
// of the subject and the body's SHA-256). It never asks a third replica.
// Without a cluster key (one replica) the route is 404.
func (s *Server) serveLogPeer(w http.ResponseWriter, r *http.Request) {
	key := s.buildsKey
	if len(key) == 0 {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	l, err := parsePeerLog(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := peersign.Check(key, l.subject(), r.Header, s.wallNow()); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	w.Header().Set("Trailer", logPeerMACTrailer)
	sum := sha256.New()
	bw := &bufferedHeader{w: w}
	err = s.writeLocalLog(r.Context(), io.MultiWriter(bw, sum), l)
	var nf *api.NotFoundException
	var le *hosting.LogsElsewhere
	switch {
	case err == nil:
		w.Header().Set(logPeerMACTrailer, hex.EncodeToString(peersign.MAC(key, "log", l.subject(), hex.EncodeToString(sum.Sum(nil)))))
		s.log.Info("logs: served a log to another replica", "log", l.subject())
	case bw.started:
		s.log.Warn("logs: sending a log to a replica failed", "log", l.subject(), "err", err)
	case errors.As(err, &nf):
		http.Error(w, nf.ErrorMessage(), http.StatusNotFound)
	case errors.As(err, &le):
		http.Error(w, "this replica does not hold the log", http.StatusNotFound)
	default:
		s.log.Error("logs: reading a log for a replica", "log", l.subject(), "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
}

// relayLog answers a log URL whose log another replica (holder) holds:
// it streams the log from there, at most l.limit() bytes within
// logRelayTimeout, and checks the holder's MAC at the end (a mismatch
// aborts the response, so the client sees a cut download). When the
// holder is no longer registered it answers 404.
func (s *Server) relayLog(w http.ResponseWriter, r *http.Request, holder string, l peerLog) {
	base, err := s.peerURL(r.Context(), holder)
	switch {
	case errors.Is(err, errReplicaGone):
		s.relayError(w, http.StatusNotFound, "the logs were on Hoist replica "+holder+", which is no longer running")
		return
	case err != nil || len(s.buildsKey) == 0:
		s.relayError(w, http.StatusNotFound, "the logs are on Hoist replica "+holder+", which this replica cannot reach")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), logRelayTimeout)
	defer cancel()
	resp, err := s.askPeerLog(ctx, base, l)
	if err != nil {
		s.log.Warn("logs: asking the replica holding a log", "replica", holder, "log", l.subject(), "err", err)
		s.relayError(w, http.StatusBadGateway, "Hoist replica "+holder+", which holds the logs, did not answer")
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		s.relayError(w, http.StatusNotFound, fmt.Sprintf("Hoist replica %s, which held the logs: %s", holder, strings.TrimSpace(string(msg))))
		return
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, sum), io.LimitReader(resp.Body, l.limit()+1))
	got, _ := hex.DecodeString(resp.Trailer.Get(logPeerMACTrailer))
	if err != nil || n > l.limit() || !hmac.Equal(got, peersign.MAC(s.buildsKey, "log", l.subject(), hex.EncodeToString(sum.Sum(nil)))) {
		s.log.Warn("logs: a relayed log was cut, too big or not signed by its holder", "replica", holder, "log", l.subject(), "bytes", n, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// askPeerLog sends a signed request for l to the replica at base.
func (s *Server) askPeerLog(ctx context.Context, base string, l peerLog) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+LogPeerPath+"?"+l.query().Encode(), nil)
	if err != nil {
		return nil, err
	}
	peersign.Sign(req.Header, s.buildsKey, l.subject(), s.wallNow())
	return (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
}

// relayError answers a relayed log URL with an error: the headers set for
// the log are dropped.
func (s *Server) relayError(w http.ResponseWriter, code int, msg string) {
	w.Header().Del("Content-Disposition")
	http.Error(w, msg, code)
}
