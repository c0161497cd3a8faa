package sessions

import (
	"context"
	"errors"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// PlaceRequest is a game session a queue placement (internal/placement)
// creates on one fleet location: one attempt of the placement.
type PlaceRequest struct {
	FleetID, Location string
	// Token makes the game session's ID (its ARN ends in it): the
	// placement ID for its first attempt, a fresh ID for the others.
	Token string
	// PlacementID is the placement: the game session's activation is told
	// to the PlacementHook in the activation's transaction. QueueName is
	// its queue, told with it.
	PlacementID, QueueName    string
	Name, GameSessionData     *string
	MaximumPlayerSessionCount int32
	GameProperties            []api.GameProperty
	// MatchmakerData, set for a match's game session (FlexMatch), becomes
	// the game session's and reaches the process in CreateGameSession.
	MatchmakerData *string
	// Fleet, when set, is the fleet read in tx with FleetRef (found or
	// not, read with other records in one store.GetRefs), which PlaceTx
	// then need not read.
	Fleet *store.Got
	// Sessions, when set, says of the IDs GameSessionRefs(FleetID,
	// Location, Token) names whether a game session has each, as the same
	// store.GetRefs read them: PlaceTx then need not read whether the new
	// game session's ID is taken.
	Sessions map[string]bool
	// Claimed says that tx is a Claim's (Service.ClaimIn): the process is
	// taken passing over those other Claims hold, the fleet and compute
	// are read unheld, and a fleet with MaxConcurrentGameSessionActivations
	// is ErrNeedsUpdate.
	Claimed bool
}

// Placed is a game session PlaceTx created (StartPlaced sends it to its
// process once the transaction committed), or one AddPlacedPlayersTx gave
// its player sessions.
type Placed struct {
	GameSession    api.GameSession
	PlayerSessions []api.PlayerSession
	gs             *hosting.GameSession
	proc           *hosting.Process
	// remote is the replica holding proc's connection when it is not this
	// one: PlaceTx wrote CreateGameSession into its inbox.
	remote string
}

// PlacementHook is told, inside the transaction of ActivateGameSession,
// that a placement's game session became ACTIVE (internal/placement
// fulfils the placement there): gs as tx holds and wrote it (its
// PlacementID, its PlacementQueue when Hoist recorded it). Claimed says
// that tx is a Claim's
// (PostgreSQL: its Gets hold what they read, at READ COMMITTED): a hook
// whose writes a Claim would not make safe answers ErrRunInUpdate,
// and the activation runs again in an Update.
type PlacementHook interface {
	GameSessionActivatedTx(ctx context.Context, tx store.Tx, gs *hosting.GameSession, claimed bool) error
}

// ErrRunInUpdate is the answer of a transaction function run in a Claim
// (claim; a PlacementHook with claimed) that would write records the
// Claim does not hold (a FlexMatch ticket's counts, an event's
// per-resource order, a process's end): it runs again in an Update.
var ErrRunInUpdate = errors.New("sessions: this transaction runs in an Update, not a Claim")

// SetPlacementHook sets the PlacementHook. internal/server calls it once
// placement exists, before anything is served.
func (s *Service) SetPlacementHook(h PlacementHook) { s.placed.Store(&h) }

// placementActivatedTx tells the PlacementHook that gs, a placement's game
// session, is ACTIVE (claimed: in a Claim).
func (s *Service) placementActivatedTx(ctx context.Context, tx store.Tx, gs *hosting.GameSession, claimed bool) error {
	h := s.placed.Load()
	if gs.PlacementID == "" || h == nil || *h == nil {
		return nil
	}
	return (*h).GameSessionActivatedTx(ctx, tx, gs, claimed)
}

// Update runs fn in one transaction of the Service's store, so that the
// game sessions PlaceTx writes in it reach the search index.
func (s *Service) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.cfg.Store.Update(ctx, fn)
}

// UpdateFenced is Update fenced by a lease's grant (store.UpdateFenced):
// the placement loop's work on a queue's shard.
func (s *Service) UpdateFenced(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error {
	return s.cfg.Store.UpdateFenced(ctx, g, fn)
}

// ClaimIn runs fn in a Claim of the Service's store fenced by g
// (store.ClaimIn): the placement loop's attempts, whose PlaceTx (Claimed)
// then takes a process other attempts at once do not hold.
func (s *Service) ClaimIn(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error {
	return store.ClaimIn(ctx, s.cfg.Store, g, fn)
}

// PlaceTx creates an ACTIVATING game session, without player sessions, on
// an idle ready process of the fleet location inside tx (which must come
// from Update, or ClaimIn with Claimed set). It answers FleetCapacityExceededException when the
// location has no free process and InvalidFleetStatusException when the
// fleet or location is not ACTIVE, as CreateGameSession does.
func (s *Service) PlaceTx(ctx context.Context, tx store.Tx, req PlaceRequest) (*Placed, error) {
	var f *hosting.Fleet
	var err error
	if req.Fleet != nil {
		f, err = fleetFound(fleetID(req.FleetID), *req.Fleet)
	} else {
		f, err = findFleet(ctx, store.Unheld(tx), req.FleetID)
	}
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
	id := s.gameSessionARN(f, loc.Location, req.Token)
	if err := s.newGameSessionID(ctx, tx, req, id); err != nil {
		return nil, err
	}
	proc, comp, err := s.placeTx(ctx, tx, f, loc.Location, req.Claimed)
	if err != nil {
		return nil, err
	}
	in := &api.CreateGameSessionInput{FleetId: f.Attributes.FleetId, Name: req.Name,
		MaximumPlayerSessionCount: api.Int32(req.MaximumPlayerSessionCount),
		GameProperties:            req.GameProperties, GameSessionData: req.GameSessionData}
	gs := s.newGameSession(f, id, &createRequest{in: in}, proc, comp, s.now())
	gs.Session.MatchmakerData, gs.PlacementID, gs.PlacementQueue = req.MatchmakerData, req.PlacementID, req.QueueName
	if err := s.putGameSession(ctx, tx, gs); err != nil {
		return nil, err
	}
	proc.GameSessionID = id
	if err := s.putProcess(ctx, tx, proc); err != nil {
		return nil, err
	}
	out := &Placed{GameSession: gs.Session, gs: gs, proc: proc}
	if s.remoteHolder(proc) != "" {
		if out.remote, err = s.postTx(ctx, tx, proc, createMessage(&gs.Session)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GameSessionRefs are the store.Refs (unheld) of the IDs the game
// session of a PlaceRequest for that fleet location and token can have:
// its ARN's region is the location's, or Hoist's Region for an Anywhere
// fleet, which only the fleet's record tells. Read with the fleet
// (FleetRef) in one store.GetRefs, their results are
// PlaceRequest.Sessions.
func (s *Service) GameSessionRefs(fleetIDOrARN, location, token string) []store.Ref {
	id := fleetID(fleetIDOrARN)
	refs := []store.Ref{{Kind: hosting.KindGameSession, ID: gameSessionARNIn(s.cfg.Region, id, token), Unheld: true}}
	if location != "" && location != s.cfg.Region {
		refs = append(refs, store.Ref{Kind: hosting.KindGameSession, ID: gameSessionARNIn(location, id, token), Unheld: true})
	}
	return refs
}

// newGameSessionID is the InvalidRequestException for a placed game
// session whose ID id a game session has already, as req.Sessions read
// it when it has id, else as read now.
func (s *Service) newGameSessionID(ctx context.Context, tx store.Tx, req PlaceRequest, id string) error {
	taken, known := req.Sessions[id]
	if !known {
		_, err := getGameSession(ctx, tx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		taken = err == nil
	}
	if taken {
		return api.NewInvalidRequestException("game session %s already exists", id)
	}
	return nil
}

// StartPlaced sends a committed placed game session to its process (a
// failed delivery ends the game session in ERROR, as for CreateGameSession),
// or wakes the replica whose inbox PlaceTx wrote it to.
func (s *Service) StartPlaced(ctx context.Context, p *Placed) {
	if p.remote != "" {
		s.cfg.Inbox.Wake(p.remote)
		return
	}
	s.startOnProcess(ctx, p.gs, p.proc)
}

// AddPlacedPlayersTx creates a RESERVED player session for each of players
// in the ACTIVE game session gameSessionID, in tx: the player sessions of a
// placement that is being fulfilled (GameLift creates them only then). The
// placement reserved their slots when it started, so neither the game
// session's PlayerSessionCreationPolicy nor a lowered maximum refuses them.
// known, when set, is the game session as tx holds and last wrote it (the
// one an activation tells the PlacementHook), which then is not read
// again.
func (s *Service) AddPlacedPlayersTx(ctx context.Context, tx store.Tx, gameSessionID string, known *hosting.GameSession, players []api.DesiredPlayerSession) (*Placed, error) {
	gs := known
	if gs == nil || api.ToString(gs.Session.GameSessionId) != gameSessionID {
		var err error
		gs, err = getGameSession(ctx, tx, gameSessionID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, api.NewNotFoundException("game session %s does not exist", gameSessionID)
		}
		if err != nil {
			return nil, err
		}
	}
	if st := gs.Session.Status; st != api.GameSessionStatusActive {
		return nil, api.NewInvalidGameSessionStatusException("game session %s is %s: player sessions are created only in an ACTIVE game session", gameSessionID, st)
	}
	reqs := make([]playerReq, 0, len(players))
	for _, p := range players {
		reqs = append(reqs, playerReq{playerID: api.ToString(p.PlayerId), data: api.ToString(p.PlayerData), sessionID: s.playerSessionID()})
	}
	out := &Placed{}
	var err error
	if out.PlayerSessions, err = s.addPlayersTx(ctx, tx, gs, reqs); err != nil {
		return nil, err
	}
	if err := s.putGameSession(ctx, tx, gs); err != nil {
		return nil, err
	}
	out.GameSession = gs.Session
	return out, nil
}
