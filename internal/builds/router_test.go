package builds

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
)

// fallback puts api.Unimplemented one level below the domain service, so
// the Service's methods win.
type fallback struct{ api.Unimplemented }

type testAPI struct {
	fallback
	*Service
}

// gameLiftJSON is a minimal AWS JSON 1.1 endpoint for tests (no SigV4
// check): enough for the CLI's CreateBuild and RequestUploadCredentials.
func gameLiftJSON(svc api.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeErr := func(status int, code, msg string) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.Header().Set("x-amzn-ErrorType", code)
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
		}
		op, ok := api.LookupOperation(strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "GameLift."))
		if !ok {
			writeErr(400, "UnknownOperationException", "unknown operation")
			return
		}
		in := op.NewInput()
		if err := json.NewDecoder(r.Body).Decode(in); err != nil {
			writeErr(400, "SerializationException", err.Error())
			return
		}
		out, err := func() (any, error) {
			if err := in.Validate(); err != nil {
				return nil, err
			}
			return op.Invoke(r.Context(), svc, in)
		}()
		var ae api.Error
		if errors.As(err, &ae) {
			writeErr(ae.HTTPStatus(), ae.ErrorCode(), ae.ErrorMessage())
			return
		}
		if err != nil {
			writeErr(500, "InternalServiceException", err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if out == nil {
			out = struct{}{}
		}
		json.NewEncoder(w).Encode(out)
	})
}

// startHoist serves the GameLift JSON API at "POST /" and the S3 endpoint
// for every other path (so that other buckets reach it too), on loopback.
func startHoist(t testing.TB, h *harness) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("POST /{$}", gameLiftJSON(testAPI{Service: h.Service}))
	mux.Handle("/", h.S3Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}
