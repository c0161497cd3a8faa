package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hoistgg/hoist/internal/api"
)

// gauge is one of the cluster gauges: its description and how a value is
// read from the state of its subject.
type gauge[T any] struct {
	desc  *prometheus.Desc
	value func(*T) (float64, bool)
}

// newGauge describes a GameLift gauge with labels.
func newGauge[T any](name, help string, value func(*T) (float64, bool), labels ...string) gauge[T] {
	return gauge[T]{desc: prometheus.NewDesc(gameliftPrefix+name, help, labels, nil), value: value}
}

// always wraps a value that is always defined.
func always[T any](f func(*T) int) func(*T) (float64, bool) {
	return func(t *T) (float64, bool) { return float64(f(t)), true }
}

// percent returns 100*part/whole, undefined when whole is 0.
func percent(part, whole int) (float64, bool) {
	if whole == 0 {
		return 0, false
	}
	return 100 * float64(part) / float64(whole), true
}

var fleetGauges = []gauge[FleetLocation]{
	newGauge("ActiveInstances", "Instances with status ACTIVE (hosting game sessions or idle).", always(func(f *FleetLocation) int { return f.Active }), labelFleet, labelLocation),
	newGauge("IdleInstances", "ACTIVE instances hosting no game session.", always(func(f *FleetLocation) int { return f.IdleInstances }), labelFleet, labelLocation),
	newGauge("PercentIdleInstances", "IdleInstances / ActiveInstances, in percent (no sample without ACTIVE instances).", func(f *FleetLocation) (float64, bool) { return percent(f.IdleInstances, f.Active) }, labelFleet, labelLocation),
	newGauge("DesiredInstances", "The location's desired instance count.", always(func(f *FleetLocation) int { return f.Desired }), labelFleet, labelLocation),
	newGauge("MinInstances", "The location's minimum instance count.", always(func(f *FleetLocation) int { return f.Min }), labelFleet, labelLocation),
	newGauge("MaxInstances", "The location's maximum instance count.", always(func(f *FleetLocation) int { return f.Max }), labelFleet, labelLocation),
	newGauge("ActiveServerProcesses", "Server processes with status ACTIVE (called ProcessReady), idle or hosting.", always(func(f *FleetLocation) int { return f.ActiveServerProcesses }), labelFleet, labelLocation),
	newGauge("HealthyServerProcesses", "ACTIVE server processes whose last health report was healthy.", always(func(f *FleetLocation) int { return f.HealthyServerProcesses }), labelFleet, labelLocation),
	newGauge("PercentHealthyServerProcesses", "HealthyServerProcesses / ActiveServerProcesses, in percent (no sample without ACTIVE processes).", func(f *FleetLocation) (float64, bool) {
		return percent(f.HealthyServerProcesses, f.ActiveServerProcesses)
	}, labelFleet, labelLocation),
	newGauge("ActivatingGameSessions", "Game sessions with status ACTIVATING.", always(func(f *FleetLocation) int { return f.ActivatingGameSessions }), labelFleet, labelLocation),
	newGauge("ActiveGameSessions", "Game sessions with status ACTIVE.", always(func(f *FleetLocation) int { return f.ActiveGameSessions }), labelFleet, labelLocation),
	newGauge("AvailableGameSessions", "ACTIVE, connected server processes hosting no game session: game sessions the location could start now.", always(func(f *FleetLocation) int { return f.AvailableGameSessions }), labelFleet, labelLocation),
	newGauge("ConcurrentActivatableGameSessions", "AvailableGameSessions less those MaxConcurrentGameSessionActivations holds back.", always(func(f *FleetLocation) int { return f.ConcurrentActivatable }), labelFleet, labelLocation),
	newGauge("PercentAvailableGameSessions", "AvailableGameSessions / (AvailableGameSessions + ActiveGameSessions + ActivatingGameSessions), in percent (what target-based scaling uses; no sample when all are 0).",
		func(f *FleetLocation) (float64, bool) {
			return f.Metrics.Value(api.MetricNamePercentavailablegamesessions)
		}, labelFleet, labelLocation),
	newGauge("CurrentPlayerSessions", "Player sessions ACTIVE or RESERVED in ACTIVE game sessions.", always(func(f *FleetLocation) int { return f.CurrentPlayerSessions }), labelFleet, labelLocation),
}

var queueGauges = []gauge[Queue]{
	newGauge("QueueDepth", "Game session placements PENDING in the queue.", always(func(q *Queue) int { return q.Depth }), labelQueue),
	newGauge("AverageWaitTime", "Mean seconds the queue's PENDING placements have waited so far (0 without any).", func(q *Queue) (float64, bool) { return q.AverageWait, true }, labelQueue),
}

var configurationGauges = []gauge[Configuration]{
	newGauge("CurrentTickets", "Matchmaking tickets of the configuration that have not ended (QUEUED, SEARCHING, REQUIRES_ACCEPTANCE, PLACING).", always(func(c *Configuration) int { return c.CurrentTickets }), labelConfig),
}

var groupGauges = []gauge[Group]{
	newGauge("AvailableGameServers", "AVAILABLE game servers (claimed or not) on ACTIVE instances.", always(func(g *Group) int { return g.AvailableGameServers }), labelGroup),
	newGauge("UtilizedGameServers", "UTILIZED game servers on ACTIVE instances.", always(func(g *Group) int { return g.UtilizedGameServers }), labelGroup),
	newGauge("DrainingAvailableGameServers", "AVAILABLE game servers on DRAINING or SPOT_TERMINATING instances.", always(func(g *Group) int { return g.DrainingAvailableGameServers }), labelGroup),
	newGauge("DrainingUtilizedGameServers", "UTILIZED game servers on DRAINING or SPOT_TERMINATING instances.", always(func(g *Group) int { return g.DrainingUtilizedGameServers }), labelGroup),
	newGauge("PercentUtilizedGameServers", "Utilized / all game servers of the group, in percent (no sample without game servers).", func(g *Group) (float64, bool) {
		u := g.UtilizedGameServers + g.DrainingUtilizedGameServers
		return percent(u, u+g.AvailableGameServers+g.DrainingAvailableGameServers)
	}, labelGroup),
}

var (
	hostsDesc   = prometheus.NewDesc("hoist_hosts", "Hosts by status (ACTIVE, DRAINING, LOST), as hoist admin list-hosts lists them: pool hosts and each replica's own machine.", []string{"status"}, nil)
	backlogDesc = prometheus.NewDesc("hoist_webhook_backlog", "Webhook deliveries waiting (every replica's).", nil, nil)
	readDesc    = prometheus.NewDesc("hoist_metrics_cluster_age_seconds", "How old the cluster gauges' computation is (it is reused for up to a second).", nil, nil)
	failDesc    = prometheus.NewDesc("hoist_metrics_cluster_up", "1 when the cluster gauges could be read from the store, else 0.", nil, nil)
)

// clusterCollector exports a Cluster's State.
type clusterCollector struct{ c *Cluster }

// Describe sends every description.
func (cc *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range fleetGauges {
		ch <- g.desc
	}
	for _, g := range queueGauges {
		ch <- g.desc
	}
	for _, g := range configurationGauges {
		ch <- g.desc
	}
	for _, g := range groupGauges {
		ch <- g.desc
	}
	ch <- hostsDesc
	ch <- backlogDesc
	ch <- readDesc
	ch <- failDesc
}

// Collect reads the state (or the last one, when younger than a second)
// and sends every gauge.
func (cc *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := cc.c.State(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(failDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(failDesc, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(readDesc, prometheus.GaugeValue, time.Since(cc.c.computedAt()).Seconds())
	for i := range st.Fleets {
		f := &st.Fleets[i]
		send(ch, fleetGauges, f, f.FleetID, f.Location)
	}
	for i := range st.Queues {
		send(ch, queueGauges, &st.Queues[i], st.Queues[i].Name)
	}
	for i := range st.Configurations {
		send(ch, configurationGauges, &st.Configurations[i], st.Configurations[i].Name)
	}
	for i := range st.Groups {
		send(ch, groupGauges, &st.Groups[i], st.Groups[i].Name)
	}
	for status, n := range st.Hosts {
		ch <- prometheus.MustNewConstMetric(hostsDesc, prometheus.GaugeValue, float64(n), status)
	}
	ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(st.WebhookBacklog))
}

// send sends the gauges of one subject.
func send[T any](ch chan<- prometheus.Metric, gs []gauge[T], t *T, labels ...string) {
	for _, g := range gs {
		if v, ok := g.value(t); ok {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, labels...)
		}
	}
}

// computedAt returns when the last State was computed (wall clock).
func (c *Cluster) computedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.took
}
