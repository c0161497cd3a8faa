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

	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/sdkclient"
)

// SDKPhase is one measured window of the sdk scenario: sockets simulated
// processes, each with inflight heartbeats outstanding at a time.
type SDKPhase struct {
	Run        int                `json:"run"`
	Sockets    int                `json:"sockets"`
	Inflight   int                `json:"inflight"`
	Seconds    float64            `json:"seconds"`
	Messages   int                `json:"messages"`
	MsgsPerSec float64            `json:"messages_per_s"`
	Latency    loadreport.OpStats `json:"latency"`
	Errors     errorCounts        `json:"errors,omitempty"`
	CPU        CPUUse             `json:"cpu"`
	// HoistCPUPerMsg is Hoist's CPU time per heartbeat answered (µs).
	HoistCPUPerMsg float64 `json:"hoist_cpu_us_per_message"`
}

func (e *env) runSDK(ctx context.Context, rep *Report) error {
	cfg := e.cfg
	var errs []error
	for run := 1; run <= cfg.Repeats; run++ {
		fmt.Fprintf(e.log, "hostingload: run %d/%d\n", run, cfg.Repeats)
		phases, err := e.sdkRun(ctx, run)
		rep.SDK = append(rep.SDK, phases...)
		if err != nil {
			return err
		}
		for _, p := range phases {
			if n := p.Errors.total(); n > 0 {
				errs = append(errs, fmt.Errorf("run %d, %d sockets, %d in flight: %d errors: %s", run, p.Sockets, p.Inflight, n, p.Errors))
			}
		}
	}
	return errors.Join(errs...)
}

func (e *env) sdkRun(ctx context.Context, run int) ([]*SDKPhase, error) {
	cfg := e.cfg
	// Every socket sends heartbeats back to back, all on one compute: the
	// bounds meant for game servers (docs/security.md) are lifted to
	// measure the endpoint itself.
	h, pprofAddr, err := e.startHoist("--sdk-message-rate", "0", "--sdk-compute-sockets", "0")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := h.Stop(); err != nil {
			fmt.Fprintln(e.log, "hostingload:", err)
		}
	}()
	fleetID, endpoint, token, err := h.anywhereCompute(ctx, "custom-sdk", "sdk-compute")
	if err != nil {
		return nil, fmt.Errorf("%w\nhoist log:\n%s", err, h.logTail(60))
	}
	var phases []*SDKPhase
	n := 0
	for _, inflight := range cfg.Inflight {
		for _, sockets := range cfg.Sockets {
			n++
			fmt.Fprintf(e.log, "hostingload: run %d: %d sockets, %d in flight\n", run, sockets, inflight)
			clients := make([]*sdkclient.Client, sockets)
			cerrs := make([]error, sockets)
			var wg sync.WaitGroup
			sem := make(chan struct{}, 16)
			for i := range clients {
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					clients[i], cerrs[i] = dialProcess(ctx, endpoint, fmt.Sprintf("sim-%d-%d", n, i), "sdk-compute", fleetID, token, 1024+i)
				})
			}
			wg.Wait()
			if err := errors.Join(cerrs...); err != nil {
				closeAll(clients)
				return phases, fmt.Errorf("%w\nhoist log:\n%s", err, h.logTail(60))
			}
			p := e.sdkPhase(ctx, h, clients, inflight, pprofAddr, fmt.Sprintf("sdk-sockets%d-inflight%d-run%d", sockets, inflight, run))
			p.Run = run
			phases = append(phases, p)
			closeAll(clients)
		}
	}
	return phases, nil
}

// closeAll closes every socket normally (on Anywhere the process is gone).
func closeAll(clients []*sdkclient.Client) {
	var wg sync.WaitGroup
	for _, c := range clients {
		if c != nil {
			wg.Go(func() { c.Close(1000, "") })
		}
	}
	wg.Wait()
}

type sdkWorker struct {
	lat    []time.Duration
	errors errorCounts
}

// sdkPhase sends heartbeats back-to-back from every socket, inflight at a
// time each, for the warm-up and the measured duration; heartbeats sent
// within the measured window are recorded.
func (e *env) sdkPhase(ctx context.Context, h *hoist, clients []*sdkclient.Client, inflight int, pprofAddr, profName string) *SDKPhase {
	cfg := e.cfg
	mStart := time.Now().Add(cfg.Warmup)
	mEnd := mStart.Add(cfg.Duration)
	fields := map[string]any{"HealthStatus": true}
	var results []*sdkWorker
	var wg sync.WaitGroup
	for _, c := range clients {
		for range inflight {
			res := &sdkWorker{errors: errorCounts{}, lat: make([]time.Duration, 0, 1<<12)}
			results = append(results, res)
			wg.Go(func() {
				for {
					t0 := time.Now()
					if !t0.Before(mEnd) {
						return
					}
					rec := !t0.Before(mStart)
					cctx, cancel := context.WithTimeout(ctx, 20*time.Second) // the SDK's SERVICE_CALL_TIMEOUT
					_, err := c.Call(cctx, "HeartbeatServerProcess", fields)
					cancel()
					d := time.Since(t0)
					if !rec {
						continue
					}
					if err != nil {
						var se *sdkclient.StatusError
						if errors.As(err, &se) {
							res.errors[fmt.Sprintf("status %d", se.StatusCode)]++
						} else {
							res.errors[err.Error()]++
						}
						if errors.Is(err, sdkclient.ErrClosed) {
							return
						}
						continue
					}
					res.lat = append(res.lat, d)
				}
			})
		}
	}
	var cpu CPUUse
	wg.Go(func() {
		time.Sleep(time.Until(mStart))
		waitProf := e.profile(pprofAddr, cfg.Duration, profName)
		a := sampleCPU(h.pid())
		t0 := time.Now()
		time.Sleep(time.Until(mEnd))
		cpu = cpuUse(a, sampleCPU(h.pid()), time.Since(t0).Seconds())
		if err := waitProf(); err != nil {
			fmt.Fprintln(e.log, "hostingload: profile:", err)
		}
	})
	wg.Wait()
	p := &SDKPhase{Sockets: len(clients), Inflight: inflight, Seconds: cfg.Duration.Seconds(), Errors: errorCounts{}, CPU: cpu}
	var lat []time.Duration
	for _, r := range results {
		lat = append(lat, r.lat...)
		for k, n := range r.errors {
			p.Errors[k] += n
		}
	}
	p.Messages = len(lat)
	p.MsgsPerSec = float64(p.Messages) / p.Seconds
	p.Latency = loadreport.Stats(lat)
	if p.Messages > 0 {
		p.HoistCPUPerMsg = cpu.Hoist * p.Seconds / float64(p.Messages) * 1e6
	}
	if len(p.Errors) == 0 {
		p.Errors = nil
	}
	return p
}

// SDKSummary holds the medians over the runs of one phase.
type SDKSummary struct {
	Sockets        int     `json:"sockets"`
	Inflight       int     `json:"inflight"`
	Runs           int     `json:"runs"`
	MsgsPerSec     float64 `json:"messages_per_s"`
	P50            float64 `json:"p50_ms"`
	P99            float64 `json:"p99_ms"`
	HoistCores     float64 `json:"hoist_cores"`
	LoadCores      float64 `json:"load_program_cores"`
	OtherCores     float64 `json:"other_cores"`
	HoistCPUPerMsg float64 `json:"hoist_cpu_us_per_message"`
}

func summarizeSDK(phases []*SDKPhase) []SDKSummary {
	type key struct{ sockets, inflight int }
	order, by := loadreport.GroupBy(phases, func(p *SDKPhase) key { return key{p.Sockets, p.Inflight} })
	var out []SDKSummary
	for _, k := range order {
		ps := by[k]
		med := func(f func(*SDKPhase) float64) float64 { return loadreport.MedianOf(ps, f) }
		out = append(out, SDKSummary{Sockets: k.sockets, Inflight: k.inflight, Runs: len(ps),
			MsgsPerSec:     med(func(p *SDKPhase) float64 { return p.MsgsPerSec }),
			P50:            med(func(p *SDKPhase) float64 { return p.Latency.P50 }),
			P99:            med(func(p *SDKPhase) float64 { return p.Latency.P99 }),
			HoistCores:     med(func(p *SDKPhase) float64 { return p.CPU.Hoist }),
			LoadCores:      med(func(p *SDKPhase) float64 { return p.CPU.Load }),
			OtherCores:     med(func(p *SDKPhase) float64 { return p.CPU.Other }),
			HoistCPUPerMsg: med(func(p *SDKPhase) float64 { return p.HoistCPUPerMsg }),
		})
	}
	return out
}

func printSDK(w io.Writer, rep *Report) {
	cfg := rep.Config
	fmt.Fprintf(w, "scenario sdk: an Anywhere compute, simulated processes sending HeartbeatServerProcess back-to-back; %s measured per phase after %s warm-up, %s\n\n",
		cfg.Duration, cfg.Warmup, loadreport.Plural(cfg.Repeats, "run"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tsockets\tin flight\tmsgs/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\terrors\thoist cores\tload cores\tother cores\thoist µs/msg\t")
	for _, p := range rep.SDK {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%.2f\t%.2f\t%.2f\t%.0f\t\n", p.Run, p.Sockets, p.Inflight,
			p.MsgsPerSec, p.Latency.P50, p.Latency.P90, p.Latency.P99, p.Latency.Max, p.Errors.total(), p.CPU.Hoist, p.CPU.Load,
			p.CPU.Other, p.HoistCPUPerMsg)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nmedians:")
	for _, s := range summarizeSDK(rep.SDK) {
		fmt.Fprintf(w, "  %d sockets, %d in flight (%s): %.0f msgs/s, p50 %.2f ms, p99 %.2f ms; hoist %.2f cores (%.0f µs/msg), load %.2f, other %.2f\n",
			s.Sockets, s.Inflight, loadreport.Plural(s.Runs, "run"), s.MsgsPerSec, s.P50, s.P99, s.HoistCores, s.HoistCPUPerMsg, s.LoadCores, s.OtherCores)
	}
}
