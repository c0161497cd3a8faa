//go:build linux

// Command matchload measures FlexMatch end to end through the real API: it
// starts the real Hoist binary (with credentials, so every SigV4 signature
// is verified; a new data directory; loopback ports), or uses -endpoint,
// creates a 5v5 rule set (a skill distance rule, a latency rule and one
// expansion) and a STANDALONE matchmaking configuration without
// acceptance, then -clients concurrent aws-sdk-go-v2 clients send
// StartMatchmaking for -tickets single-player tickets (random skill and
// latencies, the same for a given -seed) and poll DescribeMatchmaking (10
// ticket IDs a call) until every ticket has ended (COMPLETED, TIMED_OUT,
// CANCELLED or FAILED). See docs/performance.md.
//
//	go run ./e2e/matchload [-tickets 10000] [-clients 32] [-request-timeout 30s] [-json out.json] [-profile cpu.pprof]
//	go run ./e2e/matchload -store postgres [-database-url URL] [-replicas 3]
//
// With -store postgres it starts -replicas Hoists on one new schema of the
// database (-database-url, else $HOIST_DATABASE_URL; empty: the PG*
// variables), the clients spread over them (client k calls replica k mod
// -replicas); Hoist's CPU and memory are then the replicas' sum.
//
// It reports the matched tickets per second (from the first
// StartMatchmaking to the last ticket's completion, and for the tickets
// matched within the expansion's 10 s), the share matched,
// the matchable tickets (the matched ones and those the brute-force check
// flexbench.Placeable finds a valid match for among the unmatched, at the
// expanded skill band) and their wait (StartTime to EndTime as Hoist
// records them, a matchable ticket left unmatched counting with the whole
// request timeout; and StartTime to the moment a poll first saw
// COMPLETED), the calls' latencies, and Hoist's CPU and memory.
//
// The rule set (-rule-set, else the matcher benchmark's
// flexbench.RuleSet: 5v5, a skill batchDistance rule widened by one
// expansion, a latency rule) and the players (flexbench.Players, the same
// for a given -seed) are those of the matcher's benchmarks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/sysinfo"
	"github.com/hoistgg/hoist/internal/flexmatch/flexbench"
)

func main() {
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	hoisttest.RemoveBuilds() // the Hoist it built, when not given -hoist
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) int {
	return loadreport.Run("matchload", args, stdout, stderr, parseFlags, scenario)
}

// Config is one invocation's settings.
type Config struct {
	Tickets        int           `json:"tickets"`
	Clients        int           `json:"clients"`
	Seed           uint64        `json:"seed"`
	RequestTimeout time.Duration `json:"-"`
	Timeout        time.Duration `json:"-"`
	PollInterval   time.Duration `json:"-"`
	Endpoint       string        `json:"endpoint,omitempty"`
	// Store is the started Hoists' --store (journal or postgres),
	// Replicas how many share it (postgres only).
	Store    string `json:"store"`
	Replicas int    `json:"replicas"`
	// Seconds mirror the durations in the JSON output.
	RequestTimeoutS float64 `json:"request_timeout_s"`
	PollIntervalMS  float64 `json:"poll_interval_ms"`

	ruleSetPath    string
	profile        string
	profileSeconds int
	heapProfile    string
	hoistBin       string
	dataParent     string
	databaseURL    string // never reported: it may hold a password
	akid           string
	secret         string
}

func parseFlags(args []string, stderr io.Writer) (*Config, string, error) {
	c := &Config{}
	var jsonPath string
	fs := flag.NewFlagSet("matchload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.Tickets, "tickets", 10_000, "single-player tickets to submit")
	fs.IntVar(&c.Clients, "clients", 32, "concurrent aws-sdk-go-v2 clients, each submitting and polling its share of the tickets")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the generated players")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 30*time.Second, "the configuration's RequestTimeoutSeconds (whole seconds): unmatched tickets end then")
	fs.DurationVar(&c.Timeout, "timeout", 0, "give up when not every ticket has ended by then (default: the request timeout plus 2 minutes)")
	fs.DurationVar(&c.PollInterval, "poll-interval", 100*time.Millisecond, "pause between two sweeps of a client's DescribeMatchmaking polls")
	fs.StringVar(&c.ruleSetPath, "rule-set", "", "the rule set file (default: the matcher benchmark's, internal/flexmatch/flexbench/bench-5v5.json; the matchable figures assume its bands)")
	fs.StringVar(&c.Endpoint, "endpoint", "", "a running Hoist's URL (default: start one); CPU and memory are then not reported")
	fs.StringVar(&c.akid, "access-key-id", "", "with -endpoint: the access key ($AWS_ACCESS_KEY_ID, else the e2e tests' key)")
	fs.StringVar(&c.secret, "secret-access-key", "", "with -endpoint: the secret key ($AWS_SECRET_ACCESS_KEY, else the e2e tests' key)")
	fs.StringVar(&c.profile, "profile", "", "write a CPU profile of Hoist (via --pprof-addr) of the first -profile-seconds from the first StartMatchmaking to this file (with several replicas, one a replica: FILE-replicaN.EXT)")
	fs.IntVar(&c.profileSeconds, "profile-seconds", 5, "the length of the -profile")
	fs.StringVar(&c.heapProfile, "heap-profile", "", "once every ticket has ended, write a heap profile of Hoist (via --pprof-addr, after a collection: the ended tickets Hoist retains) to this file and report Hoist's live heap")
	fs.StringVar(&c.hoistBin, "hoist", "", "a Hoist binary to run (default: go build ./cmd/hoist)")
	fs.StringVar(&c.dataParent, "data-parent", "", "directory for Hoist's temporary data directory (default: the system's temp dir)")
	fs.StringVar(&c.Store, "store", "journal", "the started Hoist's store: journal (the default store) or postgres (a new schema of -database-url's database)")
	fs.StringVar(&c.databaseURL, "database-url", os.Getenv("HOIST_DATABASE_URL"), "with -store postgres: the database (default $HOIST_DATABASE_URL; empty: the PG* variables)")
	fs.IntVar(&c.Replicas, "replicas", 1, "with -store postgres: Hoist replicas sharing the database, the clients spread over them")
	fs.StringVar(&jsonPath, "json", "", "also write the results as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return nil, "", err
	}
	switch {
	case fs.NArg() > 0:
		return nil, "", fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.Tickets < 1:
		return nil, "", errors.New("-tickets must be positive")
	case c.Clients < 1:
		return nil, "", errors.New("-clients must be positive")
	case c.RequestTimeout < time.Second || c.RequestTimeout > 43200*time.Second || c.RequestTimeout%time.Second != 0:
		return nil, "", errors.New("-request-timeout: whole seconds from 1s to 12h")
	case c.PollInterval < 0 || c.Timeout < 0:
		return nil, "", errors.New("-poll-interval and -timeout cannot be negative")
	case c.profile != "" && (c.Endpoint != "" || c.profileSeconds < 1):
		return nil, "", errors.New("-profile needs a Hoist this tool starts (no -endpoint) and a positive -profile-seconds")
	case c.heapProfile != "" && c.Endpoint != "":
		return nil, "", errors.New("-heap-profile needs a Hoist this tool starts (no -endpoint)")
	case c.Store != "journal" && c.Store != "postgres":
		return nil, "", fmt.Errorf("-store: want journal or postgres, got %q", c.Store)
	case c.Replicas < 1 || (c.Replicas > 1 && (c.Store != "postgres" || c.Endpoint != "")):
		return nil, "", errors.New("-replicas: at least 1, and more than 1 only with -store postgres and no -endpoint")
	}
	if c.Timeout == 0 {
		c.Timeout = c.RequestTimeout + 2*time.Minute
	}
	if c.akid == "" {
		c.akid = firstNonEmpty(os.Getenv("AWS_ACCESS_KEY_ID"), hoisttest.AccessKeyID)
	}
	if c.secret == "" {
		c.secret = firstNonEmpty(os.Getenv("AWS_SECRET_ACCESS_KEY"), hoisttest.SecretAccessKey)
	}
	c.RequestTimeoutS, c.PollIntervalMS = c.RequestTimeout.Seconds(), float64(c.PollInterval)/1e6
	return c, jsonPath, nil
}

// firstNonEmpty returns the first of its arguments that is not empty.
func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// Report is a run's result.
type Report struct {
	Machine sysinfo.Machine `json:"machine"`
	Config  *Config         `json:"config"`
	// RuleSet says where the rule set came from.
	RuleSet string `json:"rule_set"`

	Submitted int `json:"submitted"`
	// SubmitSeconds is from the first StartMatchmaking to the last answer.
	SubmitSeconds float64 `json:"submit_s"`
	SubmitRate    float64 `json:"submitted_per_s"`

	Completed int `json:"completed"`
	TimedOut  int `json:"timed_out"`
	Cancelled int `json:"cancelled"`
	Failed    int `json:"failed"`
	// Unended tickets had not ended when the run gave up.
	Unended    int     `json:"unended"`
	MatchedPct float64 `json:"matched_pct"`
	// Matchable counts the completed tickets and the unmatched ones that
	// flexbench.Placeable could place at the expanded band (Missed).
	Matchable int `json:"matchable"`
	Missed    int `json:"matchable_unmatched"`
	// MatchedSeconds is from the first StartMatchmaking to the last
	// ticket's completion (its EndTime); MatchedRate is the completed
	// tickets per second over it.
	MatchedSeconds float64 `json:"all_matched_s"`
	MatchedRate    float64 `json:"matched_per_s"`
	// Early counts the tickets completed within flexbench.ExpansionAfter
	// of their StartTime (before the benchmark rule set's expansion could
	// apply to them), EarlySeconds is from the first StartMatchmaking to
	// the last of their completions and EarlyRate is Early over it;
	// ExpandedPct is the share of the matchable tickets that waited
	// longer.
	// Seconds95 is from the first StartMatchmaking until 95% of the
	// submitted tickets had completed (their EndTime; zero when fewer
	// did), and Rate95 is those 95% per second over it: the issue's
	// "tickets/s over 10,000 tickets with 95% or more matched".
	Seconds95    float64 `json:"matched_95pct_s"`
	Rate95       float64 `json:"matched_95pct_per_s"`
	Early        int     `json:"early"`
	EarlySeconds float64 `json:"early_matched_s"`
	EarlyRate    float64 `json:"early_matched_per_s"`
	ExpandedPct  float64 `json:"expanded_pct"`
	// Wait is StartTime to EndTime of the completed tickets; ObservedWait
	// StartTime to the moment a poll first saw COMPLETED. MatchableWait is
	// Wait with every missed ticket counted as waiting the request timeout.
	Wait          loadreport.OpStats `json:"wait"`
	MatchableWait loadreport.OpStats `json:"matchable_wait"`
	ObservedWait  loadreport.OpStats `json:"observed_wait"`
	StartCall     loadreport.OpStats `json:"start_matchmaking"`
	DescribeCall  loadreport.OpStats `json:"describe_matchmaking"`

	// Hoist's CPU in cores, and this program's, from the first
	// StartMatchmaking to the last completion (not over the wait for the
	// unmatched tickets to time out); Hoist's memory at the end and its
	// peak. Hoist's are zero with -endpoint.
	HoistCores      float64 `json:"hoist_cores"`
	LoadCores       float64 `json:"load_program_cores"`
	HoistRSSMiB     float64 `json:"hoist_rss_mib"`
	HoistPeakRSSMiB float64 `json:"hoist_peak_rss_mib"`
	// HoistLiveMiB is Hoist's live heap once every ticket has ended,
	// after a collection (the runtime's HeapAlloc as the heap profile of
	// -heap-profile reports it), and LiveBytesPerTicket it over the
	// submitted tickets; zero without -heap-profile.
	HoistLiveMiB       float64 `json:"hoist_live_heap_mib,omitempty"`
	LiveBytesPerTicket float64 `json:"live_heap_bytes_per_ticket,omitempty"`
}

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "matchload: %d tickets from %d clients, STANDALONE, request timeout %v, rule set %s\n", c.Tickets, c.Clients, c.RequestTimeout, r.RuleSet)
	if c.Endpoint == "" {
		fmt.Fprintf(w, "hoist: %s store, %s\n", c.Store, loadreport.Plural(c.Replicas, "replica"))
	}
	fmt.Fprintf(w, "machine: %d CPUs (%s), %s GiB, %s\n", r.Machine.CPUs, r.Machine.CPUModel, r.Machine.MemoryGiB, r.Machine.Go)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "submitted\t%d in %.2f s (%.0f/s)\n", r.Submitted, r.SubmitSeconds, r.SubmitRate)
	fmt.Fprintf(tw, "ended\t%d completed (%.1f%%), %d timed out, %d cancelled, %d failed, %d not ended\n", r.Completed, r.MatchedPct, r.TimedOut, r.Cancelled, r.Failed, r.Unended)
	fmt.Fprintf(tw, "matchable\t%d (%d of them not matched); %.1f%% waited %v or more\n", r.Matchable, r.Missed, r.ExpandedPct, flexbench.ExpansionAfter)
	fmt.Fprintf(tw, "matched within %v\t%d tickets, %.0f tickets/s: all within %.2f s of the first submission\n", flexbench.ExpansionAfter, r.Early, r.EarlyRate, r.EarlySeconds)
	if r.Seconds95 > 0 {
		fmt.Fprintf(tw, "95%% matched\t%.0f tickets/s: 95%% of the tickets completed within %.2f s of the first submission\n", r.Rate95, r.Seconds95)
	} else {
		fmt.Fprintf(tw, "95%% matched\tnever: fewer than 95%% of the tickets completed\n")
	}
	fmt.Fprintf(tw, "matched\t%.0f tickets/s: every completed ticket within %.2f s of the first submission\n", r.MatchedRate, r.MatchedSeconds)
	fmt.Fprintf(tw, "wait (StartTime to EndTime)\tp50 %.0f ms  p90 %.0f ms  p99 %.0f ms  max %.0f ms\n", r.Wait.P50, r.Wait.P90, r.Wait.P99, r.Wait.Max)
	fmt.Fprintf(tw, "wait of matchable tickets\tp50 %.0f ms  p90 %.0f ms  p99 %.0f ms  max %.0f ms\n", r.MatchableWait.P50, r.MatchableWait.P90, r.MatchableWait.P99, r.MatchableWait.Max)
	fmt.Fprintf(tw, "wait as observed by polling\tp50 %.0f ms  p90 %.0f ms  p99 %.0f ms  max %.0f ms\n", r.ObservedWait.P50, r.ObservedWait.P90, r.ObservedWait.P99, r.ObservedWait.Max)
	fmt.Fprintf(tw, "StartMatchmaking\t%d calls: p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", r.StartCall.Count, r.StartCall.P50, r.StartCall.P99, r.StartCall.Max)
	fmt.Fprintf(tw, "DescribeMatchmaking\t%d calls: p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", r.DescribeCall.Count, r.DescribeCall.P50, r.DescribeCall.P99, r.DescribeCall.Max)
	if c.Endpoint == "" {
		fmt.Fprintf(tw, "hoist\t%.2f cores until the last match, %.0f MiB RSS at the end (peak %.0f MiB); this program %.2f cores\n", r.HoistCores, r.HoistRSSMiB, r.HoistPeakRSSMiB, r.LoadCores)
	}
	if r.HoistLiveMiB > 0 {
		fmt.Fprintf(tw, "hoist live heap\t%.1f MiB once every ticket had ended, %.0f B per ticket\n", r.HoistLiveMiB, r.LiveBytesPerTicket)
	}
	tw.Flush()
}

// ticketResult is what became of one ticket.
type ticketResult struct {
	status     types.MatchmakingConfigurationStatus
	start, end time.Time // Hoist's StartTime and EndTime
	seen       time.Time // when a poll first saw it ended
}

func scenario(ctx context.Context, cfg *Config, log io.Writer) (*Report, error) {
	rep := &Report{Config: cfg, Machine: sysinfo.DescribeMachine(cfg.dataParent)}
	body, source, err := ruleSet(cfg.ruleSetPath)
	if err != nil {
		return nil, err
	}
	rep.RuleSet = source

	urls, pids, pprofAddrs := []string{cfg.Endpoint}, []int(nil), []string(nil)
	if cfg.Endpoint == "" {
		if cfg.profile != "" || cfg.heapProfile != "" {
			for range cfg.Replicas {
				addr, err := hoisttest.FreeLoopbackAddr()
				if err != nil {
					return nil, err
				}
				pprofAddrs = append(pprofAddrs, addr)
			}
		}
		hs, stop, err := startReplicas(ctx, cfg, pprofAddrs)
		defer stop()
		if err != nil {
			return nil, err
		}
		urls = nil
		for _, h := range hs {
			urls, pids = append(urls, h.URL), append(pids, h.PID())
		}
	}
	clients := make([]*gl.Client, cfg.Clients)
	for i := range clients {
		clients[i] = hoisttest.NewV2(urls[i%len(urls)], cfg.akid, cfg.secret)
	}
	suffix := fmt.Sprintf("%d", time.Now().UnixNano()) // a run against -endpoint may follow another
	ruleSetName, configName := "matchload-rules-"+suffix, "matchload-"+suffix
	if _, err := clients[0].CreateMatchmakingRuleSet(ctx, &gl.CreateMatchmakingRuleSetInput{
		Name: aws.String(ruleSetName), RuleSetBody: aws.String(string(body))}); err != nil {
		return nil, fmt.Errorf("CreateMatchmakingRuleSet: %w", err)
	}
	if _, err := clients[0].CreateMatchmakingConfiguration(ctx, &gl.CreateMatchmakingConfigurationInput{
		Name: aws.String(configName), RuleSetName: aws.String(ruleSetName), FlexMatchMode: types.FlexMatchModeStandalone,
		AcceptanceRequired: aws.Bool(false), RequestTimeoutSeconds: aws.Int32(int32(cfg.RequestTimeout / time.Second))}); err != nil {
		return nil, fmt.Errorf("CreateMatchmakingConfiguration: %w", err)
	}
	players := flexbench.Players(cfg.Tickets, cfg.Seed)
	fmt.Fprintf(log, "matchload: rule set %s, configuration %s; submitting %d tickets\n", source, configName, cfg.Tickets)
	apis := make([]matchAPI, len(clients))
	for i, c := range clients {
		apis[i] = c
	}
	profiled := make(chan error, 1)
	if cfg.profile != "" {
		go func() { profiled <- profileReplicas(pprofAddrs, cfg.profileSeconds, cfg.profile) }()
	} else {
		profiled <- nil
	}
	err = measure(ctx, rep, apis, configName, players, pids)
	if perr := <-profiled; perr != nil {
		err = errors.Join(err, fmt.Errorf("profile: %w", perr))
	}
	if err == nil && cfg.heapProfile != "" {
		if herr := heapProfile(pprofAddrs[0], cfg.heapProfile, rep); herr != nil {
			err = fmt.Errorf("heap profile: %w", herr)
		}
	}
	return rep, err
}

// matchAPI is the part of the GameLift client measure uses (tests use a
// fake).
type matchAPI interface {
	StartMatchmaking(context.Context, *gl.StartMatchmakingInput, ...func(*gl.Options)) (*gl.StartMatchmakingOutput, error)
	DescribeMatchmaking(context.Context, *gl.DescribeMatchmakingInput, ...func(*gl.Options)) (*gl.DescribeMatchmakingOutput, error)
}

// measure submits a ticket for each player, spread over the clients, polls
// until every ticket has ended, and fills in rep. pids are Hoist's
// processes (none: unknown, no CPU or memory figures).
func measure(ctx context.Context, rep *Report, clients []matchAPI, configName string, players []flexbench.Player, pids []int) error {
	cfg := rep.Config
	stopSampling := make(chan struct{})
	samples := make(chan []cpuSample, 1)
	go func() { samples <- sampleCPU(pids, stopSampling) }()
	deadline := time.Now().Add(cfg.Timeout)
	results := make([]ticketResult, len(players))
	shards := make([]*shard, len(clients))
	var wg sync.WaitGroup
	t0 := time.Now()
	for k := range shards {
		s := &shard{}
		shards[k] = s
		wg.Go(func() { s.submit(ctx, clients[k], configName, players, k, len(clients)) })
		wg.Go(func() { s.poll(ctx, clients[k], results, cfg.PollInterval, deadline) })
	}
	wg.Wait()
	close(stopSampling)
	cpu := <-samples

	var submitEnd time.Time
	var errs []error
	for _, s := range shards {
		rep.Submitted += s.submitted
		rep.StartCall.Count += len(s.startLat)
		if s.submitEnd.After(submitEnd) {
			submitEnd = s.submitEnd
		}
		errs = append(errs, s.err)
	}
	rep.SubmitSeconds = submitEnd.Sub(t0).Seconds()
	if rep.SubmitSeconds > 0 {
		rep.SubmitRate = float64(rep.Submitted) / rep.SubmitSeconds
	}
	var startLat, descLat, waits, observed []time.Duration
	for _, s := range shards {
		startLat, descLat = append(startLat, s.startLat...), append(descLat, s.describeLat...)
	}
	rep.StartCall, rep.DescribeCall = loadreport.Stats(startLat), loadreport.Stats(descLat)
	var lastEnd time.Time
	var ends []time.Time
	var unmatched []flexbench.Player
	for i, r := range results {
		if r.status != types.MatchmakingConfigurationStatusCompleted {
			unmatched = append(unmatched, players[i])
		}
		switch r.status {
		case types.MatchmakingConfigurationStatusCompleted:
			rep.Completed++
			end := r.end
			if end.IsZero() {
				end = r.seen
			}
			waits, observed = append(waits, end.Sub(r.start)), append(observed, r.seen.Sub(r.start))
			ends = append(ends, end)
			if end.Sub(r.start) < flexbench.ExpansionAfter {
				rep.Early++
				rep.EarlySeconds = max(rep.EarlySeconds, end.Sub(t0).Seconds())
			}
			if end.After(lastEnd) {
				lastEnd = end
			}
		case types.MatchmakingConfigurationStatusTimedOut:
			rep.TimedOut++
		case types.MatchmakingConfigurationStatusCancelled:
			rep.Cancelled++
		case types.MatchmakingConfigurationStatusFailed:
			rep.Failed++
		default:
			rep.Unended++
		}
	}
	rep.MatchedPct = 100 * float64(rep.Completed) / float64(len(players))
	rep.Seconds95, rep.Rate95 = rate95(ends, len(players), t0)
	rep.Missed = len(flexbench.Placeable(unmatched, flexbench.FinalDistance))
	rep.Matchable = rep.Completed + rep.Missed
	matchable := slices.Clone(waits)
	for range rep.Missed {
		matchable = append(matchable, cfg.RequestTimeout)
	}
	if rep.Matchable > 0 {
		rep.ExpandedPct = 100 * float64(rep.Matchable-rep.Early) / float64(rep.Matchable)
	}
	if rep.EarlySeconds > 0 {
		rep.EarlyRate = float64(rep.Early) / rep.EarlySeconds
	}
	rep.Wait, rep.ObservedWait, rep.MatchableWait = loadreport.Stats(waits), loadreport.Stats(observed), loadreport.Stats(matchable)
	if !lastEnd.IsZero() {
		rep.MatchedSeconds = lastEnd.Sub(t0).Seconds()
		rep.MatchedRate = float64(rep.Completed) / rep.MatchedSeconds
	}
	// CPU over the matching window: from the first sample to the first
	// one at or after the last completion (the wait for unmatched tickets
	// to time out is idle), else to the last sample.
	if len(cpu) > 1 {
		a, b := cpu[0], cpu[len(cpu)-1]
		if !lastEnd.IsZero() {
			if k := slices.IndexFunc(cpu, func(c cpuSample) bool { return !c.at.Before(lastEnd) }); k > 0 {
				b = cpu[k]
			}
		}
		if sec := b.at.Sub(a.at).Seconds(); sec > 0 {
			rep.HoistCores = float64(b.hoist-a.hoist) / sysinfo.TicksPerSecond / sec
			rep.LoadCores = float64(b.self-a.self) / sysinfo.TicksPerSecond / sec
		}
	}
	for _, pid := range pids {
		rss, _ := sysinfo.Memory(pid)
		rep.HoistRSSMiB += float64(rss) / 1024
		rep.HoistPeakRSSMiB += float64(sysinfo.PeakRSS(pid)) / 1024
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if rep.Unended > 0 {
		return fmt.Errorf("%d tickets had not ended after %v", rep.Unended, cfg.Timeout)
	}
	return nil
}

// cpuSample is a reading of Hoist's and this program's CPU time.
type cpuSample struct {
	at          time.Time
	hoist, self int64
}

// sampleCPU reads the CPU times (Hoist's: the sum of pids') now and every
// 100 ms until stop is closed, and once more then.
func sampleCPU(pids []int, stop <-chan struct{}) []cpuSample {
	read := func() cpuSample {
		s := cpuSample{at: time.Now(), self: cpuTicks(os.Getpid())}
		for _, pid := range pids {
			s.hoist += cpuTicks(pid)
		}
		return s
	}
	out := []cpuSample{read()}
	tick := time.NewTicker(100 * time.Millisecond) // a sampling schedule
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return append(out, read())
		case <-tick.C:
			out = append(out, read())
		}
	}
}

// cpuTicks is a process's CPU time in ticks (0 for pid 0).
func cpuTicks(pid int) int64 {
	if pid == 0 {
		return 0
	}
	st, _ := sysinfo.ReadStat(pid)
	return st.Ticks
}

// ruleSet returns the rule set body and where it came from.
func ruleSet(path string) ([]byte, string, error) {
	if path != "" {
		b, err := os.ReadFile(path)
		return b, path, err
	}
	return flexbench.RuleSet, "internal/flexmatch/flexbench/bench-5v5.json", nil
}

// player is a generated player as StartMatchmaking takes it.
func player(p flexbench.Player) types.Player {
	lat := make(map[string]int32, len(p.Latencies))
	for r, ms := range p.Latencies {
		lat[r] = int32(ms)
	}
	return types.Player{PlayerId: aws.String(p.ID), LatencyInMs: lat,
		PlayerAttributes: map[string]types.AttributeValue{"skill": {N: aws.Float64(p.Skill)}}}
}

// ticketID is the ID of ticket i (one per player).
func ticketID(i int) string { return fmt.Sprintf("matchload-%06d", i) }

// ticketIndex is the inverse of ticketID (-1 for another ID).
func ticketIndex(id string) int {
	var i int
	if n, err := fmt.Sscanf(id, "matchload-%06d", &i); n != 1 || err != nil || ticketID(i) != id {
		return -1
	}
	return i
}

// shard is one client's share of the tickets: i % clients == k.
type shard struct {
	mu sync.Mutex
	// pending are the submitted tickets not yet seen ended.
	pending []int
	done    bool // every ticket of the shard submitted (or submitting failed)

	submitted   int
	submitEnd   time.Time
	startLat    []time.Duration
	describeLat []time.Duration
	err         error
}

// submit sends StartMatchmaking for the shard's tickets, one after the
// other; polling starts with the first.
func (s *shard) submit(ctx context.Context, c matchAPI, config string, players []flexbench.Player, k, clients int) {
	defer func() {
		s.mu.Lock()
		s.done, s.submitEnd = true, time.Now()
		s.mu.Unlock()
	}()
	for i := k; i < len(players); i += clients {
		t := time.Now()
		_, err := c.StartMatchmaking(ctx, &gl.StartMatchmakingInput{ConfigurationName: aws.String(config),
			TicketId: aws.String(ticketID(i)), Players: []types.Player{player(players[i])}})
		s.startLat = append(s.startLat, time.Since(t))
		if err != nil {
			s.mu.Lock()
			s.err = fmt.Errorf("StartMatchmaking %s: %w", ticketID(i), err)
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.pending = append(s.pending, i)
		s.submitted++
		s.mu.Unlock()
	}
}

// poll describes the shard's pending tickets, 10 a call, sweep after
// sweep, until every submitted ticket has ended, submitting is over and
// failed, or the deadline passes.
func (s *shard) poll(ctx context.Context, c matchAPI, results []ticketResult, interval time.Duration, deadline time.Time) {
	for {
		s.mu.Lock()
		pending, done, failed := slices.Clone(s.pending), s.done, s.err != nil
		s.mu.Unlock()
		if done && (len(pending) == 0 || failed) || time.Now().After(deadline) {
			return
		}
		ended := map[int]bool{}
		for batch := range slices.Chunk(pending, 10) {
			ids := make([]string, len(batch))
			for j, i := range batch {
				ids[j] = ticketID(i)
			}
			t := time.Now()
			out, err := c.DescribeMatchmaking(ctx, &gl.DescribeMatchmakingInput{TicketIds: ids})
			now := time.Now()
			s.describeLat = append(s.describeLat, now.Sub(t))
			if err != nil {
				s.mu.Lock()
				s.err = errors.Join(s.err, fmt.Errorf("DescribeMatchmaking: %w", err))
				s.mu.Unlock()
				return
			}
			for _, tk := range out.TicketList {
				i := ticketIndex(aws.ToString(tk.TicketId))
				if i < 0 || !isEnded(tk.Status) {
					continue
				}
				ended[i] = true
				results[i] = ticketResult{status: tk.Status, start: aws.ToTime(tk.StartTime), end: aws.ToTime(tk.EndTime), seen: now}
			}
		}
		s.mu.Lock()
		s.pending = slices.DeleteFunc(s.pending, func(i int) bool { return ended[i] })
		s.mu.Unlock()
		time.Sleep(interval) // the polling pace, not a wait for a condition
	}
}

// isEnded reports whether a ticket status is final.
func isEnded(st types.MatchmakingConfigurationStatus) bool {
	switch st {
	case types.MatchmakingConfigurationStatusCompleted, types.MatchmakingConfigurationStatusTimedOut,
		types.MatchmakingConfigurationStatusCancelled, types.MatchmakingConfigurationStatusFailed:
		return true
	}
	return false
}

// hoistProc is the Hoist this tool started.
type hoistProc struct {
	*hoisttest.Process
	dir string
}

// startReplicas starts the Hoist of the run, or with -store postgres
// cfg.Replicas of them on a new schema (the first with extra, e.g. its
// pprof listener); stop stops those started and drops the schema.
// profileReplicas writes a CPU profile of each replica (pprofAddrs: their
// --pprof-addr) for the same seconds from now: to file with one replica,
// else to file with "-replicaN" before its extension.
func profileReplicas(pprofAddrs []string, seconds int, file string) error {
	start, query := time.Now(), fmt.Sprintf("seconds=%d", seconds)
	errs := make([]error, len(pprofAddrs))
	var wg sync.WaitGroup
	for i, addr := range pprofAddrs {
		name := file
		if len(pprofAddrs) > 1 {
			ext := filepath.Ext(file)
			name = fmt.Sprintf("%s-replica%d%s", strings.TrimSuffix(file, ext), i+1, ext)
		}
		wg.Go(func() { errs[i] = loadreport.FetchProfile(addr, "profile", query, start, name) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startReplicas starts cfg.Replicas Hoists; pprofAddrs, when not empty,
// gives each its --pprof-addr.
func startReplicas(ctx context.Context, cfg *Config, pprofAddrs []string) (hs []*hoistProc, stop func(), err error) {
	var drop func() error
	stop = func() {
		for _, h := range hs {
			h.stop()
		}
		if drop != nil {
			if err := drop(); err != nil {
				fmt.Fprintln(os.Stderr, "matchload:", err)
			}
		}
	}
	bin := cfg.hoistBin
	if bin == "" {
		if bin, err = hoisttest.BuildBinary(); err != nil {
			return nil, stop, err
		}
	}
	var extra []string
	if cfg.Store == "postgres" {
		var url string
		if url, drop, err = loadreport.NewSchema(ctx, cfg.databaseURL, "hoist_matchload"); err != nil {
			return nil, stop, err
		}
		extra = append(extra, "--store", "postgres", "--database-url", url)
	}
	for i := range cfg.Replicas {
		args := extra
		if i < len(pprofAddrs) {
			args = append(slices.Clone(extra), "--pprof-addr", pprofAddrs[i])
		}
		h, err := startHoist(bin, cfg.dataParent, args)
		if err != nil {
			return hs, stop, err
		}
		hs = append(hs, h)
	}
	return hs, stop, nil
}

// startHoist starts bin serve with extra arguments on a new data
// directory under dataParent.
func startHoist(bin, dataParent string, extra []string) (*hoistProc, error) {
	dir, err := os.MkdirTemp(dataParent, "hoist-matchload-")
	if err != nil {
		return nil, err
	}
	args := append(hoisttest.ServeArgs(filepath.Join(dir, "data"), false), "--local-hosting", "in-process")
	args = append(args, extra...)
	p, err := hoisttest.Launch("hoist", bin, args, hoisttest.CredentialsEnv(), dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &hoistProc{Process: p, dir: dir}, nil
}

// stop stops Hoist and removes its data.
func (h *hoistProc) stop() {
	if err := h.Stop(time.Minute); err != nil {
		fmt.Fprintln(os.Stderr, "matchload: stopping hoist:", err, "\n", strings.TrimSpace(h.LogTail(20)))
	}
	_ = os.RemoveAll(h.dir)
}

// rate95 is when 95% of n tickets had completed, counted from t0, given
// the completions' end times, and those tickets per second over it (both
// zero when fewer than 95% completed).
func rate95(ends []time.Time, n int, t0 time.Time) (seconds, perSecond float64) {
	k := (95*n + 99) / 100
	if k == 0 || len(ends) < k {
		return 0, 0
	}
	ends = slices.Clone(ends)
	slices.SortFunc(ends, time.Time.Compare)
	seconds = ends[k-1].Sub(t0).Seconds()
	if seconds <= 0 {
		return 0, 0
	}
	return seconds, float64(k) / seconds
}

// heapProfile writes Hoist's heap profile, taken after a collection, to
// file, and fills in the live heap from the runtime's figures in the
// profile's text form.
func heapProfile(addr, file string, rep *Report) error {
	if err := loadreport.FetchProfile(addr, "heap", "gc=1", time.Now(), file); err != nil {
		return err
	}
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/heap?gc=1&debug=1", addr))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	live, err := heapAlloc(body)
	if err != nil {
		return err
	}
	rep.HoistLiveMiB = float64(live) / (1 << 20)
	if rep.Submitted > 0 {
		rep.LiveBytesPerTicket = float64(live) / float64(rep.Submitted)
	}
	return nil
}

// heapAlloc finds the "# HeapAlloc = N" line of a heap profile's text
// form.
func heapAlloc(text []byte) (uint64, error) {
	for line := range strings.SplitSeq(string(text), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("heap profile: HeapAlloc %q: %w", v, err)
			}
			return n, nil
		}
	}
	return 0, errors.New("no HeapAlloc in the heap profile")
}
