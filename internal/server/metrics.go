package server

import (
	"time"

	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/netip"
	"strings"

	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/metrics"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/postgres"
)

// GET /metrics: the Prometheus exposition (docs/metrics.md), on the main
// listener, outside the API's SigV4 (Prometheus does not sign). Who may
// scrape is metricsAccess's decision.

// instrument makes this replica's metrics and returns st wrapped so that
// its transactions are measured and their events counted. The cluster
// gauges read st itself.
func (s *Server) instrument(st store.Store) store.Store {
	s.cluster = &metrics.Cluster{Store: st, Now: func() time.Time { return s.now() }, Backlog: events.Backlog}
	g := metrics.ReplicaGauges{
		SDKConnections:   func() int { return s.sdk.Connections() },
		AgentConnections: func() int { return s.agents.Connections() },
		HostConnections:  func() int { return s.hosts.Connections() },
		EventStreams:     s.streams.count,
		Webhooks: func() metrics.WebhookCounts {
			c := s.events.Counters()
			return metrics.WebhookCounts{Delivered: c.Delivered, Failed: c.Failed, GivenUp: c.GivenUp,
				DroppedFull: c.DroppedFull, DroppedRemoved: c.DroppedRemoved, Evicted: c.Evicted}
		},
	}
	switch st := st.(type) {
	case *journal.Store:
		g.Journal = func() (int64, int64) { x := st.Stats(); return x.Batches, x.Updates }
	case *postgres.Store:
		g.Postgres = func() (int64, int64) { x := st.Stats(); return x.RoundTrips, x.Retries }
	}
	s.metrics = metrics.New(s.replica, s.cluster, g)
	return s.metrics.WrapStore(st)
}

// Metrics returns this replica's metrics (tests).
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// Cluster returns the computation of the cluster's state the gauges
// export (the console shows the same figures).
func (s *Server) Cluster() *metrics.Cluster { return s.cluster }

// serveMetrics answers GET /metrics once metricsAccess allows it.
func (s *Server) serveMetrics() http.Handler {
	h := s.metrics.Handler()
	token := s.cfg.MetricsToken
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, msg := metricsAccess(token, r); status != 0 {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="hoist metrics"`)
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(msg + "\n"))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "GET /metrics", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// metricsAccess decides whether r may scrape /metrics: 0 when it may,
// else the status and message to refuse it with. With a token, a request
// must carry it (Authorization: Bearer <token>; the comparison takes the
// same time whatever the token given), from anywhere; it is checked
// first. Without one, only a client connected from a loopback address may,
// addressing a loopback Host (not a DNS-rebound name) in a request no web
// page sent (no Origin; Sec-Fetch-Site none or same-origin).
func metricsAccess(token string, r *http.Request) (int, string) {
	if token != "" {
		given, ok := bearer(r.Header.Get("Authorization"))
		a, b := sha256.Sum256([]byte(given)), sha256.Sum256([]byte(token))
		if !ok || subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
			return http.StatusUnauthorized, "/metrics needs the metrics token (--metrics-token): Authorization: Bearer <token>"
		}
		return 0, ""
	}
	if !loopbackRemote(r.RemoteAddr) {
		return http.StatusForbidden, "/metrics answers loopback clients only; configure --metrics-token to scrape from elsewhere"
	}
	if !loopbackHost(r.Host) {
		return http.StatusForbidden, "/metrics answers only requests addressed to a loopback name or address without --metrics-token"
	}
	if _, ok := r.Header["Origin"]; ok {
		return http.StatusForbidden, "/metrics refuses requests from web pages (this one carries an Origin header)"
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return http.StatusForbidden, "/metrics refuses requests from web pages (Sec-Fetch-Site)"
	}
	return 0, ""
}

// bearer returns the token of an Authorization header of the Bearer
// scheme (its name in any case, RFC 6750).
func bearer(h string) (string, bool) {
	const scheme = "bearer "
	if len(h) <= len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	return h[len(scheme):], true
}

// loopbackRemote reports whether a request's RemoteAddr is a loopback
// address.
func loopbackRemote(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// count returns how many live event streams are open.
func (l *streamLimits) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}
