package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// LogURLTTL is how long a URL from GetGameSessionLogUrl works (GameLift's
// pre-signed S3 URLs last 15 minutes).
const LogURLTTL = 15 * time.Minute

// logURL returns a signed, expiring URL that downloads a game session's
// collected logs as a zip archive.
func (s *Server) logURL(gameSessionID string) string {
	exp := strconv.FormatInt(s.wallNow().Add(LogURLTTL).Unix(), 10)
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

// setupLogURL returns a signed URL, valid LogURLTTL, that downloads an
// instance's setup log (the PreSignedLogUrl of its fleet creation events).
func (s *Server) setupLogURL(fleetID, instanceID string) string {
	exp := strconv.FormatInt(s.wallNow().Add(LogURLTTL).Unix(), 10)
	q := url.Values{"fleetId": {fleetID}, "instanceId": {instanceID}, "expires": {exp},
		"signature": {s.logSignature(setupLogSubject(fleetID, instanceID), exp)}}
	return s.baseURL + "/hoist/logs?" + q.Encode()
}

// setupLogSubject is what a setup log URL signs (it cannot be a game
// session ID: those are ARNs).
func setupLogSubject(fleetID, instanceID string) string {
	return "setup-log:" + fleetID + "/" + instanceID
}

// processLogURL returns a signed URL, valid LogURLTTL, that downloads the
// kept output of one server process of a fleet (the PreSignedLogUrl of the
// events about its end).
func (s *Server) processLogURL(fleetID, processID string) string {
	exp := strconv.FormatInt(s.wallNow().Add(LogURLTTL).Unix(), 10)
	q := url.Values{"fleetId": {fleetID}, "processId": {processID}, "expires": {exp},
		"signature": {s.logSignature(processLogSubject(fleetID, processID), exp)}}
	return s.baseURL + "/hoist/logs?" + q.Encode()
}

// processLogSubject is what a process output URL signs: a subject of its
// own, so that no other log URL's signature verifies for it.
func processLogSubject(fleetID, processID string) string {
	return "process-output:" + fleetID + "/" + processID
}

// serveLogs serves GET /hoist/logs?gameSessionId=&expires=&signature=
// (a game session's logs), GET /hoist/logs?fleetId=&instanceId=&
// expires=&signature= (an instance's setup log) and GET
// /hoist/logs?fleetId=&processId=&expires=&signature= (a server process's
// kept output).
func (s *Server) serveLogs(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	if q.Has("processId") {
		s.serveProcessLog(w, r, q)
		return
	}
	if q.Has("fleetId") {
		s.serveSetupLog(w, r, q)
		return
	}
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
	if s.wallNow().Unix() > expires {
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
		var le *hosting.LogsElsewhere
		if errors.As(err, &le) {
			s.relayLog(w, r, le.Replica, peerLog{gameSessionID: id})
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

// serveSetupLog serves an instance's setup log as text.
func (s *Server) serveSetupLog(w http.ResponseWriter, r *http.Request, q url.Values) {
	fleetID, instanceID := q.Get("fleetId"), q.Get("instanceId")
	s.serveTextLog(w, r, q, textLog{what: "a setup log", idName: "instanceId", id: instanceID,
		subject: setupLogSubject(fleetID, instanceID),
		write: func(ctx context.Context, w io.Writer) error {
			return s.fleets.WriteSetupLog(ctx, w, fleetID, instanceID)
		}})
}

// serveProcessLog serves the kept output of one server process as text.
func (s *Server) serveProcessLog(w http.ResponseWriter, r *http.Request, q url.Values) {
	fleetID, processID := q.Get("fleetId"), q.Get("processId")
	s.serveTextLog(w, r, q, textLog{what: "a process's output", idName: "processId", id: processID,
		subject: processLogSubject(fleetID, processID),
		peer:    &peerLog{fleetID: fleetID, processID: processID},
		write: func(ctx context.Context, w io.Writer) error {
			return s.fleets.WriteProcessOutput(ctx, w, fleetID, processID)
		}})
}

// textLog is a text log a signed URL of DescribeFleetEvents serves: the
// URL names fleetId and idName, and is signed over subject.
type textLog struct {
	what, idName, id, subject string
	write                     func(ctx context.Context, w io.Writer) error
	// peer asks the replica holding the log for it (nil: in the store).
	peer *peerLog
}

// serveTextLog checks a fleet event's log URL (its parameters, signature
// and expiry) and serves the log as text.
func (s *Server) serveTextLog(w http.ResponseWriter, r *http.Request, q url.Values, l textLog) {
	fleetID, exp, sig := q.Get("fleetId"), q.Get("expires"), q.Get("signature")
	expires, err := strconv.ParseInt(exp, 10, 64)
	if fleetID == "" || l.id == "" || err != nil || sig == "" {
		http.Error(w, "the URL of "+l.what+" carries fleetId, "+l.idName+", expires and signature: see the PreSignedLogUrl of DescribeFleetEvents", http.StatusBadRequest)
		return
	}
	if !hmac.Equal([]byte(sig), []byte(s.logSignature(l.subject, exp))) {
		http.Error(w, "the signature does not match this URL", http.StatusForbidden)
		return
	}
	if s.wallNow().Unix() > expires {
		http.Error(w, "this log URL has expired: call DescribeFleetEvents for a new one", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return
	}
	bw := &bufferedHeader{w: w}
	if err := l.write(r.Context(), bw); err != nil {
		if bw.started {
			s.log.Warn("serving "+l.what, "fleet", fleetID, l.idName, l.id, "err", err)
			return
		}
		var le *hosting.LogsElsewhere
		if errors.As(err, &le) && l.peer != nil {
			s.relayLog(w, r, le.Replica, *l.peer)
			return
		}
		var nf *api.NotFoundException
		if errors.As(err, &nf) {
			http.Error(w, nf.ErrorMessage(), http.StatusNotFound)
			return
		}
		s.log.Error("serving "+l.what, "fleet", fleetID, l.idName, l.id, "err", err)
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
