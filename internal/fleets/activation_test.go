package fleets

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

func TestDecideActivation(t *testing.T) {
	const last = "server process process-1 on instance i-1 exited with code 7; the last line of its output:\n  | missing config file"
	tests := map[string]struct {
		st       api.FleetStatus
		failures int
		since    time.Duration // how long the location has been ACTIVATING (0: no record)
		want     *move
	}{
		"activating, nothing failed": {st: api.FleetStatusActivating, since: time.Minute},
		"four failures":              {st: api.FleetStatusActivating, failures: activationFailures - 1, since: time.Minute},
		"five failures": {st: api.FleetStatusActivating, failures: activationFailures, since: time.Minute,
			want: &move{Location: "us-west-2", To: api.FleetStatusError, Code: api.EventCodeFleetActivationFailed, ProcessLog: "process-1",
				Message: "location us-west-2 did not become ACTIVE: 5 server processes ended before any called ProcessReady; the last: " + last}},
		"first ready timeout not yet": {st: api.FleetStatusActivating, since: 10*time.Minute - time.Millisecond},
		"first ready timeout": {st: api.FleetStatusActivating, since: 10 * time.Minute,
			want: &move{Location: "us-west-2", To: api.FleetStatusError, Code: api.EventCodeFleetActivationFailed,
				Message: "location us-west-2 did not become ACTIVE: no server process called ProcessReady within 10m0s of ACTIVATING"}},
		"first ready timeout after failures": {st: api.FleetStatusActivating, failures: 2, since: time.Hour,
			want: &move{Location: "us-west-2", To: api.FleetStatusError, Code: api.EventCodeFleetActivationFailed, ProcessLog: "process-1",
				Message: "location us-west-2 did not become ACTIVE: no server process called ProcessReady within 10m0s of ACTIVATING; 2 ended before, the last: " + last}},
		"still building": {st: api.FleetStatusBuilding, since: time.Hour},
		"no record":      {st: api.FleetStatusActivating},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := view(tc.st, 1, comp("i-1", api.ComputeStatusPending))
			v.FirstReadyTimeout = 10 * time.Minute
			if tc.since > 0 {
				v.ActivatingSince = map[string]time.Time{"us-west-2": t0.Add(-tc.since)}
			}
			if tc.failures > 0 {
				v.Failures = map[string]creationFailures{"us-west-2": {Count: tc.failures, Last: last, Process: "process-1"}}
			}
			p := decide(v)
			switch {
			case tc.want == nil && len(p.Moves) != 0:
				t.Errorf("moves %+v, want none", p.Moves)
			case tc.want != nil && (len(p.Moves) != 1 || p.Moves[0] != *tc.want):
				t.Errorf("moves %+v, want %+v", p.Moves, *tc.want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// crashHarness is a harness whose log is kept and whose events get log
// URLs.
func crashHarness(t *testing.T) (*harness, *syncBuffer) {
	log := &syncBuffer{}
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(log, nil))
		c.ProcessLogURL = func(fleetID, processID string) string { return "https://logs/" + fleetID + "/" + processID }
	})
	return h, log
}

// crash plays a server process of an instance that prints output and
// exits with code 7 before calling ProcessReady.
func (h *harness) crash(inst, output string) string {
	h.t.Helper()
	h.prov.mu.Lock()
	in := h.prov.instances[inst]
	proc := fmt.Sprintf("process-%d-%s", len(in.procs), strings.TrimPrefix(inst, "i-"))
	in.procs = append(in.procs, proc)
	h.prov.mu.Unlock()
	path := filepath.Join(h.t.TempDir(), proc+".log")
	if err := os.WriteFile(path, []byte(output), 0o600); err != nil {
		h.t.Fatal(err)
	}
	in.hooks.ProcessStarted(h.ctx, ProcessStart{ProcessID: proc, LaunchPath: "/local/game/server", OutputPath: path, StartedAt: h.clock.Now()})
	in.hooks.ProcessExited(h.ctx, ProcessExit{ProcessID: proc, ExitCode: 7, Uptime: 10 * time.Millisecond})
	return proc
}

// fullEvents returns a fleet's events.
func (h *harness) fullEvents(id string) []api.Event {
	h.t.Helper()
	out, err := h.svc.DescribeFleetEvents(h.ctx, &api.DescribeFleetEventsInput{FleetId: api.String(id), Limit: api.Int32(1000)})
	if err != nil {
		h.t.Fatal(err)
	}
	return out.Events
}

// TestCrashingFleetFails: a new fleet whose server prints "missing config
// file" and exits 7 goes to ERROR after activationFailures crashes, well
// before any timeout; every SERVER_PROCESS_CRASHED event quotes the output
// and links to it, FLEET_ACTIVATION_FAILED says why, the link serves the
// output, and Hoist logs each crash at WARN with the output.
func TestCrashingFleetFails(t *testing.T) {
	h, log := crashHarness(t)
	id := h.createFleet(ec2Input(1))
	h.reconcile()
	inst := h.prov.started()[0]
	h.setUp(inst)
	var last string
	for i := range activationFailures {
		h.clock.Advance(time.Second)
		last = h.crash(inst, "loading settings\nmissing config file\n")
		h.reconcile()
		if st, want := h.status(id), api.FleetStatusActivating; i < activationFailures-1 && st != want {
			t.Fatalf("after %d crashes the fleet is %s, want %s", i+1, st, want)
		}
	}
	if st := h.status(id); st != api.FleetStatusError {
		t.Fatalf("after %d crashes the fleet is %s, want ERROR", activationFailures, st)
	}
	evs := h.fullEvents(id)
	crashes := 0
	for _, ev := range evs {
		if ev.EventCode != api.EventCodeServerProcessCrashed {
			continue
		}
		crashes++
		msg := api.ToString(ev.Message)
		if !strings.Contains(msg, "exited with code 7; the last 2 lines of its output:\n  | loading settings\n  | missing config file") {
			t.Errorf("crash event message does not quote the output: %q", msg)
		}
		if u := api.ToString(ev.PreSignedLogUrl); !strings.HasPrefix(u, "https://logs/"+id+"/process-") {
			t.Errorf("crash event PreSignedLogUrl %q", u)
		}
	}
	if crashes != activationFailures {
		t.Errorf("%d SERVER_PROCESS_CRASHED events, want %d", crashes, activationFailures)
	}
	n := len(evs)
	if n < 2 || evs[n-2].EventCode != api.EventCodeFleetActivationFailed || evs[n-1].EventCode != api.EventCodeFleetStateError {
		t.Fatalf("events do not end with FLEET_ACTIVATION_FAILED, FLEET_STATE_ERROR: %v", h.events(id))
	}
	if msg := api.ToString(evs[n-2].Message); !strings.Contains(msg, "5 server processes ended before any called ProcessReady") ||
		!strings.Contains(msg, "missing config file") {
		t.Errorf("FLEET_ACTIVATION_FAILED message: %q", msg)
	}
	if u := api.ToString(evs[n-2].PreSignedLogUrl); u != "https://logs/"+id+"/"+last {
		t.Errorf("FLEET_ACTIVATION_FAILED PreSignedLogUrl %q, want the last crash's output", u)
	}
	var out bytes.Buffer
	if err := h.svc.WriteProcessOutput(h.ctx, &out, id, last); err != nil || out.String() != "loading settings\nmissing config file\n" {
		t.Errorf("WriteProcessOutput: %q, %v", out.String(), err)
	}
	warned := strings.Count(log.String(), "level=WARN msg=\"fleets: server process ended: exited with code 7\" event=SERVER_PROCESS_CRASHED fleet="+id)
	if warned != activationFailures || !strings.Contains(log.String(), `exitCode=7 signal="" output="loading settings\nmissing config file"`) {
		t.Errorf("%d crash warnings in the log, want %d with the output:\n%s", warned, activationFailures, log.String())
	}
	h.reconcile()
	if h.prov.get(inst).stopped == "" {
		t.Errorf("the instance of a fleet in ERROR was not stopped")
	}
}

// TestActiveFleetCrashQuoted: on an ACTIVE fleet a crash is quoted and
// logged the same way but never fails the fleet.
func TestActiveFleetCrashQuoted(t *testing.T) {
	h, log := crashHarness(t)
	id, inst := h.activeFleet(ec2Input(1))
	for range activationFailures + 1 {
		h.crash(inst, "segfault in map loader\n")
	}
	h.reconcile()
	if st := h.status(id); st != api.FleetStatusActive {
		t.Fatalf("an ACTIVE fleet whose processes crash is %s", st)
	}
	if !strings.Contains(log.String(), `output="segfault in map loader"`) {
		t.Errorf("no warning with the output:\n%s", log.String())
	}
}

// TestFirstReadyTimeout: a new fleet whose process never calls
// ProcessReady (nor crashes) goes to ERROR once it has been ACTIVATING for
// FirstReadyTimeout, on a fake clock.
func TestFirstReadyTimeout(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Timings.FirstReadyTimeout = 3 * time.Minute })
	id := h.createFleet(ec2Input(1))
	h.reconcile()
	inst := h.prov.started()[0]
	h.clock.Advance(time.Minute) // downloading and building take a minute
	h.setUp(inst)
	h.launch(inst)
	h.clock.Advance(3*time.Minute - time.Millisecond)
	h.reconcile()
	if st := h.status(id); st != api.FleetStatusActivating {
		t.Fatalf("just before the timeout the fleet is %s", st)
	}
	h.clock.Advance(time.Millisecond)
	h.reconcile()
	if st := h.status(id); st != api.FleetStatusError {
		t.Fatalf("at the timeout the fleet is %s, want ERROR", st)
	}
	evs := h.fullEvents(id)
	n := len(evs)
	if evs[n-2].EventCode != api.EventCodeFleetActivationFailed || !strings.Contains(api.ToString(evs[n-2].Message), "within 3m0s of ACTIVATING") {
		t.Errorf("events: %v, cause %q", h.events(id), api.ToString(evs[n-2].Message))
	}
}

// TestHostileOutputCannotForgeLogLines: output made to look like log
// records, with terminal escapes, stays inside one attribute of one log
// line and the event message holds no control character but its own line
// breaks.
func TestHostileOutputCannotForgeLogLines(t *testing.T) {
	h, log := crashHarness(t)
	id, inst := h.activeFleet(ec2Input(1))
	before := strings.Count(log.String(), "\n")
	h.crash(inst, "fine\ntime=2025-03-01T12:00:00Z level=ERROR msg=forged\r\x1b[2Jlevel=INFO msg=\"more\"\u2028x\n")
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")[before:]
	if len(lines) != 1 {
		t.Fatalf("one crash wrote %d log lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if strings.ContainsAny(lines[0], "\x1b\r\u2028") || !strings.Contains(lines[0], `level=ERROR msg=forged\\x0d\\x1b[2Jlevel=INFO`) {
		t.Errorf("log line: %s", lines[0])
	}
	evs := h.fullEvents(id)
	msg := api.ToString(evs[len(evs)-1].Message)
	for i, l := range strings.Split(msg, "\n") {
		for _, r := range l {
			if r < 0x20 || r == 0x7f || r == '\u2028' || r == 0x1b {
				t.Errorf("line %d of the event message holds %U: %q", i, r, msg)
			}
		}
	}
}
