// Command load is Hoist's load generator. It starts the real Hoist binary
// (with credentials, so every SigV4 signature is verified; a new data
// directory; a loopback port) and a ceiling server (a bare net/http handler
// decoding a small JSON body and encoding a small answer, as its own
// process), drives both with the same client (keep-alive connections, AWS
// JSON 1.1, SigV4-signed requests) and reports requests/s, latencies and
// the ratio of Hoist to the ceiling. See docs/performance.md.
//
//	go run ./e2e/load -scenario fleetiq [-duration 20s] [-conns 32] [-servers 10000] [-repeats 3] [-json out.json]
//	go run ./e2e/load -scenario fleetiq -store postgres [-database-url URL] [-replicas 3]
//
// Scenario fleetiq: create a game server group, register -servers game
// servers across -instances instances, then every connection loops
// ClaimGameServer -> UpdateGameServer UTILIZED -> UpdateGameServer
// AVAILABLE. The ceiling gets the same three requests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/sysinfo"
)

func main() {
	if os.Getenv(roleEnv) == roleCeiling {
		os.Exit(serveCeiling())
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Config is one invocation's settings.
type Config struct {
	Scenario  string        `json:"scenario"`
	Duration  time.Duration `json:"-"`
	Warmup    time.Duration `json:"-"`
	Conns     int           `json:"connections"`
	Servers   int           `json:"game_servers"`
	Instances int           `json:"instances"`
	Repeats   int           `json:"repeats"`
	Only      string        `json:"only,omitempty"`
	Client    string        `json:"client"`
	// Store is Hoist's --store (journal or postgres); Replicas how many
	// Hoist processes share it (postgres only), the connections spread
	// over them.
	Store    string `json:"store"`
	Replicas int    `json:"replicas"`
	// Seconds mirror the durations in the JSON output.
	DurationS float64 `json:"duration_s"`
	WarmupS   float64 `json:"warmup_s"`

	hoistBin    string
	databaseURL string // never reported: it may hold a password
	dataParent  string
	profileDir  string
	jsonPath    string
}

func parseFlags(args []string, stderr io.Writer) (*Config, error) {
	c := &Config{}
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Scenario, "scenario", "fleetiq", "the load: fleetiq (claim -> UTILIZED -> AVAILABLE)")
	fs.DurationVar(&c.Duration, "duration", 20*time.Second, "measured time per run")
	fs.DurationVar(&c.Warmup, "warmup", 3*time.Second, "unmeasured load before each measured run")
	fs.IntVar(&c.Conns, "conns", 32, "keep-alive connections (one worker each)")
	fs.IntVar(&c.Servers, "servers", 10_000, "game servers to register")
	fs.IntVar(&c.Instances, "instances", 100, "instances the game servers are spread over")
	fs.IntVar(&c.Repeats, "repeats", 3, "runs of each server; medians are reported")
	fs.StringVar(&c.Only, "only", "", "run only hoist or only ceiling (default both)")
	fs.StringVar(&c.Client, "client", transportNetHTTP, "the client's HTTP transport: net/http (Go's http.Client, as the ceiling in the spec was measured) or raw (a minimal HTTP/1.1 client, one connection per worker, about half the client CPU)")
	fs.StringVar(&c.Store, "store", "journal", "Hoist's store: journal (the default store) or postgres (each run in a new schema of -database-url's database)")
	fs.StringVar(&c.databaseURL, "database-url", os.Getenv("HOIST_DATABASE_URL"), "with -store postgres: the database (default $HOIST_DATABASE_URL; empty: the PG* variables)")
	fs.IntVar(&c.Replicas, "replicas", 1, "with -store postgres: Hoist replicas sharing the database, the connections spread over them")
	fs.StringVar(&c.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&c.hoistBin, "hoist", "", "a Hoist binary to run (default: go build ./cmd/hoist)")
	fs.StringVar(&c.dataParent, "data-parent", "", "directory for Hoist's temporary data directories (default: the system's temp dir)")
	fs.StringVar(&c.profileDir, "profile", "", "write CPU profiles of Hoist (via --pprof-addr) and of the load generator, Hoist's allocations, and 1s of Hoist's execution trace, for each measured Hoist run to this directory")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.Scenario != "fleetiq":
		return nil, fmt.Errorf("-scenario: only fleetiq exists, got %q", c.Scenario)
	case c.Conns <= 0 || c.Servers <= 0 || c.Instances <= 0 || c.Repeats <= 0 || c.Duration <= 0 || c.Warmup < 0:
		return nil, errors.New("-conns, -servers, -instances, -repeats and -duration must be positive")
	case c.Servers < c.Instances:
		return nil, errors.New("-servers must be at least -instances")
	case c.Only != "" && c.Only != "hoist" && c.Only != "ceiling":
		return nil, fmt.Errorf("-only: want hoist or ceiling, got %q", c.Only)
	case c.Client != transportRaw && c.Client != transportNetHTTP:
		return nil, fmt.Errorf("-client: want %s or %s, got %q", transportRaw, transportNetHTTP, c.Client)
	case c.Store != "journal" && c.Store != "postgres":
		return nil, fmt.Errorf("-store: want journal or postgres, got %q", c.Store)
	case c.Replicas < 1 || (c.Replicas > 1 && c.Store != "postgres"):
		return nil, errors.New("-replicas: at least 1, and more than 1 only with -store postgres")
	}
	c.DurationS, c.WarmupS = c.Duration.Seconds(), c.Warmup.Seconds()
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	return loadreport.Main("load", args, stdout, stderr, parseFlags, runLoad)
}

// JSONPath is the -json file.
func (c *Config) JSONPath() string { return c.jsonPath }

// Report is the result of an invocation.
type Report struct {
	Command string          `json:"command"`
	Config  *Config         `json:"config"`
	Machine sysinfo.Machine `json:"machine"`
	Runs    []Repeat        `json:"runs"`
	Median  Summary         `json:"median"`
}

// Repeat is one run of each server.
type Repeat struct {
	Ceiling *Phase  `json:"ceiling,omitempty"`
	Hoist   *Phase  `json:"hoist,omitempty"`
	Ratio   float64 `json:"ratio,omitempty"`
}

// Phase is one measured run against one server.
type Phase struct {
	Server       string                        `json:"server"`
	Seconds      float64                       `json:"seconds"`
	Requests     int                           `json:"requests"`
	Claims       int                           `json:"claims"`
	ReqPerSec    float64                       `json:"requests_per_s"`
	ClaimsPerSec float64                       `json:"claims_per_s"`
	Ops          map[string]loadreport.OpStats `json:"ops"`
	Errors       map[string]int                `json:"errors,omitempty"`
	CPU          CPUUse                        `json:"cpu"`
	// ServerCPUPerRequest is the server process's CPU time per request (µs).
	ServerCPUPerRequest float64 `json:"server_cpu_us_per_request"`
	ClientCPUPerRequest float64 `json:"client_cpu_us_per_request"`
	SetupSeconds        float64 `json:"setup_s,omitempty"`
}

// Summary holds the medians over the repeats.
type Summary struct {
	HoistReqPerSec    float64 `json:"hoist_requests_per_s"`
	HoistClaimsPerSec float64 `json:"hoist_claims_per_s"`
	HoistClaimP50     float64 `json:"hoist_claim_p50_ms"`
	HoistClaimP99     float64 `json:"hoist_claim_p99_ms"`
	HoistP50          float64 `json:"hoist_all_p50_ms"`
	HoistP99          float64 `json:"hoist_all_p99_ms"`
	HoistCPUPerReq    float64 `json:"hoist_cpu_us_per_request"`
	CeilingReqPerSec  float64 `json:"ceiling_requests_per_s"`
	CeilingP50        float64 `json:"ceiling_p50_ms"`
	CeilingP99        float64 `json:"ceiling_p99_ms"`
	CeilingCPUPerReq  float64 `json:"ceiling_cpu_us_per_request"`
	// Ratio is HoistReqPerSec / CeilingReqPerSec; RatioMedian the median
	// of the repeats' own ratios.
	Ratio       float64 `json:"ratio"`
	RatioMedian float64 `json:"ratio_median_of_runs"`
	// OtherCores is the median load of other processes during the runs.
	OtherCores float64 `json:"other_cores"`
}

// Test credentials Hoist is started with.
var loadCreds = credentials{AccessKeyID: "AKIDHOISTLOAD", Secret: "hoist-load-secret-key", Region: "us-west-2"}

const loadGroup = "load-group"

func runLoad(ctx context.Context, cfg *Config, log io.Writer) (*Report, error) {
	rep := &Report{Command: "go run ./e2e/load " + strings.Join(commandArgs(cfg), " "), Config: cfg,
		Machine: sysinfo.DescribeMachine(cfg.dataParent)}
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			return nil, err
		}
	}
	hoistBin := cfg.hoistBin
	if hoistBin == "" && cfg.Only != "ceiling" {
		dir, err := os.MkdirTemp("", "hoist-load-bin-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(log, "load: building cmd/hoist")
		if hoistBin, err = buildHoist(dir); err != nil {
			return nil, err
		}
	}
	var errs []error
	for i := range cfg.Repeats {
		var r Repeat
		if cfg.Only != "hoist" {
			fmt.Fprintf(log, "load: run %d/%d: ceiling\n", i+1, cfg.Repeats)
			p, err := ceilingPhase(ctx, cfg)
			if err != nil {
				return rep, err
			}
			r.Ceiling = p
			errs = append(errs, p.check())
		}
		if cfg.Only != "ceiling" {
			fmt.Fprintf(log, "load: run %d/%d: hoist\n", i+1, cfg.Repeats)
			p, err := hoistPhase(ctx, cfg, hoistBin, i+1, log)
			if err != nil {
				return rep, err
			}
			r.Hoist = p
			errs = append(errs, p.check())
		}
		if r.Hoist != nil && r.Ceiling != nil && r.Ceiling.ReqPerSec > 0 {
			r.Ratio = r.Hoist.ReqPerSec / r.Ceiling.ReqPerSec
		}
		rep.Runs = append(rep.Runs, r)
	}
	rep.summarize()
	return rep, errors.Join(errs...)
}

func commandArgs(cfg *Config) []string {
	args := []string{"-scenario", cfg.Scenario}
	def := map[string]bool{"duration": cfg.Duration == 20*time.Second, "warmup": cfg.Warmup == 3*time.Second,
		"conns": cfg.Conns == 32, "servers": cfg.Servers == 10_000, "instances": cfg.Instances == 100, "repeats": cfg.Repeats == 3}
	for _, f := range []struct {
		name, value string
	}{{"duration", cfg.Duration.String()}, {"warmup", cfg.Warmup.String()}, {"conns", fmt.Sprint(cfg.Conns)},
		{"servers", fmt.Sprint(cfg.Servers)}, {"instances", fmt.Sprint(cfg.Instances)}, {"repeats", fmt.Sprint(cfg.Repeats)}} {
		if !def[f.name] {
			args = append(args, "-"+f.name, f.value)
		}
	}
	if cfg.Only != "" {
		args = append(args, "-only", cfg.Only)
	}
	if cfg.Client != transportNetHTTP {
		args = append(args, "-client", cfg.Client)
	}
	if cfg.Store != "journal" {
		args = append(args, "-store", cfg.Store)
	}
	if cfg.Replicas != 1 {
		args = append(args, "-replicas", fmt.Sprint(cfg.Replicas))
	}
	return args
}

// check reports errors seen under load: there must be none.
func (p *Phase) check() error {
	if len(p.Errors) == 0 {
		return nil
	}
	var parts []string
	for k, n := range p.Errors {
		parts = append(parts, fmt.Sprintf("%s x%d", k, n))
	}
	slices.Sort(parts)
	return fmt.Errorf("%s: errors under load: %s", p.Server, strings.Join(parts, ", "))
}

func ceilingPhase(ctx context.Context, cfg *Config) (*Phase, error) {
	srv, err := startCeiling()
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	c, err := newClient(srv.URL, cfg.Conns, loadCreds, cfg.Client)
	if err != nil {
		return nil, err
	}
	defer c.close()
	p, err := measure(ctx, cfg, []*client{c}, []*server{srv}, nil)
	if p != nil {
		p.Server = "ceiling"
	}
	return p, err
}

func hoistPhase(ctx context.Context, cfg *Config, bin string, n int, log io.Writer) (*Phase, error) {
	opts := hoistOptions{bin: bin, cred: loadCreds, parentDir: cfg.dataParent}
	if cfg.profileDir != "" {
		addr, err := hoisttest.FreeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		opts.pprofAddr = addr
	}
	if cfg.Store == "postgres" {
		url, drop, err := loadreport.NewSchema(ctx, cfg.databaseURL, "hoist_load")
		if err != nil {
			return nil, err
		}
		defer func() {
			if err := drop(); err != nil {
				fmt.Fprintln(log, "load:", err)
			}
		}()
		opts.extraArgs = []string{"--store", "postgres", "--database-url", url}
	}
	srvs, err := startReplicas(opts, cfg.Replicas)
	defer func() {
		for _, srv := range srvs {
			if err := srv.stop(); err != nil {
				fmt.Fprintln(log, "load:", err)
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	cs := make([]*client, len(srvs))
	for i, srv := range srvs {
		if cs[i], err = newClient(srv.URL, cfg.Conns, loadCreds, cfg.Client); err != nil {
			return nil, err
		}
		defer cs[i].close()
	}
	start := time.Now()
	if err := setupFleetIQ(ctx, cfg, cs); err != nil {
		return nil, fmt.Errorf("setup: %w\nhoist log:\n%s", err, logs(srvs))
	}
	setup := time.Since(start)
	var prof func(measureStart time.Time) func() error
	if cfg.profileDir != "" {
		prof = func(measureStart time.Time) func() error {
			return startProfiles(cfg, opts.pprofAddr, n, measureStart)
		}
	}
	p, err := measure(ctx, cfg, cs, srvs, prof)
	if err != nil {
		return nil, fmt.Errorf("%w\nhoist log:\n%s", err, logs(srvs))
	}
	p.Server, p.SetupSeconds = "hoist", setup.Seconds()
	return p, nil
}

// startReplicas starts n Hoists the same way (the first with opts'
// pprof listener), each with its own data directory; the servers it
// started are returned also with an error.
func startReplicas(opts hoistOptions, n int) ([]*server, error) {
	var srvs []*server
	for i := range n {
		o := opts
		if i > 0 {
			o.pprofAddr = ""
		}
		srv, err := startHoist(o)
		if err != nil {
			return srvs, err
		}
		srvs = append(srvs, srv)
	}
	return srvs, nil
}

// logs joins the servers' logs.
func logs(srvs []*server) string {
	var b strings.Builder
	for i, srv := range srvs {
		if len(srvs) > 1 {
			fmt.Fprintf(&b, "--- replica %d\n", i+1)
		}
		b.WriteString(srv.Log())
	}
	return b.String()
}

// startProfiles profiles Hoist (through its --pprof-addr) and this process
// for the measured window, from measureStart on. The returned function waits
// for both profiles to be written.
func startProfiles(cfg *Config, pprofAddr string, n int, measureStart time.Time) func() error {
	var wg sync.WaitGroup
	// Hoist's CPU profile and the allocations it made over the window (a
	// delta profile), side by side, and one second of its execution trace
	// from the middle of the window.
	secs := fmt.Sprintf("seconds=%d", max(1, int(cfg.Duration.Seconds())))
	file := func(format string) string { return filepath.Join(cfg.profileDir, fmt.Sprintf(format, n)) }
	var hoistErr, allocsErr, traceErr error
	wg.Go(func() {
		hoistErr = loadreport.FetchProfile(pprofAddr, "profile", secs, measureStart, file("hoist-cpu-run%d.pprof"))
	})
	wg.Go(func() {
		allocsErr = loadreport.FetchProfile(pprofAddr, "allocs", secs, measureStart, file("hoist-allocs-run%d.pprof"))
	})
	wg.Go(func() {
		traceErr = loadreport.FetchProfile(pprofAddr, "trace", "seconds=1", measureStart.Add(cfg.Duration/2), file("hoist-trace-run%d.out"))
	})
	var clientErr error
	wg.Go(func() {
		time.Sleep(time.Until(measureStart))
		f, err := os.Create(filepath.Join(cfg.profileDir, fmt.Sprintf("load-cpu-run%d.pprof", n)))
		if err != nil {
			clientErr = err
			return
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			clientErr = errors.Join(err, f.Close())
			return
		}
		time.Sleep(cfg.Duration)
		pprof.StopCPUProfile()
		clientErr = f.Close()
	})
	return func() error { wg.Wait(); return errors.Join(hoistErr, allocsErr, traceErr, clientErr) }
}

// setupFleetIQ creates the group, waits for it to be ACTIVE and registers
// the game servers from every connection (spread over the clients).
func setupFleetIQ(ctx context.Context, cfg *Config, cs []*client) error {
	k := cs[0].conn()
	defer k.close()
	err := k.call(ctx, "CreateGameServerGroup", map[string]any{
		"GameServerGroupName": loadGroup,
		"RoleArn":             "arn:aws:iam::123456789012:role/gamelift-fleetiq",
		"MinSize":             1,
		"MaxSize":             cfg.Instances,
		"LaunchTemplate":      map[string]string{"LaunchTemplateName": "load-template", "Version": "1"},
		"InstanceDefinitions": []map[string]string{{"InstanceType": "c5.large"}, {"InstanceType": "c5a.large"}},
	}, nil)
	if err != nil {
		return fmt.Errorf("CreateGameServerGroup: %w", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var out struct {
			GameServerGroup struct{ Status string }
		}
		if err := k.call(ctx, "DescribeGameServerGroup", map[string]string{"GameServerGroupName": loadGroup}, &out); err != nil {
			return fmt.Errorf("DescribeGameServerGroup: %w", err)
		}
		if out.GameServerGroup.Status == "ACTIVE" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("game server group still %s after 60s", out.GameServerGroup.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, cfg.Conns)
	for w := range cfg.Conns {
		wg.Go(func() {
			k := cs[w%len(cs)].conn()
			defer k.close()
			for i := next.Add(1) - 1; i < int64(cfg.Servers); i = next.Add(1) - 1 {
				err := k.call(ctx, "RegisterGameServer", map[string]string{
					"GameServerGroupName": loadGroup,
					"GameServerId":        fmt.Sprintf("gs-%06d", i),
					"InstanceId":          fmt.Sprintf("i-%017d", int(i)%cfg.Instances),
					"ConnectionInfo":      "192.0.2.1:7777",
				}, nil)
				if err != nil {
					errc <- fmt.Errorf("RegisterGameServer gs-%06d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// Operations of the loop.
const (
	opClaim  = "ClaimGameServer"
	opUpdate = "UpdateGameServer"
)

// workerResult is what one worker saw in the measured window.
type workerResult struct {
	claims, updates []time.Duration
	errors          map[string]int
}

func (r *workerResult) fail(op string, err error) {
	code := "transport"
	var ae *apiError
	if errors.As(err, &ae) {
		code = ae.Code
	} else if errors.Is(err, errNoID) || errors.Is(err, errBadAnswer) {
		code = err.Error()
	}
	r.errors[op+": "+code]++
}

var errBadAnswer = errors.New("the answer does not carry the new UtilizationStatus")

var (
	utilizedAnswer  = []byte(`"UtilizationStatus":"UTILIZED"`)
	availableAnswer = []byte(`"UtilizationStatus":"AVAILABLE"`)
)

// measure runs the claim loop from every connection for the warm-up and
// the measured duration and summarizes the measured part. prof, when set,
// is started with the measured window's start.
func measure(ctx context.Context, cfg *Config, cs []*client, srvs []*server, prof func(time.Time) func() error) (*Phase, error) {
	start := time.Now()
	mStart := start.Add(cfg.Warmup)
	mEnd := mStart.Add(cfg.Duration)
	var waitProf func() error
	if prof != nil {
		waitProf = prof(mStart)
	}
	results := make([]*workerResult, cfg.Conns)
	var wg sync.WaitGroup
	for w := range cfg.Conns {
		res := &workerResult{errors: map[string]int{},
			claims:  make([]time.Duration, 0, 1<<14),
			updates: make([]time.Duration, 0, 1<<15)}
		results[w] = res
		wg.Go(func() {
			k := cs[w%len(cs)].conn()
			defer k.close()
			loop(ctx, k, res, mStart, mEnd)
		})
	}
	// CPU use over the measured window.
	var cpu CPUUse
	wg.Go(func() {
		time.Sleep(time.Until(mStart))
		pids := []int{os.Getpid()}
		for _, srv := range srvs {
			pids = append(pids, srv.PID())
		}
		a := sampleCPU(pids...)
		t0 := time.Now()
		time.Sleep(time.Until(mEnd))
		b := sampleCPU(pids...)
		cpu = cpuUse(a, b, time.Since(t0).Seconds())
	})
	wg.Wait()
	if waitProf != nil {
		if err := waitProf(); err != nil {
			return nil, fmt.Errorf("profiles: %w", err)
		}
	}
	p := &Phase{Seconds: cfg.Duration.Seconds(), Ops: map[string]loadreport.OpStats{}, Errors: map[string]int{}, CPU: cpu}
	var claims, updates []time.Duration
	for _, r := range results {
		claims = append(claims, r.claims...)
		updates = append(updates, r.updates...)
		for k, n := range r.errors {
			p.Errors[k] += n
		}
	}
	errCount := 0
	for _, n := range p.Errors {
		errCount += n
	}
	if len(p.Errors) == 0 {
		p.Errors = nil
	}
	p.Claims = len(claims)
	p.Requests = len(claims) + len(updates) + errCount
	p.ReqPerSec = float64(p.Requests) / p.Seconds
	p.ClaimsPerSec = float64(p.Claims) / p.Seconds
	p.Ops[opClaim] = loadreport.Stats(claims)
	p.Ops[opUpdate] = loadreport.Stats(updates)
	p.Ops["all"] = loadreport.Stats(append(claims, updates...))
	if p.Requests > 0 {
		p.ServerCPUPerRequest = cpu.Server * p.Seconds / float64(p.Requests) * 1e6
		p.ClientCPUPerRequest = cpu.Client * p.Seconds / float64(p.Requests) * 1e6
	}
	return p, nil
}

// loop is one worker: claim -> UTILIZED -> AVAILABLE until mEnd, recording
// the requests that start within [mStart, mEnd). A cycle under way at mEnd
// is finished (unrecorded) so the game server is AVAILABLE again.
func loop(ctx context.Context, k *conn, res *workerResult, mStart, mEnd time.Time) {
	for {
		t0 := time.Now()
		if !t0.Before(mEnd) {
			return
		}
		rec := !t0.Before(mStart)
		resp, err := k.do(ctx, opClaim, k.claimBody(loadGroup))
		var id string
		if err == nil {
			id, err = gameServerID(resp)
		}
		if err != nil {
			if rec {
				res.fail(opClaim, err)
			}
			continue
		}
		if rec {
			res.claims = append(res.claims, time.Since(t0))
		}
		for _, st := range [...]struct {
			status string
			want   []byte
		}{{"UTILIZED", utilizedAnswer}, {"AVAILABLE", availableAnswer}} {
			t := time.Now()
			rec := !t.Before(mStart) && t.Before(mEnd)
			resp, err := k.do(ctx, opUpdate, k.updateBody(loadGroup, id, st.status))
			if err == nil && !containsBytes(resp, st.want) {
				err = errBadAnswer
			}
			if err != nil {
				if rec {
					res.fail(opUpdate, err)
				}
				break
			}
			if rec {
				res.updates = append(res.updates, time.Since(t))
			}
		}
	}
}

func containsBytes(b, sub []byte) bool {
	return strings.Contains(string(b), string(sub)) // no copy: the compiler elides the conversions
}

func (rep *Report) summarize() {
	var h, hc, hp50, hp99, ha50, ha99, hcpu, c, cp50, cp99, ccpu, ratios, other []float64
	for _, r := range rep.Runs {
		if p := r.Hoist; p != nil {
			h = append(h, p.ReqPerSec)
			hc = append(hc, p.ClaimsPerSec)
			hp50 = append(hp50, p.Ops[opClaim].P50)
			hp99 = append(hp99, p.Ops[opClaim].P99)
			ha50 = append(ha50, p.Ops["all"].P50)
			ha99 = append(ha99, p.Ops["all"].P99)
			hcpu = append(hcpu, p.ServerCPUPerRequest)
			other = append(other, p.CPU.Other)
		}
		if p := r.Ceiling; p != nil {
			c = append(c, p.ReqPerSec)
			cp50 = append(cp50, p.Ops["all"].P50)
			cp99 = append(cp99, p.Ops["all"].P99)
			ccpu = append(ccpu, p.ServerCPUPerRequest)
			other = append(other, p.CPU.Other)
		}
		if r.Ratio > 0 {
			ratios = append(ratios, r.Ratio)
		}
	}
	m := Summary{HoistReqPerSec: loadreport.Median(h), HoistClaimsPerSec: loadreport.Median(hc), HoistClaimP50: loadreport.Median(hp50),
		HoistClaimP99: loadreport.Median(hp99), HoistP50: loadreport.Median(ha50), HoistP99: loadreport.Median(ha99), HoistCPUPerReq: loadreport.Median(hcpu),
		CeilingReqPerSec: loadreport.Median(c), CeilingP50: loadreport.Median(cp50), CeilingP99: loadreport.Median(cp99), CeilingCPUPerReq: loadreport.Median(ccpu),
		RatioMedian: loadreport.Median(ratios), OtherCores: loadreport.Median(other)}
	if m.CeilingReqPerSec > 0 {
		m.Ratio = m.HoistReqPerSec / m.CeilingReqPerSec
	}
	rep.Median = m
}

func (rep *Report) Print(w io.Writer) {
	cfg := rep.Config
	fmt.Fprintf(w, "\nscenario %s: %d game servers on %d instances, %d connections (%s client), %s measured per run after %s warm-up, %s\n",
		cfg.Scenario, cfg.Servers, cfg.Instances, cfg.Conns, cfg.Client, cfg.Duration, cfg.Warmup, loadreport.Plural(cfg.Repeats, "run"))
	fmt.Fprintf(w, "%s\n\n", rep.Machine)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tserver\treq/s\tclaims/s\tclaim p50 ms\tclaim p99 ms\tall p50 ms\tall p99 ms\terrors\tserver µs/req\tclient µs/req\tother cores\tratio\t")
	for i, r := range rep.Runs {
		for _, p := range []*Phase{r.Ceiling, r.Hoist} {
			if p == nil {
				continue
			}
			errs := 0
			for _, n := range p.Errors {
				errs += n
			}
			ratio := ""
			if p == r.Hoist && r.Ratio > 0 {
				ratio = fmt.Sprintf("%.2f", r.Ratio)
			}
			fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%.0f\t%.0f\t%.2f\t%s\t\n", i+1, p.Server,
				p.ReqPerSec, p.ClaimsPerSec, p.Ops[opClaim].P50, p.Ops[opClaim].P99, p.Ops["all"].P50, p.Ops["all"].P99,
				errs, p.ServerCPUPerRequest, p.ClientCPUPerRequest, p.CPU.Other, ratio)
		}
	}
	tw.Flush()
	s := rep.Median
	fmt.Fprintf(w, "\nmedians of %s:\n", loadreport.Plural(len(rep.Runs), "run"))
	if s.CeilingReqPerSec > 0 {
		fmt.Fprintf(w, "  ceiling: %.0f req/s, p50 %.2f ms, p99 %.2f ms, %.0f µs server CPU/req\n",
			s.CeilingReqPerSec, s.CeilingP50, s.CeilingP99, s.CeilingCPUPerReq)
	}
	if s.HoistReqPerSec > 0 {
		fmt.Fprintf(w, "  hoist:   %.0f req/s, %.0f claims/s, claim p50 %.2f ms, claim p99 %.2f ms (all requests p50 %.2f, p99 %.2f), %.0f µs server CPU/req\n",
			s.HoistReqPerSec, s.HoistClaimsPerSec, s.HoistClaimP50, s.HoistClaimP99, s.HoistP50, s.HoistP99, s.HoistCPUPerReq)
	}
	if s.Ratio > 0 {
		fmt.Fprintf(w, "  ratio hoist/ceiling: %.2f (median of the runs' ratios %.2f); other processes used %.2f cores\n",
			s.Ratio, s.RatioMedian, s.OtherCores)
	}
}
