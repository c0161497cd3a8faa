package sdkconn

import (
	"context"
	"fmt"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// handler serves one action: it reads its fields from a and calls the
// ProcessAPI for the connection's process. The returned fields are merged
// into the reply.
type handler func(ctx context.Context, pc *procConn, a *args) (map[string]any, error)

// handlers holds every action of section 2 of the protocol notes.
var handlers = map[string]handler{
	"ActivateServerProcess":             activateServerProcess,
	"HeartbeatServerProcess":            heartbeatServerProcess,
	"ActivateGameSession":               activateGameSession,
	"AcceptPlayerSession":               acceptPlayerSession,
	"RemovePlayerSession":               removePlayerSession,
	"UpdatePlayerSessionCreationPolicy": updatePlayerSessionCreationPolicy,
	"DescribePlayerSessions":            describePlayerSessions,
	"StartMatchBackfill":                startMatchBackfill,
	"StopMatchBackfill":                 stopMatchBackfill,
	"TerminateServerProcess":            terminateServerProcess,
	"GetComputeCertificate":             getComputeCertificate,
	"GetFleetRoleCredentials":           getFleetRoleCredentials,
}

// args reads request fields, keeping the first error.
type args struct {
	r   *Request
	err error
}

func (a *args) keep(err error) {
	if a.err == nil && err != nil {
		a.err = err
	}
}

func (a *args) str(name string) string {
	s, err := a.r.String(name)
	a.keep(err)
	return s
}

// need is str for a field that must be a non-empty string.
func (a *args) need(name string) string {
	s := a.str(name)
	if s == "" {
		a.keep(fmt.Errorf("%s is required", name))
	}
	return s
}

func (a *args) boolean(name string) bool {
	b, err := a.r.Bool(name)
	a.keep(err)
	return b
}

func (a *args) int32(name string) int32 {
	n, err := a.r.Int32(name)
	a.keep(err)
	return n
}

func (a *args) strings(name string) []string {
	s, err := a.r.Strings(name)
	a.keep(err)
	return s
}

// check returns the first field error as a 400.
func (a *args) check() error {
	if a.err != nil {
		return &hosting.SDKError{Status: 400, Message: a.err.Error()}
	}
	return nil
}

func activateServerProcess(ctx context.Context, pc *procConn, a *args) (map[string]any, error) {
	port := a.int32("Port")
	logPaths := a.strings("LogPaths")
	for _, f := range []string{"SdkVersion", "SdkLanguage", "SdkToolName", "SdkToolVersion"} {
		a.str(f) // informational; only their type is checked
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	return nil, pc.api.ProcessReady(ctx, pc.id, port, logPaths)
}

func heartbeatServerProcess(ctx context.Context, pc *procConn, a *args) (map[string]any, error) {
	healthy := a.boolean("HealthStatus")
	if err := a.check(); err != nil {
		return nil, err
	}
	return nil, pc.api.Heartbeat(ctx, pc.id, healthy)
}

func activateGameSession(ctx context.Context, pc *procConn, a *args) (map[string]any, error) {
	gs := a.need("GameSessionId")
	if err := a.check(); err != nil {
		return nil, err
	}
	return nil, pc.api.ActivateGameSession(ctx, pc.id, gs)
}

func acceptPlayerSession(ctx context.Context, pc *procConn, a *args) (map[string]any, error) {
	gs, ps := a.need("GameSessionId"), a.need("PlayerSessionId")
	if err := a.check(); err != nil {
		return nil, err
	}
	return nil, pc.api.AcceptPlayerSession(ctx, pc.id, gs, ps)
}

func removePlayerSession(ctx context.Context, pc *procConn, a *args) (map[string]any, error) {
	gs, ps := a.need("GameSessionId"), a.need("PlayerSessionId")
	if err := a.check(); err != nil {
		return nil, err
	}
	return nil, pc.api.RemovePlayerSession(ctx, pc.id, gs, ps)
}

func updatePlayerSessionCreationPolicy(ctx context.Context, pc *procConn, a *args) (map[string]any, error) {
	gs := a.need("GameSessionId")
	policy := api.PlayerSessionCreationPolicy(a.need("PlayerSessionPolicy"))
	if a.err == nil && !policy.IsValid() {
		a.keep(fmt.Errorf("PlayerSessionPolicy must be ACCEPT_ALL or DENY_ALL"))
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	return nil, pc.api.UpdatePlayerSessionCreationPolicy(ctx, pc.id, gs, policy)
}

func describePlayerSessions(ctx context.Context, pc *procConn, a *args) (map[string]any, error) {
	req := hosting.DescribePlayerSessionsRequest{
		GameSessionID:   a.str("GameSessionId"),
		PlayerID:        a.str("PlayerId"),
		PlayerSessionID: a.str("PlayerSessionId"),
		StatusFilter:    a.str("PlayerSessionStatusFilter"),
		NextToken:       a.str("NextToken"),
		Limit:           int(a.int32("Limit")),
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	return pc.api.DescribePlayerSessions(ctx, pc.id, req)
}

func terminateServerProcess(ctx context.Context, pc *procConn, a *args) (map[string]any, error) {
	if err := pc.api.ProcessEnding(ctx, pc.id); err != nil {
		return nil, err
	}
	// Set before the reply is queued: the Go SDK closes the TCP connection
	// without a close frame as soon as it has the reply.
	pc.ending.Store(true)
	return nil, nil
}

func getComputeCertificate(ctx context.Context, pc *procConn, a *args) (map[string]any, error) {
	return pc.api.GetComputeCertificate(ctx, pc.id)
}

func getFleetRoleCredentials(ctx context.Context, pc *procConn, a *args) (map[string]any, error) {
	role, name := a.str("RoleArn"), a.str("RoleSessionName")
	if err := a.check(); err != nil {
		return nil, err
	}
	return pc.api.GetFleetRoleCredentials(ctx, pc.id, role, name)
}
