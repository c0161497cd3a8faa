package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsAccess: who may scrape /metrics. Without a token, only a
// client connected from a loopback address, addressing a loopback Host,
// in a request no web page sent; with one, anyone carrying it, and no one
// else, loopback clients included.
func TestMetricsAccess(t *testing.T) {
	const token = "s3cret-metrics-token"
	tests := map[string]struct {
		token, remote, host string
		header              map[string]string
		want                int
	}{
		"loopback":                    {remote: "127.0.0.1:5000", host: "127.0.0.1:9080"},
		"other loopback address":      {remote: "127.0.0.2:5000", host: "localhost:9080"},
		"IPv6 loopback":               {remote: "[::1]:5000", host: "[::1]:9080"},
		"IPv4-mapped loopback":        {remote: "[::ffff:127.0.0.1]:5000", host: "127.0.0.1"},
		"typed in the address bar":    {remote: "127.0.0.1:5000", host: "127.0.0.1", header: map[string]string{"Sec-Fetch-Site": "none"}},
		"remote client":               {remote: "192.0.2.10:5000", host: "127.0.0.1:9080", want: 403},
		"private network client":      {remote: "10.1.2.3:5000", host: "10.1.2.1:9080", want: 403},
		"unparsable remote":           {remote: "pipe", host: "127.0.0.1", want: 403},
		"rebound name":                {remote: "127.0.0.1:5000", host: "attacker.example:9080", want: 403},
		"web page (Origin)":           {remote: "127.0.0.1:5000", host: "127.0.0.1", header: map[string]string{"Origin": "https://attacker.example"}, want: 403},
		"web page (Sec-Fetch-Site)":   {remote: "127.0.0.1:5000", host: "127.0.0.1", header: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: 403},
		"token given":                 {token: token, remote: "192.0.2.10:5000", host: "hoist.example", header: map[string]string{"Authorization": "Bearer " + token}},
		"token, scheme in lower case": {token: token, remote: "192.0.2.10:5000", host: "hoist.example", header: map[string]string{"Authorization": "bearer " + token}},
		"token missing":               {token: token, remote: "192.0.2.10:5000", host: "hoist.example", want: 401},
		"token missing on loopback":   {token: token, remote: "127.0.0.1:5000", host: "127.0.0.1", want: 401},
		"wrong token":                 {token: token, remote: "127.0.0.1:5000", host: "127.0.0.1", header: map[string]string{"Authorization": "Bearer s3cret-metrics-tokem"}, want: 401},
		"token's prefix":              {token: token, remote: "127.0.0.1:5000", host: "127.0.0.1", header: map[string]string{"Authorization": "Bearer " + token[:8]}, want: 401},
		"token and more":              {token: token, remote: "127.0.0.1:5000", host: "127.0.0.1", header: map[string]string{"Authorization": "Bearer " + token + "x"}, want: 401},
		"other scheme":                {token: token, remote: "127.0.0.1:5000", host: "127.0.0.1", header: map[string]string{"Authorization": "Basic " + token}, want: 401},
		"empty bearer":                {token: token, remote: "127.0.0.1:5000", host: "127.0.0.1", header: map[string]string{"Authorization": "Bearer "}, want: 401},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			r.RemoteAddr, r.Host = tc.remote, tc.host
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			if got, msg := metricsAccess(tc.token, r); got != tc.want {
				t.Errorf("metricsAccess = %d %q, want %d", got, msg, tc.want)
			}
		})
	}
}

// TestMetricsEndpoint: GET /metrics through the whole handler: a remote
// client is refused without a token; with one, a request without it or
// with a wrong one is refused 401 (with a WWW-Authenticate challenge), the
// right one gets the exposition, which Prometheus's parser reads.
func TestMetricsEndpoint(t *testing.T) {
	t.Run("loopback only", func(t *testing.T) {
		srv, ts := start(t, nil)
		if code, _ := scrape(t, srv.Handler(), "192.0.2.10:40000", ""); code != http.StatusForbidden {
			t.Errorf("remote client: %d, want 403", code)
		}
		resp, err := loopbackClient.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("loopback client: %s", resp.Status)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatalf("parsing the exposition: %v", err)
		}
		for _, name := range []string{"hoist_metrics_cluster_up", "hoist_store_update_duration_seconds", "go_goroutines"} {
			if fams[name] == nil {
				t.Errorf("no %s in the exposition", name)
			}
		}
	})
	t.Run("token", func(t *testing.T) {
		const token = "s3cret-metrics-token"
		srv, _ := startWith(t, nil, map[string]string{"HOIST_CREDENTIALS": testKey + ":" + testSecret, "HOIST_METRICS_TOKEN": token})
		for _, auth := range []string{"", "Bearer wrong", "Bearer " + token + " "} {
			code, hdr := scrape(t, srv.Handler(), "127.0.0.1:40000", auth)
			if code != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("Authorization %q: %d %v, want 401 with a Bearer challenge", auth, code, hdr)
			}
		}
		if code, _ := scrape(t, srv.Handler(), "192.0.2.10:40000", "Bearer "+token); code != http.StatusOK {
			t.Errorf("the token from a remote client: %d, want 200", code)
		}
	})
}

// scrape serves GET /metrics from remote with an Authorization header
// (none when empty) and returns the status and headers.
func scrape(t *testing.T, h http.Handler, remote, auth string) (int, http.Header) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/metrics", nil)
	r.RemoteAddr = remote
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Header()
}
