// Package metrics is Hoist's Prometheus exposition (GET /metrics,
// docs/metrics.md): GameLift's CloudWatch metrics under their own names,
// with GameLift's dimensions as labels, and Hoist's own.
//
// Two kinds of figures, so that a cluster of replicas adds up:
//
//   - Gauges of cluster state (ActiveGameSessions, QueueDepth,
//     CurrentTickets, AvailableGameServers ...) are computed from the store
//     at scrape time by Cluster (cached at most a second), so every
//     replica reports the same values; they carry no replica label.
//   - Counters and histograms of events (PlacementsStarted, TicketsStarted,
//     requests, store commits ...) are this replica's, labelled
//     replica="<ID>", so that sum() over the replicas is the cluster's.
//
// Event counters are counted where a change commits: the store wrapper
// (Store) sees each transaction's writes and record transitions, and the
// event publisher wrapper (Publisher) each placement and matchmaking
// event; both count only once the transaction has committed, and only its
// last attempt (a backend may run a transaction's function again).
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds this replica's registry and its counters.
type Metrics struct {
	reg *prometheus.Registry
	// GameLift's event counters.
	gl gameliftCounters
	// Hoist's own.
	own hoistMetrics
}

// New returns the metrics of replica replicaID: every per-replica metric
// is labelled replica=replicaID. cluster, when non-nil, adds the cluster
// gauges (computed from the store at scrape time); gauges adds this
// replica's connection gauges.
func New(replicaID string, cluster *Cluster, gauges ReplicaGauges) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	per := prometheus.WrapRegistererWith(prometheus.Labels{"replica": replicaID}, m.reg)
	m.gl = newGameliftCounters(per)
	m.own = newHoistMetrics(per)
	per.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerReplicaGauges(per, gauges)
	if cluster != nil {
		m.reg.MustRegister(&clusterCollector{c: cluster})
	}
	return m
}

// Registry returns the registry every metric is registered with (tests).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the exposition. It does no authentication: the caller
// decides who may scrape (internal/server).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 4, Timeout: 30 * time.Second})
}

// seconds returns d in seconds, for histograms.
func seconds(d time.Duration) float64 { return d.Seconds() }
