package server

import (
	"net/http"

	"github.com/hoistgg/hoist/internal/builds"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/protocol"
)

// routes returns the handler of every route (see the package doc).
func (s *Server) routes() http.Handler {
	api := protocol.NewHandler(s.svc, protocol.Options{Auth: s.auth, Logger: s.log.With("component", "api"),
		Observe: s.metrics.ObserveRequest})
	mux := http.NewServeMux()
	mux.Handle("/", api) // POST / and every unknown path, answered in the protocol's error form
	mux.Handle("/service/", api)
	mux.Handle("/sdk", s.sdk)
	mux.Handle("/sdk/", s.sdk)
	mux.Handle("/agent", s.agents)
	s3 := s.builds.S3Handler()
	mux.Handle("/"+s.builds.Bucket(), s3)
	mux.Handle("/"+s.builds.Bucket()+"/", s3)
	mux.HandleFunc("/hoist/admin/", s.serveAdmin)
	mux.HandleFunc("/hoist/events", s.serveEvents)
	mux.HandleFunc("/hoist/logs", s.serveLogs)
	mux.HandleFunc(hostproto.PathEnrol, s.hosts.ServeEnrol)
	mux.HandleFunc(hostproto.PathConnect, s.hosts.ServeConnect)
	mux.HandleFunc(hostproto.PathBuild, s.hosts.ServeBuild)
	mux.HandleFunc(builds.PeerPath, s.builds.ServePeer)
	mux.HandleFunc(LogPeerPath, s.serveLogPeer)
	mux.HandleFunc(hostproto.PathOutput, s.hosts.ServeOutput)
	mux.HandleFunc(hostproto.PathGameSessionLogs, s.hosts.ServeGameSessionLogs)
	mux.HandleFunc("/hoist/health", s.serveHealth)
	mux.HandleFunc("/hoist/ready", s.serveReady)
	if s.console != nil {
		mux.Handle("/console", s.console)
		mux.Handle("/console/", s.console)
	}
	mux.Handle("/metrics", s.serveMetrics())
	return mux
}
