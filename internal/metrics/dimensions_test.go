package metrics

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// gameliftDimensions are the dimensions of GameLift's CloudWatch metrics
// that Hoist reports, by the names GameLift's monitoring documentation
// gives them ("Dimensions for Amazon GameLift metrics", and FleetIQ's
// GameServerGroup); MetricGroup and ConfigurationName-RuleName have no
// Hoist metric.
var gameliftDimensions = map[string]bool{"FleetId": true, "Location": true, "QueueName": true,
	"ConfigurationName": true, "GameServerGroup": true}

// TestGameLiftDimensions: every gamelift_ metric's labels are named as
// GameLift's dimensions are (the replica label, added to every counter
// of this replica, is not among a metric's own).
func TestGameLiftDimensions(t *testing.T) {
	rec := &recorder{}
	newGameliftCounters(rec)
	rec.MustRegister(&clusterCollector{})
	desc := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	seen := 0
	for _, c := range rec.collectors {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := desc.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no name or labels in %s", d)
			}
			if !strings.HasPrefix(m[1], gameliftPrefix) {
				continue
			}
			seen++
			for _, l := range strings.Split(m[2], ",") {
				if l != "" && !gameliftDimensions[l] {
					t.Errorf("%s: label %s is not one of GameLift's dimensions", m[1], l)
				}
			}
		}
	}
	if seen < 30 {
		t.Fatalf("found %d gamelift_ metrics, want every one (more than 30)", seen)
	}
}

// TestDocsListEveryMetric: docs/metrics.md lists every gamelift_ and
// hoist_ metric Hoist exports, and names none it does not export (a
// histogram by its name).
func TestDocsListEveryMetric(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	exported, _ := exportedNames(t)
	listed := map[string]bool{}
	for _, n := range regexp.MustCompile("`((?:gamelift|hoist)_[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(b), -1) {
		listed[n[1]] = true
		if !exported[n[1]] {
			t.Errorf("docs/metrics.md lists %s, which Hoist does not export", n[1])
		}
	}
	for n := range exported {
		if (strings.HasPrefix(n, gameliftPrefix) || strings.HasPrefix(n, "hoist_")) && !listed[n] {
			t.Errorf("Hoist exports %s, which docs/metrics.md does not list", n)
		}
	}
}
