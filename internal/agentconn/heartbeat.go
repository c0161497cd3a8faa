package agentconn

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// kindAgent is the record of a compute's agent. Record: ID = fleet ID +
// "/" + compute name, Parent = fleet ID, Key = agentKey, Rank = when it is
// lost unless it heartbeats (Unix ms; never once declared lost).
const kindAgent store.Kind = "ComputeAgent"

const (
	agentKey = "agent"
	never    = math.MaxInt64
)

// agentRec is what Hoist knows of a compute's agent.
type agentRec struct {
	FleetID       string    `json:"fleetId"`
	ComputeName   string    `json:"computeName"`
	LastHeartbeat time.Time `json:"lastHeartbeat"`
	// Status is the status it last reported (agentproto.Status*).
	Status string `json:"status"`
	// Processes are the process IDs its last heartbeat listed.
	Processes []string `json:"processes,omitempty"`
	// Lost: it stopped heartbeating and its compute was made IMPAIRED.
	Lost bool `json:"lost,omitempty"`
}

// getAgent reads a compute's agent record.
func getAgent(ctx context.Context, tx store.Tx, id identity) (*agentRec, error) {
	a := new(agentRec)
	if _, err := store.GetJSON(ctx, tx, kindAgent, id.key(), a); err != nil {
		return nil, err
	}
	return a, nil
}

// putAgent writes an agent record, ranked by when it is lost unless it
// heartbeats (never once it is lost).
func (s *Server) putAgent(ctx context.Context, tx store.Tx, a *agentRec) error {
	rank := int64(never)
	if !a.Lost {
		rank = a.LastHeartbeat.Add(s.t.HeartbeatTimeout).UnixMilli()
	}
	rec := store.Record{Kind: kindAgent, ID: a.FleetID + "/" + a.ComputeName, Parent: a.FleetID, Key: agentKey, Rank: rank}
	return store.PutJSON(ctx, tx, rec, a)
}

// HasAgent reports whether an agent serves the compute: it heartbeats and
// has not been declared lost (hosting.ComputeAgents).
func (s *Server) HasAgent(ctx context.Context, tx store.Tx, fleetID, computeName string) (bool, error) {
	a, err := getAgent(ctx, tx, identity{fleetID, computeName})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil && !a.Lost, err
}

// heartbeatInput is what a heartbeat is judged on.
type heartbeatInput struct {
	Req *agentproto.SendHeartbeatRequest
	// ComputeRegistered: the compute still exists and its fleet is not
	// being deleted.
	ComputeRegistered bool
	// Previous are the processes the agent listed last time.
	Previous []string
	// Processes holds the records of the listed and previous processes
	// Hoist knows on this compute (another compute's are left out).
	Processes map[string]*hosting.Process
}

// ended is a process the agent no longer lists.
type ended struct {
	ID string
	// Code is the fleet event to write ("" for none), Reason its end
	// reason.
	Code, Reason string
}

// heartbeatDecision is what a heartbeat changes.
type heartbeatDecision struct {
	Reply agentproto.SendHeartbeatResponse
	// Ended are processes it listed before and no longer does.
	Ended []ended
	// EndAll are processes to ask to end: the agent is terminating.
	EndAll []string
	// Deregister: the agent reported Terminated; its compute goes.
	Deregister bool
}

// Reasons Hoist gives sessions.
const (
	reasonMissing     = "SERVER_PROCESS_CRASHED: the compute's agent no longer lists it"
	reasonShutdown    = "COMPUTE_SHUTTING_DOWN: the compute's agent is terminating"
	reasonUnhealthyEP = "SERVER_PROCESS_TERMINATED_UNHEALTHY"
)

// decideHeartbeat judges a heartbeat (pure):
//   - listed processes Hoist does not know on this compute, or that have
//     not called ProcessReady, are unregistered; those Hoist ended (or is
//     ending for their health) are unhealthy, so the agent kills them;
//   - processes listed before and no longer are ended: a crash, unless
//     Hoist was already ending them;
//   - an agent that is terminating has its processes asked to end; one that
//     terminated has its compute deregistered;
//   - the reply's Status: Terminated to a terminated agent, Terminating
//     when the compute is gone or the agent is terminating, Active once a
//     listed process is ready, else Initializing (which lets a starting
//     agent launch its processes).
func decideHeartbeat(in heartbeatInput) heartbeatDecision {
	d := heartbeatDecision{Reply: agentproto.SendHeartbeatResponse{UnhealthyProcesses: []string{}, UnregisteredProcesses: []string{}}}
	ready := false
	for _, id := range in.Req.ProcessList {
		p := in.Processes[id]
		switch {
		case p == nil || p.State == hosting.ProcessLaunching:
			d.Reply.UnregisteredProcesses = append(d.Reply.UnregisteredProcesses, id)
		case p.State == hosting.ProcessTerminated,
			p.State == hosting.ProcessTerminating && strings.HasPrefix(p.EndReason, reasonUnhealthyEP):
			d.Reply.UnhealthyProcesses = append(d.Reply.UnhealthyProcesses, id)
		case p.State == hosting.ProcessActive:
			ready = true
		}
	}
	for _, id := range in.Previous {
		p := in.Processes[id]
		if p == nil || p.State == hosting.ProcessTerminated || slices.Contains(in.Req.ProcessList, id) {
			continue
		}
		if p.State == hosting.ProcessTerminating {
			d.Ended = append(d.Ended, ended{ID: id, Reason: "ended after Hoist asked it to (" + p.EndReason + ")"})
		} else {
			d.Ended = append(d.Ended, ended{ID: id, Code: agentproto.ReasonCrashed, Reason: reasonMissing})
		}
	}
	switch st := in.Req.Status; {
	case st == agentproto.StatusTerminated:
		d.Reply.Status, d.Deregister, d.EndAll = agentproto.StatusTerminated, in.ComputeRegistered, live(in)
	case st == agentproto.StatusTerminating || st == agentproto.StatusInterrupted:
		d.Reply.Status, d.EndAll = agentproto.StatusTerminating, live(in)
	case !in.ComputeRegistered:
		d.Reply.Status = agentproto.StatusTerminating
	case ready:
		d.Reply.Status = agentproto.StatusActive
	default:
		d.Reply.Status = agentproto.StatusInitializing
	}
	return d
}

// live returns the listed processes Hoist knows on the compute and has not
// ended or begun ending.
func live(in heartbeatInput) []string {
	var out []string
	for _, id := range in.Req.ProcessList {
		if p := in.Processes[id]; p != nil && (p.State == hosting.ProcessLaunching || p.State == hosting.ProcessActive) {
			out = append(out, id)
		}
	}
	return out
}

// heartbeat serves SendHeartbeat: it reads what the heartbeat is judged on,
// records it (the compute's last heartbeat and process list, and ACTIVE
// again if it was IMPAIRED), then applies the decision.
func (s *Server) heartbeat(ctx context.Context, id identity, req *agentproto.SendHeartbeatRequest) (*agentproto.SendHeartbeatResponse, error) {
	var d heartbeatDecision
	wasLost := false
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		in, prev, err := s.heartbeatInput(ctx, tx, id, req)
		if err != nil {
			return err
		}
		d = decideHeartbeat(in)
		wasLost = prev != nil && prev.Lost
		if d.Deregister || !in.ComputeRegistered {
			return ignoreNotFound(tx.Delete(ctx, kindAgent, id.key()))
		}
		if wasLost {
			if err := s.cfg.Fleets.SetComputeImpaired(ctx, tx, id.fleetID, id.computeName, false); err != nil {
				return err
			}
		}
		return s.putAgent(ctx, tx, &agentRec{FleetID: id.fleetID, ComputeName: id.computeName,
			LastHeartbeat: s.cfg.Now().UTC(), Status: req.Status, Processes: req.ProcessList})
	})
	if err != nil {
		return nil, err
	}
	s.apply(ctx, id, d, wasLost)
	return &d.Reply, nil
}

// heartbeatInput reads the agent's record, the compute and the processes
// a heartbeat names or named.
func (s *Server) heartbeatInput(ctx context.Context, tx store.Tx, id identity, req *agentproto.SendHeartbeatRequest) (heartbeatInput, *agentRec, error) {
	in := heartbeatInput{Req: req, Processes: map[string]*hosting.Process{}}
	prev, err := getAgent(ctx, tx, id)
	switch {
	case err == nil:
		in.Previous = prev.Processes
	case errors.Is(err, store.ErrNotFound):
		prev = nil
	default:
		return in, nil, err
	}
	if in.ComputeRegistered, err = registered(ctx, tx, id); err != nil {
		return in, nil, err
	}
	for _, pid := range append(slices.Clip(req.ProcessList), in.Previous...) {
		if _, done := in.Processes[pid]; done {
			continue
		}
		p := new(hosting.Process)
		_, err := store.GetJSON(ctx, tx, hosting.KindProcess, pid, p)
		switch {
		case errors.Is(err, store.ErrNotFound):
			p = nil
		case err != nil:
			return in, nil, err
		case p.FleetID != id.fleetID || p.ComputeName != id.computeName:
			p = nil // another compute's: not this agent's to judge
		}
		in.Processes[pid] = p
	}
	return in, prev, nil
}

// registered reports whether the compute exists and its fleet is not being
// deleted.
func registered(ctx context.Context, tx store.Tx, id identity) (bool, error) {
	if _, err := tx.Get(ctx, hosting.KindCompute, id.key()); err != nil {
		return false, ignoreNotFound(err)
	}
	var f hosting.Fleet
	if _, err := store.GetJSON(ctx, tx, hosting.KindFleet, id.fleetID, &f); err != nil {
		return false, ignoreNotFound(err)
	}
	st := f.Attributes.Status
	return st != api.FleetStatusDeleting && st != api.FleetStatusTerminated, nil
}

// apply carries a heartbeat's decision out once it is recorded; failures
// are logged (sessions' own timers end what is left).
func (s *Server) apply(ctx context.Context, id identity, d heartbeatDecision, wasLost bool) {
	log := s.log.With("fleet", id.fleetID, "compute", id.computeName)
	if wasLost {
		log.Info("agent: heartbeats again; the compute is ACTIVE")
	}
	for _, e := range d.Ended {
		if err := s.cfg.Fleets.AgentProcessEnded(ctx, id.fleetID, id.computeName, e.ID, e.Code, e.Reason); err != nil {
			log.Warn("agent: recording a process the agent no longer lists", "process", e.ID, "err", err)
		}
	}
	for _, pid := range d.EndAll {
		if err := s.cfg.Sessions.EndProcess(ctx, pid, reasonShutdown); err != nil {
			log.Warn("agent: ending a process of a terminating compute", "process", pid, "err", err)
		}
	}
	if d.Deregister {
		_, err := s.cfg.Fleets.DeregisterCompute(ctx, &api.DeregisterComputeInput{FleetId: api.String(id.fleetID),
			ComputeName: api.String(id.computeName)})
		var nf *api.NotFoundException
		if err != nil && !errors.As(err, &nf) {
			log.Warn("agent: deregistering a compute whose agent terminated", "err", err)
		} else {
			log.Info("agent: terminated; the compute is deregistered")
		}
	}
}

// ignoreNotFound turns store.ErrNotFound into nil.
func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
