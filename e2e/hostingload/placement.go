//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/smithy-go"

	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/internal/store"
)

// PlacementPhase is one measured burst of the placement scenario:
// Placements simulated processes, ready on an Anywhere compute, and as
// many placements started by Clients concurrent clients.
type PlacementPhase struct {
	Run        int `json:"run"`
	Clients    int `json:"clients"`
	Placements int `json:"placements"`
	// Seconds runs from the first StartGameSessionPlacement call to the
	// last placement fulfilled.
	Seconds float64 `json:"seconds"`
	// Fulfilled counts placements whose game session was activated.
	Fulfilled int     `json:"fulfilled"`
	PerSec    float64 `json:"fulfilled_per_s"`
	// StartToFulfilled is from the start of the StartGameSessionPlacement
	// call to the moment the chosen process, which activates the game
	// session CreateGameSession gave it at once, has the reply to
	// ActivateGameSession (after the activation and the placement's
	// FULFILLED have committed); StartCall is the call alone.
	StartToFulfilled loadreport.OpStats `json:"start_to_fulfilled"`
	StartCall        loadreport.OpStats `json:"start_call"`
	// NotFulfilled counts placements DescribeGameSessionPlacement did not
	// show FULFILLED afterwards.
	NotFulfilled int         `json:"not_fulfilled"`
	Errors       errorCounts `json:"errors,omitempty"`
	CPU          CPUUse      `json:"cpu"`
	// RoundTrips is the replicas' round trips to PostgreSQL from the
	// first start to the last placement fulfilled, per placement
	// fulfilled, their background work included (0: the embedded store).
	RoundTrips float64 `json:"round_trips_per_placement,omitempty"`
}

func (e *env) runPlacement(ctx context.Context, rep *Report) error {
	cfg := e.cfg
	var errs []error
	for run := 1; run <= cfg.Repeats; run++ {
		fmt.Fprintf(e.log, "hostingload: run %d/%d\n", run, cfg.Repeats)
		phases, err := e.placementRun(ctx, run)
		rep.Placement = append(rep.Placement, phases...)
		if err != nil {
			return err
		}
		for _, p := range phases {
			if n := p.Errors.total() + p.NotFulfilled; n > 0 {
				errs = append(errs, fmt.Errorf("run %d, %d clients: %d errors: %s (%d not fulfilled)", run, p.Clients, n, p.Errors, p.NotFulfilled))
			}
		}
	}
	return errors.Join(errs...)
}

// placementRun starts Hoist (or -replicas of them), an Anywhere fleet and
// a queue, and measures one burst per -clients value, each on fresh
// processes. The processes connect to the replica holding the queue's
// shard of the placement loop, which places its game sessions; the
// clients' calls are spread over the replicas.
func (e *env) placementRun(ctx context.Context, run int) ([]*PlacementPhase, error) {
	cfg := e.cfg
	// Thousands of simulated processes share one Anywhere compute, more
	// than --sdk-compute-sockets lets one compute's credentials open.
	rs, _, err := e.startReplicas(ctx, "--sdk-compute-sockets", "0")
	defer func() {
		if err := rs.stop(); err != nil {
			fmt.Fprintln(e.log, "hostingload:", err)
		}
	}()
	if err != nil {
		return nil, err
	}
	h := rs.hs[0]
	fail := func(err error) ([]*PlacementPhase, error) {
		return nil, fmt.Errorf("%w\nhoist log:\n%s", err, rs.logTail(60))
	}
	fleetID, _, token, err := h.anywhereCompute(ctx, "custom-placement", "placement-compute")
	if err != nil {
		return fail(err)
	}
	attrs, err := h.gl.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
	if err != nil || len(attrs.FleetAttributes) != 1 {
		return fail(fmt.Errorf("DescribeFleetAttributes: %v", err))
	}
	if _, err := h.gl.CreateGameSessionQueue(ctx, &gl.CreateGameSessionQueueInput{Name: aws.String("load"),
		Destinations: []types.GameSessionQueueDestination{{DestinationArn: attrs.FleetAttributes[0].FleetArn}}}); err != nil {
		return fail(fmt.Errorf("CreateGameSessionQueue: %w", err))
	}
	holder, err := rs.holder(ctx, store.ShardLeasePrefix("placement")+"load")
	if err != nil {
		return fail(err)
	}
	// endpoint is where process i connects.
	endpoint := func(i int) string {
		if cfg.ProcessesOn == "spread" {
			return rs.hs[i%len(rs.hs)].sdkEndpoint()
		}
		return holder.sdkEndpoint()
	}
	var phases []*PlacementPhase
	for i, clients := range cfg.Clients {
		fmt.Fprintf(e.log, "hostingload: run %d: %d placements, %d clients\n", run, cfg.Placements, clients)
		p, err := e.placementPhase(ctx, rs, endpoint, token, fleetID, fmt.Sprintf("r%d-c%d-%d", run, clients, i), clients,
			fmt.Sprintf("placement-clients%d-run%d", clients, run))
		if err != nil {
			return phases, fmt.Errorf("%w\nhoist log:\n%s", err, rs.logTail(60))
		}
		p.Run = run
		phases = append(phases, p)
	}
	return phases, nil
}

// received notes when each placement was fulfilled: its process, sent
// the game session, activates it as a game server does, and the reply to
// ActivateGameSession comes once the activation, which fulfils the
// placement in its transaction, has committed.
type received struct {
	ctx  context.Context
	mu   sync.Mutex
	at   map[string]time.Time // placement ID -> ActivateGameSession answered
	n    atomic.Int64
	done chan struct{}
	want int64
}

func (r *received) note(c *sdkclient.Client, f *sdkclient.Frame) {
	if f.Action != "CreateGameSession" {
		return
	}
	var m struct {
		GameSessionID string `json:"GameSessionId"`
	}
	if f.Decode(&m) != nil {
		return
	}
	id := m.GameSessionID[strings.LastIndexByte(m.GameSessionID, '/')+1:] // the ARN ends in the placement ID
	// Not on the reader's goroutine, which delivers the reply.
	go func() {
		if _, err := c.Call(r.ctx, "ActivateGameSession", map[string]any{"GameSessionId": m.GameSessionID}); err != nil {
			return
		}
		now := time.Now()
		r.mu.Lock()
		r.at[id] = now
		r.mu.Unlock()
		if r.n.Add(1) == r.want {
			close(r.done)
		}
	}()
}

func (e *env) placementPhase(ctx context.Context, rs *replicas, endpoint func(int) string, token, fleetID, tag string, clients int, profName string) (*PlacementPhase, error) {
	cfg := e.cfg
	n := cfg.Placements
	rec := &received{ctx: ctx, at: make(map[string]time.Time, n), done: make(chan struct{}), want: int64(n)}
	procs := make([]*sdkclient.Client, n)
	cerrs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range procs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			procs[i], cerrs[i] = dialPlacementProcess(ctx, endpoint(i), fmt.Sprintf("sim-%s-%d", tag, i), "placement-compute", fleetID, token, 1024+i%60000, rec)
		})
	}
	wg.Wait()
	defer closeAll(procs)
	if err := errors.Join(cerrs...); err != nil {
		return nil, err
	}

	ids := make([]string, n)
	starts := make([]time.Time, n)
	calls := make([]time.Duration, n)
	errs := make([]error, n)
	var next atomic.Int64
	a := rs.sampleCPU()
	tripsBefore, tripsOK := rs.roundTrips()
	waitProf := rs.profile(e, time.Second, profName)
	first := time.Now()
	for k := range clients {
		h := rs.hs[k%len(rs.hs)]
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				ids[i] = fmt.Sprintf("p-%s-%d", tag, i)
				starts[i] = time.Now()
				_, errs[i] = h.gl.StartGameSessionPlacement(ctx, &gl.StartGameSessionPlacementInput{
					GameSessionQueueName: aws.String("load"), PlacementId: aws.String(ids[i]), MaximumPlayerSessionCount: aws.Int32(8)})
				calls[i] = time.Since(starts[i])
			}
		})
	}
	wg.Wait()
	select {
	case <-rec.done:
	case <-time.After(60 * time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	last := first
	rec.mu.Lock()
	var lat []time.Duration
	for i, id := range ids {
		if at, ok := rec.at[id]; ok {
			lat = append(lat, at.Sub(starts[i]))
			if at.After(last) {
				last = at
			}
		}
	}
	rec.mu.Unlock()
	secs := last.Sub(first).Seconds()
	cpu := cpuUse(a, rs.sampleCPU(), time.Since(first).Seconds())
	tripsAfter, tripsAfterOK := rs.roundTrips()
	if err := waitProf(); err != nil {
		fmt.Fprintln(e.log, "hostingload: profile:", err)
	}
	p := &PlacementPhase{Clients: clients, Placements: n, Seconds: secs, Fulfilled: len(lat),
		StartToFulfilled: loadreport.Stats(lat), StartCall: loadreport.Stats(calls), Errors: errorCounts{}, CPU: cpu}
	if secs > 0 {
		p.PerSec = float64(len(lat)) / secs
	}
	if tripsOK && tripsAfterOK && len(lat) > 0 {
		p.RoundTrips = (tripsAfter - tripsBefore) / float64(len(lat))
	}
	for _, err := range errs {
		if err != nil {
			var ae smithy.APIError
			if errors.As(err, &ae) {
				p.Errors[ae.ErrorCode()]++
			} else {
				p.Errors[err.Error()]++
			}
		}
	}
	// Every placement must read FULFILLED.
	next.Store(0)
	var notFulfilled atomic.Int64
	for k := range 8 {
		h := rs.hs[k%len(rs.hs)]
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				out, err := h.gl.DescribeGameSessionPlacement(ctx, &gl.DescribeGameSessionPlacementInput{PlacementId: aws.String(ids[i])})
				if err != nil || out.GameSessionPlacement.Status != types.GameSessionPlacementStateFulfilled {
					notFulfilled.Add(1)
				}
			}
		})
	}
	wg.Wait()
	p.NotFulfilled = int(notFulfilled.Load())
	if len(p.Errors) == 0 {
		p.Errors = nil
	}
	return p, nil
}

// dialPlacementProcess connects a simulated process and calls ProcessReady
// and its first heartbeat; it activates its game sessions, noted in rec.
func dialPlacementProcess(ctx context.Context, endpoint, processID, compute, fleetID, token string, port int, rec *received) (*sdkclient.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := sdkclient.Dial(dctx, endpoint, sdkclient.Query(processID, compute, fleetID, token),
		sdkclient.Options{OnMessage: rec.note})
	if err != nil {
		return nil, fmt.Errorf("connecting %s: %w", processID, err)
	}
	if _, err := c.Call(dctx, "ActivateServerProcess", map[string]any{"SdkVersion": sdkclient.SDKVersion,
		"SdkLanguage": sdkclient.SDKLanguage, "Port": port, "LogPaths": []string{}}); err != nil {
		c.Drop()
		return nil, fmt.Errorf("ProcessReady of %s: %w", processID, err)
	}
	// The SDK's first heartbeat follows ProcessReady at once; until it
	// comes (or sdkconn's ReadyGrace, 2 s, passed) Hoist holds messages to
	// the process, which would hold every placement of the burst.
	if _, err := c.Call(dctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": true}); err != nil {
		c.Drop()
		return nil, fmt.Errorf("first heartbeat of %s: %w", processID, err)
	}
	return c, nil
}

// PlacementSummary holds the medians over the runs of one -clients value.
type PlacementSummary struct {
	Clients    int     `json:"clients"`
	Placements int     `json:"placements"`
	Runs       int     `json:"runs"`
	PerSec     float64 `json:"fulfilled_per_s"`
	P50        float64 `json:"p50_ms"`
	P99        float64 `json:"p99_ms"`
	HoistCores float64 `json:"hoist_cores"`
	RoundTrips float64 `json:"round_trips_per_placement,omitempty"`
}

func summarizePlacement(phases []*PlacementPhase) []PlacementSummary {
	order, by := loadreport.GroupBy(phases, func(p *PlacementPhase) int { return p.Clients })
	var out []PlacementSummary
	for _, c := range order {
		ps := by[c]
		med := func(f func(*PlacementPhase) float64) float64 { return loadreport.MedianOf(ps, f) }
		out = append(out, PlacementSummary{Clients: c, Placements: ps[0].Placements, Runs: len(ps),
			PerSec:     med(func(p *PlacementPhase) float64 { return p.PerSec }),
			P50:        med(func(p *PlacementPhase) float64 { return p.StartToFulfilled.P50 }),
			P99:        med(func(p *PlacementPhase) float64 { return p.StartToFulfilled.P99 }),
			HoistCores: med(func(p *PlacementPhase) float64 { return p.CPU.Hoist }),
			RoundTrips: med(func(p *PlacementPhase) float64 { return p.RoundTrips }),
		})
	}
	return out
}

func printPlacement(w io.Writer, rep *Report) {
	cfg := rep.Config
	on := "connected to the queue's shard holder"
	if cfg.ProcessesOn == "spread" {
		on = "connected to the replicas in turn"
	}
	fmt.Fprintf(w, "scenario placement: an Anywhere compute with %d ready simulated processes per phase (%s), as many placements started at once by the clients; %s store, %s; %s\n\n",
		cfg.Placements, on, cfg.Store, loadreport.Plural(cfg.Replicas, "replica"), loadreport.Plural(cfg.Repeats, "run"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tclients\tplacements\tfulfilled\tseconds\tfulfilled/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\tstart call p50 ms\terrors\tnot fulfilled\thoist cores\t")
	for _, p := range rep.Placement {
		s := p.StartToFulfilled
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.2f\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%d\t%.2f\t\n", p.Run, p.Clients, p.Placements, p.Fulfilled,
			p.Seconds, p.PerSec, s.P50, s.P90, s.P99, s.Max, p.StartCall.P50, p.Errors.total(), p.NotFulfilled, p.CPU.Hoist)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nmedians:")
	for _, s := range summarizePlacement(rep.Placement) {
		trips := ""
		if s.RoundTrips > 0 {
			trips = fmt.Sprintf("; %.1f round trips to PostgreSQL a placement", s.RoundTrips)
		}
		fmt.Fprintf(w, "  %d clients, %d placements (%s): %.0f fulfilled/s, start -> fulfilled p50 %.2f ms, p99 %.2f ms; hoist %.2f cores%s\n",
			s.Clients, s.Placements, loadreport.Plural(s.Runs, "run"), s.PerSec, s.P50, s.P99, s.HoistCores, trips)
	}
}
