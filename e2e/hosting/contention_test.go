//go:build linux

package hosting

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

// Sizes of TestPlacementContention.
const (
	contentionPlacements = 1000
	contentionProcesses  = 4  // ConcurrentExecutions of the one instance
	contentionClients    = 32 // goroutines calling StartGameSessionPlacement
	contentionPollers    = 16 // goroutines calling DescribeGameSessionPlacement
	contentionTimeout    = 20 // the queue's TimeoutInSeconds
	// contentionLate bounds how long after its deadline a placement may
	// end TIMED_OUT on a loaded machine (Hoist's bound is one
	// placement.interval plus the pass that expires it).
	contentionLate = 10 * time.Second
)

// TestPlacementContention: 1,000 placements started at once through
// aws-sdk-go-v2 onto a fleet with 4 free real game server processes
// fulfil exactly 4 at once, each on its own process; when those game
// sessions are terminated, the replacement processes take 4 more (the
// oldest pending placements); the rest end TIMED_OUT at the queue's
// timeout. No process ever hosts two game sessions: each process's own
// output shows at most one.
func TestPlacementContention(t *testing.T) {
	e := startHoist(t, "placement.interval=100ms")
	e.dumpOnFailure(t)
	buildID := e.uploadGameServer(t, "contention")
	fleetID := e.newFleet(t, fleetSpec{name: "contention", build: buildID, concurrent: contentionProcesses})
	e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String("contention"),
		TimeoutInSeconds: aws.Int32(contentionTimeout), Destinations: dests(fleetARNOf(t, e, fleetID))})

	ids := make([]string, contentionPlacements)
	for i := range ids {
		ids[i] = fmt.Sprintf("contention-%04d", i)
	}
	began := time.Now()
	startAll(t, e, ids)
	t.Logf("%d placements started in %s", len(ids), time.Since(began).Round(time.Millisecond))

	// Exactly as many are fulfilled as there are processes, and no more
	// while no capacity frees: the sweep below takes many passes of the
	// placement loop.
	first := e.waitFleetGameSessions(t, fleetID, contentionProcesses)
	got := e.placements(t, ids)
	fulfilled := checkCounts(t, got, map[types.GameSessionPlacementState]int{
		types.GameSessionPlacementStateFulfilled: contentionProcesses,
		types.GameSessionPlacementStatePending:   contentionPlacements - contentionProcesses})
	ports := map[int32]string{}
	for _, p := range fulfilled {
		if other, ok := ports[aws.ToInt32(p.Port)]; ok {
			t.Errorf("placements %s and %s share port %d", other, aws.ToString(p.PlacementId), aws.ToInt32(p.Port))
		}
		ports[aws.ToInt32(p.Port)] = aws.ToString(p.PlacementId)
	}
	checkSessionsOf(t, fulfilled, first)
	checkOneSessionPerProcess(t, e, fleetID, fulfilled)

	// Capacity frees: the game sessions end, their processes exit and
	// are replaced, and the replacements take the next placements.
	for _, p := range fulfilled {
		e.waitGameSession(t, aws.ToString(p.GameSessionId), types.GameSessionStatusActive)
		if _, err := e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: p.GameSessionId,
			TerminationMode: types.TerminationModeTriggerOnProcessTerminate}); err != nil {
			t.Fatalf("TerminateGameSession %s: %v", aws.ToString(p.GameSessionId), err)
		}
	}
	all := e.waitFleetGameSessions(t, fleetID, 2*contentionProcesses)
	t.Logf("%d more placements fulfilled %s after the first start", contentionProcesses, time.Since(began).Round(time.Millisecond))

	// The rest time out; every placement has ended.
	var final []types.GameSessionPlacement
	eventually(t, contentionTimeout*time.Second+waitShort, "every placement ended", func() (bool, string) {
		final = e.placements(t, ids)
		pending := 0
		for _, p := range final {
			if p.Status == types.GameSessionPlacementStatePending {
				pending++
			}
		}
		return pending == 0, fmt.Sprintf("%d PENDING", pending)
	})
	fulfilled = checkCounts(t, final, map[types.GameSessionPlacementState]int{
		types.GameSessionPlacementStateFulfilled: 2 * contentionProcesses,
		types.GameSessionPlacementStateTimedOut:  contentionPlacements - 2*contentionProcesses})
	checkSessionsOf(t, fulfilled, all)
	checkOneSessionPerProcess(t, e, fleetID, fulfilled)
	checkOldestFirst(t, got, final)
	for _, p := range final {
		if p.Status != types.GameSessionPlacementStateTimedOut {
			continue
		}
		took := p.EndTime.Sub(*p.StartTime)
		if took < contentionTimeout*time.Second || took > contentionTimeout*time.Second+contentionLate {
			t.Errorf("placement %s ended TIMED_OUT %s after it started; the queue's timeout is %ds",
				aws.ToString(p.PlacementId), took, contentionTimeout)
		}
	}
}

// startAll starts a placement on the queue "contention" for each ID, from
// contentionClients goroutines at once.
func startAll(t *testing.T, e *env, ids []string) {
	t.Helper()
	errs := make([]error, len(ids))
	each(len(ids), contentionClients, func(i int) {
		out, err := e.gl.StartGameSessionPlacement(e.ctx, &gl.StartGameSessionPlacementInput{
			GameSessionQueueName: aws.String("contention"), PlacementId: aws.String(ids[i]),
			MaximumPlayerSessionCount: aws.Int32(2), GameSessionName: aws.String(ids[i])})
		switch {
		case err != nil:
			errs[i] = err
		case out.GameSessionPlacement.Status != types.GameSessionPlacementStatePending:
			errs[i] = fmt.Errorf("status %s, want PENDING", out.GameSessionPlacement.Status)
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("StartGameSessionPlacement %s: %v", ids[i], err)
		}
	}
}

// each calls fn(0) ... fn(n-1) from workers goroutines.
func each(n, workers int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// placements describes the placements (DescribeGameSessionPlacement takes
// one ID) from contentionPollers goroutines.
func (e *env) placements(t *testing.T, ids []string) []types.GameSessionPlacement {
	t.Helper()
	out := make([]types.GameSessionPlacement, len(ids))
	errs := make([]error, len(ids))
	each(len(ids), contentionPollers, func(i int) {
		got, err := e.gl.DescribeGameSessionPlacement(e.ctx, &gl.DescribeGameSessionPlacementInput{PlacementId: aws.String(ids[i])})
		if err != nil {
			errs[i] = err
			return
		}
		out[i] = *got.GameSessionPlacement
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("DescribeGameSessionPlacement %s: %v", ids[i], err)
		}
	}
	return out
}

// checkCounts checks how many placements are in each state (states not
// in want: none) and returns the FULFILLED ones, each with its own game
// session.
func checkCounts(t *testing.T, ps []types.GameSessionPlacement, want map[types.GameSessionPlacementState]int) []types.GameSessionPlacement {
	t.Helper()
	counts := map[types.GameSessionPlacementState]int{}
	var fulfilled []types.GameSessionPlacement
	sessions := map[string]string{}
	for _, p := range ps {
		counts[p.Status]++
		if p.Status != types.GameSessionPlacementStateFulfilled {
			continue
		}
		fulfilled = append(fulfilled, p)
		gs := aws.ToString(p.GameSessionId)
		if other, ok := sessions[gs]; ok || gs == "" {
			t.Errorf("placements %s and %s have game session %q", other, aws.ToString(p.PlacementId), gs)
		}
		sessions[gs] = aws.ToString(p.PlacementId)
	}
	for st, n := range counts {
		if want[st] != n {
			t.Fatalf("placements by state: %v, want %v", counts, want)
		}
	}
	return fulfilled
}

// checkSessionsOf checks that the fulfilled placements' game sessions are
// exactly the fleet's game sessions.
func checkSessionsOf(t *testing.T, fulfilled []types.GameSessionPlacement, fleet []types.GameSession) {
	t.Helper()
	var a, b []string
	for _, p := range fulfilled {
		a = append(a, aws.ToString(p.GameSessionId))
	}
	for _, gs := range fleet {
		b = append(b, aws.ToString(gs.GameSessionId))
	}
	sort.Strings(a)
	sort.Strings(b)
	if strings.Join(a, " ") != strings.Join(b, " ") {
		t.Fatalf("fulfilled placements' game sessions %v, the fleet's game sessions %v", a, b)
	}
}

// waitFleetGameSessions waits until the fleet has n game sessions (of any
// status) and returns them, failing at once when it has more.
func (e *env) waitFleetGameSessions(t *testing.T, fleetID string, n int) []types.GameSession {
	t.Helper()
	var all []types.GameSession
	eventually(t, waitShort, fmt.Sprintf("%d game sessions on fleet %s", n, fleetID), func() (bool, string) {
		all = all[:0]
		in := &gl.DescribeGameSessionsInput{FleetId: aws.String(fleetID)}
		for {
			out, err := e.gl.DescribeGameSessions(e.ctx, in)
			if err != nil {
				t.Fatalf("DescribeGameSessions: %v", err)
			}
			all = append(all, out.GameSessions...)
			if in.NextToken = out.NextToken; in.NextToken == nil {
				break
			}
		}
		if len(all) > n {
			t.Fatalf("fleet %s has %d game sessions, want %d", fleetID, len(all), n)
		}
		return len(all) == n, fmt.Sprintf("%d game sessions", len(all))
	})
	return all
}

// sessionStarted matches the game server's log line for a CreateGameSession
// it was sent.
var sessionStarted = regexp.MustCompile(`msg="game session started" .*?\bgameSession=(\S+)`)

// checkOneSessionPerProcess reads the output of every server process the
// fleet's instance ran (logs/<process ID>.log of the instance) until it
// shows every fulfilled placement's game session (the CreateGameSession
// message follows the commit), and checks that no process was sent two
// game sessions and that the processes were sent no other game session.
func checkOneSessionPerProcess(t *testing.T, e *env, fleetID string, fulfilled []types.GameSessionPlacement) {
	t.Helper()
	want := map[string]bool{}
	for _, p := range fulfilled {
		want[aws.ToString(p.GameSessionId)] = true
	}
	var byProcess map[string][]string // process ID -> game sessions sent
	eventually(t, waitShort, "the game sessions in the processes' output", func() (bool, string) {
		byProcess = map[string][]string{}
		files := instanceGlob(e.h.DataDir, fleetID, "*", "logs", "*.log")
		seen := 0
		for _, f := range files {
			process := strings.TrimSuffix(filepath.Base(f), ".log")
			if process == "install" {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatalf("process output: %v", err)
			}
			byProcess[process] = nil
			for _, m := range sessionStarted.FindAllStringSubmatch(string(b), -1) {
				byProcess[process] = append(byProcess[process], m[1])
				if want[m[1]] {
					seen++
				}
			}
		}
		return seen >= len(want), fmt.Sprintf("%d of %d game sessions in the output of %d processes: %v", seen, len(want), len(byProcess), byProcess)
	})
	sentTo := map[string]string{} // game session -> process
	for process, gss := range byProcess {
		if len(gss) > 1 {
			t.Errorf("process %s was sent %d game sessions: %v", process, len(gss), gss)
		}
		for _, gs := range gss {
			if other, ok := sentTo[gs]; ok {
				t.Errorf("game session %s was sent to processes %s and %s", gs, other, process)
			}
			if !want[gs] {
				t.Errorf("process %s was sent game session %s, which no fulfilled placement has", process, gs)
			}
			sentTo[gs] = process
		}
	}
}

// checkOldestFirst checks that the placements fulfilled after capacity
// freed were among the oldest still pending: the loop hands pending
// placements to its workers oldest first, and only the placements in
// flight at once (16 workers) may race for a process.
func checkOldestFirst(t *testing.T, before, after []types.GameSessionPlacement) {
	t.Helper()
	const window = 64
	var pending []time.Time
	for _, p := range before {
		if p.Status == types.GameSessionPlacementStatePending {
			pending = append(pending, *p.StartTime)
		}
	}
	for i, p := range after {
		if before[i].Status != types.GameSessionPlacementStatePending || p.Status != types.GameSessionPlacementStateFulfilled {
			continue
		}
		older := 0
		for _, s := range pending {
			if s.Before(*p.StartTime) {
				older++
			}
		}
		if older >= window {
			t.Errorf("placement %s was fulfilled when capacity freed although %d placements pending then had started before it",
				aws.ToString(p.PlacementId), older)
		}
	}
}
