package sessions

import (
	"context"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
)

// maxPlayersPerRequest is CreatePlayerSessions' limit (PlayerIds 1-25).
const maxPlayersPerRequest = 25

// playerReq is one player to reserve a slot for. PlayerId is sensitive in
// the model: messages never repeat it.
type playerReq struct {
	playerID, data, sessionID string
}

// CreatePlayerSession reserves a slot in an ACTIVE game session for a player.
func (s *Service) CreatePlayerSession(ctx context.Context, in *api.CreatePlayerSessionInput) (*api.CreatePlayerSessionOutput, error) {
	if api.ToString(in.PlayerId) == "" {
		return nil, api.NewInvalidRequestException("PlayerId is required")
	}
	reqs := []playerReq{{playerID: *in.PlayerId, data: api.ToString(in.PlayerData), sessionID: s.playerSessionID()}}
	out, err := s.reserve(ctx, api.ToString(in.GameSessionId), reqs)
	if err != nil {
		return nil, err
	}
	return &api.CreatePlayerSessionOutput{PlayerSession: &out[0]}, nil
}

// CreatePlayerSessions reserves slots for 1 to 25 players at once: all or
// none.
func (s *Service) CreatePlayerSessions(ctx context.Context, in *api.CreatePlayerSessionsInput) (*api.CreatePlayerSessionsOutput, error) {
	if n := len(in.PlayerIds); n < 1 || n > maxPlayersPerRequest {
		return nil, api.NewInvalidRequestException("PlayerIds must list 1 to %d players, not %d", maxPlayersPerRequest, n)
	}
	seen := make(map[string]bool, len(in.PlayerIds))
	reqs := make([]playerReq, 0, len(in.PlayerIds))
	for i, p := range in.PlayerIds {
		switch {
		case p == "":
			return nil, api.NewInvalidRequestException("PlayerIds[%d] is empty", i)
		case seen[p]:
			return nil, api.NewInvalidRequestException("PlayerIds[%d] repeats an earlier player ID", i)
		}
		seen[p] = true
		reqs = append(reqs, playerReq{playerID: p, data: in.PlayerDataMap[p], sessionID: s.playerSessionID()})
	}
	for k := range in.PlayerDataMap {
		if !seen[k] {
			return nil, api.NewInvalidRequestException("PlayerDataMap has a key that is not in PlayerIds")
		}
	}
	out, err := s.reserve(ctx, api.ToString(in.GameSessionId), reqs)
	if err != nil {
		return nil, err
	}
	return &api.CreatePlayerSessionsOutput{PlayerSessions: out}, nil
}

func (s *Service) playerSessionID() string { return "psess-" + s.cfg.NewID() }

// reserve creates RESERVED player sessions in game session gsID.
func (s *Service) reserve(ctx context.Context, gsID string, reqs []playerReq) ([]api.PlayerSession, error) {
	var out []api.PlayerSession
	err := s.update(ctx, func(tx store.Tx, _ *effects) error {
		out = out[:0]
		gs, err := findGameSession(ctx, tx, gsID)
		if err != nil {
			return err
		}
		if err := checkSlots(gs, len(reqs)); err != nil {
			return err
		}
		if out, err = s.addPlayersTx(ctx, tx, gs, reqs); err != nil {
			return err
		}
		return s.putGameSession(ctx, tx, gs)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// addPlayersTx creates RESERVED player sessions in gs for reqs (whose
// slots the caller checked) and counts them in gs, which the caller stores.
func (s *Service) addPlayersTx(ctx context.Context, tx store.Tx, gs *hosting.GameSession, reqs []playerReq) ([]api.PlayerSession, error) {
	now := s.now()
	out := make([]api.PlayerSession, 0, len(reqs))
	for _, r := range reqs {
		ps := s.newPlayerSession(gs, r, now)
		if err := putPlayerSession(ctx, tx, ps); err != nil {
			return nil, err
		}
		idx := store.Record{Kind: kindPlayerIndex, ID: r.sessionID, Parent: r.playerID, Data: []byte("{}")}
		if err := tx.Put(ctx, idx); err != nil {
			return nil, err
		}
		out = append(out, ps.Session)
	}
	gs.Session.CurrentPlayerSessionCount = api.Int32(api.ToInt32(gs.Session.CurrentPlayerSessionCount) + int32(len(reqs)))
	return out, nil
}

// checkSlots decides whether n more players fit in gs. A DENY_ALL game
// session is answered as full.
func checkSlots(gs *hosting.GameSession, n int) error {
	sess := &gs.Session
	id := api.ToString(sess.GameSessionId)
	if sess.Status != api.GameSessionStatusActive {
		return api.NewInvalidGameSessionStatusException("game session %s is %s: player sessions can be created only in an ACTIVE game session", id, sess.Status)
	}
	if sess.PlayerSessionCreationPolicy == api.PlayerSessionCreationPolicyDenyAll {
		return api.NewGameSessionFullException("game session %s does not accept new players (PlayerSessionCreationPolicy is DENY_ALL)", id)
	}
	cur, limit := int(api.ToInt32(sess.CurrentPlayerSessionCount)), int(api.ToInt32(sess.MaximumPlayerSessionCount))
	if cur+n > limit {
		return api.NewGameSessionFullException("game session %s has %d of %d player slots taken: no room for %d more", id, cur, limit, n)
	}
	return nil
}

func (s *Service) newPlayerSession(gs *hosting.GameSession, r playerReq, now time.Time) *hosting.PlayerSession {
	g := &gs.Session
	ps := api.PlayerSession{
		CreationTime:    api.Time(now),
		DnsName:         g.DnsName,
		FleetArn:        g.FleetArn,
		FleetId:         g.FleetId,
		GameSessionId:   g.GameSessionId,
		IpAddress:       g.IpAddress,
		PlayerData:      optString(r.data),
		PlayerId:        api.String(r.playerID),
		PlayerSessionId: api.String(r.sessionID),
		Port:            g.Port,
		Status:          api.PlayerSessionStatusReserved,
	}
	return &hosting.PlayerSession{Session: ps, ReservedUntil: now.Add(s.t.Reservation)}
}

// playerQuery is a DescribePlayerSessions request (API or SDK). fleetID,
// when set, restricts the answer to one fleet (a process sees its own
// fleet's player sessions only).
type playerQuery struct {
	gameSessionID, playerID, playerSessionID, status, next string
	limit                                                  int
	fleetID                                                string
}

// describePlayerSessions lists player sessions of one game session, one
// player, or one player session; the status filter applies to the game
// session form only (as GameLift documents).
func (s *Service) describePlayerSessions(ctx context.Context, q playerQuery) ([]api.PlayerSession, string, error) {
	n := 0
	for _, v := range []string{q.gameSessionID, q.playerID, q.playerSessionID} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return nil, "", api.NewInvalidRequestException("give exactly one of GameSessionId, PlayerId or PlayerSessionId")
	}
	if q.gameSessionID != "" && q.status != "" && !api.PlayerSessionStatus(q.status).IsValid() {
		return nil, "", api.NewInvalidRequestException("PlayerSessionStatusFilter %q is not a player session status (RESERVED, ACTIVE, COMPLETED, TIMEDOUT)", q.status)
	}
	var out []api.PlayerSession
	var next string
	err := s.view(ctx, func(tx store.Tx) error {
		var err error
		out, next, err = s.playerSessionsTx(ctx, tx, q)
		return err
	})
	return out, next, err
}

func (s *Service) playerSessionsTx(ctx context.Context, tx store.Tx, q playerQuery) ([]api.PlayerSession, string, error) {
	inFleet := func(ps *hosting.PlayerSession) bool {
		return q.fleetID == "" || api.ToString(ps.Session.FleetId) == q.fleetID
	}
	switch {
	case q.playerSessionID != "":
		ps, err := getPlayerSession(ctx, tx, q.playerSessionID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && !inFleet(ps)) {
			return nil, "", api.NewNotFoundException("player session %s does not exist", q.playerSessionID)
		}
		if err != nil {
			return nil, "", err
		}
		return []api.PlayerSession{ps.Session}, "", nil
	case q.gameSessionID != "":
		gs, err := findGameSession(ctx, tx, q.gameSessionID)
		if err != nil {
			return nil, "", err
		}
		if q.fleetID != "" && api.ToString(gs.Session.FleetId) != q.fleetID {
			return nil, "", api.NewNotFoundException("game session %s does not exist", q.gameSessionID)
		}
		sq := store.Query{Kind: hosting.KindPlayerSession, Parent: q.gameSessionID, HasParent: true,
			Key: q.status, HasKey: q.status != "", Order: store.OrderCreated}
		recs, next, err := paging.Records(ctx, tx, sq, q.next, q.limit, nil)
		if err != nil {
			return nil, "", err
		}
		out := make([]api.PlayerSession, 0, len(recs))
		for _, rec := range recs {
			ps := new(hosting.PlayerSession)
			if err := store.Decode(rec, ps); err != nil {
				return nil, "", err
			}
			out = append(out, ps.Session)
		}
		return out, next, nil
	}
	var out []api.PlayerSession
	sq := store.Query{Kind: kindPlayerIndex, Parent: q.playerID, HasParent: true, Order: store.OrderCreated}
	_, next, err := paging.Records(ctx, tx, sq, q.next, q.limit, func(rec store.Record) (bool, error) {
		ps, err := getPlayerSession(ctx, tx, rec.ID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && !inFleet(ps)) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		out = append(out, ps.Session)
		return true, nil
	})
	return out, next, err
}

// DescribePlayerSessions lists player sessions.
func (s *Service) DescribePlayerSessions(ctx context.Context, in *api.DescribePlayerSessionsInput) (*api.DescribePlayerSessionsOutput, error) {
	list, next, err := s.describePlayerSessions(ctx, playerQuery{
		gameSessionID: api.ToString(in.GameSessionId), playerID: api.ToString(in.PlayerId),
		playerSessionID: api.ToString(in.PlayerSessionId), status: api.ToString(in.PlayerSessionStatusFilter),
		next: api.ToString(in.NextToken), limit: limitOf(in.Limit)})
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []api.PlayerSession{}
	}
	return &api.DescribePlayerSessionsOutput{PlayerSessions: list, NextToken: optString(next)}, nil
}

// GetPlayerConnectionDetails returns, for each player, the endpoint of the
// game session's server. Hoist has no player gateway, so there is never a
// PlayerGatewayToken or Expiration (GameLift's answer when the gateway is
// disabled).
func (s *Service) GetPlayerConnectionDetails(ctx context.Context, in *api.GetPlayerConnectionDetailsInput) (*api.GetPlayerConnectionDetailsOutput, error) {
	if n := len(in.PlayerIds); n < 1 || n > maxPlayersPerRequest {
		return nil, api.NewInvalidRequestException("PlayerIds must list 1 to %d players, not %d", maxPlayersPerRequest, n)
	}
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
	if st := gs.Session.Status; st != api.GameSessionStatusActive {
		return nil, api.NewInvalidGameSessionStatusException("game session %s is %s: connection details exist only for an ACTIVE game session", id, st)
	}
	out := &api.GetPlayerConnectionDetailsOutput{GameSessionId: api.String(id)}
	for i, p := range in.PlayerIds {
		if p == "" {
			return nil, api.NewInvalidRequestException("PlayerIds[%d] is empty", i)
		}
		ep := api.PlayerConnectionEndpoint{IpAddress: gs.Session.IpAddress, Port: gs.Session.Port}
		out.PlayerConnectionDetails = append(out.PlayerConnectionDetails,
			api.PlayerConnectionDetail{PlayerId: api.String(p), Endpoints: []api.PlayerConnectionEndpoint{ep}})
	}
	return out, nil
}
