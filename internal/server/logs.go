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

// setupLogURL returns a signed URL, valid LogURLTTL, that downloads an
// instance's setup log (the PreSignedLogUrl of its fleet creation events).
func (s *Server) setupLogURL(fleetID, instanceID string) string {
	exp := strconv.FormatInt(s.now().Add(LogURLTTL).Unix(), 10)
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
	exp := strconv.FormatInt(s.now().Add(LogURLTTL).Unix(), 10)
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
// serveSetupLog serves an instance's setup log as text.
func (s *Server) serveSetupLog(w http.ResponseWriter, r *http.Request, q url.Values) {
	fleetID, instanceID, exp, sig := q.Get("fleetId"), q.Get("instanceId"), q.Get("expires"), q.Get("signature")
	expires, err := strconv.ParseInt(exp, 10, 64)
	if fleetID == "" || instanceID == "" || err != nil || sig == "" {
		http.Error(w, "a setup log URL carries fleetId, instanceId, expires and signature: see the PreSignedLogUrl of DescribeFleetEvents", http.StatusBadRequest)
		return
	}
	if !hmac.Equal([]byte(sig), []byte(s.logSignature(setupLogSubject(fleetID, instanceID), exp))) {
		http.Error(w, "the signature does not match this URL", http.StatusForbidden)
		return
	}
	if s.now().Unix() > expires {
		http.Error(w, "this log URL has expired: call DescribeFleetEvents for a new one", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return
	}
	bw := &bufferedHeader{w: w}
	if err := s.fleets.WriteSetupLog(r.Context(), bw, fleetID, instanceID); err != nil {
		if bw.started {
			s.log.Warn("serving a setup log", "fleet", fleetID, "instance", instanceID, "err", err)
			return
		}
		var nf *api.NotFoundException
		if errors.As(err, &nf) {
			http.Error(w, nf.ErrorMessage(), http.StatusNotFound)
			return
		}
		s.log.Error("serving a setup log", "fleet", fleetID, "instance", instanceID, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
}

// serveProcessLog serves the kept output of one server process as text.
func (s *Server) serveProcessLog(w http.ResponseWriter, r *http.Request, q url.Values) {
	fleetID, processID, exp, sig := q.Get("fleetId"), q.Get("processId"), q.Get("expires"), q.Get("signature")
	expires, err := strconv.ParseInt(exp, 10, 64)
	if fleetID == "" || processID == "" || err != nil || sig == "" {
		http.Error(w, "a process output URL carries fleetId, processId, expires and signature: see the PreSignedLogUrl of DescribeFleetEvents", http.StatusBadRequest)
		return
	}
	if !hmac.Equal([]byte(sig), []byte(s.logSignature(processLogSubject(fleetID, processID), exp))) {
		http.Error(w, "the signature does not match this URL", http.StatusForbidden)
		return
	}
	if s.now().Unix() > expires {
		http.Error(w, "this log URL has expired: call DescribeFleetEvents for a new one", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return
	}
	bw := &bufferedHeader{w: w}
	if err := s.fleets.WriteProcessOutput(r.Context(), bw, fleetID, processID); err != nil {
		if bw.started {
			s.log.Warn("serving a process's output", "fleet", fleetID, "process", processID, "err", err)
			return
		}
		var nf *api.NotFoundException
		if errors.As(err, &nf) {
			http.Error(w, nf.ErrorMessage(), http.StatusNotFound)
			return
		}
		s.log.Error("serving a process's output", "fleet", fleetID, "process", processID, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
}

type bufferedHeader struct {
	w       http.ResponseWriter
	started bool
}

func (b *bufferedHeader) Write(p []byte) (int, error) {
	b.started = true
	return b.w.Write(p)
}
