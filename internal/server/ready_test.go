package server

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

// failedStore is a store whose writes failed (what the journal store
// reports after a failed write or fsync: internal/store/journal
// TestFailedReported).
type failedStore struct{ store.Store }

func (failedStore) Failed() error {
	return errors.New("journal: write failed, the store takes no more writes until restarted: input/output error")
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHealthSaysTheStoreFailed: /hoist/health and /hoist/ready answer 200
// while the store is sound, and 503 with the store's reason once it failed
// (before, health answered "ok" whatever the store's state).
func TestHealthSaysTheStoreFailed(t *testing.T) {
	srv, ts := start(t, nil)
	for path, want := range map[string]string{"/hoist/health": "ok\n", "/hoist/ready": "ready\n"} {
		if code, body := get(t, ts.URL+path); code != http.StatusOK || body != want {
			t.Errorf("%s with a sound store: %d %q", path, code, body)
		}
	}
	srv.store = failedStore{srv.store}
	for _, path := range []string{"/hoist/health", "/hoist/ready"} {
		code, body := get(t, ts.URL+path)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "input/output error") {
			t.Errorf("%s with a failed store: %d %q, want 503 and the reason", path, code, body)
		}
	}
}

// TestStarting: while the store opens, Hoist is alive but not ready, and
// the API answers 503 (which the SDKs retry); once Ready, every route is
// Hoist's.
func TestStarting(t *testing.T) {
	st := &Starting{}
	ts := httptest.NewServer(st)
	defer ts.Close()
	cases := []struct {
		path string
		code int
		body string
	}{
		{"/hoist/health", http.StatusOK, "starting"},
		{"/hoist/ready", http.StatusServiceUnavailable, "opening the store"},
		{"/", http.StatusServiceUnavailable, "opening the store"},
	}
	for _, c := range cases {
		if code, body := get(t, ts.URL+c.path); code != c.code || !strings.Contains(body, c.body) {
			t.Errorf("%s while starting: %d %q, want %d %q", c.path, code, body, c.code, c.body)
		}
	}
	st.Ready(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("hoist " + r.URL.Path)) }))
	if code, body := get(t, ts.URL+"/hoist/ready"); code != http.StatusOK || body != "hoist /hoist/ready" {
		t.Errorf("after Ready: %d %q", code, body)
	}
}
