package sessions

import (
	"context"
	"errors"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// PlaceRequest is a game session a queue placement (internal/placement)
// creates on one fleet location.
type PlaceRequest struct {
	FleetID, Location string
	// Token makes the game session's ID (its ARN ends in it): the
	// placement ID, which is never reused.
	Token                     string
	Name, GameSessionData     *string
	MaximumPlayerSessionCount int32
	GameProperties            []api.GameProperty
	// Players get RESERVED player sessions in the new game session.
	Players []api.DesiredPlayerSession
	// MatchmakerData, set for a match's game session (FlexMatch), becomes
	// the game session's and reaches the process in CreateGameSession.
	MatchmakerData *string
}

// Placed is a game session PlaceTx created; StartPlaced sends it to its
// process once the transaction committed.
type Placed struct {
	GameSession    api.GameSession
	PlayerSessions []api.PlayerSession
	gs             *hosting.GameSession
	proc           *hosting.Process
}

// Update runs fn in one transaction of the Service's store, so that the
// game sessions PlaceTx writes in it reach the search index.
func (s *Service) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.cfg.Store.Update(ctx, fn)
}

// PlaceTx creates a game session on an idle ready process of the fleet
// location, and the requested player sessions in it, inside tx (which must
// come from Update). It answers FleetCapacityExceededException when the
// location has no free process and InvalidFleetStatusException when the
// fleet or location is not ACTIVE, as CreateGameSession does.
func (s *Service) PlaceTx(ctx context.Context, tx store.Tx, req PlaceRequest) (*Placed, error) {
	f, err := findFleet(ctx, tx, req.FleetID)
	if err != nil {
		return nil, err
	}
	loc, ok := fleetLocation(f, req.Location)
	if !ok {
		return nil, api.NewInvalidRequestException("Location %s is not a location of fleet %s", req.Location, req.FleetID)
	}
	if err := checkFleetStatus(f, loc); err != nil {
		return nil, err
	}
	if n := len(req.Players); n > int(req.MaximumPlayerSessionCount) {
		return nil, api.NewInvalidRequestException("%d desired player sessions do not fit in %d slots", n, req.MaximumPlayerSessionCount)
	}
	id := s.gameSessionARN(f, loc.Location, req.Token)
	if _, err := getGameSession(ctx, tx, id); err == nil {
		return nil, api.NewInvalidRequestException("game session %s already exists", id)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	proc, comp, err := s.placeTx(ctx, tx, f, loc.Location)
	if err != nil {
		return nil, err
	}
	now := s.now()
	in := &api.CreateGameSessionInput{FleetId: f.Attributes.FleetId, Name: req.Name,
		MaximumPlayerSessionCount: api.Int32(req.MaximumPlayerSessionCount),
		GameProperties:            req.GameProperties, GameSessionData: req.GameSessionData}
	gs := s.newGameSession(f, id, &createRequest{in: in}, proc, comp, now)
	gs.Session.MatchmakerData = req.MatchmakerData
	out := &Placed{gs: gs, proc: proc}
	reqs := make([]playerReq, 0, len(req.Players))
	for _, p := range req.Players {
		reqs = append(reqs, playerReq{playerID: api.ToString(p.PlayerId), data: api.ToString(p.PlayerData), sessionID: s.playerSessionID()})
	}
	if out.PlayerSessions, err = s.addPlayersTx(ctx, tx, gs, reqs); err != nil {
		return nil, err
	}
	if err := s.putGameSession(ctx, tx, gs); err != nil {
		return nil, err
	}
	proc.GameSessionID = id
	if err := s.putProcess(ctx, tx, proc); err != nil {
		return nil, err
	}
	out.GameSession = gs.Session
	return out, nil
}

// StartPlaced sends a committed placed game session to its process (a
// failed delivery ends the game session in ERROR, as for CreateGameSession).
func (s *Service) StartPlaced(ctx context.Context, p *Placed) {
	s.startOnProcess(ctx, p.gs, p.proc)
}
