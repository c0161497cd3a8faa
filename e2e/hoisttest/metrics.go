package hoisttest

import (
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of GET /metrics, parsed with Prometheus's text
// parser: the metric families by name.
type Metrics map[string]*dto.MetricFamily

// Scrape fetches and parses baseURL's /metrics, sending token as a bearer
// token when it is not empty.
func Scrape(baseURL, token string) (Metrics, error) {
	req, err := http.NewRequest(http.MethodGet, baseURL+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("GET /metrics: %s: %s", resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: parsing the exposition: %w", err)
	}
	return Metrics(fams), nil
}

// Value returns the sum of the samples of metric name whose labels
// include labels (a histogram's or summary's: its count), and whether any
// matched.
func (m Metrics) Value(name string, labels map[string]string) (float64, bool) {
	fam := m[name]
	if fam == nil {
		return 0, false
	}
	sum, found := 0.0, false
	for _, s := range fam.GetMetric() {
		if !hasLabels(s, labels) {
			continue
		}
		found = true
		switch {
		case s.Counter != nil:
			sum += s.GetCounter().GetValue()
		case s.Gauge != nil:
			sum += s.GetGauge().GetValue()
		case s.Histogram != nil:
			sum += float64(s.GetHistogram().GetSampleCount())
		case s.Summary != nil:
			sum += float64(s.GetSummary().GetSampleCount())
		case s.Untyped != nil:
			sum += s.GetUntyped().GetValue()
		}
	}
	return sum, found
}

// hasLabels reports whether a sample has every label of want (a label
// wanted empty may be absent: Prometheus makes no difference).
func hasLabels(s *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range s.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v { // an empty value is the label's absence
			return false
		}
	}
	return true
}
