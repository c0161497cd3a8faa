//go:build linux

package hosting

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

// testCrashAtStart: a build whose server prints "missing config file" and
// exits 7 before it calls ProcessReady. The new fleet goes to ERROR as
// soon as five of its processes have crashed (FLEET_ACTIVATION_FAILED,
// then FLEET_STATE_ERROR), not after the 30-minute activation timeout;
// each SERVER_PROCESS_CRASHED event quotes the end of the output, one line
// each, and its PreSignedLogUrl downloads that process's output; Hoist
// logs each crash at WARN with the output.
func testCrashAtStart(t *testing.T, e *env) {
	archive, err := zipFiles(map[string]archiveFile{"server.sh": {mode: 0o755,
		body: "#!/bin/sh\necho loading settings\necho 'missing config file' >&2\nexit 7\n"}})
	if err != nil {
		t.Fatal(err)
	}
	buildID, err := e.createBuild(t, "crash-at-start", archive)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	e.waitBuild(t, buildID, types.BuildStatusReady)
	start := time.Now()
	out := e.createFleet(t, fleetSpec{name: "crash-at-start", build: buildID, launchPath: "/local/game/server.sh"})
	fleetID := aws.ToString(out.FleetAttributes.FleetId)
	e.waitFleet(t, fleetID, types.FleetStatusError)
	t.Logf("the fleet reached ERROR %s after CreateFleet", time.Since(start).Round(time.Millisecond))

	evs := e.events(t, fleetID)
	var crashes int
	var logURL string
	for _, ev := range evs {
		msg := aws.ToString(ev.Message)
		if ev.EventCode != types.EventCodeServerProcessCrashed {
			continue
		}
		crashes++
		if !strings.Contains(msg, "exited with code 7; the last 2 lines of its output:\n  | loading settings\n  | missing config file") {
			t.Errorf("SERVER_PROCESS_CRASHED does not quote the output: %q", msg)
		}
		logURL = aws.ToString(ev.PreSignedLogUrl)
	}
	if crashes < 5 {
		t.Errorf("%d SERVER_PROCESS_CRASHED events before ERROR, want 5:\n%s", crashes, e.eventText(t, fleetID))
	}
	n := len(evs)
	if n < 2 || evs[n-2].EventCode != types.EventCodeFleetActivationFailed || evs[n-1].EventCode != types.EventCodeFleetStateError ||
		!strings.Contains(aws.ToString(evs[n-2].Message), "missing config file") {
		t.Errorf("the events do not end with FLEET_ACTIVATION_FAILED quoting the output, then FLEET_STATE_ERROR:\n%s", e.eventText(t, fleetID))
	}
	if logURL == "" {
		t.Fatalf("SERVER_PROCESS_CRASHED has no PreSignedLogUrl")
	}
	if body, status := httpGet(t, logURL); status != http.StatusOK || body != "loading settings\nmissing config file\n" {
		t.Errorf("GET the crash's PreSignedLogUrl: %d %q", status, body)
	}
	if _, status := httpGet(t, strings.Replace(logURL, "processId=process-", "processId=process-0", 1)); status != http.StatusForbidden {
		t.Errorf("GET the PreSignedLogUrl changed to another process: %d, want 403", status)
	}
	warned := false
	for _, l := range strings.Split(e.h.Log(), "\n") {
		warned = warned || (strings.Contains(l, "level=WARN") && strings.Contains(l, "event=SERVER_PROCESS_CRASHED") &&
			strings.Contains(l, "fleet="+fleetID) && strings.Contains(l, "exitCode=7") &&
			strings.Contains(l, `output="loading settings\nmissing config file"`))
	}
	if !warned {
		t.Errorf("Hoist's log has no WARN line for the crash with its output")
	}
	waitNoProcesses(t, fleetID)
	e.deleteFleet(t, fleetID)
}
