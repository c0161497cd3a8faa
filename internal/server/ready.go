package server

import (
	"net/http"
	"sync/atomic"
)

// Starting answers HTTP while Hoist opens its store (which replays the
// journal: seconds for a large one) and then hands every request to Hoist's
// own handler, given to Ready. Until then /hoist/health answers 200
// "starting" (the process is alive), /hoist/ready 503 "starting: opening
// the store", and every other route 503, which the AWS SDKs retry.
type Starting struct {
	h atomic.Pointer[http.Handler]
}

// Ready makes every later request go to h.
func (st *Starting) Ready(h http.Handler) { st.h.Store(&h) }

func (st *Starting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := st.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch r.URL.Path {
	case "/hoist/health":
		_, _ = w.Write([]byte("starting\n"))
	default:
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("starting: opening the store (replaying its journal)\n"))
	}
}

// serveHealth is /hoist/health: 200 "ok" while the store can make writes
// durable, 503 with the reason once a write or fsync of it failed (the store
// then takes no more writes until Hoist restarts).
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := s.store.Failed(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("store failed: " + err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// serveReady is /hoist/ready: 200 "ready" once Hoist serves (its store is
// open: replayed), 503 with the reason when the store has failed. Before
// the store is open, Starting answers 503.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := s.store.Failed(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("store failed: " + err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}
