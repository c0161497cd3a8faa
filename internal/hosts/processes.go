package hosts

import (
	"context"
	"slices"

	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/store"
)

// goneReason is why a process its host no longer runs is recorded ended.
const goneReason = "its host no longer runs it"

// processDiff compares the processes a host says an instance runs with
// sessions' records of them: gone are those recorded running that the
// host does not run (their end was not reported: it is now), ended those
// recorded ended that the host still runs (they must end). A process the
// host runs that is not recorded at all is left alone: its start may be
// on its way.
func processDiff(ctx context.Context, tx store.Tx, fleetID, instanceID string, running []string) (gone, ended []string, err error) {
	err = store.Each(ctx, tx, store.Query{Kind: hosting.KindProcess, Parent: fleetID, HasParent: true}, func(r store.Record) error {
		var p hosting.Process
		if err := store.Decode(r, &p); err != nil {
			return err
		}
		if p.ComputeName != instanceID {
			return nil
		}
		runs := slices.Contains(running, p.ID)
		switch {
		case p.State == hosting.ProcessTerminated && runs:
			ended = append(ended, p.ID)
		case p.State != hosting.ProcessTerminated && !runs:
			gone = append(gone, p.ID)
		}
		return nil
	})
	return gone, ended, err
}

// reconcileProcesses, after a host's Hello, records the end of the
// processes of its instances it no longer runs and has it end those
// Hoist recorded ended (in the background: the host is being served).
func (s *Service) reconcileProcesses(ctx context.Context, hostID string, running []hostproto.Instance, desired []hostproto.Desired) {
	for _, in := range running {
		if !slices.ContainsFunc(desired, func(d hostproto.Desired) bool { return d.InstanceId == in.InstanceId && d.Stop == "" }) {
			continue // it is ending anyway
		}
		var gone, ended []string
		err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
			var err error
			gone, ended, err = processDiff(ctx, tx, in.FleetId, in.InstanceId, in.Processes)
			return err
		})
		if err != nil {
			s.log.Warn("hosts: comparing a host's processes", "host", hostID, "instance", in.InstanceId, "err", err)
			continue
		}
		hooks := s.hooksOf(fleets.InstanceRef{FleetID: in.FleetId, InstanceID: in.InstanceId, Location: in.Location})
		for _, id := range gone {
			s.log.Info("hosts: a process its host no longer runs is recorded ended", "host", hostID, "process", id)
			hooks.ProcessExited(ctx, fleets.ProcessExit{ProcessID: id, ExitCode: -1, StopReason: goneReason})
		}
		for _, id := range ended {
			go s.endStale(hostID, in.InstanceId, id)
		}
	}
}

// endStale has a host kill a process Hoist recorded ended.
func (s *Service) endStale(hostID, instanceID, processID string) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	msg := hostproto.StopProcess{InstanceId: instanceID, ProcessId: processID, Reason: "Hoist recorded it ended"}
	if err := s.msgr.SendToHost(ctx, hostID, hostproto.ActionKillProcess, msg); err != nil {
		s.log.Info("hosts: ending a process Hoist recorded ended", "host", hostID, "process", processID, "err", err)
	}
}
