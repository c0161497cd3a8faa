package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/agentconn"
	"github.com/hoistgg/hoist/internal/aliases"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/builds"
	"github.com/hoistgg/hoist/internal/clock"
	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/fleetiq"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/fleets/local"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts"
	"github.com/hoistgg/hoist/internal/matchmaking"
	"github.com/hoistgg/hoist/internal/metrics"
	"github.com/hoistgg/hoist/internal/pki"
	"github.com/hoistgg/hoist/internal/placement"
	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sessions"
	"github.com/hoistgg/hoist/internal/sigv4"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/sqlite"
	"github.com/hoistgg/hoist/internal/tags"
)

// Options configure New.
type Options struct {
	Config *config.Config
	Logger *slog.Logger
	// Addr and TLSAddr are the addresses the listeners are bound to (after
	// port 0 was resolved); TLSAddr is "" without a TLS listener. They make
	// the URLs Hoist hands out (the SDK endpoint, log URLs).
	Addr, TLSAddr string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Server is a composed Hoist.
type Server struct {
	cfg     *config.Config
	log     *slog.Logger
	now     func() time.Time
	replica string
	// replicas counts the live replicas for the sharded loops: the
	// replica registry (registry).
	replicas store.Replicas
	registry *replicas.Registry
	// inbox carries messages to the connections other replicas hold (nil
	// on an embedded store: one replica).
	inbox   *replicas.Inbox
	baseURL string
	addr    string // the plain listener's address

	dataLock    *os.File // the data directory's lock
	store       store.Store
	ca          *pki.CA
	caBundle    string // system roots plus Hoist's CA: SSL_CERT_FILE of launched processes
	fleetiq     *fleetiq.Service
	tags        *tags.Service
	builds      *builds.Service
	fleets      *fleets.Service
	sessions    *sessions.Service
	aliases     *aliases.Service
	events      *events.Service
	placement   *placement.Service
	matchmaking *matchmaking.Service
	provider    *local.Provider
	hosts       *hosts.Service  // routes instances to pool hosts or provider
	procUsers   *local.Accounts // nil: server processes run as Hoist's user
	sdk         *sdkconn.Server
	agents      *agentconn.Server // the GameLift Agent endpoint (Anywhere computes)
	svc         api.Service
	auth        *sigv4.Authenticator
	logKey      []byte
	buildsKey   []byte // signs build requests between replicas (PostgreSQL only)
	handler     http.Handler
	bodies      *bodyLimits
	conns       *connSlots    // long-lived connections: SDK sockets and event streams
	streams     *streamLimits // event streams, in all and per key
	console     http.Handler  // the web console (nil: --console off)

	// now is the game clock; wallNow real time (or Options.Now), for what
	// a manual clock must not move: signatures, connections, process
	// health; clock gives the loops their tickers; manual is the manual
	// clock (nil: the clock is real). See clock.go.
	wallNow func() time.Time
	clock   clock.Clock
	manual  *sharedClock
	metrics *metrics.Metrics
	cluster *metrics.Cluster // the cluster gauges' computation

	closeOnce sync.Once
	closeErr  error

	streamsOnce sync.Once
	streamsDone chan struct{} // closed by EndStreams
	// Tests: the live streams' write timeout (0: sseWriteTimeout), and a
	// hook run when a stream ends.
	sseTimeout  time.Duration
	onStreamEnd func()
}

// service is the one api.Service: every domain's operations, and the
// fallback for the rest one embedding level deeper.
type service struct {
	*FleetIQ
	*Tags
	*Builds
	*Fleets
	*Sessions
	*Aliases
	*Placement
	*Matchmaking
	fallback
}

// Aliases give the embedded services distinct field names.
type (
	FleetIQ     = fleetiq.Service
	Tags        = tags.Service
	Builds      = builds.Service
	Fleets      = fleets.Service
	Sessions    = sessions.Service
	Aliases     = aliases.Service
	Placement   = placement.Service
	Matchmaking = matchmaking.Service
)

type fallback struct{ api.Unimplemented }

var _ api.Service = (*service)(nil)

// New opens the store in the data directory and composes every part of
// Hoist. Close releases what it opened.
func New(opts Options) (_ *Server, err error) {
	cfg := opts.Config
	if cfg == nil {
		return nil, errors.New("server: Options.Config is required")
	}
	if !filepath.IsAbs(cfg.DataDir) {
		// Every path handed to a server process (SSL_CERT_FILE, its
		// directories) or kept in a record is made from it, and processes
		// run elsewhere: config.Parse makes it absolute.
		return nil, fmt.Errorf("server: Config.DataDir %q is not an absolute path", cfg.DataDir)
	}
	s := &Server{cfg: cfg, log: opts.Logger, streamsDone: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.wallNow = time.Now // until setupClock, once the store is open
	s.limitLongConnections()
	// The data directory's lock first: nothing in it is touched before.
	if s.dataLock, err = lockDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && s.store == nil {
			_ = s.dataLock.Close()
		}
	}()
	// Before anything is created in the data directory: as root, Hoist's
	// files are made unreadable to the user server processes run as.
	if s.procUsers, err = local.SetupUser(cfg.ProcessUser, cfg.DataDir, s.log.With("component", "processes")); err != nil {
		return nil, err
	}
	if s.replica, err = replicaID(cfg.DataDir); err != nil {
		return nil, dataDirError(cfg.DataDir, err)
	}
	s.baseURL, s.addr = "http://"+publicAddr(opts.Addr, cfg.InstanceIP), opts.Addr
	st, err := openStore(cfg, s.log)
	if err != nil {
		return nil, dataDirError(cfg.DataDir, err)
	}
	s.store = s.instrument(st)
	addrs := []string{s.baseURL}
	if opts.TLSAddr != "" {
		addrs = append(addrs, "https://"+publicAddr(opts.TLSAddr, cfg.InstanceIP))
	}
	if err = s.register(addrs); err != nil {
		_ = st.Close()
		s.store = nil
		return nil, err
	}
	// Opening the store made garbage (the journal store replays every
	// version of every record): hand that memory back to the system now,
	// not whenever the collector next runs (at GOGC 400, once the heap has
	// grown to five times what is live). docs/performance.md, "Memory".
	debug.FreeOSMemory()
	defer func() {
		if err != nil {
			s.closeParts(context.Background())
		}
	}()
	if s.ca, err = s.loadCA(context.Background()); err != nil {
		return nil, dataDirError(cfg.DataDir, err)
	}
	for _, f := range s.ca.Fixed {
		s.log.Warn("tightened the permissions of Hoist's CA", "change", f)
	}
	s.caBundle = filepath.Join(cfg.DataDir, CABundleFile)
	if err = s.ca.WriteBundle(s.caBundle, pki.SystemRootsPEM(os.Getenv)); err != nil {
		return nil, dataDirError(cfg.DataDir, err)
	}
	if err = s.setupClock(opts); err != nil {
		return nil, err
	}
	if s.logKey, err = sharedKey(context.Background(), st, "log-urls", s.wallNow); err != nil {
		return nil, err
	}
	if cfg.Store == config.StorePostgres {
		if s.buildsKey, err = sharedKey(context.Background(), st, "replica-builds", s.wallNow); err != nil {
			return nil, err
		}
	}
	if err := s.compose(opts); err != nil {
		return nil, err
	}
	if c, err := s.newConsole(context.Background()); err != nil {
		return nil, err
	} else if c != nil {
		s.console = c
	}
	s.bodies = newBodyLimits(cfg.HTTPBodyTimeout, cfg.HTTPMaxBodies, cfg.HTTPBodyMemory, isS3(s.builds.Bucket()))
	s.handler = s.bodies.wrap(s.routes())
	if len(cfg.Credentials) == 0 {
		s.handler = guardBrowsers(s.handler)
	}
	return s, nil
}

// limitLongConnections sets the bounds of long-lived connections from the
// configuration and the open-file limit, and logs them.
func (s *Server) limitLongConnections() {
	files := openFileLimit()
	s.conns = &connSlots{max: int64(longConnectionLimit(s.cfg.MaxLongConnections, files))}
	streams := s.cfg.MaxEventStreams
	if streams <= 0 {
		streams = config.DefaultMaxEventStreams
	}
	s.streams = newStreamLimits(streams)
	s.log.Info("long-lived connections bounded", "max", s.conns.max, "openFileLimit", files,
		"eventStreams", streams, "eventStreamsPerKey", s.streams.perKey)
}

// dataDirError says which setting names the data directory an error is
// about, and its path.
func dataDirError(dir string, err error) error {
	return fmt.Errorf("data directory %s (--data-dir, $HOIST_DATA_DIR): %w", dir, err)
}

// compose builds the domain services and wires them together.
func (s *Server) compose(opts Options) error {
	cfg, t := s.cfg, s.cfg.Timings
	secret, err := s.webhookSecret(context.Background())
	if err != nil {
		return err
	}
	s.events = events.New(events.Config{
		Store: s.store, Region: cfg.Region, Account: cfg.Account, Webhooks: webhooks(cfg.Webhooks),
		MaxEvents: cfg.EventOutbox,
		Secret:    secret, Now: s.wallNow, Logger: s.log.With("component", "events"), ReplicaID: s.replica,
		Timings: events.Timings{Interval: t.EventsDeliver, Backoff: t.EventsBackoff, GiveUp: t.EventsGiveUp,
			Retention: t.EventsRetention},
	})
	s.tags = tags.New(s.store)
	s.fleetiq = fleetiq.New(fleetiq.Config{
		Store: s.store, Region: cfg.Region, Account: cfg.Account, Tags: s.tags, Now: s.now, Clock: s.clock,
		Logger: s.log.With("component", "fleetiq"), HealthExpiry: cfg.HealthExpiry,
		Timings: fleetiq.Timings{
			StatusStep:       t.FleetIQStatusStep,
			SweepInterval:    t.FleetIQSweep,
			DeletedRetention: t.FleetIQDeletedRetention,
		},
		ReplicaID: s.replica, Replicas: s.replicas,
	})
	s.auth = newAuthenticator(cfg.Credentials, s.wallNow)
	s.builds, err = builds.New(builds.Config{
		Store: s.store, DataDir: cfg.DataDir, Region: cfg.Region, Account: cfg.Account,
		SetTags: tags.Set, RemoveTags: tags.DeleteAll, PublicURL: s.baseURL,
		Operators: s.auth, ReplicaID: s.replica, Now: s.wallNow,
		Limits:  builds.Limits{MaxUnpackedSize: cfg.MaxUnpackedSize},
		PeerURL: s.peerURL, ClusterKey: s.buildsKey,
		RetainedCheck: t.BuildsRetainedCheck,
		Logger:        s.log.With("component", "builds"),
	})
	if err != nil {
		return err
	}
	s.tags.RegisterResource(arn.TypeBuild, s.builds.Exists)

	// sessions, fleets and the SDK endpoint need one another: the refs are
	// filled in once all three exist, before anything is served.
	msgr, host, agents, remoteLogs := &messengerRef{srv: s}, &hostRef{}, &agentsRef{srv: s}, &remoteLogsRef{}
	s.sessions, err = sessions.New(sessions.Config{
		Store: s.store, Region: cfg.Region, Messenger: msgr, Host: host, Agents: agents, Inbox: s.inbox,
		OnProcessReady: host.onProcessReady, InstanceLost: s.instanceLost, ResolveAlias: aliases.ResolveFleet, Now: s.now, Clock: s.clock, ProcessNow: s.wallNow,
		Logger: s.log.With("component", "sessions"), ReplicaID: s.replica,
		LogURL: s.logURL, DataDir: cfg.DataDir, RemoteLogs: remoteLogs,
		Shared: cfg.Store == config.StorePostgres, // other replicas write it too
		Timings: sessions.Timings{
			SweepInterval:     t.SessionsSweep,
			Reservation:       t.SessionsReservation,
			ActivationTimeout: t.SessionsActivationTimeout,
			HeartbeatInterval: t.SessionsHeartbeatInterval,
			HeartbeatJitter:   t.SessionsHeartbeatJitter,
			ReadyTimeout:      t.SessionsReadyTimeout,
			TerminateGrace:    t.SessionsTerminateGrace,
			SessionRetention:  cfg.SessionRetention,
		},
	})
	if err != nil {
		return err
	}
	var users func(int) (*local.User, error)
	if s.procUsers != nil {
		users = s.procUsers.User
	}
	s.provider, err = local.New(local.Config{
		Dir:            filepath.Join(cfg.DataDir, "instances"),
		Users:          users,
		Stagger:        t.ProcessesStagger,
		TerminateGrace: t.ProcessesTerminateGrace,
		ShutdownGrace:  t.ProcessesShutdownGrace,
		KillGrace:      t.ProcessesKillGrace,
		MinUptime:      t.ProcessesMinUptime,
		CrashBackoff:   t.ProcessesCrashBackoff,
		Logger:         s.log.With("component", "processes"),
	})
	if err != nil {
		return err
	}
	s.hosts, err = s.newHosts(hosts.Timings{HeartbeatMin: t.HostsHeartbeat, HeartbeatGrace: t.HostsHeartbeatGrace,
		StartGrace: t.HostsStartGrace, Check: t.HostsCheck})
	if err != nil {
		return err
	}
	s.fleets, err = fleets.New(fleets.Config{
		Store: s.store, Region: cfg.Region, Account: cfg.Account,
		SetTags: tags.Set, RemoveTags: tags.DeleteAll, Builds: s.builds,
		Events: s.sessions, Messenger: msgr, Provider: s.hosts, Placer: s.hosts, Now: s.now, Clock: s.clock, TokenNow: s.wallNow,
		Logger: s.log.With("component", "fleets"), ReplicaID: s.replica, Replicas: s.replicas,
		SDKEndpoint:   sdkEndpoint(cfg.SDKScheme, opts.Addr, opts.TLSAddr, cfg.InstanceIP),
		AgentEndpoint: agentEndpoint(sdkEndpoint(cfg.SDKScheme, opts.Addr, opts.TLSAddr, cfg.InstanceIP)),
		InstanceIP:    cfg.InstanceIP, DataDir: cfg.DataDir, ProcessEnv: cfg.ProcessEnv,
		CABundle: s.caBundle, CA: s.ca, DNSDomain: cfg.DNSSuffix,
		SetupLogURL: s.setupLogURL, ProcessLogURL: s.processLogURL, WrapHooks: s.metrics.WrapHooks,
		Timings: fleets.Timings{
			ReconcileInterval: t.FleetsReconcile,
			PolicyInterval:    t.FleetsPolicyInterval,
			ActivationTimeout: t.FleetsActivationTimeout,
			FirstReadyTimeout: t.FleetsFirstReadyTimeout,
			LaunchBackoff:     t.FleetsLaunchBackoff,
			TokenTTL:          t.FleetsTokenTTL,
		},
	})
	if err != nil {
		return err
	}
	host.f = s.fleets
	s.hosts.SetHooks(s.fleets.HooksFor)
	s.hosts.SetStartSecrets(s.fleets.StartSecrets)
	remoteLogs.h = s.hosts
	s.agents, err = agentconn.New(agentconn.Config{Store: s.store, Fleets: s.fleets, Sessions: s.sessions, Slots: s.conns,
		MessageRate: float64(noneIfZero(s.cfg.SDKMessageRate)), MessageBurst: 3 * s.cfg.SDKMessageRate,
		ReplicaID: s.replica, Shared: s.inbox != nil, Now: s.wallNow, Logger: s.log.With("component", "agent"),
		Timings: agentconn.Timings{HeartbeatTimeout: t.AgentsHeartbeatTimeout, CheckInterval: t.AgentsCheckInterval}})
	if err != nil {
		return err
	}
	agents.s = s.agents
	s.tags.RegisterResource(arn.TypeFleet, s.fleets.FleetExists)
	s.tags.RegisterResource(arn.TypeLocation, s.fleets.LocationExists)
	s.aliases = aliases.New(aliases.Config{Store: s.store, Region: cfg.Region, Account: cfg.Account, Tags: s.tags,
		FleetExists: s.fleets.FleetExists, Now: s.now})
	s.placement = placement.New(placement.Config{
		Store: s.store, Sessions: s.sessions, Region: cfg.Region, Account: cfg.Account, Tags: s.tags,
		ResolveAlias: aliases.ResolveFleet, AliasExists: s.aliases.Exists, FleetExists: s.fleets.FleetExists,
		Costs: cfg.PlacementCosts, Publisher: s.events, Interval: t.PlacementInterval,
		ReplicaID: s.replica, Replicas: s.replicas, Now: s.now, Clock: s.clock, Logger: s.log.With("component", "placement"),
	})
	// A placement is fulfilled in the transaction that activates its game
	// session.
	s.sessions.SetPlacementHook(s.placement)

	// FlexMatch places WITH_QUEUE matches through placement, which tells
	// it how they ended; backfill matches go to sessions.
	s.matchmaking = matchmaking.New(matchmaking.Config{Store: s.store, Region: cfg.Region, Account: cfg.Account,
		Tags: s.tags, QueueExists: s.placement.Exists, Publisher: s.metrics.WrapPublisher(s.events), Now: s.now, Clock: s.clock,
		ReplicaID: s.replica, Replicas: s.replicas, Shared: cfg.Store == config.StorePostgres,
		Placer: s.placement, OnPass: s.metrics.ObservePass,
		Backfiller: sessionBackfiller{s: s.sessions, log: s.log.With("component", "matchmaking")},
		Logger:     s.log.With("component", "matchmaking")})
	s.placement.SetOnMatchPlacement(s.matchmaking.OnMatchPlacement)
	s.sessions.SetMatchHook(s.matchmaking)

	s.sdk = sdkconn.New(sdkconn.Config{
		API:    agentconn.NotifyAgents(s.sessions.ProcessAPI(), agents, s.log.With("component", "agent")),
		Tokens: s.fleets, Issuer: s.fleets, SignedURLs: s.auth, Processes: s.fleets,
		Backfiller: sdkBackfiller{m: s.matchmaking},
		Logger:     s.log.With("component", "sdk"), Now: s.wallNow, ReplicaID: s.replica,
		Slots: s.conns, MaxComputeSockets: noneIfZero(s.cfg.SDKComputeSockets),
		MessageRate: float64(noneIfZero(s.cfg.SDKMessageRate)), MessageBurst: 3 * s.cfg.SDKMessageRate,
	})
	msgr.s = s.sdk
	s.routeInbox()
	s.svc = &service{FleetIQ: s.fleetiq, Tags: s.tags, Builds: s.builds, Fleets: s.fleets, Sessions: s.sessions, Aliases: s.aliases,
		Placement: s.placement, Matchmaking: s.matchmaking}
	return nil
}

// Handler returns the http.Handler serving every route.
func (s *Server) Handler() http.Handler { return s.handler }

// Service returns the composed api.Service.
func (s *Server) Service() api.Service { return s.svc }

// TLSCertificate issues the TLS listener's certificate from Hoist's CA
// (for 127.0.0.1, ::1, localhost and the instance IP address).
func (s *Server) TLSCertificate() (tls.Certificate, error) {
	return s.ca.IssueServerCert([]string{s.cfg.InstanceIP})
}

// Run runs the background loops until ctx ends. Each loop holds its own
// store lease, or a lease per shard (placement, matchmaking, FleetIQ, the
// fleets reconciler), so with several replicas each runs on one of them
// or they share its shards; the registry's lease counts this replica among
// the live ones meanwhile, and on PostgreSQL the inbox and the replicas
// janitor run (internal/replicas).
func (s *Server) Run(ctx context.Context) error {
	loops := map[string]func(context.Context) error{
		"registry": s.registry.Run, "clock": s.runClock,
		"fleetiq": s.fleetiq.Run, "builds": s.builds.Run,
		"fleets": s.fleets.Run, "sessions": s.sessions.Run, "events": s.events.Run,
		"placement": s.placement.Run, "matchmaking": s.matchmaking.Run, "agents": s.agents.Run, "hosts": s.hosts.Run,
	}
	if s.inbox != nil {
		loops["inbox"], loops["janitor"] = s.inbox.Run, s.janitor().Run
	}
	errc := make(chan error, len(loops))
	for name, run := range loops {
		go func() {
			err := run(ctx)
			if err != nil && !errors.Is(err, context.Canceled) {
				err = fmt.Errorf("%s loop: %w", name, err)
			} else {
				err = nil
			}
			errc <- err
		}()
	}
	var errs []error
	for range loops {
		errs = append(errs, <-errc)
	}
	return errors.Join(errs...)
}

// Close stops every server process (each is sent TerminateProcess and
// given its grace period, so the SDK endpoint stays open meanwhile), then
// closes the SDK endpoint, waits for build unpacks and closes the store.
// Run's context should be canceled first.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() { s.closeErr = s.closeParts(ctx) })
	return s.closeErr
}

func (s *Server) closeParts(ctx context.Context) error {
	s.EndStreams()
	var errs []error
	switch {
	case s.hosts != nil:
		errs = append(errs, s.hosts.Close()) // closes the provider too
	case s.provider != nil:
		errs = append(errs, s.provider.Close())
	}
	if s.sdk != nil {
		errs = append(errs, s.sdk.Shutdown(ctx))
	}
	if s.agents != nil {
		errs = append(errs, s.agents.Shutdown(ctx))
	}
	if s.builds != nil {
		errs = append(errs, s.builds.Close())
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	if s.dataLock != nil {
		errs = append(errs, s.dataLock.Close()) // last: nothing of the directory is in use any more
	}
	return errors.Join(errs...)
}

// Store returns the store (for tests).
func (s *Server) Store() store.Store { return s.store }

// messengerRef forwards to the SDK endpoint once it exists; a process
// connected to another replica is reached through that replica's inbox.
type messengerRef struct {
	s   *sdkconn.Server
	srv *Server
}

func (m *messengerRef) SendToProcess(ctx context.Context, processID string, msg hosting.Message) error {
	err := m.s.SendToProcess(ctx, processID, msg)
	if !errors.Is(err, sdkconn.ErrNotConnected) {
		return err
	}
	return m.srv.relaySend(ctx, replicas.TargetProcess, processID, sessions.ProcessHolder, msg, err)
}

// hostRef forwards to the fleets service once it exists.
type hostRef struct{ f *fleets.Service }

func (h *hostRef) TerminateProcess(ctx context.Context, processID, reason string) error {
	return h.f.TerminateProcess(ctx, processID, reason)
}

func (h *hostRef) KillProcess(ctx context.Context, processID, reason string) error {
	return h.f.KillProcess(ctx, processID, reason)
}

func (h *hostRef) onProcessReady(ctx context.Context, tx store.Tx, fleetID, location string) error {
	return h.f.OnProcessReady(ctx, tx, fleetID, location)
}

// publicAddr returns addr with an unspecified host (0.0.0.0, ::, "")
// replaced by ip: the address to hand out to processes and clients.
// CABundleFile is the file in the data directory holding the system's CA
// bundle plus Hoist's CA certificate (SSL_CERT_FILE of launched processes).
const CABundleFile = "ca-bundle.pem"

// caConstraints are the names Hoist's CA may sign: the DNS suffix, the
// instance IP address and the pool hosts' networks (besides localhost and
// loopback).
func caConstraints(cfg *config.Config) pki.Constraints {
	var c pki.Constraints
	if cfg.DNSSuffix != "" {
		c.DNSDomains = append(c.DNSDomains, cfg.DNSSuffix)
	}
	if ip := net.ParseIP(cfg.InstanceIP); ip != nil {
		c.IPs = append(c.IPs, ip)
	} else if cfg.InstanceIP != "" {
		c.DNSDomains = append(c.DNSDomains, cfg.InstanceIP)
	}
	c.Networks = cfg.HostNetworks
	return c
}

// sdkEndpoint is the Server SDK URL Hoist hands out: wss:// on the TLS
// listener when scheme is wss, or auto with the TLS listener on (the C++
// Server SDK speaks TLS whatever the scheme), else ws:// on the plain one.
func sdkEndpoint(scheme, addr, tlsAddr, ip string) string {
	if tlsAddr != "" && (scheme == config.SDKSchemeWSS || scheme == config.SDKSchemeAuto || scheme == "") {
		return "wss://" + publicAddr(tlsAddr, ip) + "/sdk"
	}
	return "ws://" + publicAddr(addr, ip) + "/sdk"
}

func publicAddr(addr, ip string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if h := net.ParseIP(host); host == "" || (h != nil && h.IsUnspecified()) {
		host = ip
	}
	return net.JoinHostPort(host, port)
}

// openStore opens the store cfg.Store names: PostgreSQL, or an embedded
// store. Without a choice it is the journal store, unless the data
// directory holds a SQLite store and no journal store (a data directory
// from a Hoist before the journal store): that one is opened, so that no
// data is left behind.
func openStore(cfg *config.Config, log *slog.Logger) (store.Store, error) {
	if cfg.Store == config.StorePostgres {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{Logger: log})
	}
	journalDir := filepath.Join(cfg.DataDir, "store")
	sqlitePath := filepath.Join(cfg.DataDir, "hoist.db")
	kind := cfg.Store
	if kind == "" {
		kind = config.StoreJournal
		if exists(sqlitePath) && !exists(journalDir) {
			kind = config.StoreSQLite
			log.Info("store: this data directory holds a SQLite store; opening it (--store selects explicitly)")
		}
	}
	if kind == config.StoreSQLite {
		return sqlite.Open(sqlitePath, sqlite.Options{Logger: log})
	}
	return journal.Open(journalDir, journal.Options{Logger: log, BufferedWrites: cfg.JournalWrites == config.JournalBuffered})
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// noneIfZero maps a setting's 0 ("no bound") to sdkconn's -1.
func noneIfZero(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
