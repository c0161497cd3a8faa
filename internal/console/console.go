// Package console is Hoist's web console, /console: server-rendered pages
// (html/template, assets embedded, no build step, no JavaScript needed but
// for the live event list) of fleets with their locations, instances and
// server processes (and their logs), game and player sessions, queues and
// placements, matchmaking configurations and tickets (with their rule
// metrics), FleetIQ groups and game servers, hosts, replicas and live
// events, and the few write actions an operator needs (drain an instance
// or a host, undrain a host, terminate a game session, stop a placement or
// a ticket).
//
// It reads through the same domain services the API uses (Config), never
// through HTTP to itself, a page at a time. Who may use it
// (docs/console.md, docs/security.md):
//
//   - without credentials, loopback clients only (Hoist's browser guard
//     checks the Host and the cross-site headers in front of it);
//   - with credentials, an operator signed in with an access key pair,
//     holding a session cookie (HttpOnly, SameSite=Strict, Secure over
//     TLS) that names a session record in the store, so that it works on
//     every replica, until it expires.
//
// Every write action is a POST carrying a CSRF token bound to the cookie,
// from a page of the console's own origin.
package console

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosts"
	"github.com/hoistgg/hoist/internal/matchmaking"
	"github.com/hoistgg/hoist/internal/store"
)

// Prefix is the path the console is served under.
const Prefix = "/console"

// pageSize is how many rows one page of a list shows.
const pageSize = 25

// Hosts is what the console needs of the pool hosts' service.
type Hosts interface {
	ListHostsPage(ctx context.Context, token string, limit int) ([]hosts.HostInfo, string, error)
	DrainHost(ctx context.Context, hostID string) (hosts.HostInfo, error)
	UndrainHost(ctx context.Context, hostID string) (hosts.HostInfo, error)
}

// Placements lists a queue's placements.
type Placements interface {
	ListPlacements(ctx context.Context, queue, token string, limit int) ([]api.GameSessionPlacement, string, error)
}

// Tickets lists a configuration's tickets and diagnoses its pool.
type Tickets interface {
	ListTickets(ctx context.Context, config, token string, limit int) ([]matchmaking.TicketView, string, error)
	Diagnose(ctx context.Context, config string, maxPool int) (*matchmaking.Diagnosis, error)
}

// Config is what the console reads and acts through.
type Config struct {
	// API is the composed GameLift service: reads, and the write actions
	// the API has (TerminateGameSession, StopGameSessionPlacement,
	// StopMatchmaking).
	API        api.Service
	Store      store.Store
	Hosts      Hosts
	Placements Placements
	Tickets    Tickets
	// SetInstanceStatus sets a FleetIQ instance's status (the admin
	// action SetGameServerInstanceStatus).
	SetInstanceStatus func(ctx context.Context, group, instanceID, status string) error
	// ProcessLogURL and SetupLogURL return the signed log URLs of a server
	// process's output and an instance's setup log (those of
	// DescribeFleetEvents' PreSignedLogUrl).
	ProcessLogURL func(fleetID, processID string) string
	SetupLogURL   func(fleetID, instanceID string) string
	// OutputKept says which processes' output is kept (those that ended
	// abnormally): only theirs is linked.
	OutputKept func(fleetID string, processIDs []string) map[string]bool
	// Events streams the live events (the /hoist/events stream) to a
	// caller the console has let in, counted against accessKey's streams.
	Events func(w http.ResponseWriter, r *http.Request, accessKey string)
	// Credentials are the access key pairs an operator signs in with;
	// empty: no sign-in, loopback clients only.
	Credentials map[string]string
	// Key signs the CSRF tokens (32 bytes, the same on every replica).
	Key []byte
	// SessionTTL is how long a sign-in lasts.
	SessionTTL time.Duration
	// ReplicaID names this replica (shown in the footer).
	ReplicaID string
	// DiagnosePool bounds the tickets of the dry matcher pass a
	// configuration's page runs (0: 2000).
	DiagnosePool int
	Now          func() time.Time
	Logger       *slog.Logger
}

// Console serves /console.
type Console struct {
	cfg   Config
	pages map[string]*template.Template
	mux   *http.ServeMux
}

//go:embed templates static
var assets embed.FS

// New returns the console.
func New(cfg Config) (*Console, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.DiagnosePool <= 0 {
		cfg.DiagnosePool = 2000
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, pages: pages}
	c.mux = c.routes()
	return c, nil
}

// routes maps each path of the console to its handler.
func (c *Console) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix+"/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET "+Prefix+"/signin", c.signInPage)
	mux.HandleFunc("POST "+Prefix+"/signin", c.signIn)
	mux.HandleFunc("POST "+Prefix+"/signout", c.operator(c.signOut))
	for path, h := range map[string]pageFunc{
		"/{$}":           c.overview,
		"/fleets":        c.fleetsPage,
		"/fleet":         c.fleetPage,
		"/processes":     c.processesPage,
		"/gamesessions":  c.gameSessionsPage,
		"/gamesession":   c.gameSessionPage,
		"/queues":        c.queuesPage,
		"/queue":         c.queuePage,
		"/matchmaking":   c.configurationsPage,
		"/configuration": c.configurationPage,
		"/fleetiq":       c.groupsPage,
		"/fleetiq/group": c.groupPage,
		"/hosts":         c.hostsPage,
		"/replicas":      c.replicasPage,
		"/events":        c.eventsPage,
	} {
		mux.HandleFunc("GET "+Prefix+path, c.operator(c.page(h)))
	}
	mux.HandleFunc("GET "+Prefix+"/events/stream", c.operator(c.stream))
	mux.HandleFunc("POST "+Prefix+"/actions/{action}", c.operator(c.act))
	mux.HandleFunc(Prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, nil, http.StatusNotFound, "no such page")
	})
	return mux
}

// ServeHTTP serves a request under Prefix: the security headers on every
// answer, loopback clients only without credentials, same-origin writes
// only.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if len(c.cfg.Credentials) == 0 && !loopbackPeer(r.RemoteAddr) {
		http.Error(w, "the console answers loopback clients only while Hoist runs without credentials", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
		http.Error(w, "the console takes writes only from its own pages (Origin or Sec-Fetch-Site names another site)", http.StatusForbidden)
		return
	}
	if r.URL.Path == Prefix {
		http.Redirect(w, r, Prefix+"/", http.StatusFound)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// securityHeaders are set on every answer of the console: a CSP allowing
// only the console's own scripts, styles and connections, no framing, no
// MIME sniffing, no referrer to other origins (log URLs carry signatures;
// no-referrer would make browsers send "Origin: null" with the console's
// own forms), no caching.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// sameOrigin reports whether r, a write, comes from a page of the
// console's own origin: an Origin header, when there is one, names the
// request's own Host (over http or https: behind a proxy that ends TLS
// Hoist sees plain HTTP), and Sec-Fetch-Site, when there is one, is
// same-origin.
func sameOrigin(r *http.Request) bool {
	if o, ok := r.Header["Origin"]; ok && !OwnOrigin(r, o) {
		return false
	}
	site := r.Header.Get("Sec-Fetch-Site")
	return site == "" || site == "same-origin"
}

// OwnOrigin reports whether the values o of an Origin header name r's own
// origin: one value, http or https, r's Host and nothing else.
func OwnOrigin(r *http.Request, o []string) bool {
	if len(o) != 1 {
		return false
	}
	scheme, host, ok := strings.Cut(o[0], "://")
	return ok && (scheme == "http" || scheme == "https") && r.Host != "" && strings.EqualFold(host, r.Host)
}
