package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// The ceiling is the machine's physical limit for this kind of load: a bare
// net/http handler that decodes a small JSON body and encodes a small JSON
// answer, nothing else (no signature check, no store). It runs as its own
// process, started like Hoist, and is driven by the same client.

// roleEnv, when set to roleCeiling, makes the program serve the ceiling
// instead of generating load (the load generator starts itself so).
const (
	roleEnv     = "HOIST_LOAD_ROLE"
	roleCeiling = "ceiling"
)

type ceilingRequest struct {
	GameServerGroupName string `json:"GameServerGroupName"`
	GameServerId        string `json:"GameServerId"`
	UtilizationStatus   string `json:"UtilizationStatus"`
}

type ceilingServer struct {
	GameServerGroupName string `json:"GameServerGroupName"`
	GameServerId        string `json:"GameServerId"`
	UtilizationStatus   string `json:"UtilizationStatus"`
}

type ceilingAnswer struct {
	GameServer ceilingServer `json:"GameServer"`
}

func ceilingHandler(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in ceilingRequest
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out := ceilingAnswer{GameServer: ceilingServer(in)}
	if out.GameServer.GameServerId == "" {
		out.GameServer.GameServerId = "gs-ceiling"
	}
	if out.GameServer.UtilizationStatus == "" {
		out.GameServer.UtilizationStatus = "AVAILABLE"
	}
	b, err := json.Marshal(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", jsonContentType)
	_, _ = w.Write(b)
}

// serveCeiling serves the ceiling on a loopback port until SIGTERM or
// SIGINT and writes {"addr": ...} to $HOIST_LOAD_READY_FILE once it serves.
func serveCeiling() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		return 1
	}
	hs := &http.Server{Handler: http.HandlerFunc(ceilingHandler), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if err := writeReady(os.Getenv(hoisttest.ReadyEnv), ln.Addr().String()); err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		return 1
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		return 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return 0
}

func writeReady(path, addr string) error {
	if path == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]string{"addr": addr})
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
