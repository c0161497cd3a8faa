package server

import (
	"context"
	"path/filepath"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts"
	"github.com/hoistgg/hoist/internal/store"
)

// newHosts makes the pool hosts' service around the in-process provider
// (compose calls it once the provider and sessions exist).
func (s *Server) newHosts(t hosts.Timings) (*hosts.Service, error) {
	locs := append([]string{s.cfg.Region}, fleets.AWSLocations...)
	return hosts.New(hosts.Config{
		Store: s.store, Inbox: s.inbox, Local: s.provider, NoInProcess: s.cfg.LocalHosting == config.LocalAgent || s.cfg.LocalHosting == config.LocalOff,
		ReplicaID: s.replica, InstanceIP: s.cfg.InstanceIP, Locations: locs,
		CACertificate: s.ca.CertPEM, CADER: s.ca.Cert.Raw, CABundle: s.caBundle,
		BuildDir: s.builds.BuildDir, UploadDir: filepath.Join(s.cfg.DataDir, "hosts"), GameSessionLogs: s.sessions,
		Slots: s.conns, Now: s.wallNow, Logger: s.log.With("component", "hosts"), Timings: t,
		HostReady: s.wakeFleets,
	})
}

// wakeFleets runs the fleets' reconciler soon (a host came: fleets waiting
// for capacity need not wait for its next interval). Hosts accept no
// connection before compose has made the fleets' service.
func (s *Server) wakeFleets() {
	if s.fleets != nil {
		s.fleets.Wake()
	}
}

// instanceLost reports whether the instance of compute c is lost with its
// pool host (sessions.Config.InstanceLost), as the fleets' reconciler
// sees it (fleets.InstanceHosts): never for an Anywhere compute or an
// instance this replica runs itself, nor before the hosts' service exists.
func (s *Server) instanceLost(ctx context.Context, tx store.Tx, c *hosting.Compute) (bool, error) {
	if s.hosts == nil || c.Host == "" || c.Host == s.replica {
		return false, nil
	}
	st, err := s.hosts.InstanceHost(ctx, tx, c)
	return st.Lost != "", err
}

// remoteLogsRef forwards to the hosts' service once it exists.
type remoteLogsRef struct{ h *hosts.Service }

func (r *remoteLogsRef) CollectRemoteLogs(ctx context.Context, req hosting.LogRequest) {
	r.h.CollectRemoteLogs(ctx, req)
}

// hostsActions names the admin actions of pool hosts.
const hostsActions = "CreateEnrolmentToken, ListHosts, DrainHost, UndrainHost, RemoveHost"

// CreateEnrolmentTokenInput creates an enrolment token for a pool.
type CreateEnrolmentTokenInput struct {
	Pool string
	// Expires is how long the token is valid (a Go duration, default 1h).
	Expires string
	// MaxHosts is how many hosts may enrol with it (0: any number).
	MaxHosts int
}

// DrainHostInput drains a host (UndrainHost: ends its draining).
type DrainHostInput struct{ HostId string }

// RemoveHostInput removes a host; Force removes one that runs instances
// (they are lost).
type RemoveHostInput struct {
	HostId string
	Force  bool
}

// hostsAdmin serves the admin actions of pool hosts; known is false for
// any other action.
func (s *Server) hostsAdmin(ctx context.Context, action string, body []byte) (out any, known bool, err error) {
	switch action {
	case "CreateEnrolmentToken":
		var in CreateEnrolmentTokenInput
		if err = decodeAdmin(body, &in); err != nil {
			return nil, true, err
		}
		ttl := time.Hour
		if in.Expires != "" {
			if ttl, err = time.ParseDuration(in.Expires); err != nil {
				return nil, true, api.NewInvalidRequestException("Expires %s is not a duration such as 1h or 30m", quoteClip(in.Expires))
			}
		}
		tok, exp, err := s.hosts.CreateEnrolmentToken(ctx, in.Pool, ttl, in.MaxHosts)
		return map[string]any{"Token": tok, "Expires": exp}, true, err
	case "ListHosts":
		if err = decodeAdmin(body, &struct{}{}); err != nil {
			return nil, true, err
		}
		hs, err := s.hosts.ListHosts(ctx)
		return map[string]any{"Hosts": hs}, true, err
	case "DrainHost":
		var in DrainHostInput
		if err = decodeAdmin(body, &in); err != nil {
			return nil, true, err
		}
		if in.HostId == "" {
			return nil, true, api.NewInvalidRequestException("HostId is required")
		}
		h, err := s.hosts.DrainHost(ctx, in.HostId)
		return map[string]any{"Host": h}, true, err
	case "UndrainHost":
		var in DrainHostInput
		if err = decodeAdmin(body, &in); err != nil {
			return nil, true, err
		}
		if in.HostId == "" {
			return nil, true, api.NewInvalidRequestException("HostId is required")
		}
		h, err := s.hosts.UndrainHost(ctx, in.HostId)
		return map[string]any{"Host": h}, true, err
	case "RemoveHost":
		var in RemoveHostInput
		if err = decodeAdmin(body, &in); err != nil {
			return nil, true, err
		}
		if in.HostId == "" {
			return nil, true, api.NewInvalidRequestException("HostId is required")
		}
		h, err := s.hosts.RemoveHost(ctx, in.HostId, in.Force)
		return map[string]any{"Host": h}, true, err
	}
	return nil, false, nil
}
