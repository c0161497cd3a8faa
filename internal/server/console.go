package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/hoistgg/hoist/internal/console"
)

// newConsole builds the web console (docs/console.md) over the composed
// services: it reads through them and the store, as the API does, and its
// write actions call the same code as the API and the admin endpoint.
// nil when --console is off.
func (s *Server) newConsole(ctx context.Context) (*console.Console, error) {
	if !s.cfg.Console {
		return nil, nil
	}
	key, err := sharedKey(ctx, s.store, "console", s.now)
	if err != nil {
		return nil, err
	}
	return console.New(console.Config{
		API: s.svc, Store: s.store, Hosts: s.hosts, Placements: s.placement, Tickets: s.matchmaking,
		SetInstanceStatus: s.fleetiq.SetInstanceStatus,
		ProcessLogURL:     s.processLogURL, SetupLogURL: s.setupLogURL, OutputKept: s.fleets.ProcessOutputKept,
		Events: func(w http.ResponseWriter, r *http.Request, key string) {
			s.streamEvents(w, r, key)
		},
		Credentials: s.cfg.Credentials, Key: key, SessionTTL: s.cfg.ConsoleSession,
		ReplicaID: s.replica, Now: s.now, Logger: s.log.With("component", "console"),
	})
}

// consoleRoute reports whether r is for the console's paths.
func consoleRoute(r *http.Request) bool {
	return r.URL.Path == console.Prefix || strings.HasPrefix(r.URL.Path, console.Prefix+"/")
}
