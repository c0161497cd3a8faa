package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// Record kinds private to sessions (indexes the store's columns cannot
// express on the shared kinds).
const (
	// kindCreation: one per game session created with a CreatorId.
	// ID = game session ID, Parent = fleet ID + "/" + CreatorId,
	// Rank = creation time (Unix ms). Counts sessions per creator and period.
	kindCreation store.Kind = "GameSessionCreation"
	// kindPlayerIndex: one per player session. ID = player session ID,
	// Parent = PlayerId. Finds a player's sessions across game sessions.
	kindPlayerIndex store.Kind = "PlayerSessionByPlayer"
	// kindProcessDue: one per process. ID = process ID, Key = "due",
	// Rank = the process record's Rank. Lets the sweep find due processes
	// with one index range, whatever their Key.
	kindProcessDue store.Kind = "ProcessDue"
)

const dueKey = "due"

// never is the Rank of a record the sweep need not look at.
const never = math.MaxInt64

func ms(t time.Time) int64 { return t.UnixMilli() }

// --- processes ---

func getProcess(ctx context.Context, tx store.Tx, id string) (*hosting.Process, error) {
	p := new(hosting.Process)
	if _, err := store.GetJSON(ctx, tx, hosting.KindProcess, id, p); err != nil {
		return nil, err
	}
	return p, nil
}

// placeable reports whether placement may give p a game session.
func placeable(p *hosting.Process) bool {
	return p.State == hosting.ProcessActive && p.GameSessionID == "" && p.ConnectedTo != ""
}

func (s *Service) putProcess(ctx context.Context, tx store.Tx, p *hosting.Process) error {
	return s.writeProcess(ctx, tx, p, tx.Put)
}

// insertProcess is putProcess for a process that has no record yet: its
// record is inserted (store.InsertNew), so that the transaction fails with
// store.ErrExists if it was created meanwhile.
func (s *Service) insertProcess(ctx context.Context, tx store.Tx, p *hosting.Process) error {
	return s.writeProcess(ctx, tx, p, func(ctx context.Context, rec store.Record) error { return store.InsertNew(ctx, tx, rec) })
}

// writeProcess writes p's record with write, and its ProcessDue entry.
func (s *Service) writeProcess(ctx context.Context, tx store.Tx, p *hosting.Process, write func(context.Context, store.Record) error) error {
	key := hosting.ProcessKey(p.Location, p.State, placeable(p))
	due := s.processDue(p)
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", hosting.KindProcess, p.ID, err)
	}
	if err := write(ctx, store.Record{Kind: hosting.KindProcess, ID: p.ID, Parent: p.FleetID, Key: key, Rank: due, Data: data}); err != nil {
		return err
	}
	return tx.Put(ctx, store.Record{Kind: kindProcessDue, ID: p.ID, Key: dueKey, Rank: due, Data: []byte("{}")})
}

// processDue is when the sweep must next look at p (Unix ms).
func (s *Service) processDue(p *hosting.Process) int64 {
	switch p.State {
	case hosting.ProcessLaunching:
		return ms(p.LaunchedAt.Add(s.t.ReadyTimeout))
	case hosting.ProcessActive:
		return ms(s.heartbeatDeadline(p))
	case hosting.ProcessTerminating:
		return ms(p.TerminatingAt.Add(s.t.TerminateGrace))
	case hosting.ProcessTerminated:
		return ms(p.EndedAt.Add(s.t.ProcessRetention))
	}
	return never
}

// heartbeatDeadline is when an ACTIVE process has run out of bad reports:
// each report missing for Interval+Jitter counts as one bad report.
func (s *Service) heartbeatDeadline(p *hosting.Process) time.Time {
	last := p.LastHeartbeat
	if last.Before(p.ReadyAt) {
		last = p.ReadyAt
	}
	left := max(s.t.MaxBadReports-p.UnhealthyReports, 1)
	return last.Add(time.Duration(left) * (s.t.HeartbeatInterval + s.t.HeartbeatJitter))
}

// --- game sessions ---

func getGameSession(ctx context.Context, tx store.Tx, id string) (*hosting.GameSession, error) {
	gs := new(hosting.GameSession)
	if _, err := store.GetJSON(ctx, tx, hosting.KindGameSession, id, gs); err != nil {
		return nil, err
	}
	return gs, nil
}

// findGameSession reads a game session for an API call: NotFoundException
// when there is none.
func findGameSession(ctx context.Context, tx store.Tx, id string) (*hosting.GameSession, error) {
	gs, err := getGameSession(ctx, tx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.NewNotFoundException("game session %s does not exist", id)
	}
	return gs, err
}

func (s *Service) putGameSession(ctx context.Context, tx store.Tx, gs *hosting.GameSession) error {
	sess := &gs.Session
	rec := store.Record{Kind: hosting.KindGameSession, ID: api.ToString(sess.GameSessionId),
		Parent: api.ToString(sess.FleetId), Key: string(sess.Status), Rank: s.gameSessionDue(gs)}
	return store.PutJSON(ctx, tx, rec, gs)
}

// gameSessionDue is when the sweep must next look at gs (Unix ms).
func (s *Service) gameSessionDue(gs *hosting.GameSession) int64 {
	switch gs.Session.Status {
	case api.GameSessionStatusActivating:
		return ms(gs.ActivationDeadline)
	case api.GameSessionStatusTerminating:
		return ms(gs.TerminatingAt.Add(s.t.TerminateGrace))
	case api.GameSessionStatusTerminated, api.GameSessionStatusError:
		if gs.Session.TerminationTime != nil {
			return ms(gs.Session.TerminationTime.Time.Add(s.t.SessionRetention))
		}
	}
	return never
}

func ended(st api.GameSessionStatus) bool {
	return st == api.GameSessionStatusTerminated || st == api.GameSessionStatusError
}

// --- player sessions ---

func getPlayerSession(ctx context.Context, tx store.Tx, id string) (*hosting.PlayerSession, error) {
	ps := new(hosting.PlayerSession)
	if _, err := store.GetJSON(ctx, tx, hosting.KindPlayerSession, id, ps); err != nil {
		return nil, err
	}
	return ps, nil
}

func putPlayerSession(ctx context.Context, tx store.Tx, ps *hosting.PlayerSession) error {
	sess := &ps.Session
	rank := int64(never)
	switch {
	case sess.Status == api.PlayerSessionStatusReserved:
		rank = ms(ps.ReservedUntil)
	case sess.TerminationTime != nil:
		rank = ms(sess.TerminationTime.Time)
	}
	rec := store.Record{Kind: hosting.KindPlayerSession, ID: api.ToString(sess.PlayerSessionId),
		Parent: api.ToString(sess.GameSessionId), Key: string(sess.Status), Rank: rank}
	return store.PutJSON(ctx, tx, rec, ps)
}

// --- fleets (read only) ---

// fleetID returns the fleet ID of a FleetId that may be an ARN.
func fleetID(idOrARN string) string {
	if strings.HasPrefix(idOrARN, "arn:") {
		if i := strings.LastIndex(idOrARN, "/"); i >= 0 {
			return idOrARN[i+1:]
		}
	}
	return idOrARN
}

func getFleet(ctx context.Context, tx store.Tx, id string) (*hosting.Fleet, error) {
	f := new(hosting.Fleet)
	if _, err := store.GetJSON(ctx, tx, hosting.KindFleet, id, f); err != nil {
		return nil, err
	}
	return f, nil
}

// findFleet reads a fleet for an API call: NotFoundException when there is
// none (or it is TERMINATED).
func findFleet(ctx context.Context, tx store.Tx, idOrARN string) (*hosting.Fleet, error) {
	id := fleetID(idOrARN)
	rec, err := tx.Get(ctx, hosting.KindFleet, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return fleetFound(id, store.Got{Record: rec, Found: err == nil})
}

// FleetRef is the store.Ref of a fleet (ID or ARN) as PlaceTx reads it
// (unheld): read with other records in one store.GetRefs, its result is
// PlaceRequest.Fleet.
func FleetRef(idOrARN string) store.Ref {
	return store.Ref{Kind: hosting.KindFleet, ID: fleetID(idOrARN), Unheld: true}
}

// fleetFound is findFleet's answer from got, the fleet id as read:
// NotFoundException when there is none (or it is TERMINATED).
func fleetFound(id string, got store.Got) (*hosting.Fleet, error) {
	f := new(hosting.Fleet)
	if !got.Found {
		return nil, api.NewNotFoundException("fleet %s does not exist", id)
	}
	if err := store.Decode(got.Record, f); err != nil {
		return nil, err
	}
	if f.Attributes.Status == api.FleetStatusTerminated {
		return nil, api.NewNotFoundException("fleet %s does not exist", id)
	}
	return f, nil
}

// fleetLocation returns the fleet's location called name ("" = home).
func fleetLocation(f *hosting.Fleet, name string) (*hosting.FleetLocation, bool) {
	if name == "" {
		name = f.HomeLocation
	}
	for i := range f.Locations {
		if f.Locations[i].Location == name {
			return &f.Locations[i], true
		}
	}
	return nil, false
}

// managedFleet reports whether Hoist launches the fleet's processes (so a
// ProcessHost can end them).
func managedFleet(ctx context.Context, tx store.Tx, id string) (bool, error) {
	f, err := getFleet(ctx, tx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return f.Attributes.ComputeType != api.ComputeTypeAnywhere, nil
}

func getCompute(ctx context.Context, tx store.Tx, fleetID, name string) (*hosting.Compute, error) {
	c := new(hosting.Compute)
	if _, err := store.GetJSON(ctx, tx, hosting.KindCompute, fleetID+"/"+name, c); err != nil {
		return nil, err
	}
	return c, nil
}

// zeroTime clears a time field.
var zeroTime time.Time
