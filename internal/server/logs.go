package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// LogURLTTL is how long a URL from GetGameSessionLogUrl works (GameLift's
// pre-signed S3 URLs last 15 minutes).
const LogURLTTL = 15 * time.Minute

// logURL returns a signed, expiring URL that downloads a game session's
// collected logs as a zip archive.
func (s *Server) logURL(gameSessionID string) string {
	exp := strconv.FormatInt(s.now().Add(LogURLTTL).Unix(), 10)
	q := url.Values{"gameSessionId": {gameSessionID}, "expires": {exp}, "signature": {s.logSignature(gameSessionID, exp)}}
	return s.baseURL + "/hoist/logs?" + q.Encode()
}

func (s *Server) logSignature(gameSessionID, expires string) string {
	m := hmac.New(sha256.New, s.logKey)
	m.Write([]byte(gameSessionID))
	m.Write([]byte{0})
	m.Write([]byte(expires))
	return hex.EncodeToString(m.Sum(nil))
}

// serveLogs serves GET /hoist/logs?gameSessionId=&expires=&signature=.
func (s *Server) serveLogs(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	id, exp, sig := q.Get("gameSessionId"), q.Get("expires"), q.Get("signature")
	expires, err := strconv.ParseInt(exp, 10, 64)
	if id == "" || err != nil || sig == "" {
		http.Error(w, "a log URL carries gameSessionId, expires and signature: ask GetGameSessionLogUrl for one", http.StatusBadRequest)
		return
	}
	if !hmac.Equal([]byte(sig), []byte(s.logSignature(id, exp))) {
		http.Error(w, "the signature does not match this URL", http.StatusForbidden)
		return
	}
	if s.now().Unix() > expires {
		http.Error(w, "this log URL has expired: ask GetGameSessionLogUrl for a new one", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", `attachment; filename="gamesession-logs.zip"`)
	if r.Method == http.MethodHead {
		return
	}
	bw := &bufferedHeader{w: w}
	if err := s.sessions.WriteLogArchive(r.Context(), bw, id); err != nil {
		if bw.started {
			s.log.Warn("serving game session logs", "gameSession", id, "err", err)
			return
		}
		var nf *api.NotFoundException
		if errors.As(err, &nf) {
			w.Header().Del("Content-Disposition")
			http.Error(w, nf.ErrorMessage(), http.StatusNotFound)
			return
		}
		s.log.Error("serving game session logs", "gameSession", id, "err", err)
		w.Header().Del("Content-Disposition")
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
}

// bufferedHeader notes whether anything was written, so an error before the
// first byte can still be answered with a status.
type bufferedHeader struct {
	w       http.ResponseWriter
	started bool
}

func (b *bufferedHeader) Write(p []byte) (int, error) {
	b.started = true
	return b.w.Write(p)
}
