//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/internal/flexmatch"
	"github.com/hoistgg/hoist/internal/flexmatch/flexbench"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// TestSmallRun runs the tool with 200 tickets through a real Hoist, so
// that it keeps working (the documented figures use the defaults). It
// needs the tickets API (StartMatchmaking, DescribeMatchmaking): without
// it the run fails, and so does the test. Its rule set
// (testdata/smoke-5v5.json) keeps the latency rule but lets any skills
// meet, so that 200 tickets are enough to form matches within the 5 s
// request timeout whatever the matcher's search; the benchmark's rule set
// needs a larger pool.
func TestSmallRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts Hoist")
	}
	out := filepath.Join(t.TempDir(), "report.json")
	heap := filepath.Join(t.TempDir(), "heap.pprof")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-tickets", "200", "-clients", "4", "-request-timeout", "5s", "-poll-interval", "20ms",
		"-rule-set", filepath.Join("testdata", "smoke-5v5.json"), "-json", out, "-heap-profile", heap}, &stdout, &stderr)
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
	if !strings.Contains(stdout.String(), "tickets/s") || !strings.Contains(stdout.String(), "hoist live heap") {
		t.Errorf("printed report:\n%s", stdout.String())
	}
	if st, err := os.Stat(heap); err != nil || st.Size() == 0 || rep.HoistLiveMiB <= 0 || rep.LiveBytesPerTicket <= 0 {
		t.Errorf("heap profile %v, %v; live heap %.1f MiB, %.0f B per ticket", st, err, rep.HoistLiveMiB, rep.LiveBytesPerTicket)
	}
}

// TestSmallRunOnPostgres: the same small run on two replicas sharing a
// PostgreSQL schema, the clients spread over them.
func TestSmallRunOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts Hoist")
	}
	base, ok := os.LookupEnv(pgtest.Env)
	if !ok {
		t.Skip(pgtest.Skipped)
	}
	out := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-tickets", "200", "-clients", "4", "-request-timeout", "2s", "-poll-interval", "20ms",
		"-rule-set", filepath.Join("testdata", "smoke-5v5.json"), "-json", out,
		"-store", "postgres", "-database-url", base, "-replicas", "2"}, &stdout, &stderr)
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
	if rep.Submitted != 200 || rep.Unended != 0 || rep.Completed < 100 || rep.Completed%10 != 0 || rep.HoistCores <= 0 ||
		rep.Config.Store != "postgres" || rep.Config.Replicas != 2 {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(stdout.String(), "postgres store, 2 replicas") {
		t.Errorf("printed report:\n%s", stdout.String())
	}
}

func TestHeapAlloc(t *testing.T) {
	for _, c := range []struct {
		text string
		want uint64
		ok   bool
	}{
		{"heap profile: 1: 2 [3: 4] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 12\n# HeapAlloc = 300123456\n# Sys = 9\n", 300123456, true},
		{"# HeapAlloc = 7", 7, true},
		{"# HeapAlloc = x\n", 0, false},
		{"# HeapAlloc = 99999999999999999999999\n", 0, false},
		{"# Alloc = 12\n", 0, false},
		{"", 0, false},
	} {
		got, err := heapAlloc([]byte(c.text))
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("heapAlloc(%q) = %d, %v; want %d (ok %v)", c.text, got, err, c.want, c.ok)
		}
	}
}

func FuzzHeapAlloc(f *testing.F) {
	f.Add([]byte("# HeapAlloc = 300123456\n"))
	f.Add([]byte("# HeapAlloc = -1\n# HeapAlloc = 2"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, text []byte) {
		if n, err := heapAlloc(text); err != nil && n != 0 {
			t.Errorf("heapAlloc(%q) = %d with error %v", text, n, err)
		}
	})
}

func TestRuleSetParses(t *testing.T) {
	smoke, err := os.ReadFile(filepath.Join("testdata", "smoke-5v5.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flexmatch.Parse(smoke); err != nil {
		t.Fatalf("the smoke test's rule set: %v", err)
	}
	body, _, err := ruleSet("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flexmatch.Parse(body); err != nil {
		t.Fatalf("the rule set used: %v", err)
	}
}

func TestPlayerAndTicketIDs(t *testing.T) {
	for _, p := range flexbench.Players(50, 3) {
		q := player(p)
		if aws.ToString(q.PlayerId) != p.ID || *q.PlayerAttributes["skill"].N != p.Skill || len(q.LatencyInMs) != len(p.Latencies) {
			t.Fatalf("player %+v from %+v", q, p)
		}
		for r, ms := range p.Latencies {
			if q.LatencyInMs[r] != int32(ms) {
				t.Fatalf("latency to %s: %d, want %d", r, q.LatencyInMs[r], ms)
			}
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
		{[]string{"-heap-profile", "h.pprof", "-endpoint", "http://127.0.0.1:1"}, "-heap-profile needs a Hoist this tool starts"},
		{[]string{"-store", "sqlite"}, "-store: want journal or postgres"},
		{[]string{"-replicas", "2"}, "-replicas"},
		{[]string{"-store", "postgres", "-replicas", "2", "-endpoint", "http://127.0.0.1:1"}, "-replicas"},
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

// fakeAPI is an in-process stand-in for Hoist's tickets API: each
// DescribeMatchmaking completes the queued tickets ten at a time, and
// once every ticket is submitted the fewer than ten left time out.
type fakeAPI struct {
	mu      sync.Mutex
	total   int
	tickets map[string]*types.MatchmakingTicket
	queue   []string
	failAt  int  // StartMatchmaking of this ticket fails (-1: none)
	noMatch bool // complete no ticket: every one times out
	starts  int
}

func (f *fakeAPI) StartMatchmaking(_ context.Context, in *gl.StartMatchmakingInput, _ ...func(*gl.Options)) (*gl.StartMatchmakingOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := aws.ToString(in.TicketId)
	if f.starts == f.failAt {
		return nil, errors.New("injected failure")
	}
	f.starts++
	if _, dup := f.tickets[id]; dup || len(in.Players) != 1 || aws.ToString(in.ConfigurationName) != "cfg" {
		return nil, fmt.Errorf("bad StartMatchmaking %s: %d players, duplicate %v", id, len(in.Players), dup)
	}
	tk := &types.MatchmakingTicket{TicketId: in.TicketId, Status: types.MatchmakingConfigurationStatusQueued, StartTime: aws.Time(time.Now())}
	f.tickets[id] = tk
	f.queue = append(f.queue, id)
	return &gl.StartMatchmakingOutput{MatchmakingTicket: tk}, nil
}

func (f *fakeAPI) DescribeMatchmaking(_ context.Context, in *gl.DescribeMatchmakingInput, _ ...func(*gl.Options)) (*gl.DescribeMatchmakingOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(in.TicketIds) > 10 {
		return nil, fmt.Errorf("%d ticket IDs", len(in.TicketIds))
	}
	now := time.Now()
	for len(f.queue) >= 10 && !f.noMatch {
		for _, id := range f.queue[:10] {
			f.tickets[id].Status, f.tickets[id].EndTime = types.MatchmakingConfigurationStatusCompleted, aws.Time(now)
		}
		f.queue = f.queue[10:]
	}
	if len(f.tickets) == f.total {
		for _, id := range f.queue {
			f.tickets[id].Status, f.tickets[id].EndTime = types.MatchmakingConfigurationStatusTimedOut, aws.Time(now)
		}
		f.queue = nil
	}
	out := &gl.DescribeMatchmakingOutput{}
	for _, id := range in.TicketIds {
		if tk, ok := f.tickets[id]; ok {
			out.TicketList = append(out.TicketList, *tk)
		}
	}
	return out, nil
}

func TestMeasureWithFake(t *testing.T) {
	players := flexbench.Players(95, 1)
	f := &fakeAPI{total: 95, tickets: map[string]*types.MatchmakingTicket{}, failAt: -1}
	rep := &Report{Config: &Config{Timeout: time.Minute}}
	if err := measure(context.Background(), rep, []matchAPI{f, f, f}, "cfg", players, []int{os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	if rep.Submitted != 95 || rep.Completed != 90 || rep.TimedOut != 5 || rep.Unended != 0 || rep.MatchedPct != 100*90.0/95 ||
		rep.Matchable != 90 || rep.Missed != 0 || rep.MatchableWait != rep.Wait || rep.Early != 90 || rep.ExpandedPct != 0 || rep.EarlyRate <= 0 {
		t.Errorf("report %+v", rep)
	}
	if rep.Wait.Count != 90 || rep.ObservedWait.Count != 90 || rep.StartCall.Count != 95 || rep.DescribeCall.Count < 10 ||
		rep.MatchedRate <= 0 || rep.MatchedSeconds <= 0 || rep.SubmitRate <= 0 || rep.ObservedWait.Max < rep.Wait.Max {
		t.Errorf("report %+v", rep)
	}
	var buf bytes.Buffer
	rep.Print(&buf)
	if !strings.Contains(buf.String(), "90 completed (94.7%), 5 timed out") {
		t.Errorf("printed:\n%s", buf.String())
	}

	// Tickets left unmatched that the brute-force check can place are
	// matchable and count with the whole request timeout.
	players = flexbench.Players(400, 1)
	f = &fakeAPI{total: 400, tickets: map[string]*types.MatchmakingTicket{}, failAt: -1, noMatch: true}
	rep = &Report{Config: &Config{Timeout: time.Minute, RequestTimeout: 30 * time.Second}}
	if err := measure(context.Background(), rep, []matchAPI{f, f}, "cfg", players, nil); err != nil {
		t.Fatal(err)
	}
	want := len(flexbench.Placeable(players, flexbench.FinalDistance))
	if want == 0 || rep.Completed != 0 || rep.TimedOut != 400 || rep.Missed != want || rep.Matchable != want ||
		rep.MatchableWait.Count != want || rep.MatchableWait.P50 != 30_000 || rep.ExpandedPct != 100 || rep.Wait.Count != 0 {
		t.Errorf("%d placeable; report %+v", want, rep)
	}

	// A failed StartMatchmaking fails the run (its client stops submitting
	// and polling).
	f = &fakeAPI{total: 40, tickets: map[string]*types.MatchmakingTicket{}, failAt: 20}
	rep = &Report{Config: &Config{Timeout: time.Minute}}
	err := measure(context.Background(), rep, []matchAPI{f}, "cfg", flexbench.Players(40, 1), nil)
	if err == nil || !strings.Contains(err.Error(), "StartMatchmaking matchload-000020: injected failure") || rep.Submitted != 20 {
		t.Errorf("err %v, %d submitted", err, rep.Submitted)
	}
}

// TestRate95: 95% of 20 tickets is 19; the 19th completion at 2 s gives 9.5/s.
func TestRate95(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var ends []time.Time
	for i := range 19 {
		ends = append(ends, t0.Add(time.Duration(19-i)*2*time.Second/19))
	}
	if s, r := rate95(ends, 20, t0); s != 2 || r != 9.5 {
		t.Fatalf("rate95 = %v s, %v/s; want 2 s, 9.5/s", s, r)
	}
	if s, r := rate95(ends[:18], 20, t0); s != 0 || r != 0 {
		t.Fatalf("with 18 of 20 completed: %v s, %v/s; want zeros", s, r)
	}
}
