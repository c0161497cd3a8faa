//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hoistgg/hoist/internal/flexmatch"
)

// TestSmallRun runs the benchmark with 200 tickets through a real Hoist,
// so that the tool keeps working (the documented figures use the
// defaults). It needs the tickets API (StartMatchmaking,
// DescribeMatchmaking): without it the run fails, and so does the test.
func TestSmallRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts Hoist")
	}
	out := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-tickets", "200", "-clients", "4", "-request-timeout", "5s", "-poll-interval", "20ms", "-json", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Submitted != 200 || rep.Completed+rep.TimedOut+rep.Cancelled+rep.Failed != 200 || rep.Unended != 0 {
		t.Errorf("report %+v", rep)
	}
	// Matches are 10 tickets: with 200 matchable tickets most are matched.
	if rep.Completed < 100 || rep.Completed%10 != 0 || rep.Wait.Count != rep.Completed || rep.MatchedRate <= 0 {
		t.Errorf("%d completed (%.0f/s), wait %+v", rep.Completed, rep.MatchedRate, rep.Wait)
	}
	if rep.HoistCores <= 0 || rep.HoistRSSMiB <= 0 || rep.StartCall.Count != 200 || rep.DescribeCall.Count == 0 {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(stdout.String(), "tickets/s") {
		t.Errorf("printed report:\n%s", stdout.String())
	}
}

func TestRuleSetParses(t *testing.T) {
	if _, err := flexmatch.Parse(embeddedRuleSet); err != nil {
		t.Fatalf("the embedded rule set: %v", err)
	}
	body, _, err := ruleSet("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flexmatch.Parse(body); err != nil {
		t.Fatalf("the rule set used: %v", err)
	}
}

func TestGeneratePlayers(t *testing.T) {
	a, b := generatePlayers(500, 3), generatePlayers(500, 3)
	for i := range a {
		if aws.ToString(a[i].PlayerId) != aws.ToString(b[i].PlayerId) || *a[i].PlayerAttributes["skill"].N != *b[i].PlayerAttributes["skill"].N {
			t.Fatalf("player %d differs between two runs with the same seed", i)
		}
		s := *a[i].PlayerAttributes["skill"].N
		good := 0
		for _, r := range regions {
			ms, ok := a[i].LatencyInMs[r]
			if !ok || ms < 1 {
				t.Errorf("player %d: latency to %s %d", i, r, ms)
			}
			if ms < 120 {
				good++
			}
		}
		if s < 0 || s > 3000 || good == 0 {
			t.Errorf("player %d: skill %v, %d regions under 120 ms", i, s, good)
		}
	}
	for _, i := range []int{0, 7, 999999} {
		if got := ticketIndex(ticketID(i)); got != i {
			t.Errorf("ticketIndex(ticketID(%d)) = %d", i, got)
		}
	}
	for _, id := range []string{"", "x", "matchload-", "matchload-1", "matchload-0000001x"} {
		if got := ticketIndex(id); got != -1 {
			t.Errorf("ticketIndex(%q) = %d, want -1", id, got)
		}
	}
}

func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-tickets", "0"}, "-tickets must be positive"},
		{[]string{"-clients", "0"}, "-clients must be positive"},
		{[]string{"-request-timeout", "1500ms"}, "-request-timeout"},
		{[]string{"-request-timeout", "13h"}, "-request-timeout"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: status %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
	cfg, _, err := parseFlags([]string{"-request-timeout", "10s"}, &bytes.Buffer{})
	if err != nil || cfg.Timeout != cfg.RequestTimeout+2*60e9 || cfg.Tickets != 10000 {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
}
