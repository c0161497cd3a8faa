//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/netns"
)

// fleetLocations are the locations of the fleet scenario's fleets (the
// first is Hoist's Region, every fleet's home) and of its three hosts.
var fleetLocations = []string{"us-west-2", "us-east-1", "eu-west-1"}

// fleetActiveBound bounds the wait for a new fleet to be ACTIVE.
const fleetActiveBound = 3 * time.Minute

// fleetPoll is how often a new fleet's status is read while it is timed.
const fleetPoll = 20 * time.Millisecond

// FleetRun is one run of the fleet scenario: a fleet of three instances
// over the three hosts, and the same fleet on a Hoist without hosts (its
// three instances on Hoist's own machine).
type FleetRun struct {
	Run int `json:"run"`
	// Hosts and Local time CreateFleet to ACTIVE.
	Hosts FleetTimes `json:"hosts"`
	Local FleetTimes `json:"local"`
}

// FleetTimes time a fleet from the start of CreateFleet.
type FleetTimes struct {
	// FleetActiveS: the fleet's status is ACTIVE (its home location's
	// instance has a game server ready); AllActiveS: every location is
	// ACTIVE (each of the three instances has one).
	FleetActiveS float64 `json:"fleet_active_s"`
	AllActiveS   float64 `json:"all_active_s"`
}

// runFleet starts a Hoist on a bridge with three pool hosts, one in each
// of fleetLocations, and a Hoist on loopback without hosts; each run
// times a new fleet (with a new build, so every host downloads it) on
// each, one after the other.
func (e *env) runFleet(ctx context.Context, rep *Report) error {
	return withNetwork(e.log, 3, func(n *netns.Network) error {
		hosts, err := e.startHoist(n.Addr.String())
		if err != nil {
			return err
		}
		defer func() { _ = hosts.Stop() }()
		local, err := e.startHoist("127.0.0.1")
		if err != nil {
			return err
		}
		defer func() { _ = local.Stop() }()
		for i, host := range n.Hosts {
			a, err := e.startPoolAgent(hosts, host.Command, fleetLocations[i], host.Addr.String(), "*=16")
			if err != nil {
				return hosts.fail(err)
			}
			defer a.stop()
		}
		for run := 1; run <= e.cfg.Repeats; run++ {
			fmt.Fprintf(e.log, "hostsload: fleet run %d/%d\n", run, e.cfg.Repeats)
			r := &FleetRun{Run: run}
			if r.Hosts, err = e.timeFleet(ctx, hosts); err != nil {
				return hosts.fail(err)
			}
			if r.Local, err = e.timeFleet(ctx, local); err != nil {
				return local.fail(err)
			}
			rep.Fleet = append(rep.Fleet, r)
		}
		return nil
	})
}

// timeFleet uploads a new build, creates a fleet of it in fleetLocations
// and times it until every location is ACTIVE, reading its status every
// fleetPoll.
func (e *env) timeFleet(ctx context.Context, h *hoist) (FleetTimes, error) {
	build, err := e.uploadBuild(ctx, h)
	if err != nil {
		return FleetTimes{}, err
	}
	start := time.Now()
	out, err := h.gl.CreateFleet(ctx, fleetInput(build, 2, "", fleetLocations...))
	if err != nil {
		return FleetTimes{}, fmt.Errorf("CreateFleet: %w", err)
	}
	id := aws.ToString(out.FleetAttributes.FleetId)
	var ft FleetTimes
	deadline := start.Add(fleetActiveBound)
	for time.Now().Before(deadline) {
		if ft.FleetActiveS == 0 {
			a, err := h.gl.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{id}})
			if err != nil {
				return ft, err
			}
			if a.FleetAttributes[0].Status == types.FleetStatusActive {
				ft.FleetActiveS = time.Since(start).Seconds()
			}
		}
		all, _, err := h.locationsActive(ctx, id)
		if err != nil {
			return ft, err
		}
		if all && ft.FleetActiveS > 0 {
			ft.AllActiveS = time.Since(start).Seconds()
			return ft, nil
		}
		time.Sleep(fleetPoll) // polling the API, as a client does
	}
	return ft, fmt.Errorf("fleet %s not ACTIVE in every location within %s", id, fleetActiveBound)
}

// FleetMedians are the fleet scenario's medians.
type FleetMedians struct {
	Runs  int        `json:"runs"`
	Hosts FleetTimes `json:"hosts"`
	Local FleetTimes `json:"local"`
}

// summarizeFleet takes the medians of the runs.
func summarizeFleet(runs []*FleetRun) *FleetMedians {
	if len(runs) == 0 {
		return nil
	}
	med := func(f func(*FleetRun) float64) float64 { return loadreport.MedianOf(runs, f) }
	return &FleetMedians{Runs: len(runs),
		Hosts: FleetTimes{FleetActiveS: med(func(r *FleetRun) float64 { return r.Hosts.FleetActiveS }),
			AllActiveS: med(func(r *FleetRun) float64 { return r.Hosts.AllActiveS })},
		Local: FleetTimes{FleetActiveS: med(func(r *FleetRun) float64 { return r.Local.FleetActiveS }),
			AllActiveS: med(func(r *FleetRun) float64 { return r.Local.AllActiveS })}}
}

// printFleet prints the fleet scenario's table.
func printFleet(w io.Writer, rep *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\t3 hosts: fleet ACTIVE (s)\tall 3 ACTIVE (s)\tHoist's machine: fleet ACTIVE (s)\tall 3 ACTIVE (s)\t")
	for _, r := range rep.Fleet {
		fmt.Fprintf(tw, "%d\t%.2f\t%.2f\t%.2f\t%.2f\t\n", r.Run, r.Hosts.FleetActiveS, r.Hosts.AllActiveS, r.Local.FleetActiveS, r.Local.AllActiveS)
	}
	if m, ok := rep.Medians.(*FleetMedians); ok && m != nil {
		fmt.Fprintf(tw, "median\t%.2f\t%.2f\t%.2f\t%.2f\t\n", m.Hosts.FleetActiveS, m.Hosts.AllActiveS, m.Local.FleetActiveS, m.Local.AllActiveS)
	}
	tw.Flush()
}
