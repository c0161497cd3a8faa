//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/sysinfo"
	"github.com/hoistgg/hoist/internal/server"
)

// AgentsRun is one run of the agents scenario: the resident memory of each
// agent at rest.
type AgentsRun struct {
	Run int `json:"run"`
	// PoolIdle: a pool agent enrolled and connected, no instance;
	// PoolTwo: the same agent running one instance of two game servers;
	// AnywhereTwo: an Anywhere agent running two game servers.
	PoolIdle    AgentMemory `json:"pool_idle"`
	PoolTwo     AgentMemory `json:"pool_two_game_servers"`
	AnywhereTwo AgentMemory `json:"anywhere_two_game_servers"`
}

// AgentMemory is an agent process's memory (its game servers are
// processes of their own, not counted).
type AgentMemory struct {
	RSSMiB float64 `json:"rss_mib"`
	PSSMiB float64 `json:"pss_mib"`
}

// readAgent reads an agent's memory.
func readAgent(a *agent) AgentMemory {
	rss, pss := sysinfo.Memory(a.cmd.Process.Pid)
	return AgentMemory{RSSMiB: mib(rss), PSSMiB: mib(pss)}
}

// runAgents runs the agents scenario -repeats times, each with a new Hoist
// on loopback.
func (e *env) runAgents(ctx context.Context, rep *Report) error {
	for run := 1; run <= e.cfg.Repeats; run++ {
		fmt.Fprintf(e.log, "hostsload: agents run %d/%d\n", run, e.cfg.Repeats)
		r := &AgentsRun{Run: run}
		if err := e.agentsRun(ctx, r); err != nil {
			return err
		}
		rep.Agents = append(rep.Agents, r)
	}
	return nil
}

// agentsRun measures a pool agent idle and with two game servers, then an
// Anywhere agent with two game servers.
func (e *env) agentsRun(ctx context.Context, r *AgentsRun) error {
	h, err := e.startHoist("127.0.0.1", "--timings", "processes.stagger=10ms")
	if err != nil {
		return err
	}
	defer func() { _ = h.Stop() }()
	pool, err := e.startPoolAgent(h, exec.CommandContext, "us-west-2", "127.0.0.2", "*=1")
	if err != nil {
		return h.fail(err)
	}
	defer pool.stop()
	time.Sleep(e.cfg.Settle) // at rest
	r.PoolIdle = readAgent(pool)
	build, err := e.uploadBuild(ctx, h)
	if err != nil {
		return h.fail(err)
	}
	out, err := h.gl.CreateFleet(ctx, fleetInput(build, 2, "", "us-west-2"))
	if err != nil {
		return h.fail(err)
	}
	if err := h.waitProcesses(ctx, aws.ToString(out.FleetAttributes.FleetId), "us-west-2", 2); err != nil {
		return h.fail(err)
	}
	time.Sleep(e.cfg.Settle) // at rest
	r.PoolTwo = readAgent(pool)
	any, err := e.startAnywhere(ctx, h)
	if err != nil {
		return h.fail(err)
	}
	defer any.stop()
	time.Sleep(e.cfg.Settle) // at rest
	r.AnywhereTwo = readAgent(any)
	return nil
}

// startAnywhere creates an Anywhere fleet of two game servers (the built
// binary) and starts `hoist agent` for a compute of it at 127.0.0.3; it
// returns once both game servers are ready.
func (e *env) startAnywhere(ctx context.Context, h *hoist) (*agent, error) {
	const loc = "custom-hostsload"
	if _, err := h.gl.CreateLocation(ctx, &gl.CreateLocationInput{LocationName: aws.String(loc)}); err != nil {
		return nil, err
	}
	out, err := h.gl.CreateFleet(ctx, &gl.CreateFleetInput{Name: aws.String("anywhere"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: aws.String(loc)}},
		RuntimeConfiguration: &types.RuntimeConfiguration{ServerProcesses: []types.ServerProcess{{
			LaunchPath: aws.String(e.gsBin), ConcurrentExecutions: aws.Int32(2)}}}})
	if err != nil {
		return nil, err
	}
	id := aws.ToString(out.FleetAttributes.FleetId)
	a, err := e.startAgent(exec.CommandContext, credentialsEnv(), "connected to the agent endpoint", "--data-dir",
		"--endpoint", h.TLSURL, "--fleet", id, "--location", loc, "--ip", "127.0.0.3", "--compute-name", "hostsload",
		"--ca-file", filepath.Join(h.DataDir, server.CABundleFile))
	if err != nil {
		return nil, err
	}
	if err := h.waitProcesses(ctx, id, loc, 2); err != nil {
		a.stop()
		return nil, err
	}
	return a, nil
}

// waitProcesses waits until a fleet location has n game servers ready.
func (h *hoist) waitProcesses(ctx context.Context, fleetID, loc string, n int32) error {
	return loadreport.WaitFor(ctx, 2*time.Minute, fmt.Sprintf("%d game servers ready in %s", n, loc), func() (bool, string, error) {
		u, err := h.gl.DescribeFleetLocationUtilization(ctx, &gl.DescribeFleetLocationUtilizationInput{FleetId: aws.String(fleetID),
			Location: aws.String(loc)})
		if err != nil {
			return false, "", err
		}
		got := aws.ToInt32(u.FleetUtilization.ActiveServerProcessCount)
		return got == n, fmt.Sprint(got), nil
	})
}

// AgentsMedians are the medians over the runs.
type AgentsMedians struct {
	Runs        int         `json:"runs"`
	PoolIdle    AgentMemory `json:"pool_idle"`
	PoolTwo     AgentMemory `json:"pool_two_game_servers"`
	AnywhereTwo AgentMemory `json:"anywhere_two_game_servers"`
}

// summarizeAgents takes the medians of the runs.
func summarizeAgents(runs []*AgentsRun) *AgentsMedians {
	if len(runs) == 0 {
		return nil
	}
	med := func(f func(*AgentsRun) AgentMemory) AgentMemory {
		return AgentMemory{RSSMiB: loadreport.MedianOf(runs, func(r *AgentsRun) float64 { return f(r).RSSMiB }),
			PSSMiB: loadreport.MedianOf(runs, func(r *AgentsRun) float64 { return f(r).PSSMiB })}
	}
	return &AgentsMedians{Runs: len(runs), PoolIdle: med(func(r *AgentsRun) AgentMemory { return r.PoolIdle }),
		PoolTwo: med(func(r *AgentsRun) AgentMemory { return r.PoolTwo }), AnywhereTwo: med(func(r *AgentsRun) AgentMemory { return r.AnywhereTwo })}
}

// printAgents prints the agents scenario's table.
func printAgents(w io.Writer, rep *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tpool, no instance: RSS / PSS (MiB)\tpool, 2 game servers\tAnywhere, 2 game servers\t")
	row := func(run string, a, b, c AgentMemory) {
		cell := func(m AgentMemory) string { return fmt.Sprintf("%.1f / %.1f", m.RSSMiB, m.PSSMiB) }
		fmt.Fprintln(tw, strings.Join([]string{run, cell(a), cell(b), cell(c)}, "\t")+"\t")
	}
	for _, r := range rep.Agents {
		row(fmt.Sprint(r.Run), r.PoolIdle, r.PoolTwo, r.AnywhereTwo)
	}
	if m, ok := rep.Medians.(*AgentsMedians); ok && m != nil {
		row("median", m.PoolIdle, m.PoolTwo, m.AnywhereTwo)
	}
	tw.Flush()
}
