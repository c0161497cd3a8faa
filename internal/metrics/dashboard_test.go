package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// TestDashboard: the Grafana dashboard in deploy/grafana parses, every
// panel has a query, and every metric a query names is one Hoist exports
// (a histogram's by its _bucket, _count or _sum series).
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "hoist.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana/hoist.json: %v", err)
	}
	if dash.Title == "" || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("dashboard without a title, uid or panels: %q %q %d", dash.Title, dash.UID, len(dash.Panels))
	}
	exported, histograms := exportedNames(t)
	name := regexp.MustCompile(`\b(?:gamelift|hoist|go|process)_[A-Za-z0-9_]+`)
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			names := name.FindAllString(q.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no metric", p.Title, q.Expr)
			}
			for _, n := range names {
				base := n
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if h, ok := strings.CutSuffix(n, suffix); ok && histograms[h] {
						base = h
					}
				}
				if !exported[base] {
					t.Errorf("panel %q: %s is not a metric Hoist exports (query %q)", p.Title, n, q.Expr)
				}
				used[base] = true
			}
		}
	}
	for _, main := range []string{"gamelift_ActiveGameSessions", "gamelift_QueueDepth", "gamelift_CurrentTickets",
		"gamelift_AvailableGameServers", "hoist_api_request_duration_seconds", "hoist_store_update_duration_seconds"} {
		if !used[main] {
			t.Errorf("the dashboard does not show %s", main)
		}
	}
}

// exportedNames returns the name of every metric Hoist exports, and
// which of them are histograms.
func exportedNames(t *testing.T) (names, histograms map[string]bool) {
	t.Helper()
	rec := &recorder{}
	newGameliftCounters(rec)
	newHoistMetrics(rec)
	one := func() int { return 1 }
	registerReplicaGauges(rec, ReplicaGauges{SDKConnections: one, AgentConnections: one, HostConnections: one, EventStreams: one,
		Webhooks: func() WebhookCounts { return WebhookCounts{} }, Journal: func() (int64, int64) { return 0, 0 },
		Postgres: func() (int64, int64) { return 0, 0 }})
	rec.MustRegister(&clusterCollector{})
	names, histograms = map[string]bool{}, map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range rec.collectors {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fq.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no name in %s", d)
			}
			names[m[1]] = true
			if _, ok := c.(*prometheus.HistogramVec); ok {
				histograms[m[1]] = true
			}
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		names[f.GetName()] = true
	}
	return names, histograms
}

// recorder is a Registerer that keeps what is registered with it.
type recorder struct{ collectors []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}

func (r *recorder) Unregister(prometheus.Collector) bool { return false }
