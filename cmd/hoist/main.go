// Command hoist serves the GameLift API, the S3 upload endpoint and the Server
// SDK 5 WebSocket endpoint, and hosts game server processes.
//
//	hoist [serve] [flags]    serve (the default; `hoist serve --help` lists the flags)
//	hoist admin ...          operator commands (see `hoist admin --help`)
//	hoist agent ...          run this host as a compute of an ANYWHERE fleet, or (--pool) as a pool host (see `hoist agent --help`)
//	hoist match ...          FlexMatch rule set workbench (see `hoist match --help`)
//	hoist migrate-store ...  copy a data directory's store into PostgreSQL
//	hoist version            print the version (also --version)
//	hoist help               list the commands (also --help, -h)
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/server"
)

// version is set at build time with -ldflags "-X main.version=..."; without
// it the version comes from the build information (see versionString).
var version = ""

const usage = `usage: hoist [command] [flags]

commands:
  serve     serve the GameLift API and host game servers (the default command)
  admin     operator actions on a running Hoist (hoist admin --help)
  agent     run this host as a compute of an ANYWHERE fleet, or (--pool) as a pool host of managed fleets (hoist agent --help)
  match     simulate matchmaking, validate a rule set (hoist match --help)
  migrate-store
            copy a data directory's store into PostgreSQL (hoist migrate-store --help)
  version   print the version (also hoist --version)
  help      print this help (also hoist --help)

hoist serve --help lists the settings: every flag has a HOIST_* environment variable.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args (without the program name) and returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	} else if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			cmd, args = "help", args[1:]
		case "-version", "--version":
			cmd, args = "version", args[1:]
		}
	}
	switch cmd {
	case "serve":
		err := serve(args, stderr)
		var usage *usageError
		switch {
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &usage):
			fmt.Fprintln(stderr, "hoist:", err)
			return 2
		case err != nil:
			fmt.Fprintln(stderr, "hoist:", err)
			return 1
		}
		return 0
	case "version":
		fmt.Fprintln(stdout, "hoist", versionString())
		return 0
	case "admin":
		return admin(args, stdout, stderr)
	case "agent":
		return agent(args, stdout, stderr)
	case "match":
		return match(args, stdout, stderr)
	case "migrate-store":
		return migrateStore(args, os.LookupEnv, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "hoist: unknown command %q\n\n%s", cmd, usage)
	return 2
}

// usageError is an error in the settings hoist serve was given (exit
// status 2, as for any usage error).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// versionString is the version set at build time, else the module version
// from the build information, with the VCS revision the go command stamped
// (see versionFrom).
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev " + noRevision
	}
	return versionFrom(bi)
}

// noRevision says why a binary has no VCS revision.
const noRevision = "(no VCS revision: go build in a git clone stamps it; go run, -buildvcs=false and git worktrees do not)"

// versionFrom reads the version from build information: the module
// version (`go install ...@v1.2.3`, or the pseudo-version the go command
// makes in a git clone), else "dev"; then, when the go command stamped
// them (go build in a git clone), the full VCS revision, its time and
// whether the tree had changes.
func versionFrom(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	rev := vcs["vcs.revision"]
	switch {
	case rev == "" && v == "dev":
		return v + " " + noRevision
	case rev == "":
		return v
	}
	parts := []string{cmp.Or(vcs["vcs"], "vcs") + " " + rev}
	if t := vcs["vcs.time"]; t != "" {
		parts = append(parts, t)
	}
	if vcs["vcs.modified"] == "true" {
		parts = append(parts, "modified")
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}

func newLogger(cfg *config.Config, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch cfg.LogFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: want text or json, got %q", cfg.LogFormat)
}

// testHookServerOpened, when set (by tests), runs right after the store
// opened; an error from it takes the failure path from there.
var testHookServerOpened func() error

func serve(args []string, stderr io.Writer) error {
	cfg, err := config.Parse(args, os.LookupEnv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err != nil {
		return &usageError{err}
	}
	log, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	setGC(os.Getenv)
	if setMemoryLimit(cfg.MemoryLimit) {
		log.Info("runtime: memory limit set", "bytes", cfg.MemoryLimit)
	}
	ctx, sig, stop := notifySignals()
	defer stop()

	// Every listener is bound before the store opens, and from here on
	// every path out releases what was opened: the listeners, the store and
	// its lock, the server processes.
	ls, err := listen(cfg)
	if err != nil {
		return err
	}
	defer ls.close()
	// Until the store is open (replayed), Starting answers on the plain
	// listener: alive, not ready.
	starting := &server.Starting{}
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	hs := server.HTTPServer(cfg, starting, errLog)
	errc := make(chan error, 3)
	go func() { errc <- hs.Serve(server.SniffTLS(ls.api, addrOf(ls.tls), log)) }()
	defer hs.Close() // after Shutdown on the way out; alone on an early return
	srv, err := server.New(server.Options{Config: cfg, Logger: log, Addr: ls.api.Addr().String(), TLSAddr: addrOf(ls.tls)})
	if err != nil {
		return err
	}
	closed := false
	closeServer := func(ctx context.Context) {
		if !closed {
			closed = true
			if err := srv.Close(ctx); err != nil {
				log.Error("closing", "err", err)
			}
		}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
		defer cancel()
		closeServer(cctx)
	}()
	if testHookServerOpened != nil {
		if err := testHookServerOpened(); err != nil {
			return err
		}
	}
	if err := superviseLocalAgent(ctx, cfg, log, srv.StartLocalHost); err != nil {
		return fmt.Errorf("local hosting: %w", err)
	}
	if len(cfg.Credentials) == 0 {
		log.Warn("NO CREDENTIALS CONFIGURED: Hoist accepts any SigV4-signed request without checking the signature; this mode only listens on loopback. Set --credentials-file or $HOIST_CREDENTIALS to verify signatures.")
	} else {
		log.Info("verifying SigV4 signatures", "access_keys", len(cfg.Credentials))
	}

	var tlsConfig *tls.Config
	if ls.tls != nil {
		cert, err := srv.TLSCertificate()
		if err != nil {
			return fmt.Errorf("TLS certificate: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	hs.RegisterOnShutdown(srv.EndStreams) // the live event streams end, so Shutdown need not wait for them
	starting.Ready(srv.Handler())
	var ths *http.Server
	if ls.tls != nil {
		ths = srv.HTTPServer(errLog)
		ths.TLSConfig = tlsConfig
		go func() { errc <- ths.ServeTLS(ls.tls, "", "") }()
	}
	if ls.pprof != nil {
		ps := servePprof(ls.pprof, log)
		defer ps.Close()
	}
	loopCtx, cancelLoops := context.WithCancel(ctx)
	defer cancelLoops()
	go func() {
		if err := srv.Run(loopCtx); err != nil && !errors.Is(err, context.Canceled) {
			errc <- fmt.Errorf("background work: %w", err)
		}
	}()
	log.Info("hoist serving", "version", versionString(), "addr", ls.api.Addr().String(), "tls_addr", addrOf(ls.tls), "data_dir", cfg.DataDir, "region", cfg.Region)
	if err := writeReadyFile(cfg.ReadyFile, ls.api, ls.tls); err != nil {
		log.Error("writing ready file", "err", err)
	}

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down", "signal", sig())
	case serveErr = <-errc:
		log.Error("server stopped", "err", serveErr)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	if sig() == os.Interrupt {
		// SIGINT (Ctrl-C) ends the local games too; SIGTERM (service
		// managers, upgrades) leaves them to the next Hoist.
		if err := srv.RetireLocalHost(shutdownCtx); err != nil {
			// Not connected (yet): the agent this Hoist started is
			// told with a signal instead.
			if !endSpawnedAgent(cfg.ShutdownGrace) {
				log.Warn("the local agent's game servers may still run", "err", err)
			}
		}
	}
	_ = hs.Shutdown(shutdownCtx)
	if ths != nil {
		_ = ths.Shutdown(shutdownCtx)
	}
	cancelLoops()
	closeServer(shutdownCtx)
	log.Info("stopped")
	if errors.Is(serveErr, http.ErrServerClosed) {
		return nil
	}
	return serveErr
}

// listeners are the sockets `hoist serve` binds; tls and pprof are nil
// when not configured.
type listeners struct{ api, tls, pprof net.Listener }

// listen binds every configured listener, or none: on an error it closes
// what it had bound. Each error names its setting.
func listen(cfg *config.Config) (*listeners, error) {
	ls := &listeners{}
	var err error
	if ls.api, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("--addr: %w", err)
	}
	if cfg.TLSAddr != "" {
		if ls.tls, err = net.Listen("tcp", cfg.TLSAddr); err != nil {
			ls.close()
			return nil, fmt.Errorf("--tls-addr: %w", err)
		}
	}
	if cfg.PprofAddr != "" {
		if ls.pprof, err = net.Listen("tcp", cfg.PprofAddr); err != nil {
			ls.close()
			return nil, fmt.Errorf("--pprof-addr: %w", err)
		}
	}
	return ls, nil
}

// close closes the listeners (closing one an http.Server already closed is
// harmless).
func (ls *listeners) close() {
	for _, l := range []net.Listener{ls.api, ls.tls, ls.pprof} {
		if l != nil {
			_ = l.Close()
		}
	}
}

// servePprof serves net/http/pprof on ln (a loopback address, which config
// checks), apart from the API's routes.
func servePprof(ln net.Listener, log *slog.Logger) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ps := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ps.Serve(ln) }()
	log.Info("serving pprof", "addr", ln.Addr().String())
	return ps
}

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// writeReadyFile writes the listen addresses as JSON to path ($HOIST_READY_FILE;
// nothing when "") once Hoist serves: tests and scripts that start Hoist on
// port 0 read it.
func writeReadyFile(path string, ln, tlsLn net.Listener) error {
	if path == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]string{"addr": addrOf(ln), "tls_addr": addrOf(tlsLn)})
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// gcPercent is the garbage collector's target Hoist runs with unless GOGC
// is set: the heap may grow to 5 times what is live before a collection
// (Go's default is 2 times). Hoist's live heap is small (the store's state
// and the requests in flight), and with the default the collector took
// about a tenth of the CPU under FleetIQ load (docs/performance.md).
const gcPercent = 400

// setMemoryLimit applies --memory-limit (0: leave the runtime's own,
// which GOMEMLIMIT sets) and reports whether it did.
func setMemoryLimit(limit int64) bool {
	if limit <= 0 {
		return false
	}
	debug.SetMemoryLimit(limit)
	return true
}

// setGC applies gcPercent when the environment does not set GOGC.
func setGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}
