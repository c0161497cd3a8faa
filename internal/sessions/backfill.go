package sessions

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// UpdateReason is the UpdateReason of an UpdateGameSession message: why a
// FlexMatch game session's process is told about its game session again.
type UpdateReason string

// The UpdateReasons of match backfill.
const (
	MatchmakingDataUpdated UpdateReason = "MATCHMAKING_DATA_UPDATED"
	BackfillFailed         UpdateReason = "BACKFILL_FAILED"
	BackfillTimedOut       UpdateReason = "BACKFILL_TIMED_OUT"
	BackfillCancelled      UpdateReason = "BACKFILL_CANCELLED"
)

// maxMatchmakerData is the longest MatchmakerData (the model's limit).
const maxMatchmakerData = 390000

// Backfill is a successful match backfill of a game session.
type Backfill struct {
	GameSessionID, TicketID string
	// MatchmakerData is the match's new data (every team with the new
	// players).
	MatchmakerData string
	// Players are the new players: each gets a RESERVED player session.
	Players []api.DesiredPlayerSession
}

// Backfilled is a game session BackfillTx updated; SendBackfilled tells
// its process once the transaction committed.
type Backfilled struct {
	GameSession    api.GameSession
	PlayerSessions []api.PlayerSession
	processID      string
	ticketID       string
	// remote is the replica whose inbox BackfillTx wrote the message to
	// ("": SendBackfilled sends it from this replica).
	remote string
}

// BackfillTx records a successful match backfill in tx: the game session
// (which must be ACTIVE and have come from FlexMatch, i.e. carry
// MatchmakerData) takes the new MatchmakerData and a RESERVED player
// session for each new player, within MaximumPlayerSessionCount and its
// PlayerSessionCreationPolicy, as CreatePlayerSessions. Errors are the
// API's: NotFoundException, InvalidGameSessionStatusException,
// GameSessionFullException, InvalidRequestException. Use a tx of Update
// (or call SendBackfilled after the commit, which also keeps
// SearchGameSessions current).
func (s *Service) BackfillTx(ctx context.Context, tx store.Tx, b Backfill) (*Backfilled, error) {
	switch n := utf8.RuneCountInString(b.MatchmakerData); {
	case n == 0:
		return nil, api.NewInvalidRequestException("MatchmakerData is required for a backfilled game session")
	case n > maxMatchmakerData:
		return nil, api.NewInvalidRequestException("MatchmakerData is longer than %d characters", maxMatchmakerData)
	}
	gs, err := findGameSession(ctx, tx, b.GameSessionID)
	if err != nil {
		return nil, err
	}
	if gs.Session.MatchmakerData == nil {
		return nil, api.NewInvalidRequestException("game session %s was not created by FlexMatch: only a match's game session can be backfilled", b.GameSessionID)
	}
	seen := make(map[string]bool, len(b.Players))
	reqs := make([]playerReq, 0, len(b.Players))
	for i, p := range b.Players {
		id := api.ToString(p.PlayerId)
		switch {
		case id == "":
			return nil, api.NewInvalidRequestException("Players[%d].PlayerId is required", i)
		case seen[id]:
			return nil, api.NewInvalidRequestException("Players[%d] repeats an earlier player ID", i)
		}
		seen[id] = true
		reqs = append(reqs, playerReq{playerID: id, data: api.ToString(p.PlayerData), sessionID: s.playerSessionID()})
	}
	if err := checkSlots(gs, len(reqs)); err != nil {
		return nil, err
	}
	out := &Backfilled{processID: gs.ProcessID, ticketID: b.TicketID}
	if out.PlayerSessions, err = s.addPlayersTx(ctx, tx, gs, reqs); err != nil {
		return nil, err
	}
	gs.Session.MatchmakerData = api.String(b.MatchmakerData)
	if err := s.putGameSession(ctx, tx, gs); err != nil {
		return nil, err
	}
	out.GameSession = gs.Session
	return out, s.postBackfilledTx(ctx, tx, out)
}

// postBackfilledTx writes a backfill's UpdateGameSession into the inbox of
// the replica holding its process's connection, when that is another one.
func (s *Service) postBackfilledTx(ctx context.Context, tx store.Tx, b *Backfilled) error {
	if s.cfg.Inbox == nil {
		return nil
	}
	p, err := getProcess(ctx, tx, b.processID)
	if err != nil || s.remoteHolder(p) == "" {
		return ignoreNotFound(err)
	}
	b.remote, err = s.postTx(ctx, tx, p, updateMessage(&b.GameSession, MatchmakingDataUpdated, b.ticketID))
	return err
}

// SendBackfilled sends the process of a committed backfill UpdateGameSession
// with UpdateReason MATCHMAKING_DATA_UPDATED and the backfill ticket's ID.
func (s *Service) SendBackfilled(ctx context.Context, b *Backfilled) error {
	s.search.markDirty([]string{api.ToString(b.GameSession.GameSessionId)})
	if b.remote != "" {
		s.cfg.Inbox.Wake(b.remote)
		return nil
	}
	return s.send(ctx, b.processID, updateMessage(&b.GameSession, MatchmakingDataUpdated, b.ticketID))
}

// SendBackfillEnded tells the process of a game session that a backfill
// ticket ended without new players: reason is BACKFILL_FAILED,
// BACKFILL_TIMED_OUT or BACKFILL_CANCELLED. The game session is unchanged
// (NotFoundException when there is none; nothing is sent once it ended).
func (s *Service) SendBackfillEnded(ctx context.Context, gameSessionID, ticketID string, reason UpdateReason) error {
	switch reason {
	case BackfillFailed, BackfillTimedOut, BackfillCancelled:
	default:
		return api.NewInvalidRequestException("UpdateReason %s is not the end of a backfill (BACKFILL_FAILED, BACKFILL_TIMED_OUT, BACKFILL_CANCELLED)", reason)
	}
	var gs *hosting.GameSession
	err := s.view(ctx, func(tx store.Tx) error {
		var err error
		gs, err = findGameSession(ctx, tx, gameSessionID)
		return err
	})
	if err != nil {
		return err
	}
	if ended(gs.Session.Status) {
		return nil
	}
	return s.send(ctx, gs.ProcessID, updateMessage(&gs.Session, reason, ticketID))
}

// MatchHook is told, inside the transaction that changes it, when a game
// session that came from FlexMatch (one with MatchmakerData) loses a player
// or ends: matchmaking keeps its automatic backfill from it.
type MatchHook interface {
	// PlayerLeftTx is called when a player session of the game session
	// ends while the game session goes on.
	PlayerLeftTx(ctx context.Context, tx store.Tx, gameSessionID, playerID string) error
	// GameSessionEndedTx is called when the game session ends.
	GameSessionEndedTx(ctx context.Context, tx store.Tx, gameSessionID string) error
}

// SetMatchHook sets the MatchHook. internal/server calls it once
// matchmaking exists, before anything is served.
func (s *Service) SetMatchHook(h MatchHook) { s.match.Store(&h) }

// playerLeftTx tells the MatchHook that a player left a FlexMatch game
// session.
func (s *Service) playerLeftTx(ctx context.Context, tx store.Tx, gs *hosting.GameSession, playerID string) error {
	h := s.match.Load()
	if h == nil || *h == nil || gs.Session.MatchmakerData == nil {
		return nil
	}
	return (*h).PlayerLeftTx(ctx, tx, api.ToString(gs.Session.GameSessionId), playerID)
}

// sessionEndedTx tells the MatchHook that a FlexMatch game session ended.
func (s *Service) sessionEndedTx(ctx context.Context, tx store.Tx, gs *hosting.GameSession) error {
	h := s.match.Load()
	if h == nil || *h == nil || gs.Session.MatchmakerData == nil {
		return nil
	}
	return (*h).GameSessionEndedTx(ctx, tx, api.ToString(gs.Session.GameSessionId))
}

// send delivers one message to a process through the Messenger.
func (s *Service) send(ctx context.Context, processID string, msg hosting.Message) error {
	if s.cfg.Messenger == nil {
		return errors.New("sessions: no messenger configured")
	}
	return s.cfg.Messenger.SendToProcess(ctx, processID, msg)
}

// updateMessage is the UpdateGameSession message of a backfill (section 3
// of the protocol notes): the game session as the process knows it,
// GameProperties as a flat object as in CreateGameSession.
func updateMessage(gs *api.GameSession, reason UpdateReason, ticketID string) hosting.Message {
	props := make(map[string]string, len(gs.GameProperties))
	for _, p := range gs.GameProperties {
		props[api.ToString(p.Key)] = api.ToString(p.Value)
	}
	return hosting.Message{
		"Action": "UpdateGameSession",
		"GameSession": map[string]any{
			"GameSessionId":             api.ToString(gs.GameSessionId),
			"Name":                      api.ToString(gs.Name),
			"FleetId":                   api.ToString(gs.FleetId),
			"Location":                  api.ToString(gs.Location),
			"MaximumPlayerSessionCount": api.ToInt32(gs.MaximumPlayerSessionCount),
			"IpAddress":                 api.ToString(gs.IpAddress),
			"Port":                      api.ToInt32(gs.Port),
			"DnsName":                   api.ToString(gs.DnsName),
			"GameSessionData":           api.ToString(gs.GameSessionData),
			"MatchmakerData":            api.ToString(gs.MatchmakerData),
			"GameProperties":            props,
			"Status":                    string(gs.Status),
			"StatusReason":              string(gs.StatusReason),
		},
		"UpdateReason":     string(reason),
		"BackfillTicketId": ticketID,
	}
}
