package builds

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/protocol"
)

// fallback puts api.Unimplemented one level below the domain service, so
// the Service's methods win.
type fallback struct{ api.Unimplemented }

type testAPI struct {
	fallback
	*Service
}

// startHoist serves the GameLift API (internal/protocol, without
// authentication) at "POST /" and "/service/", and the S3 endpoint for
// every other path (so that other buckets reach it too), on loopback.
func startHoist(t testing.TB, h *harness) *httptest.Server {
	t.Helper()
	gl := protocol.NewHandler(testAPI{Service: h.Service}, protocol.Options{Logger: slog.New(slog.DiscardHandler)})
	mux := http.NewServeMux()
	mux.Handle("POST /{$}", gl)
	mux.Handle("/service/", gl)
	mux.Handle("/", h.S3Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}
