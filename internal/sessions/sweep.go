package sessions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// leaseName is the store lease the sweep runs under.
const leaseName = "sessions-sweep"

// sweepBatch is how many due records of one kind a sweep step handles at
// most per run (the next run continues).
const sweepBatch = 256

// Run runs the background sweep every Timings.SweepInterval while this
// replica holds the sweep lease, until ctx ends (and, on a shared store,
// the search index's reading of the change feed: followSearch).
func (s *Service) Run(ctx context.Context) error {
	defer s.followSearch(ctx)()
	return store.RunLeased(ctx, s.cfg.Store, store.Loop{Name: leaseName, Holder: s.cfg.ReplicaID,
		Interval: s.t.SweepInterval, TTL: s.t.LeaseTTL, Now: s.cfg.Now, Clock: s.cfg.Clock,
		Work: s.Sweep, Log: s.log.With("loop", "sessions sweep")})
}

// sweepStep handles one due record; it re-reads the record in its own
// transaction and does nothing if the record changed meanwhile.
type sweepStep struct {
	name   string
	query  func(now int64) store.Query
	handle func(ctx context.Context, tx store.Tx, fx *effects, rec store.Record, now time.Time) error
	// process: the step's time is processNow (server processes' health),
	// not the game clock.
	process bool
}

// Sweep runs every timer once: activation timeouts, player session
// reservation timeouts, process deadlines (readiness, heartbeats,
// termination grace), stuck TERMINATING game sessions and retention.
// Run calls it; tests call it directly with a fake clock.
func (s *Service) Sweep(ctx context.Context) error {
	var errs []error
	for _, st := range s.steps() {
		if err := s.runStep(ctx, st); err != nil {
			errs = append(errs, errors.New(st.name+": "+err.Error()))
		}
	}
	return errors.Join(errs...)
}

func (s *Service) steps() []sweepStep {
	byKey := func(kind store.Kind, key string) func(int64) store.Query {
		return func(now int64) store.Query {
			return store.Query{Kind: kind, Key: key, HasKey: true, Order: store.OrderRankAsc,
				RankMax: now, HasRankMax: true, Limit: sweepBatch}
		}
	}
	// An ended player session's Rank is when it ended: it is due once the
	// retention has passed since.
	endedBefore := func(st api.PlayerSessionStatus) func(int64) store.Query {
		return func(now int64) store.Query {
			return store.Query{Kind: hosting.KindPlayerSession, Key: string(st), HasKey: true, Order: store.OrderRankAsc,
				RankMax: now - s.t.SessionRetention.Milliseconds(), HasRankMax: true, Limit: sweepBatch}
		}
	}
	return []sweepStep{
		{"activation timeouts", byKey(hosting.KindGameSession, string(api.GameSessionStatusActivating)), s.activationDue, false},
		{"reservation timeouts", byKey(hosting.KindPlayerSession, string(api.PlayerSessionStatusReserved)), s.reservationDue, false},
		{"processes", byKey(kindProcessDue, dueKey), s.processDueStep, true},
		{"terminating game sessions", byKey(hosting.KindGameSession, string(api.GameSessionStatusTerminating)), s.terminatingDue, false},
		{"terminated game sessions", byKey(hosting.KindGameSession, string(api.GameSessionStatusTerminated)), s.retentionDue, false},
		{"failed game sessions", byKey(hosting.KindGameSession, string(api.GameSessionStatusError)), s.retentionDue, false},
		{"completed player sessions", endedBefore(api.PlayerSessionStatusCompleted), s.playerRetentionDue, false},
		{"timed out player sessions", endedBefore(api.PlayerSessionStatusTimedout), s.playerRetentionDue, false},
	}
}

func (s *Service) runStep(ctx context.Context, st sweepStep) error {
	now := s.now()
	if st.process {
		now = s.processNow()
	}
	var recs []store.Record
	err := s.view(ctx, func(tx store.Tx) error {
		var err error
		recs, _, err = tx.List(ctx, st.query(ms(now)))
		return err
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, listed := range recs {
		err := s.update(ctx, func(tx store.Tx, fx *effects) error {
			kind := listed.Kind
			if kind == kindProcessDue {
				kind = hosting.KindProcess
			}
			rec, err := tx.Get(ctx, kind, listed.ID)
			if errors.Is(err, store.ErrNotFound) && kind != listed.Kind {
				return ignoreNotFound(tx.Delete(ctx, listed.Kind, listed.ID)) // a stray index entry
			}
			if err != nil {
				return ignoreNotFound(err)
			}
			if (kind == listed.Kind && rec.Key != listed.Key) || rec.Rank > ms(now) {
				return nil // changed since it was listed
			}
			return st.handle(ctx, tx, fx, rec, now)
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// activationDue: an ACTIVATING game session past its deadline ends
// TERMINATED (as GameLift's RuntimeConfiguration documents), and its
// process (which failed to start it) is ended.
func (s *Service) activationDue(ctx context.Context, tx store.Tx, fx *effects, rec store.Record, now time.Time) error {
	gs := new(hosting.GameSession)
	if err := store.Decode(rec, gs); err != nil {
		return err
	}
	if err := s.finishSessionTx(ctx, tx, gs, api.GameSessionStatusTerminated, ""); err != nil {
		return err
	}
	p, err := getProcess(ctx, tx, gs.ProcessID)
	if err != nil {
		return ignoreNotFound(err)
	}
	// The reason starts with GameLift's event code, which fleets records
	// as the fleet event when the process ends.
	return s.endProcessTx(ctx, tx, fx, p, activationTimeoutReason+": game session "+api.ToString(gs.Session.GameSessionId)+" was not activated in time")
}

// activationTimeoutReason begins the reason a process is ended for when
// its game session was not activated in time.
const activationTimeoutReason = "GAME_SESSION_ACTIVATION_TIMEOUT"

// reservationDue: a RESERVED player session past its 60 s goes to TIMEDOUT
// and its slot reopens.
func (s *Service) reservationDue(ctx context.Context, tx store.Tx, _ *effects, rec store.Record, _ time.Time) error {
	ps := new(hosting.PlayerSession)
	if err := store.Decode(rec, ps); err != nil {
		return err
	}
	return s.closePlayerSessionTx(ctx, tx, ps, api.PlayerSessionStatusTimedout)
}

// processDueStep applies the deadline of a process's state.
func (s *Service) processDueStep(ctx context.Context, tx store.Tx, fx *effects, rec store.Record, now time.Time) error {
	p := new(hosting.Process)
	if err := store.Decode(rec, p); err != nil {
		return err
	}
	switch p.State {
	case hosting.ProcessLaunching:
		return s.endProcessTx(ctx, tx, fx, p, "SERVER_PROCESS_PROCESS_READY_TIMEOUT")
	case hosting.ProcessActive:
		return s.endProcessTx(ctx, tx, fx, p, "SERVER_PROCESS_TERMINATED_UNHEALTHY")
	case hosting.ProcessTerminating:
		return s.terminateGraceOver(ctx, tx, fx, p, now)
	case hosting.ProcessTerminated:
		return deleteAll(ctx, tx, []store.Kind{hosting.KindProcess, kindProcessDue}, p.ID)
	}
	return nil
}

// terminateGraceOver: a process still TERMINATING after TerminateGrace. On
// managed fleets the ProcessHost is asked (again) to stop it and the grace
// restarts; on Anywhere it is recorded gone, and the compute's agent, if
// it has one, is told to kill it.
func (s *Service) terminateGraceOver(ctx context.Context, tx store.Tx, fx *effects, p *hosting.Process, now time.Time) error {
	managed, err := managedFleet(ctx, tx, p.FleetID)
	if err != nil {
		return err
	}
	if !managed {
		const reason = "SERVER_PROCESS_PROCESS_EXIT_TIMEOUT"
		agent, err := s.hasAgent(ctx, tx, p, managed)
		if err != nil {
			return err
		}
		if agent {
			if err := s.forceExitTx(ctx, tx, fx, forceExitReq{p.FleetID, p.ComputeName, p.ID, reason}); err != nil {
				return err
			}
		}
		return s.processGoneTx(ctx, tx, fx, p, reason)
	}
	p.TerminatingAt = now
	fx.terminate = append(fx.terminate, terminateReq{p.ID, "SERVER_PROCESS_PROCESS_EXIT_TIMEOUT"})
	return s.putProcess(ctx, tx, p)
}

// terminatingDue: a game session TERMINATING for TerminateGrace ends when
// its process is gone; otherwise it waits another grace period (the process
// sweep is ending the process).
func (s *Service) terminatingDue(ctx context.Context, tx store.Tx, _ *effects, rec store.Record, now time.Time) error {
	gs := new(hosting.GameSession)
	if err := store.Decode(rec, gs); err != nil {
		return err
	}
	p, err := getProcess(ctx, tx, gs.ProcessID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && p.State == hosting.ProcessTerminated) {
		return s.finishSessionTx(ctx, tx, gs, api.GameSessionStatusTerminated, "")
	}
	if err != nil {
		return err
	}
	gs.TerminatingAt = now
	return s.putGameSession(ctx, tx, gs)
}

// retentionDue deletes an ended game session whose retention is over, with
// its player sessions, indexes and collected logs.
func (s *Service) retentionDue(ctx context.Context, tx store.Tx, fx *effects, rec store.Record, _ time.Time) error {
	gs := new(hosting.GameSession)
	if err := store.Decode(rec, gs); err != nil {
		return err
	}
	q := store.Query{Kind: hosting.KindPlayerSession, Parent: rec.ID, HasParent: true}
	for {
		recs, next, err := tx.List(ctx, q)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := deleteAll(ctx, tx, []store.Kind{hosting.KindPlayerSession, kindPlayerIndex}, r.ID); err != nil {
				return err
			}
		}
		if next == "" {
			break
		}
		q.After = next
	}
	if err := deleteAll(ctx, tx, []store.Kind{hosting.KindGameSession, kindCreation}, rec.ID); err != nil {
		return err
	}
	if gs.LogDir != "" {
		fx.removeDirs = append(fx.removeDirs, gs.LogDir)
	}
	return nil
}

// playerRetentionDue deletes an ended player session whose retention is
// over, while its game session goes on (a long game session whose players
// come and go would otherwise keep every one of them until it ends).
func (s *Service) playerRetentionDue(ctx context.Context, tx store.Tx, _ *effects, rec store.Record, _ time.Time) error {
	return deleteAll(ctx, tx, []store.Kind{hosting.KindPlayerSession, kindPlayerIndex}, rec.ID)
}

func deleteAll(ctx context.Context, tx store.Tx, kinds []store.Kind, id string) error {
	for _, k := range kinds {
		if err := tx.Delete(ctx, k, id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// removeLogDir deletes collected logs (only ever a directory this service
// made under its data directory).
func (s *Service) removeLogDir(dir string) {
	base := filepath.Join(s.cfg.DataDir, "gamesession-logs") + string(filepath.Separator)
	if dir == "" || s.cfg.DataDir == "" || !strings.HasPrefix(dir, base) {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		s.log.Warn("sessions: removing expired logs", "dir", dir, "err", err)
	}
}
