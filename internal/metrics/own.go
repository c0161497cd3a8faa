package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Type aliases, for brevity.
type (
	counterVec = prometheus.CounterVec
	observer   = prometheus.Observer
)

// hoistMetrics are Hoist's own metrics, this replica's.
type hoistMetrics struct {
	requests      *prometheus.HistogramVec // operation, code
	storeUpdate   *prometheus.HistogramVec // op, result
	storeWrites   *prometheus.HistogramVec // op
	launched      *prometheus.CounterVec   // FleetId, Location
	launchFailed  *prometheus.CounterVec   // FleetId, Location
	exited        *prometheus.CounterVec   // FleetId, Location, how
	matchPass     *prometheus.HistogramVec // ConfigurationName
	matchPassWork *prometheus.CounterVec   // ConfigurationName
}

// latencyBuckets are the buckets of request and transaction latencies
// (seconds): 100 µs to 10 s.
var latencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// newHoistMetrics registers Hoist's own metrics with reg.
func newHoistMetrics(reg prometheus.Registerer) hoistMetrics {
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		reg.MustRegister(h)
		return h
	}
	return hoistMetrics{
		requests: hist("hoist_api_request_duration_seconds",
			"GameLift API requests served, by operation (\"\" when the request named none Hoist knows) and error code (\"\" for success), and how long each took.",
			latencyBuckets, "operation", "code"),
		storeUpdate: hist("hoist_store_update_duration_seconds",
			"Read-write store transactions (op: update, update_fenced, claim; result: ok, conflict, lease_lost, error), and how long each took from its start to its durable commit, retries included.",
			latencyBuckets, "op", "result"),
		storeWrites: hist("hoist_store_update_writes",
			"Records written (inserted, put, deleted) by each committed read-write store transaction.",
			[]float64{0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096}, "op"),
		launched:     counter(reg, "hoist_server_processes_launched_total", "Server processes of managed fleets this replica's hosts launched.", labelFleet, labelLocation),
		launchFailed: counter(reg, "hoist_server_process_launch_failures_total", "Server processes of managed fleets that could not be started (launch path not executable, or gone since the instance's validation).", labelFleet, labelLocation),
		exited:       counter(reg, "hoist_server_processes_exited_total", "Server processes of managed fleets that exited (how: exit, signal, killed after their grace period).", labelFleet, labelLocation, "how"),
		matchPass: hist("hoist_matchmaker_pass_seconds", "The matchmaker's passes over one matchmaking configuration, and how long each took.",
			[]float64{0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}, labelConfig),
		matchPassWork: counter(reg, "hoist_matchmaker_work_total", "The matcher's work spent by the matchmaker's passes (flexmatch's units; a pass's budget is 4 full passes over its pool).", labelConfig),
	}
}

// ObserveRequest counts one API request: operation ("" when unknown),
// error code ("" for success) and how long it took.
func (m *Metrics) ObserveRequest(operation, code string, d time.Duration) {
	m.own.requests.WithLabelValues(operation, code).Observe(seconds(d))
}

// ObservePass counts one matchmaker pass over a configuration
// (matchmaking.PassObserver).
func (m *Metrics) ObservePass(configuration string, secs float64, work int) {
	m.own.matchPass.WithLabelValues(configuration).Observe(secs)
	if work > 0 {
		m.own.matchPassWork.WithLabelValues(configuration).Add(float64(work))
	}
}

// ReplicaGauges read this replica's figures at scrape time; nil fields
// are not exported.
type ReplicaGauges struct {
	// SDKConnections, AgentConnections and HostConnections count the
	// server processes' SDK WebSockets, the GameLift Agents' sockets and
	// the pool hosts' connections open on this replica.
	SDKConnections, AgentConnections, HostConnections func() int
	// EventStreams counts the live event streams open on this replica.
	EventStreams func() int
	// Webhooks returns the webhook delivery counters of this replica.
	Webhooks func() WebhookCounts
	// Journal returns the journal store's group commits and the
	// transactions they wrote (nil for the other stores).
	Journal func() (batches, updates int64)
	// Postgres returns the PostgreSQL store's round trips and the
	// transactions it ran again (nil for the other stores).
	Postgres func() (roundTrips, retries int64)
}

// WebhookCounts are this replica's webhook deliveries (events.Counters).
type WebhookCounts struct {
	Delivered, Failed, GivenUp, DroppedFull, DroppedRemoved, Evicted int64
}

// registerReplicaGauges registers g's figures with reg.
func registerReplicaGauges(reg prometheus.Registerer, g ReplicaGauges) {
	gauge := func(name, help string, f func() int) {
		if f != nil {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(f()) }))
		}
	}
	gauge("hoist_sdk_connections", "Server SDK WebSockets open on this replica.", g.SDKConnections)
	gauge("hoist_agent_connections", "GameLift Agent sockets (Anywhere computes) open on this replica.", g.AgentConnections)
	gauge("hoist_host_connections", "Pool hosts (and the local agent) connected to this replica.", g.HostConnections)
	gauge("hoist_event_streams", "Live event streams (GET /hoist/events) open on this replica.", g.EventStreams)
	if g.Webhooks != nil {
		reg.MustRegister(&webhookCollector{read: g.Webhooks})
	}
	if g.Journal != nil {
		reg.MustRegister(&pairCollector{descs: journalDescs, read: g.Journal})
	}
	if g.Postgres != nil {
		reg.MustRegister(&pairCollector{descs: postgresDescs, read: g.Postgres})
	}
}

// webhookCollector exports this replica's webhook delivery counters.
type webhookCollector struct{ read func() WebhookCounts }

var (
	webhookDesc = prometheus.NewDesc("hoist_webhook_deliveries_total",
		"Webhook deliveries this replica's delivery loops settled, by result: delivered (2xx), failed (an attempt failed; retried), given_up (dropped after failing for the give-up time), dropped_full (dropped undelivered when the outbox was full), dropped_removed (their URL is no longer configured).",
		[]string{"result"}, nil)
	evictedDesc = prometheus.NewDesc("hoist_events_evicted_total",
		"Events deleted from a full outbox before their time (--event-outbox), delivered or not.", nil, nil)
)

// Describe sends the collector's descriptions.
func (c *webhookCollector) Describe(ch chan<- *prometheus.Desc) { ch <- webhookDesc; ch <- evictedDesc }

// Collect sends the counters.
func (c *webhookCollector) Collect(ch chan<- prometheus.Metric) {
	w := c.read()
	for _, r := range []struct {
		name string
		n    int64
	}{{"delivered", w.Delivered}, {"failed", w.Failed}, {"given_up", w.GivenUp},
		{"dropped_full", w.DroppedFull}, {"dropped_removed", w.DroppedRemoved}} {
		ch <- prometheus.MustNewConstMetric(webhookDesc, prometheus.CounterValue, float64(r.n), r.name)
	}
	ch <- prometheus.MustNewConstMetric(evictedDesc, prometheus.CounterValue, float64(w.Evicted))
}

// pairCollector exports two counters a store keeps, read together.
type pairCollector struct {
	descs [2]*prometheus.Desc
	read  func() (int64, int64)
}

var (
	journalDescs = [2]*prometheus.Desc{
		prometheus.NewDesc("hoist_store_journal_batches_total",
			"Batches the journal store wrote and flushed (group commits); updates_total / batches_total is the mean batch size.", nil, nil),
		prometheus.NewDesc("hoist_store_journal_updates_total",
			"Transactions the journal store committed in its batches.", nil, nil),
	}
	postgresDescs = [2]*prometheus.Desc{
		prometheus.NewDesc("hoist_store_postgres_round_trips_total",
			"Round trips of this replica's store transactions to PostgreSQL (each statement or batch sent and answered, COMMIT and ROLLBACK included).", nil, nil),
		prometheus.NewDesc("hoist_store_postgres_retries_total",
			"Store transactions this replica ran again after a serialization failure or a deadlock.", nil, nil),
	}
)

// Describe sends the collector's descriptions.
func (c *pairCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.descs[0]
	ch <- c.descs[1]
}

// Collect sends the counters.
func (c *pairCollector) Collect(ch chan<- prometheus.Metric) {
	a, b := c.read()
	ch <- prometheus.MustNewConstMetric(c.descs[0], prometheus.CounterValue, float64(a))
	ch <- prometheus.MustNewConstMetric(c.descs[1], prometheus.CounterValue, float64(b))
}
