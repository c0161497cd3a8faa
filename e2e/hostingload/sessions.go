//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/smithy-go"

	"github.com/hoistgg/hoist/e2e/activations"
	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/sysinfo"
)

// SessionsPhase is one measured window of the sessions scenario.
type SessionsPhase struct {
	Run     int `json:"run"`
	Clients int `json:"clients"`
	// Rate is the most game sessions per second the clients start
	// together (0: as many as they can).
	Rate    float64 `json:"rate"`
	Seconds float64 `json:"seconds"`
	// Sessions counts game sessions whose CreateGameSession started in
	// the window and that became ACTIVE.
	Sessions       int     `json:"sessions"`
	SessionsPerSec float64 `json:"sessions_per_s"`
	// CreateToActive is from the start of the CreateGameSession call to
	// the game server's activation being accepted; CreateCall is the
	// CreateGameSession call alone.
	CreateToActive loadreport.OpStats `json:"create_to_active"`
	CreateCall     loadreport.OpStats `json:"create_call"`
	// NoCapacity counts FleetCapacityExceededException answers (every
	// process busy or being replaced); the client tries again 10 ms later.
	NoCapacity int `json:"no_capacity"`
	// Ignored counts game sessions the game server ignored because their
	// CreateGameSession arrived before it had handled its ProcessReady
	// reply (the Go SDK's race, which Hoist avoids by holding messages
	// until the process's first heartbeat: expected 0): they stay
	// ACTIVATING until the activation timeout (5 s here) ends them
	// TERMINATED, and their processes.
	Ignored int         `json:"ignored"`
	Errors  errorCounts `json:"errors,omitempty"`
	// ErrorSessions counts game sessions that ended in ERROR (warm-up
	// included); the ignored ones end TERMINATED and are not among them.
	ErrorSessions int     `json:"error_sessions"`
	CPU           CPUUse  `json:"cpu"`
	HoistRSSMiB   float64 `json:"hoist_rss_mib"`
	// HoistCPUPerSession is Hoist's CPU time per game session (ms), the
	// process launches, connections and heartbeats it causes included.
	HoistCPUPerSession float64 `json:"hoist_cpu_ms_per_session"`
}

// sessionsActivationTimeout is the fleet's
// GameSessionActivationTimeoutSeconds: a game session the game server
// ignored goes ERROR (and its process is replaced) after it.
const sessionsActivationTimeout = 5

// activationTimeout bounds how long a client waits to see its game
// session ACTIVE before counting an error.
const activationTimeout = 30 * time.Second

func (e *env) runSessions(ctx context.Context, rep *Report) error {
	cfg := e.cfg
	var errs []error
	for run := 1; run <= cfg.Repeats; run++ {
		fmt.Fprintf(e.log, "hostingload: run %d/%d\n", run, cfg.Repeats)
		phases, err := e.sessionsRun(ctx, run)
		rep.Sessions = append(rep.Sessions, phases...)
		if err != nil {
			return err
		}
		for _, p := range phases {
			if n := p.Errors.total() + p.ErrorSessions; n > 0 {
				errs = append(errs, fmt.Errorf("run %d, %d clients: %d errors: %s (%d game sessions in ERROR)",
					run, p.Clients, n, p.Errors, p.ErrorSessions))
			}
		}
	}
	return errors.Join(errs...)
}

// sessionsRun starts Hoist, creates the fleet and measures each -clients
// phase.
func (e *env) sessionsRun(ctx context.Context, run int) ([]*SessionsPhase, error) {
	cfg := e.cfg
	h, pprofAddr, err := e.startHoist("--timings", "processes.stagger="+cfg.Stagger.String())
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := h.Stop(); err != nil {
			fmt.Fprintln(e.log, "hostingload:", err)
		}
	}()
	fail := func(err error) ([]*SessionsPhase, error) {
		return nil, fmt.Errorf("%w\nhoist log:\n%s", err, h.logTail(60))
	}
	build, err := h.uploadBuild(ctx, e.archive)
	if err != nil {
		return fail(err)
	}
	fleetID, err := h.createFleet(ctx, "sessions", build, cfg.Processes, "-end-after "+cfg.GameLength.String(), sessionsActivationTimeout)
	if err != nil {
		return fail(err)
	}
	if err := h.scale(ctx, fleetID, cfg.Instances); err != nil {
		return fail(err)
	}
	total := cfg.Processes * cfg.Instances
	if err := h.waitSettled(ctx, fleetID, total); err != nil {
		return fail(err)
	}
	w, err := activations.New()
	if err != nil {
		return fail(err)
	}
	defer w.Close()
	dirs, err := h.InstanceLogDirs(fleetID)
	if err != nil || len(dirs) != cfg.Instances {
		return fail(fmt.Errorf("the fleet's instance directories: %v (%d found)", err, len(dirs)))
	}
	for _, d := range dirs {
		if err := w.Watch(d); err != nil {
			return fail(err)
		}
	}
	var phases []*SessionsPhase
	for _, clients := range cfg.Clients {
		for _, rate := range cfg.Rates {
			fmt.Fprintf(e.log, "hostingload: run %d: %d clients, rate %s\n", run, clients, rateString(rate))
			errBefore, err := h.countSessions(ctx, fleetID, types.GameSessionStatusError)
			if err != nil {
				return fail(err)
			}
			p := e.sessionsPhase(ctx, h, w, fleetID, clients, rate, pprofAddr,
				fmt.Sprintf("sessions-clients%d-rate%g-run%d", clients, rate, run))
			p.Run = run
			phases = append(phases, p)
			// Let every game end and every process be replaced before
			// the next phase.
			if err := h.waitSettled(ctx, fleetID, total); err != nil {
				return phases, fmt.Errorf("after %d clients: %w\nhoist log:\n%s", clients, err, h.logTail(60))
			}
			errAfter, err := h.countSessions(ctx, fleetID, types.GameSessionStatusError)
			if err != nil {
				return fail(err)
			}
			p.ErrorSessions = errAfter - errBefore
		}
	}
	return phases, nil
}

// waitSettled waits until a fleet has n ready processes and no ACTIVE or
// ACTIVATING game session.
func (h *hoist) waitSettled(ctx context.Context, fleetID string, n int) error {
	return loadreport.WaitFor(ctx, 3*time.Minute, fmt.Sprintf("fleet %s with %d idle processes", fleetID, n), func() (bool, string, error) {
		ready, active, err := h.utilization(ctx, fleetID)
		if err != nil {
			return false, "", err
		}
		activating, err := h.countSessions(ctx, fleetID, types.GameSessionStatusActivating)
		if err != nil {
			return false, "", err
		}
		return ready == n && active == 0 && activating == 0,
			fmt.Sprintf("%d ready, %d ACTIVE and %d ACTIVATING game sessions", ready, active, activating), nil
	})
}

// countSessions counts a fleet's game sessions in a status.
func (h *hoist) countSessions(ctx context.Context, fleetID string, status types.GameSessionStatus) (int, error) {
	in := &gl.DescribeGameSessionsInput{FleetId: aws.String(fleetID), StatusFilter: aws.String(string(status)), Limit: aws.Int32(100)}
	n := 0
	for {
		out, err := h.gl.DescribeGameSessions(ctx, in)
		if err != nil {
			return 0, fmt.Errorf("DescribeGameSessions: %w", err)
		}
		n += len(out.GameSessions)
		if out.NextToken == nil {
			return n, nil
		}
		in.NextToken = out.NextToken
	}
}

// sessionsWorker is what one client saw in the measured window.
type sessionsWorker struct {
	lat, call           []time.Duration
	noCapacity, ignored int
	errors              errorCounts
}

func (r *sessionsWorker) fail(what string, err error) {
	code := err.Error()
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	r.errors[what+": "+code]++
}

// sessionsPhase runs clients concurrent CreateGameSession -> ACTIVE loops
// for the warm-up and the measured duration.
func (e *env) sessionsPhase(ctx context.Context, h *hoist, w *activations.Watcher, fleetID string, clients int, rate float64,
	pprofAddr, profName string) *SessionsPhase {
	cfg := e.cfg
	mStart := time.Now().Add(cfg.Warmup)
	mEnd := mStart.Add(cfg.Duration)
	results := make([]*sessionsWorker, clients)
	var wg sync.WaitGroup
	for i := range clients {
		res := &sessionsWorker{errors: errorCounts{}}
		results[i] = res
		var interval time.Duration // between the starts of one client's cycles
		if rate > 0 {
			interval = time.Duration(float64(clients) / rate * float64(time.Second))
		}
		first := time.Now().Add(interval * time.Duration(i) / time.Duration(clients))
		wg.Go(func() { sessionsLoop(ctx, h, w, fleetID, res, first, interval, mStart, mEnd) })
	}
	var cpu CPUUse
	var rss int64
	wg.Go(func() {
		time.Sleep(time.Until(mStart))
		waitProf := e.profile(pprofAddr, cfg.Duration, profName)
		a := sampleCPU(h.pid())
		t0 := time.Now()
		time.Sleep(time.Until(mEnd))
		b := sampleCPU(h.pid())
		cpu = cpuUse(a, b, time.Since(t0).Seconds())
		rss, _ = sysinfo.Memory(h.pid())
		if err := waitProf(); err != nil {
			fmt.Fprintln(e.log, "hostingload: profile:", err)
		}
	})
	wg.Wait()
	p := &SessionsPhase{Clients: clients, Rate: rate, Seconds: cfg.Duration.Seconds(), Errors: errorCounts{}, CPU: cpu, HoistRSSMiB: mib(rss)}
	var lat, call []time.Duration
	for _, r := range results {
		lat = append(lat, r.lat...)
		call = append(call, r.call...)
		p.NoCapacity += r.noCapacity
		p.Ignored += r.ignored
		for k, n := range r.errors {
			p.Errors[k] += n
		}
	}
	p.Sessions = len(lat)
	p.SessionsPerSec = float64(p.Sessions) / p.Seconds
	p.CreateToActive, p.CreateCall = loadreport.Stats(lat), loadreport.Stats(call)
	if p.Sessions > 0 {
		p.HoistCPUPerSession = cpu.Hoist * p.Seconds / float64(p.Sessions) * 1e3
	}
	if len(p.Errors) == 0 {
		p.Errors = nil
	}
	return p
}

// sessionsLoop is one client: CreateGameSession, then wait for the
// activation, until mEnd; cycles that start within [mStart, mEnd) are
// recorded. With an interval, cycles start at most once per interval from
// first on (a late cycle starts at once; missed starts are not made up).
func sessionsLoop(ctx context.Context, h *hoist, w *activations.Watcher, fleetID string, res *sessionsWorker,
	first time.Time, interval time.Duration, mStart, mEnd time.Time) {
	in := &gl.CreateGameSessionInput{FleetId: aws.String(fleetID), MaximumPlayerSessionCount: aws.Int32(2)}
	next := first
	for {
		if interval > 0 {
			time.Sleep(time.Until(next)) // pacing the load
			next = maxTime(next.Add(interval), time.Now())
		}
		t0 := time.Now()
		if !t0.Before(mEnd) {
			return
		}
		rec := !t0.Before(mStart)
		out, err := h.gl.CreateGameSession(ctx, in)
		call := time.Since(t0)
		if err != nil {
			var fce *types.FleetCapacityExceededException
			if errors.As(err, &fce) {
				if rec {
					res.noCapacity++
				}
				time.Sleep(10 * time.Millisecond) // every process is busy: poll for one
				continue
			}
			if rec {
				res.fail("CreateGameSession", err)
			}
			continue
		}
		at, err := w.Wait(aws.ToString(out.GameSession.GameSessionId), activationTimeout)
		if errors.Is(err, activations.ErrIgnored) {
			if rec {
				res.ignored++
			}
			continue
		}
		if err != nil {
			if rec {
				res.fail("activation", err)
			}
			continue
		}
		if rec {
			res.lat = append(res.lat, at.Sub(t0))
			res.call = append(res.call, call)
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func rateString(rate float64) string {
	if rate == 0 {
		return "unpaced"
	}
	return fmt.Sprintf("%g/s", rate)
}

// SessionsSummary holds the medians over the runs of one -clients value.
type SessionsSummary struct {
	Clients        int     `json:"clients"`
	Rate           float64 `json:"rate"`
	Runs           int     `json:"runs"`
	SessionsPerSec float64 `json:"sessions_per_s"`
	P50            float64 `json:"create_to_active_p50_ms"`
	P99            float64 `json:"create_to_active_p99_ms"`
	CallP50        float64 `json:"create_call_p50_ms"`
	CallP99        float64 `json:"create_call_p99_ms"`
	HoistCores     float64 `json:"hoist_cores"`
	GameCores      float64 `json:"game_server_cores"`
	LoadCores      float64 `json:"load_program_cores"`
	OtherCores     float64 `json:"other_cores"`
	HoistCPUMS     float64 `json:"hoist_cpu_ms_per_session"`
	NoCapacity     float64 `json:"no_capacity"`
}

func summarizeSessions(phases []*SessionsPhase) []SessionsSummary {
	var out []SessionsSummary
	type key struct {
		clients int
		rate    float64
	}
	order, by := loadreport.GroupBy(phases, func(p *SessionsPhase) key { return key{p.Clients, p.Rate} })
	for _, k := range order {
		ps := by[k]
		med := func(f func(*SessionsPhase) float64) float64 { return loadreport.MedianOf(ps, f) }
		out = append(out, SessionsSummary{Clients: k.clients, Rate: k.rate, Runs: len(ps),
			SessionsPerSec: med(func(p *SessionsPhase) float64 { return p.SessionsPerSec }),
			P50:            med(func(p *SessionsPhase) float64 { return p.CreateToActive.P50 }),
			P99:            med(func(p *SessionsPhase) float64 { return p.CreateToActive.P99 }),
			CallP50:        med(func(p *SessionsPhase) float64 { return p.CreateCall.P50 }),
			CallP99:        med(func(p *SessionsPhase) float64 { return p.CreateCall.P99 }),
			HoistCores:     med(func(p *SessionsPhase) float64 { return p.CPU.Hoist }),
			GameCores:      med(func(p *SessionsPhase) float64 { return p.CPU.GameServers }),
			LoadCores:      med(func(p *SessionsPhase) float64 { return p.CPU.Load }),
			OtherCores:     med(func(p *SessionsPhase) float64 { return p.CPU.Other }),
			HoistCPUMS:     med(func(p *SessionsPhase) float64 { return p.HoistCPUPerSession }),
			NoCapacity:     med(func(p *SessionsPhase) float64 { return float64(p.NoCapacity) }),
		})
	}
	return out
}

func printSessions(w io.Writer, rep *Report) {
	cfg := rep.Config
	fmt.Fprintf(w, "scenario sessions: %s of %d game servers, each ending its game session %s after activating it; process stagger %s; %s measured per phase after %s warm-up, %s\n\n",
		loadreport.Plural(cfg.Instances, "instance"), cfg.Processes, cfg.GameLength, cfg.Stagger, cfg.Duration, cfg.Warmup, loadreport.Plural(cfg.Repeats, "run"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tclients\trate\tsessions/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\tcall p50\tcall p99\tno capacity\tignored\terrors\thoist cores\tgame cores\tload cores\tother cores\thoist ms/session\thoist RSS MiB\t")
	for _, p := range rep.Sessions {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t\n",
			p.Run, p.Clients, rateString(p.Rate), p.SessionsPerSec, p.CreateToActive.P50, p.CreateToActive.P90, p.CreateToActive.P99, p.CreateToActive.Max,
			p.CreateCall.P50, p.CreateCall.P99, p.NoCapacity, p.Ignored, p.Errors.total()+p.ErrorSessions, p.CPU.Hoist, p.CPU.GameServers,
			p.CPU.Load, p.CPU.Other, p.HoistCPUPerSession, p.HoistRSSMiB)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nmedians:")
	for _, s := range summarizeSessions(rep.Sessions) {
		fmt.Fprintf(w, "  %d clients, %s (%s): %.1f sessions/s, CreateGameSession -> ACTIVE p50 %.2f ms, p99 %.2f ms (the call alone p50 %.2f, p99 %.2f); hoist %.2f cores (%.2f ms/session), game servers %.2f, load %.2f, other %.2f\n",
			s.Clients, rateString(s.Rate), loadreport.Plural(s.Runs, "run"), s.SessionsPerSec, s.P50, s.P99, s.CallP50, s.CallP99, s.HoistCores, s.HoistCPUMS,
			s.GameCores, s.LoadCores, s.OtherCores)
	}
}
