package sessions

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/store"
)

func TestRandomUUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := ids.UUID(), ids.UUID()
	if !re.MatchString(a) || a == b {
		t.Fatalf("ids.UUID = %s, %s", a, b)
	}
}

// TestLaunchedAfterConnect: a process that connects before fleets recorded
// its launch keeps its state and gains the launch details.
func TestLaunchedAfterConnect(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c := conn("fleet-1", "i-1", "proc-1")
	h.must(h.sdk.Connected(h.ctx, c))
	h.must(h.sdk.ProcessReady(h.ctx, c, 7777, nil))
	h.must(h.svc.ProcessLaunched(h.ctx, hosting.Process{ID: "proc-1", FleetID: "fleet-1", ComputeName: "i-1",
		Location: "us-west-2", LaunchPath: "/local/game/server", OutputPath: "/tmp/out"}))
	p := h.process("proc-1")
	if p.State != hosting.ProcessActive || p.LaunchPath != "/local/game/server" || p.OutputPath != "/tmp/out" {
		t.Fatalf("process = %+v", p)
	}
	if err := h.svc.ProcessLaunched(h.ctx, hosting.Process{ID: "proc-1", FleetID: "fleet-2", ComputeName: "i-1"}); err == nil {
		t.Fatal("a process ID of another fleet was accepted")
	}
	if err := h.svc.ProcessLaunched(h.ctx, hosting.Process{ID: "proc-2"}); err == nil {
		t.Fatal("a process without fleet was accepted")
	}
}

func TestAliasResolver(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.ResolveAlias = func(_ context.Context, _ store.Tx, alias string) (string, error) {
			if alias == "alias-1" {
				return "fleet-1", nil
			}
			return "", api.NewNotFoundException("alias %s does not exist", alias)
		}
	})
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
	gs, err := h.create("", func(in *api.CreateGameSessionInput) { in.FleetId, in.AliasId = nil, api.String("alias-1") })
	h.must(err)
	if api.ToString(gs.FleetId) != "fleet-1" {
		t.Fatalf("FleetId = %s", api.ToString(gs.FleetId))
	}
	_, err = h.create("", func(in *api.CreateGameSessionInput) { in.FleetId, in.AliasId = nil, api.String("alias-2") })
	wantCode(t, err, "NotFoundException")
}

func TestRetentionRemovesLogs(t *testing.T) {
	h := newHarness(t)
	root := t.TempDir()
	write(t, filepath.Join(root, "server.log"), "x")
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2", func(c *hosting.Compute) { c.GameRoot = root })
	c := conn("fleet-1", "i-1", "proc-1")
	h.must(h.sdk.Connected(h.ctx, c))
	h.must(h.sdk.ProcessReady(h.ctx, c, 7777, []string{"server.log"}))
	gs, err := h.create("fleet-1")
	h.must(err)
	id := api.ToString(gs.GameSessionId)
	h.must(h.svc.ProcessExited(h.ctx, "proc-1", 1, ""))
	dir := h.gameSession(id).LogDir
	if _, err := os.Stat(filepath.Join(dir, "files", "server.log")); err != nil {
		t.Fatalf("logs not collected: %v", err)
	}
	h.sweepAt(30 * 24 * time.Hour)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("logs kept after retention: %v", err)
	}
}
