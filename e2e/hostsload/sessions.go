//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/activations"
	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/netns"
)

// The sessions scenario's locations: Hoist's own machine serves
// localLocation (no host is enrolled there), the pool host remoteLocation.
const (
	localLocation  = "us-west-2"
	remoteLocation = "eu-west-1"
)

// sessionsWarmup is how many game sessions (in each location) are made
// before a run is measured.
const sessionsWarmup = 10

// activationTimeout bounds the wait for a game session to be ACTIVE.
const activationTimeout = 30 * time.Second

// SessionsRun is one run of the sessions scenario.
type SessionsRun struct {
	Run int `json:"run"`
	// Local and Remote are the game sessions on Hoist's machine and on the
	// pool host.
	Local  SessionStats `json:"local"`
	Remote SessionStats `json:"remote"`
	// HoistCores is Hoist's CPU use over the run.
	HoistCores float64 `json:"hoist_cores"`
}

// SessionStats are one location's game sessions in a run.
type SessionStats struct {
	// CreateToActive runs from the start of CreateGameSession to the game
	// server's log saying Hoist accepted its ActivateGameSession;
	// CreateCall is the call alone.
	CreateToActive loadreport.OpStats `json:"create_to_active"`
	CreateCall     loadreport.OpStats `json:"create_call"`
	// NoCapacity counts FleetCapacityExceededException answers (every game
	// server busy or being replaced: tried again 10 ms later); Ignored
	// game sessions the game server ignored (the Go SDK's race, see
	// e2e/activations); Errors the rest.
	NoCapacity int `json:"no_capacity"`
	Ignored    int `json:"ignored"`
	Errors     int `json:"errors"`

	lat, call []time.Duration
}

// runSessions runs the sessions scenario -repeats times, each with a new
// Hoist and host.
func (e *env) runSessions(ctx context.Context, rep *Report) error {
	for run := 1; run <= e.cfg.Repeats; run++ {
		fmt.Fprintf(e.log, "hostsload: sessions run %d/%d\n", run, e.cfg.Repeats)
		r := &SessionsRun{Run: run}
		var err error
		if e.cfg.Remote == "netns" {
			err = withNetwork(e.log, 1, func(n *netns.Network) error {
				return e.sessionsRun(ctx, r, n.Addr.String(), n.Hosts[0].Command, n.Hosts[0].Addr.String())
			})
		} else {
			err = e.sessionsRun(ctx, r, "127.0.0.1", exec.CommandContext, "127.0.0.2")
		}
		if err != nil {
			return err
		}
		rep.Sessions = append(rep.Sessions, r)
	}
	return nil
}

// sessionsRun starts Hoist on hoistIP and a pool host at hostIP, creates
// the fleet and measures.
func (e *env) sessionsRun(ctx context.Context, r *SessionsRun, hoistIP string, command commandFunc, hostIP string) error {
	h, err := e.startHoist(hoistIP, "--timings", "processes.stagger=10ms")
	if err != nil {
		return err
	}
	defer func() { _ = h.Stop() }()
	a, err := e.startPoolAgent(h, command, remoteLocation, hostIP, "*=1")
	if err != nil {
		return h.fail(err)
	}
	defer a.stop()
	build, err := e.uploadBuild(ctx, h)
	if err != nil {
		return h.fail(err)
	}
	out, err := h.gl.CreateFleet(ctx, fleetInput(build, e.cfg.Processes, "-end-after 1ms", localLocation, remoteLocation))
	if err != nil {
		return h.fail(err)
	}
	fleetID := aws.ToString(out.FleetAttributes.FleetId)
	if err := e.waitReady(ctx, h, fleetID); err != nil {
		return h.fail(err)
	}
	w, err := activations.New()
	if err != nil {
		return err
	}
	defer w.Close()
	dirs, _ := h.InstanceLogDirs(fleetID, filepath.Join(a.dir, "instances"))
	for _, d := range dirs {
		if err := w.Watch(d); err != nil {
			return err
		}
	}
	s := &sessionsLoop{h: h, w: w, fleetID: fleetID, interval: time.Duration(float64(time.Second) / e.cfg.Rate)}
	s.loop(ctx, sessionsWarmup*2, 0, nil, nil)
	before, start := cpuTime(h.PID()), time.Now()
	s.loop(ctx, 0, e.cfg.Duration, &r.Local, &r.Remote)
	r.HoistCores = cores(cpuTime(h.PID())-before, time.Since(start))
	for _, st := range []*SessionStats{&r.Local, &r.Remote} {
		st.CreateToActive, st.CreateCall = loadreport.Stats(st.lat), loadreport.Stats(st.call)
	}
	if n := r.Local.Errors + r.Remote.Errors; n > 0 {
		return fmt.Errorf("%d game sessions failed", n)
	}
	return nil
}

// waitReady waits until both locations are ACTIVE with every game server
// ready.
func (e *env) waitReady(ctx context.Context, h *hoist, fleetID string) error {
	return loadreport.WaitFor(ctx, 3*time.Minute, "every game server ready", func() (bool, string, error) {
		all, state, err := h.locationsActive(ctx, fleetID)
		if err != nil || !all {
			return false, state, err
		}
		for _, loc := range []string{localLocation, remoteLocation} {
			u, err := h.gl.DescribeFleetLocationUtilization(ctx, &gl.DescribeFleetLocationUtilizationInput{FleetId: aws.String(fleetID),
				Location: aws.String(loc)})
			if err != nil {
				return false, "", err
			}
			if n := aws.ToInt32(u.FleetUtilization.ActiveServerProcessCount); int(n) < e.cfg.Processes {
				return false, fmt.Sprintf("%s: %d ready", loc, n), nil
			}
		}
		return true, "", nil
	})
}

// sessionsLoop creates game sessions one at a time, alternately on Hoist's
// machine and on the host, one every interval at most.
type sessionsLoop struct {
	h        *hoist
	w        *activations.Watcher
	fleetID  string
	interval time.Duration
}

// loop makes count game sessions (or, with count 0, as many as start
// within d), recording them in local and remote (nil: not recorded).
func (s *sessionsLoop) loop(ctx context.Context, count int, d time.Duration, local, remote *SessionStats) {
	end := time.Now().Add(d)
	next := time.Now()
	for i := 0; count == 0 || i < count; i++ {
		time.Sleep(time.Until(next)) // pacing the load
		next = next.Add(s.interval)
		if count == 0 && !time.Now().Before(end) {
			return
		}
		loc, st := localLocation, local
		if i%2 == 1 {
			loc, st = remoteLocation, remote
		}
		if st == nil {
			st = &SessionStats{}
		}
		s.one(ctx, loc, st)
	}
}

// one creates a game session in loc and waits until it is ACTIVE.
func (s *sessionsLoop) one(ctx context.Context, loc string, st *SessionStats) {
	in := &gl.CreateGameSessionInput{FleetId: aws.String(s.fleetID), Location: aws.String(loc), MaximumPlayerSessionCount: aws.Int32(2)}
	for {
		t0 := time.Now()
		out, err := s.h.gl.CreateGameSession(ctx, in)
		call := time.Since(t0)
		var fce *types.FleetCapacityExceededException
		if errors.As(err, &fce) {
			st.NoCapacity++
			time.Sleep(10 * time.Millisecond) // every game server busy: poll for one
			continue
		}
		if err != nil {
			st.Errors++
			return
		}
		at, err := s.w.Wait(aws.ToString(out.GameSession.GameSessionId), activationTimeout)
		switch {
		case errors.Is(err, activations.ErrIgnored):
			st.Ignored++
		case err != nil:
			st.Errors++
		default:
			st.lat, st.call = append(st.lat, at.Sub(t0)), append(st.call, call)
		}
		return
	}
}

// SessionsMedians are the medians over the runs of each figure.
type SessionsMedians struct {
	Runs int `json:"runs"`
	// LocalP50 ... are create-to-ACTIVE, in ms; RemoteMinusLocalP50 is
	// the target's figure (remote p50 within 5 ms of local's).
	LocalP50            float64 `json:"local_p50_ms"`
	LocalP99            float64 `json:"local_p99_ms"`
	RemoteP50           float64 `json:"remote_p50_ms"`
	RemoteP99           float64 `json:"remote_p99_ms"`
	RemoteMinusLocalP50 float64 `json:"remote_minus_local_p50_ms"`
	LocalCallP50        float64 `json:"local_call_p50_ms"`
	RemoteCallP50       float64 `json:"remote_call_p50_ms"`
	HoistCores          float64 `json:"hoist_cores"`
}

// summarizeSessions takes the medians of the runs.
func summarizeSessions(runs []*SessionsRun) *SessionsMedians {
	if len(runs) == 0 {
		return nil
	}
	med := func(f func(*SessionsRun) float64) float64 { return loadreport.MedianOf(runs, f) }
	m := &SessionsMedians{Runs: len(runs),
		LocalP50:      med(func(r *SessionsRun) float64 { return r.Local.CreateToActive.P50 }),
		LocalP99:      med(func(r *SessionsRun) float64 { return r.Local.CreateToActive.P99 }),
		RemoteP50:     med(func(r *SessionsRun) float64 { return r.Remote.CreateToActive.P50 }),
		RemoteP99:     med(func(r *SessionsRun) float64 { return r.Remote.CreateToActive.P99 }),
		LocalCallP50:  med(func(r *SessionsRun) float64 { return r.Local.CreateCall.P50 }),
		RemoteCallP50: med(func(r *SessionsRun) float64 { return r.Remote.CreateCall.P50 }),
		HoistCores:    med(func(r *SessionsRun) float64 { return r.HoistCores }),
	}
	m.RemoteMinusLocalP50 = m.RemoteP50 - m.LocalP50
	return m
}

// printSessions prints the sessions scenario's table.
func printSessions(w io.Writer, rep *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\twhere\tgame sessions\tcreate->ACTIVE p50\tp90\tp99\tmax (ms)\tcall p50 (ms)\tno capacity\tignored\tHoist cores\t")
	for _, r := range rep.Sessions {
		for _, x := range []struct {
			where string
			st    SessionStats
		}{{"Hoist's machine", r.Local}, {"pool host", r.Remote}} {
			c := x.st.CreateToActive
			fmt.Fprintf(tw, "%d\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%d\t%.2f\t\n", r.Run, x.where, c.Count, c.P50, c.P90, c.P99, c.Max,
				x.st.CreateCall.P50, x.st.NoCapacity, x.st.Ignored, r.HoistCores)
		}
	}
	tw.Flush()
	if m, ok := rep.Medians.(*SessionsMedians); ok && m != nil {
		fmt.Fprintf(w, "\nmedians of %s: Hoist's machine p50 %.2f ms, p99 %.2f ms; pool host p50 %.2f ms, p99 %.2f ms; remote - local p50 %.2f ms (target: within 5 ms)\n",
			loadreport.Plural(m.Runs, "run"), m.LocalP50, m.LocalP99, m.RemoteP50, m.RemoteP99, m.RemoteMinusLocalP50)
	}
}
