package sessions

import (
	"context"
	"errors"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
)

// defaultLimit is the page size of the Describe operations when the request
// gives no Limit.
const defaultLimit = 100

func limitOf(l *int32) int {
	if l == nil || *l <= 0 {
		return defaultLimit
	}
	return int(*l)
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// gameSessionQuery is a DescribeGameSessions or DescribeGameSessionDetails
// request.
type gameSessionQuery struct {
	fleetID, aliasID, gameSessionID, location, status, next string
	limit                                                   int
}

// describeGameSessions answers both Describe operations.
func (s *Service) describeGameSessions(ctx context.Context, q gameSessionQuery) ([]*hosting.GameSession, string, error) {
	n := 0
	for _, v := range []string{q.fleetID, q.aliasID, q.gameSessionID} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return nil, "", api.NewInvalidRequestException("give exactly one of FleetId, AliasId or GameSessionId")
	}
	if q.status != "" && !api.GameSessionStatus(q.status).IsValid() {
		return nil, "", api.NewInvalidRequestException("StatusFilter %q is not a game session status (ACTIVE, ACTIVATING, TERMINATING, TERMINATED, ERROR)", q.status)
	}
	var out []*hosting.GameSession
	var next string
	err := s.view(ctx, func(tx store.Tx) error {
		out, next = nil, ""
		if q.gameSessionID != "" {
			gs, err := findGameSession(ctx, tx, q.gameSessionID)
			if err != nil {
				return err
			}
			if q.status == "" || string(gs.Session.Status) == q.status {
				out = append(out, gs)
			}
			return nil
		}
		f, err := s.resolveFleet(ctx, tx, q.fleetID, q.aliasID)
		if err != nil {
			return err
		}
		if q.location != "" {
			if _, ok := fleetLocation(f, q.location); !ok {
				return api.NewInvalidRequestException("Location %s is not a location of fleet %s", q.location, api.ToString(f.Attributes.FleetId))
			}
		}
		sq := store.Query{Kind: hosting.KindGameSession, Parent: api.ToString(f.Attributes.FleetId), HasParent: true,
			Key: q.status, HasKey: q.status != "", Order: store.OrderCreated}
		// The match function keeps what it decoded: page calls it once per
		// record and keeps exactly the records it accepts.
		_, nx, err := paging.Records(ctx, tx, sq, q.next, q.limit, func(rec store.Record) (bool, error) {
			gs := new(hosting.GameSession)
			if err := store.Decode(rec, gs); err != nil {
				return false, err
			}
			if q.location != "" && api.ToString(gs.Session.Location) != q.location {
				return false, nil
			}
			out = append(out, gs)
			return true, nil
		})
		next = nx
		return err
	})
	return out, next, err
}

// DescribeGameSessions lists game sessions of a fleet (or one by ID).
func (s *Service) DescribeGameSessions(ctx context.Context, in *api.DescribeGameSessionsInput) (*api.DescribeGameSessionsOutput, error) {
	list, next, err := s.describeGameSessions(ctx, gameSessionQuery{
		fleetID: api.ToString(in.FleetId), aliasID: api.ToString(in.AliasId), gameSessionID: api.ToString(in.GameSessionId),
		location: api.ToString(in.Location), status: api.ToString(in.StatusFilter), next: api.ToString(in.NextToken),
		limit: limitOf(in.Limit)})
	if err != nil {
		return nil, err
	}
	out := &api.DescribeGameSessionsOutput{GameSessions: []api.GameSession{}, NextToken: optString(next)}
	for _, gs := range list {
		out.GameSessions = append(out.GameSessions, gs.Session)
	}
	return out, nil
}

// DescribeGameSessionDetails lists game sessions with their protection policy.
func (s *Service) DescribeGameSessionDetails(ctx context.Context, in *api.DescribeGameSessionDetailsInput) (*api.DescribeGameSessionDetailsOutput, error) {
	list, next, err := s.describeGameSessions(ctx, gameSessionQuery{
		fleetID: api.ToString(in.FleetId), aliasID: api.ToString(in.AliasId), gameSessionID: api.ToString(in.GameSessionId),
		location: api.ToString(in.Location), status: api.ToString(in.StatusFilter), next: api.ToString(in.NextToken),
		limit: limitOf(in.Limit)})
	if err != nil {
		return nil, err
	}
	out := &api.DescribeGameSessionDetailsOutput{GameSessionDetails: []api.GameSessionDetail{}, NextToken: optString(next)}
	for _, gs := range list {
		out.GameSessionDetails = append(out.GameSessionDetails, api.GameSessionDetail{GameSession: &gs.Session, ProtectionPolicy: gs.ProtectionPolicy})
	}
	return out, nil
}

// UpdateGameSession changes a game session's mutable properties. The process
// is not told (GameLift sends UpdateGameSession only for match backfill).
func (s *Service) UpdateGameSession(ctx context.Context, in *api.UpdateGameSessionInput) (*api.UpdateGameSessionOutput, error) {
	if m := in.MaximumPlayerSessionCount; m != nil && (*m < 0 || *m > MaxPlayers) {
		return nil, api.NewInvalidRequestException("MaximumPlayerSessionCount %d is out of range: a game session holds 0 to %d players", *m, MaxPlayers)
	}
	if err := checkProperties(in.GameProperties); err != nil {
		return nil, err
	}
	id := api.ToString(in.GameSessionId)
	var gs *hosting.GameSession
	err := s.update(ctx, func(tx store.Tx, _ *effects) error {
		var err error
		if gs, err = findGameSession(ctx, tx, id); err != nil {
			return err
		}
		if st := gs.Session.Status; st != api.GameSessionStatusActive && st != api.GameSessionStatusActivating {
			return api.NewInvalidGameSessionStatusException("game session %s is %s: only an ACTIVE or ACTIVATING game session can be updated", id, st)
		}
		applyUpdate(gs, in)
		return s.putGameSession(ctx, tx, gs)
	})
	if err != nil {
		return nil, err
	}
	return &api.UpdateGameSessionOutput{GameSession: &gs.Session}, nil
}

// applyUpdate applies an UpdateGameSession request: game properties are
// added or overwritten, never deleted.
func applyUpdate(gs *hosting.GameSession, in *api.UpdateGameSessionInput) {
	sess := &gs.Session
	if in.MaximumPlayerSessionCount != nil {
		sess.MaximumPlayerSessionCount = api.Int32(*in.MaximumPlayerSessionCount)
	}
	if in.Name != nil {
		sess.Name = api.String(*in.Name)
	}
	if in.PlayerSessionCreationPolicy != "" {
		sess.PlayerSessionCreationPolicy = in.PlayerSessionCreationPolicy
	}
	if in.ProtectionPolicy != "" {
		gs.ProtectionPolicy = in.ProtectionPolicy
	}
	for _, np := range in.GameProperties {
		replaced := false
		for i, op := range sess.GameProperties {
			if api.ToString(op.Key) == api.ToString(np.Key) {
				sess.GameProperties[i].Value, replaced = api.String(api.ToString(np.Value)), true
				break
			}
		}
		if !replaced {
			sess.GameProperties = append(sess.GameProperties, api.GameProperty{Key: api.String(api.ToString(np.Key)), Value: api.String(api.ToString(np.Value))})
		}
	}
}

// TerminateGameSession ends a game session: TRIGGER_ON_PROCESS_TERMINATE
// asks its process to end (TERMINATING until it does), FORCE_TERMINATE has
// the process killed without being asked (TERMINATING until it is gone).
func (s *Service) TerminateGameSession(ctx context.Context, in *api.TerminateGameSessionInput) (*api.TerminateGameSessionOutput, error) {
	mode := in.TerminationMode
	if mode != api.TerminationModeTriggerOnProcessTerminate && mode != api.TerminationModeForceTerminate {
		return nil, api.NewInvalidRequestException("TerminationMode must be TRIGGER_ON_PROCESS_TERMINATE or FORCE_TERMINATE")
	}
	id := api.ToString(in.GameSessionId)
	var gs *hosting.GameSession
	err := s.update(ctx, func(tx store.Tx, fx *effects) error {
		var err error
		if gs, err = findGameSession(ctx, tx, id); err != nil {
			return err
		}
		return s.terminateTx(ctx, tx, fx, gs, mode)
	})
	if err != nil {
		return nil, err
	}
	return &api.TerminateGameSessionOutput{GameSession: &gs.Session}, nil
}

func (s *Service) terminateTx(ctx context.Context, tx store.Tx, fx *effects, gs *hosting.GameSession, mode api.TerminationMode) error {
	id, st := api.ToString(gs.Session.GameSessionId), gs.Session.Status
	if ended(st) {
		return api.NewInvalidGameSessionStatusException("game session %s is %s: it has already ended", id, st)
	}
	if st == api.GameSessionStatusTerminating && mode == api.TerminationModeTriggerOnProcessTerminate {
		return nil // already asked
	}
	p, err := getProcess(ctx, tx, gs.ProcessID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && p.State == hosting.ProcessTerminated) {
		reason := api.GameSessionStatusReasonTriggeredOnProcessTerminate
		if mode == api.TerminationModeForceTerminate {
			reason = api.GameSessionStatusReasonForceTerminated
		}
		return s.finishSessionTx(ctx, tx, gs, api.GameSessionStatusTerminated, reason)
	}
	if err != nil {
		return err
	}
	managed, err := managedFleet(ctx, tx, p.FleetID)
	if err != nil {
		return err
	}
	if mode == api.TerminationModeForceTerminate {
		agent, err := s.hasAgent(ctx, tx, p, managed)
		if err != nil {
			return err
		}
		if !managed && !agent {
			return api.NewInvalidRequestException("FORCE_TERMINATE is not available for game session %s on an Anywhere compute without a GameLift Agent: use TRIGGER_ON_PROCESS_TERMINATE", id)
		}
		// TERMINATING until the process is gone (processGoneTx, or the
		// terminating sweep), as GameLift answers.
		gs.Session.Status, gs.Session.StatusReason = api.GameSessionStatusTerminating, api.GameSessionStatusReasonForceTerminated
		gs.TerminatingAt = s.now()
		if err := s.putGameSession(ctx, tx, gs); err != nil {
			return err
		}
		return s.killProcessTx(ctx, tx, fx, p, "FORCE_TERMINATED", managed, "SERVER_PROCESS_FORCE_TERMINATED")
	}
	now := s.now()
	gs.Session.Status, gs.Session.StatusReason = api.GameSessionStatusTerminating, api.GameSessionStatusReasonTriggeredOnProcessTerminate
	gs.TerminatingAt = now
	if err := s.putGameSession(ctx, tx, gs); err != nil {
		return err
	}
	if !managed && p.ConnectedTo == "" {
		return s.processGoneTx(ctx, tx, fx, p, "TerminateGameSession: process not connected")
	}
	if p.State != hosting.ProcessTerminating {
		p.State, p.TerminatingAt, p.EndReason = hosting.ProcessTerminating, s.processNow(), "TerminateGameSession"
		if err := s.putProcess(ctx, tx, p); err != nil {
			return err
		}
	}
	return s.sendTx(ctx, tx, fx, p, s.terminateMessage(s.processNow()))
}

// GetGameSessionLogUrl returns the download URL of the logs Hoist collected
// when the game session ended.
func (s *Service) GetGameSessionLogUrl(ctx context.Context, in *api.GetGameSessionLogUrlInput) (*api.GetGameSessionLogUrlOutput, error) {
	id := api.ToString(in.GameSessionId)
	var gs *hosting.GameSession
	err := s.view(ctx, func(tx store.Tx) error {
		var err error
		gs, err = findGameSession(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	if gs.LogDir == "" || s.cfg.LogURL == nil {
		if !ended(gs.Session.Status) {
			return nil, api.NewNotFoundException("game session %s has no logs yet: they are collected when the game session ends", id)
		}
		return nil, api.NewNotFoundException("no logs were collected for game session %s", id)
	}
	return &api.GetGameSessionLogUrlOutput{PreSignedUrl: api.String(s.cfg.LogURL(id))}, nil
}
