// Command hoist serves the GameLift API, the S3 upload endpoint and the Server
// SDK 5 WebSocket endpoint, and hosts game server processes.
//
//	hoist [serve] [flags]    serve (the default)
//	hoist version            print the version
//	hoist admin ...          operator commands (see `hoist admin -h`)
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/server"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		if err := serve(args, stderr); err != nil {
			fmt.Fprintln(stderr, "hoist:", err)
			return 1
		}
		return 0
	case "version":
		fmt.Fprintln(stdout, "hoist", version)
		return 0
	case "admin":
		return admin(args, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, "usage: hoist [serve] [flags] | hoist version | hoist admin <command> [flags]")
		return 0
	}
	fmt.Fprintf(stderr, "hoist: unknown command %q (want serve, version or admin)\n", cmd)
	return 2
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

func serve(args []string, stderr io.Writer) error {
	cfg, err := config.Parse(args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	log, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	setGC(os.Getenv)
	if setMemoryLimit(cfg.MemoryLimit) {
		log.Info("runtime: memory limit set", "bytes", cfg.MemoryLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	var tlsLn net.Listener
	if cfg.TLSAddr != "" {
		if tlsLn, err = net.Listen("tcp", cfg.TLSAddr); err != nil {
			ln.Close()
			return err
		}
	}
	srv, err := server.New(server.Options{Config: cfg, Logger: log, Addr: ln.Addr().String(), TLSAddr: addrOf(tlsLn)})
	if err != nil {
		ln.Close()
		if tlsLn != nil {
			tlsLn.Close()
		}
		return err
	}
	if len(cfg.Credentials) == 0 {
		log.Warn("NO CREDENTIALS CONFIGURED: Hoist accepts any SigV4-signed request without checking the signature; this mode only listens on loopback. Set --credentials-file or $HOIST_CREDENTIALS to verify signatures.")
	} else {
		log.Info("verifying SigV4 signatures", "access_keys", len(cfg.Credentials))
	}

	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 3)
	go func() { errc <- hs.Serve(ln) }()
	var ths *http.Server
	if tlsLn != nil {
		cert, err := srv.TLSCertificate()
		if err != nil {
			return err
		}
		ths = &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second,
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
			ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		go func() { errc <- ths.ServeTLS(tlsLn, "", "") }()
	}
	if cfg.PprofAddr != "" {
		ps, err := servePprof(cfg.PprofAddr, log)
		if err != nil {
			return err
		}
		defer ps.Close()
	}
	loopCtx, cancelLoops := context.WithCancel(ctx)
	defer cancelLoops()
	go func() {
		if err := srv.Run(loopCtx); err != nil && !errors.Is(err, context.Canceled) {
			errc <- fmt.Errorf("background work: %w", err)
		}
	}()
	log.Info("hoist serving", "version", version, "addr", ln.Addr().String(), "tls_addr", addrOf(tlsLn), "data_dir", cfg.DataDir, "region", cfg.Region)
	if err := writeReadyFile(ln, tlsLn); err != nil {
		log.Error("writing ready file", "err", err)
	}

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case serveErr = <-errc:
		log.Error("server stopped", "err", serveErr)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	_ = hs.Shutdown(shutdownCtx)
	if ths != nil {
		_ = ths.Shutdown(shutdownCtx)
	}
	cancelLoops()
	if err := srv.Close(shutdownCtx); err != nil {
		log.Error("closing", "err", err)
	}
	log.Info("stopped")
	if errors.Is(serveErr, http.ErrServerClosed) {
		return nil
	}
	return serveErr
}

// servePprof serves net/http/pprof on addr (a loopback address, which
// config checks) on its own listener, apart from the API's routes.
func servePprof(addr string, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ps := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ps.Serve(ln) }()
	log.Info("serving pprof", "addr", ln.Addr().String())
	return ps, nil
}

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// writeReadyFile writes the listen addresses as JSON to $HOIST_READY_FILE (if
// set) once Hoist serves: tests and scripts that start Hoist on port 0 read it.
func writeReadyFile(ln, tlsLn net.Listener) error {
	path := os.Getenv("HOIST_READY_FILE")
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
