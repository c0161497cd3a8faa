//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"

	"github.com/hoistgg/hoist/e2e/activations"
	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/e2e/sysinfo"
)

// GameLift's limits, which Hoist applies: server processes per instance
// (the runtime configuration's sum of ConcurrentExecutions) and instances
// per fleet location.
const (
	maxPerInstance = 50
	maxInstances   = 20
)

// sdkDefaultHeartbeat is the Go SDK's default HEALTHCHECK_INTERVAL; with
// it the game servers and Hoist run with their defaults (jitter 10 s).
const sdkDefaultHeartbeat = 60 * time.Second

// ProcessesRun is one run of the processes scenario: one count, one
// heartbeat interval, a new Hoist.
type ProcessesRun struct {
	Run       int     `json:"run"`
	Count     int     `json:"count"`
	Heartbeat string  `json:"heartbeat_interval"`
	Jitter    string  `json:"heartbeat_jitter"`
	Fleets    int     `json:"fleets"`
	Instances int     `json:"instances"`
	PerInst   int     `json:"processes_per_instance"`
	SoakS     float64 `json:"soak_s"`

	// ReadySeconds is from the first CreateFleet to every process ready
	// (polled every 100 ms); Ready is how many were ready then.
	ReadySeconds float64 `json:"ready_s"`
	Ready        int     `json:"ready"`
	RampCPU      CPUUse  `json:"ramp_cpu"`

	SoakCPU CPUUse `json:"soak_cpu"`
	// Hoist's memory at the end of the soak, and its peak.
	HoistRSSMiB     float64 `json:"hoist_rss_mib"`
	HoistPeakRSSMiB float64 `json:"hoist_peak_rss_mib"`
	HoistThreads    int     `json:"hoist_threads"`
	HoistFDs        int     `json:"hoist_open_files"`
	// The game servers' summed memory at the end of the soak (PSS shares
	// the pages they have in common, the executable's among them) and
	// threads.
	GameRSSMiB     float64 `json:"game_servers_rss_mib"`
	GamePSSMiB     float64 `json:"game_servers_pss_mib"`
	GameThreads    int     `json:"game_servers_threads"`
	MemAvailBefore float64 `json:"machine_mem_available_before_mib"`
	MemAvailSoak   float64 `json:"machine_mem_available_soak_mib"`

	// Heartbeats the game servers logged as answered, and as failed
	// (an error reply or no reply within the SDK's 20 s), in the soak;
	// Expected is count x soak / interval.
	HeartbeatsAnswered int `json:"heartbeats_answered"`
	HeartbeatsFailed   int `json:"heartbeats_failed"`
	HeartbeatsExpected int `json:"heartbeats_expected"`
	// Ended counts server processes that exited during the soak;
	// ReadyAfter is how many were ready after it.
	Ended      int `json:"ended"`
	ReadyAfter int `json:"ready_after"`
	// Probe is the heartbeat round trip of a simulated process (an
	// Anywhere compute in the same Hoist) during the soak.
	Probe       loadreport.OpStats `json:"probe_heartbeat"`
	ProbeErrors int                `json:"probe_errors"`
	// Activation is CreateGameSession -> ACTIVE after the soak.
	Activation       loadreport.OpStats `json:"activation"`
	ActivationErrors int                `json:"activation_errors"`

	Sustained bool     `json:"sustained"`
	Failures  []string `json:"failures,omitempty"`
}

// layout spreads count processes over instances of at most 50 processes
// and fleets of at most 20 instances.
func layout(count int) (perInstance int, fleets []int) {
	perInstance = min(count, maxPerInstance)
	instances := count / perInstance
	for instances > 0 {
		n := min(instances, maxInstances)
		fleets = append(fleets, n)
		instances -= n
	}
	return perInstance, fleets
}

// jitterFor is the heartbeat jitter used with interval: the SDK's 10 s
// with its default interval, else a fifth of the interval.
func jitterFor(interval time.Duration) time.Duration {
	if interval == sdkDefaultHeartbeat {
		return 10 * time.Second
	}
	return interval / 5
}

func (e *env) runProcesses(ctx context.Context, rep *Report) error {
	cfg := e.cfg
	var errs []error
	// Guesses until a run has measured them: memory (PSS) and threads per
	// game server.
	pssPerProcess, threadsPerProcess := 16.0, 10.0
	for _, count := range cfg.Counts {
		for _, hb := range cfg.Heartbeats {
			for run := 1; run <= cfg.Repeats; run++ {
				// Do not exhaust the machine, which others share: leave a
				// fifth of the memory and of the thread IDs free.
				need := float64(count)*pssPerProcess*1.3 + 1024
				if avail := mib(sysinfo.MemInfo("MemAvailable:")); avail < need {
					rep.Skipped = append(rep.Skipped, fmt.Sprintf("%d processes (heartbeat %s, run %d): about %.0f MiB needed, %.0f MiB available",
						count, hb, run, need, avail))
					continue
				}
				if used, limit := sysinfo.ThreadUse(); float64(used)+float64(count)*threadsPerProcess > 0.8*float64(limit) {
					rep.Skipped = append(rep.Skipped, fmt.Sprintf("%d processes (heartbeat %s, run %d): about %.0f more threads needed, %d of %d in use (kernel.pid_max, kernel.threads-max, RLIMIT_NPROC)",
						count, hb, run, float64(count)*threadsPerProcess, used, limit))
					continue
				}
				fmt.Fprintf(e.log, "hostingload: %d processes, heartbeat %s, run %d/%d\n", count, hb, run, cfg.Repeats)
				r, err := e.processesRun(ctx, run, count, hb)
				if r != nil {
					rep.Processes = append(rep.Processes, r)
					if n := r.ReadyAfter; n > 0 && r.GamePSSMiB > 0 {
						pssPerProcess = max(pssPerProcess*0.5, r.GamePSSMiB/float64(n))
						threadsPerProcess = max(threadsPerProcess*0.5, float64(r.GameThreads)/float64(n))
					}
					if !r.Sustained {
						errs = append(errs, fmt.Errorf("%d processes, heartbeat %s, run %d: not sustained: %s",
							count, hb, run, strings.Join(r.Failures, "; ")))
					}
				}
				if err != nil {
					return errors.Join(append(errs, err)...)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (e *env) processesRun(ctx context.Context, run, count int, hb time.Duration) (*ProcessesRun, error) {
	cfg := e.cfg
	perInstance, fleetSizes := layout(count)
	jitter := jitterFor(hb)
	r := &ProcessesRun{Run: run, Count: count, Heartbeat: hb.String(), Jitter: jitter.String(), Fleets: len(fleetSizes),
		PerInst: perInstance, SoakS: cfg.Soak.Seconds(), MemAvailBefore: mib(sysinfo.MemInfo("MemAvailable:"))}
	for _, n := range fleetSizes {
		r.Instances += n
	}
	timings := "processes.stagger=" + cfg.Stagger.String()
	// The probe heartbeats faster than --sdk-message-rate allows one
	// socket: it measures Hoist's answers, not a game server's pace.
	args := []string{"--sdk-message-rate", "0"}
	if hb != sdkDefaultHeartbeat {
		timings += ",sessions.heartbeat-interval=" + hb.String() + ",sessions.heartbeat-jitter=" + jitter.String()
		args = append(args, "--process-env", "HEALTHCHECK_INTERVAL="+hb.String()+",HEALTHCHECK_MAX_JITTER="+jitter.String())
	}
	h, pprofAddr, err := e.startHoist(append(args, "--timings", timings)...)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := h.Stop(); err != nil {
			fmt.Fprintln(e.log, "hostingload:", err)
		}
	}()
	fail := func(err error) (*ProcessesRun, error) {
		return r, fmt.Errorf("%w\nhoist log:\n%s", err, h.logTail(60))
	}
	build, err := h.uploadBuild(ctx, e.archive)
	if err != nil {
		return fail(err)
	}

	// Ramp: create the fleets, scale each to its instances, wait until
	// every process is ready.
	start := time.Now()
	cpuA := sampleCPU(h.pid())
	fleetIDs := make([]string, len(fleetSizes))
	var wg sync.WaitGroup
	ferrs := make([]error, len(fleetSizes))
	for i, n := range fleetSizes {
		wg.Go(func() {
			id, err := h.createFleet(ctx, fmt.Sprintf("processes-%d", i), build, perInstance, "", 0)
			if err == nil {
				err = h.scale(ctx, id, n)
			}
			fleetIDs[i], ferrs[i] = id, err
		})
	}
	wg.Wait()
	if err := errors.Join(ferrs...); err != nil {
		return fail(err)
	}
	readyAll := func() (int, error) {
		total := 0
		for _, id := range fleetIDs {
			ready, _, err := h.utilization(ctx, id)
			if err != nil {
				return 0, err
			}
			total += ready
		}
		return total, nil
	}
	err = loadreport.WaitFor(ctx, cfg.ReadyTimeout, fmt.Sprintf("%d processes ready", count), func() (bool, string, error) {
		n, err := readyAll()
		r.Ready = n
		return n == count, fmt.Sprintf("%d ready", n), err
	})
	r.ReadySeconds = time.Since(start).Seconds()
	r.RampCPU = cpuUse(cpuA, sampleCPU(h.pid()), r.ReadySeconds)
	if err != nil {
		r.Failures = append(r.Failures, err.Error())
		e.measureMemory(h, r)
		return r, nil
	}
	var logDirs []string
	for _, id := range fleetIDs {
		dirs, err := h.InstanceLogDirs(id)
		if err != nil {
			return fail(err)
		}
		logDirs = append(logDirs, dirs...)
	}

	// The probe: a simulated process of an Anywhere fleet that sends a
	// heartbeat every -probe-interval from now on.
	probe, err := startProbe(ctx, h, cfg.ProbeInterval)
	if err != nil {
		return fail(err)
	}
	defer probe.stop()

	// Soak.
	pidsA := sysinfo.Children(h.pid())
	okA, failedA := countHeartbeats(logDirs)
	waitProf := e.profile(pprofAddr, cfg.Soak, fmt.Sprintf("processes-%d-hb%s-run%d", count, hb, run))
	probe.record(true)
	cpuA = sampleCPU(h.pid())
	t0 := time.Now()
	time.Sleep(cfg.Soak) // the measured window
	cpuB := sampleCPU(h.pid())
	r.SoakCPU = cpuUse(cpuA, cpuB, time.Since(t0).Seconds())
	lat, probeErrs := probe.record(false)
	r.Probe, r.ProbeErrors = loadreport.Stats(lat), probeErrs
	okB, failedB := countHeartbeats(logDirs)
	r.HeartbeatsAnswered, r.HeartbeatsFailed = okB-okA, failedB-failedA
	r.HeartbeatsExpected = int(float64(count) * cfg.Soak.Seconds() / hb.Seconds())
	alive := map[int]bool{}
	for _, pid := range sysinfo.Children(h.pid()) {
		alive[pid] = true
	}
	for _, pid := range pidsA {
		if !alive[pid] {
			r.Ended++
		}
	}
	r.MemAvailSoak = mib(sysinfo.MemInfo("MemAvailable:"))
	e.measureMemory(h, r)
	if r.ReadyAfter, err = readyAll(); err != nil {
		return fail(err)
	}
	if err := waitProf(); err != nil {
		fmt.Fprintln(e.log, "hostingload: profile:", err)
	}

	// Game sessions after the soak, one after the other, spread over the
	// fleets.
	w, err := activations.New()
	if err != nil {
		return fail(err)
	}
	defer w.Close()
	for _, d := range logDirs {
		if err := w.Watch(d); err != nil {
			return fail(err)
		}
	}
	var act []time.Duration
	for i := range cfg.Activations {
		t0 := time.Now()
		out, err := h.gl.CreateGameSession(ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetIDs[i%len(fleetIDs)]),
			MaximumPlayerSessionCount: aws.Int32(2)})
		if err == nil {
			var at time.Time
			if at, err = w.Wait(aws.ToString(out.GameSession.GameSessionId), activationTimeout); err == nil {
				act = append(act, at.Sub(t0))
			}
		}
		if err != nil {
			r.ActivationErrors++
			fmt.Fprintln(e.log, "hostingload: game session after the soak:", err)
		}
	}
	r.Activation = loadreport.Stats(act)
	r.judge(cfg)
	return r, nil
}

// judge decides whether the run sustained its processes.
func (r *ProcessesRun) judge(cfg *Config) {
	f := func(format string, a ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, a...)) }
	if r.Ended > 0 {
		f("%d processes ended during the soak", r.Ended)
	}
	if r.ReadyAfter != r.Count {
		f("%d of %d processes ready after the soak", r.ReadyAfter, r.Count)
	}
	if r.HeartbeatsFailed > 0 {
		f("%d heartbeats failed", r.HeartbeatsFailed)
	}
	// Heartbeats of processes started together stay roughly in phase, so
	// the count in a window of a few intervals varies by up to one per
	// process: this only catches heartbeats that are not sent at all.
	if float64(r.HeartbeatsAnswered) < 0.5*float64(r.HeartbeatsExpected) {
		f("%d heartbeats answered, about %d expected", r.HeartbeatsAnswered, r.HeartbeatsExpected)
	}
	if r.ProbeErrors > 0 || r.Probe.Count == 0 || r.Probe.Max > float64(cfg.HeartbeatBound)/1e6 {
		f("probe heartbeats: %d errors, %d answered, slowest %.1f ms (bound %s)", r.ProbeErrors, r.Probe.Count, r.Probe.Max, cfg.HeartbeatBound)
	}
	if r.ActivationErrors > 0 || r.Activation.Max > float64(cfg.ActivateBound)/1e6 {
		f("game sessions after the soak: %d errors, slowest %.1f ms (bound %s)", r.ActivationErrors, r.Activation.Max, cfg.ActivateBound)
	}
	r.Sustained = len(r.Failures) == 0
}

// measureMemory records Hoist's and the game servers' memory and threads.
func (e *env) measureMemory(h *hoist, r *ProcessesRun) {
	rss, _ := sysinfo.Memory(h.pid())
	r.HoistRSSMiB, r.HoistPeakRSSMiB = mib(rss), mib(sysinfo.PeakRSS(h.pid()))
	if st, ok := sysinfo.ReadStat(h.pid()); ok {
		r.HoistThreads = st.Threads
	}
	r.HoistFDs = sysinfo.OpenFiles(h.pid())
	var grss, gpss int64
	threads := 0
	for _, pid := range sysinfo.Children(h.pid()) {
		rss, pss := sysinfo.Memory(pid)
		grss += rss
		gpss += pss
		if st, ok := sysinfo.ReadStat(pid); ok {
			threads += st.Threads
		}
	}
	r.GameRSSMiB, r.GamePSSMiB, r.GameThreads = mib(grss), mib(gpss), threads
}

var (
	heartbeatLine       = []byte(" msg=heartbeat ")
	heartbeatFailedLine = []byte(`msg="could not send health status"`)
)

// countHeartbeats counts the heartbeats the game servers logged as
// answered and as failed, in every log file of dirs.
func countHeartbeats(dirs []string) (answered, failed int) {
	for _, d := range dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".log") {
				continue
			}
			f, err := os.Open(filepath.Join(d, e.Name()))
			if err != nil {
				continue
			}
			a, b := countLines(f)
			answered += a
			failed += b
			f.Close()
		}
	}
	return answered, failed
}

func countLines(r io.Reader) (answered, failed int) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.Contains(line, heartbeatLine):
			answered++
		case bytes.Contains(line, heartbeatFailedLine):
			failed++
		}
	}
	return answered, failed
}

// probe is a simulated server process that sends heartbeats at an
// interval and records their round trips while recording is on.
type probe struct {
	c      *sdkclient.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	on     bool
	lat    []time.Duration
	errors int
}

func startProbe(ctx context.Context, h *hoist, interval time.Duration) (*probe, error) {
	fleetID, endpoint, token, err := h.anywhereCompute(ctx, "custom-probe", "probe-compute")
	if err != nil {
		return nil, err
	}
	c, err := dialProcess(ctx, endpoint, "probe-1", "probe-compute", fleetID, token, 1)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &probe{c: c, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cctx, ccancel := context.WithTimeout(ctx, 20*time.Second) // the SDK's SERVICE_CALL_TIMEOUT
			t0 := time.Now()
			_, err := c.Call(cctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": true})
			d := time.Since(t0)
			ccancel()
			p.mu.Lock()
			if p.on {
				if err != nil && ctx.Err() == nil {
					p.errors++
				} else if err == nil {
					p.lat = append(p.lat, d)
				}
			}
			p.mu.Unlock()
		}
	}()
	return p, nil
}

// record turns recording on or off; turning it off returns what was
// recorded.
func (p *probe) record(on bool) ([]time.Duration, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on = on
	if on {
		p.lat, p.errors = nil, 0
	}
	return p.lat, p.errors
}

func (p *probe) stop() {
	p.cancel()
	<-p.done
	p.c.Close(1000, "")
}

// dialProcess connects a simulated server process as the SDK does and
// calls ProcessReady (ActivateServerProcess) with port.
func dialProcess(ctx context.Context, endpoint, processID, compute, fleetID, token string, port int) (*sdkclient.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := sdkclient.Dial(dctx, endpoint, sdkclient.Query(processID, compute, fleetID, token), sdkclient.Options{})
	if err != nil {
		return nil, fmt.Errorf("connecting %s: %w", processID, err)
	}
	if _, err := c.Call(dctx, "ActivateServerProcess", map[string]any{"SdkVersion": sdkclient.SDKVersion,
		"SdkLanguage": sdkclient.SDKLanguage, "Port": port, "LogPaths": []string{}}); err != nil {
		c.Drop()
		return nil, fmt.Errorf("ProcessReady of %s: %w", processID, err)
	}
	return c, nil
}

// ProcessesSummary holds the medians over the runs of one count and one
// heartbeat interval.
type ProcessesSummary struct {
	Count          int     `json:"count"`
	Heartbeat      string  `json:"heartbeat_interval"`
	Runs           int     `json:"runs"`
	Sustained      int     `json:"sustained_runs"`
	ReadySeconds   float64 `json:"ready_s"`
	RampHoistCores float64 `json:"ramp_hoist_cores"`
	HoistCores     float64 `json:"soak_hoist_cores"`
	GameCores      float64 `json:"soak_game_server_cores"`
	HoistRSSMiB    float64 `json:"hoist_rss_mib"`
	HoistPeakMiB   float64 `json:"hoist_peak_rss_mib"`
	GameRSSMiB     float64 `json:"game_servers_rss_mib"`
	GamePSSMiB     float64 `json:"game_servers_pss_mib"`
	HeartbeatsPerS float64 `json:"heartbeats_per_s"`
	ProbeP50       float64 `json:"probe_p50_ms"`
	ProbeP99       float64 `json:"probe_p99_ms"`
	ProbeMax       float64 `json:"probe_max_ms"`
	ActivationP50  float64 `json:"activation_p50_ms"`
	ActivationMax  float64 `json:"activation_max_ms"`
}

func summarizeProcesses(runs []*ProcessesRun) []ProcessesSummary {
	type key struct {
		count int
		hb    string
	}
	order, by := loadreport.GroupBy(runs, func(r *ProcessesRun) key { return key{r.Count, r.Heartbeat} })
	var out []ProcessesSummary
	for _, k := range order {
		rs := by[k]
		med := func(f func(*ProcessesRun) float64) float64 { return loadreport.MedianOf(rs, f) }
		s := ProcessesSummary{Count: k.count, Heartbeat: k.hb, Runs: len(rs),
			ReadySeconds:   med(func(r *ProcessesRun) float64 { return r.ReadySeconds }),
			RampHoistCores: med(func(r *ProcessesRun) float64 { return r.RampCPU.Hoist }),
			HoistCores:     med(func(r *ProcessesRun) float64 { return r.SoakCPU.Hoist }),
			GameCores:      med(func(r *ProcessesRun) float64 { return r.SoakCPU.GameServers }),
			HoistRSSMiB:    med(func(r *ProcessesRun) float64 { return r.HoistRSSMiB }),
			HoistPeakMiB:   med(func(r *ProcessesRun) float64 { return r.HoistPeakRSSMiB }),
			GameRSSMiB:     med(func(r *ProcessesRun) float64 { return r.GameRSSMiB }),
			GamePSSMiB:     med(func(r *ProcessesRun) float64 { return r.GamePSSMiB }),
			HeartbeatsPerS: med(func(r *ProcessesRun) float64 { return float64(r.HeartbeatsAnswered) / r.SoakS }),
			ProbeP50:       med(func(r *ProcessesRun) float64 { return r.Probe.P50 }),
			ProbeP99:       med(func(r *ProcessesRun) float64 { return r.Probe.P99 }),
			ProbeMax:       med(func(r *ProcessesRun) float64 { return r.Probe.Max }),
			ActivationP50:  med(func(r *ProcessesRun) float64 { return r.Activation.P50 }),
			ActivationMax:  med(func(r *ProcessesRun) float64 { return r.Activation.Max }),
		}
		for _, r := range rs {
			if r.Sustained {
				s.Sustained++
			}
		}
		out = append(out, s)
	}
	return out
}

func printProcesses(w io.Writer, rep *Report) {
	cfg := rep.Config
	fmt.Fprintf(w, "scenario processes: fleets of up to %d instances of up to %d game servers; process stagger %s; soak %s; %s per setting\n\n",
		maxInstances, maxPerInstance, cfg.Stagger, cfg.Soak, loadreport.Plural(cfg.Repeats, "run"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tprocesses\theartbeat\tinstances\tready s\tramp hoist cores\tsoak hoist cores\tsoak game cores\thoist RSS MiB\thoist peak MiB\thoist files\tgame RSS MiB\tgame PSS MiB\tgame threads\tmachine memory used MiB\theartbeats ok/failed/expected\tended\tprobe p50/p99/max ms\tactivation p50/max ms\tsustained\t")
	for _, r := range rep.Processes {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%.1f\t%.2f\t%.3f\t%.3f\t%.0f\t%.0f\t%d\t%.0f\t%.0f\t%d\t%.0f\t%d/%d/%d\t%d\t%.2f/%.2f/%.2f\t%.1f/%.1f\t%v\t\n",
			r.Run, r.Count, r.Heartbeat, r.Instances, r.ReadySeconds, r.RampCPU.Hoist, r.SoakCPU.Hoist, r.SoakCPU.GameServers,
			r.HoistRSSMiB, r.HoistPeakRSSMiB, r.HoistFDs, r.GameRSSMiB, r.GamePSSMiB, r.GameThreads, r.MemAvailBefore-r.MemAvailSoak,
			r.HeartbeatsAnswered, r.HeartbeatsFailed, r.HeartbeatsExpected, r.Ended,
			r.Probe.P50, r.Probe.P99, r.Probe.Max, r.Activation.P50, r.Activation.Max, r.Sustained)
	}
	tw.Flush()
	for _, r := range rep.Processes {
		for _, f := range r.Failures {
			fmt.Fprintf(w, "run %d, %d processes, heartbeat %s: %s\n", r.Run, r.Count, r.Heartbeat, f)
		}
	}
	fmt.Fprintln(w, "\nmedians:")
	for _, s := range summarizeProcesses(rep.Processes) {
		fmt.Fprintf(w, "  %d processes, heartbeat %s (%d of %s sustained): all ready in %.1f s; soak: hoist %.3f cores, %.0f MiB RSS (peak %.0f), game servers %.3f cores, %.0f MiB RSS, %.0f MiB PSS; %.1f heartbeats/s; probe heartbeat p50 %.2f ms, p99 %.2f ms, max %.2f ms; game session ACTIVE p50 %.1f ms, max %.1f ms\n",
			s.Count, s.Heartbeat, s.Sustained, loadreport.Plural(s.Runs, "run"), s.ReadySeconds, s.HoistCores, s.HoistRSSMiB, s.HoistPeakMiB,
			s.GameCores, s.GameRSSMiB, s.GamePSSMiB, s.HeartbeatsPerS, s.ProbeP50, s.ProbeP99, s.ProbeMax, s.ActivationP50, s.ActivationMax)
	}
}
