package matchmaking

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/flexmatch"
	"github.com/hoistgg/hoist/internal/store"
)

// MaxBackfillPlayers is the most players a StartMatchBackfill request
// carries (GameLift's documented limit).
const MaxBackfillPlayers = 199

// KindBackfill records the latest backfill ticket of a game session: ID
// the game session ARN, Data the ticket ID (a new backfill request of the
// session cancels that ticket while it is active).
const KindBackfill store.Kind = "MatchmakingBackfill"

// Reasons a backfill ticket ended without new players, as the game
// server's UpdateGameSession says them.
const (
	BackfillFailed    = "BACKFILL_FAILED"
	BackfillTimedOut  = "BACKFILL_TIMED_OUT"
	BackfillCancelled = "BACKFILL_CANCELLED"
)

// SessionBackfill asks for new players to be added to a game session: the
// match's new MatchmakerData and a player session for each new player.
type SessionBackfill struct {
	GameSessionArn, TicketID, MatchmakerData string
	// Players are the IDs of the new players.
	Players []string
}

// SessionBackfilled is a backfilled game session.
type SessionBackfilled struct {
	GameSessionArn, IpAddress, DnsName string
	Port                               int32
	PlayerSessions                     []api.PlacedPlayerSession
	// Notify, when set, is called once the transaction committed (it
	// tells the game server about its new players).
	Notify func(ctx context.Context)
}

// SessionBackfiller applies backfill matches to game sessions (a backfill
// of a WITH_QUEUE configuration; STANDALONE backfills complete with teams
// only).
type SessionBackfiller interface {
	// BackfillTx adds the players to the game session in tx. API errors
	// (an unknown or ended game session, no room) fail the match.
	BackfillTx(ctx context.Context, tx store.Tx, b SessionBackfill) (*SessionBackfilled, error)
	// BackfillEnded tells the game session's server that a backfill
	// ticket ended without new players (reason BACKFILL_FAILED,
	// BACKFILL_TIMED_OUT or BACKFILL_CANCELLED), after the commit.
	BackfillEnded(ctx context.Context, gameSessionArn, ticketID, reason string)
}

// effects are what a transaction leaves to do once it committed.
type effects struct{ after []func(context.Context) }

type effectsKey struct{}

// later schedules fn for after the commit of the transaction of ctx (a
// transaction of update); elsewhere (OnMatchPlacement, in placement's or a
// game session activation's transaction) it is dropped.
func later(ctx context.Context, fn func(context.Context)) {
	if e, ok := ctx.Value(effectsKey{}).(*effects); ok {
		e.after = append(e.after, fn)
	}
}

// update runs fn in a store transaction and, once it committed, what fn
// scheduled with later.
func (s *Service) update(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return s.updateIn(ctx, store.Grant{}, fn)
}

// updateIn is update fenced by g, the grant of a configuration's shard (a
// plain transaction when g has no term).
func (s *Service) updateIn(ctx context.Context, g store.Grant, fn func(ctx context.Context, tx store.Tx) error) error {
	e := &effects{}
	tctx := context.WithValue(ctx, effectsKey{}, e)
	err := store.UpdateIn(ctx, s.cfg.Store, g, func(tx store.Tx) error {
		e.after = e.after[:0]
		return fn(tctx, tx)
	})
	if err != nil {
		return err
	}
	for _, f := range e.after {
		f(ctx)
	}
	return nil
}

// StartMatchBackfill starts a backfill ticket: the game session's current
// players (each with the team they are on) look for new players to fill
// its open slots.
func (s *Service) StartMatchBackfill(ctx context.Context, in *api.StartMatchBackfillInput) (*api.StartMatchBackfillOutput, error) {
	t, err := s.startBackfill(ctx, api.ToString(in.ConfigurationName), api.ToString(in.GameSessionArn), api.ToString(in.TicketId), in.Players)
	if err != nil {
		return nil, err
	}
	return &api.StartMatchBackfillOutput{MatchmakingTicket: &t.Ticket}, nil
}

// StartBackfill starts a backfill ticket for a server process's
// StartMatchBackfill request (the SDK endpoint has checked that the
// process hosts the game session) and returns its ID. Errors are the
// API's, as StartMatchBackfill answers them.
func (s *Service) StartBackfill(ctx context.Context, configNameOrARN, gameSessionArn, ticketID string, players []api.Player) (string, error) {
	if gameSessionArn == "" {
		return "", api.NewInvalidRequestException("GameSessionArn is required")
	}
	t, err := s.startBackfill(ctx, configNameOrARN, gameSessionArn, ticketID, players)
	if err != nil {
		return "", err
	}
	return t.id(), nil
}

// StopBackfill cancels a backfill ticket for a server process's
// StopMatchBackfill request: the ticket must be a backfill ticket of that
// game session and configuration (else NotFoundException) and not have
// ended (else InvalidRequestException, as StopMatchmaking).
func (s *Service) StopBackfill(ctx context.Context, configNameOrARN, gameSessionArn, ticketID string) error {
	err := s.update(ctx, func(ctx context.Context, tx store.Tx) error {
		t, err := getTicket(ctx, tx, ticketID)
		if err != nil {
			return err
		}
		if !t.Backfill || t.GameSessionArn != gameSessionArn || t.config() != configName(configNameOrARN) {
			return api.NewNotFoundException("matchmaking ticket %s is not a backfill ticket of game session %s and configuration %s", ticketID, gameSessionArn, configName(configNameOrARN))
		}
		if !isActive(t.Ticket.Status) {
			return api.NewInvalidRequestException("matchmaking ticket %s is %s: only a ticket that has not ended can be stopped", ticketID, t.Ticket.Status)
		}
		return s.cancelTx(ctx, tx, ticketID, "Cancelled by request.")
	})
	if err != nil {
		return err
	}
	return nil
}

// startBackfill checks and stores a backfill ticket (StartMatchBackfill,
// and a server process's StartMatchBackfill).
func (s *Service) startBackfill(ctx context.Context, config, gameSession, id string, players []api.Player) (*ticketRecord, error) {
	if id == "" {
		id = s.cfg.NewID()
	} else if len(id) > MaxTicketID || !configNamePattern.MatchString(id) {
		return nil, api.NewInvalidRequestException("TicketId %q must be 1 to %d letters, digits, '-' or '.'", id, MaxTicketID)
	}
	if err := checkPlayers(players, MaxBackfillPlayers); err != nil {
		return nil, err
	}
	for i, p := range players {
		if api.ToString(p.Team) == "" {
			return nil, api.NewInvalidRequestException("Players[%d].Team is required: a backfill request gives every current player's team", i)
		}
	}
	now := s.now()
	pre, err := s.countsBefore(ctx, configName(config), now)
	if err != nil {
		return nil, err
	}
	var t *ticketRecord
	err = s.update(ctx, func(ctx context.Context, tx store.Tx) error {
		c, err := getConfig(ctx, tx, config)
		if err != nil {
			return err
		}
		if gameSession == "" && c.FlexMatchMode != api.FlexMatchModeStandalone {
			return api.NewInvalidRequestException("GameSessionArn is required with FlexMatchMode WITH_QUEUE")
		}
		cnt, err := countsIn(ctx, tx, api.ToString(c.Name), now, pre) // before the ticket is counted
		if err != nil {
			return err
		}
		if t, err = s.startBackfillTx(ctx, tx, c, gameSession, id, players, now); err != nil {
			return err
		}
		// Automatic backfill tickets (auto.go) are not refused: their
		// players are a placed match's, counted when they started.
		return s.checkTicketBytes(t, cnt.bytes)
	})
	if err != nil {
		return nil, usedTicketID(err, id)
	}
	s.counts.started(t.config(), t.Size)
	s.wake.Wake(t.config())
	return t, nil
}

// startBackfillTx stores a QUEUED backfill ticket of configuration c in
// tx; with a game session, it cancels that session's previous backfill
// ticket (one backfill per game session: a new request replaces the old).
func (s *Service) startBackfillTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, gameSession, id string, players []api.Player, now time.Time) (*ticketRecord, error) {
	rs, err := s.ruleSetOf(ctx, tx, c)
	if err != nil {
		return nil, err
	}
	if err := rs.CheckTicket(flexmatch.Ticket{ID: id, Start: now, Players: toFlex(players), Backfill: true}); err != nil {
		var fe *flexmatch.Error
		if errors.As(err, &fe) {
			return nil, api.NewInvalidRequestException("%s", fe.Error())
		}
		return nil, api.NewInvalidRequestException("Players: %v", err)
	}
	t := &ticketRecord{Ticket: api.MatchmakingTicket{TicketId: api.String(id), ConfigurationName: c.Name,
		ConfigurationArn: c.ConfigurationArn, Status: stQueued, StartTime: api.Time(now), Players: slices.Clone(players)},
		Deadline: now.Add(time.Duration(api.ToInt32(c.RequestTimeoutSeconds)) * time.Second),
		Backfill: true, GameSessionArn: gameSession}
	if err := putTicket(ctx, tx, t, t.Deadline.UnixMilli(), true); err != nil {
		return nil, usedTicketID(err, id)
	}
	if gameSession == "" {
		return t, nil
	}
	rec, err := tx.Get(ctx, KindBackfill, gameSession)
	switch {
	case err == nil:
		if err := s.cancelTx(ctx, tx, string(rec.Data), "Replaced by a newer backfill request of the game session."); err != nil {
			return nil, err
		}
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	return t, tx.Put(ctx, store.Record{Kind: KindBackfill, ID: gameSession, Data: []byte(id)})
}

// cancelTx cancels ticket id if it has not ended and is not PLACING (as
// StopMatchmaking does); an unknown or ended ticket is left alone.
func (s *Service) cancelTx(ctx context.Context, tx store.Tx, id, msg string) error {
	t, err := getTicket(ctx, tx, id)
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return err
	}
	if st := t.Ticket.Status; !isActive(st) || st == stPlacing {
		return nil
	}
	return s.stopTx(ctx, tx, t, msg)
}

// stopTx cancels an active ticket that is not PLACING (StopMatchmaking,
// and a backfill replaced or stopped). With its match waiting for
// acceptance, the match fails like a rejection by this ticket: the
// match's other tickets go back to SEARCHING.
func (s *Service) stopTx(ctx context.Context, tx store.Tx, t *ticketRecord, msg string) error {
	c, err := getConfig(ctx, tx, t.config())
	if err != nil {
		return err
	}
	now := s.now()
	if t.Ticket.Status == stAccept {
		m, err := getMatch(ctx, tx, t.MatchID)
		if err != nil {
			return err
		}
		return s.failAcceptanceTx(ctx, tx, c, m, now, acceptRejected, map[string]bool{t.id(): true})
	}
	return s.endTx(ctx, tx, c, t, stCancelled, "CANCELLED", msg, now, nil)
}

// backfillReason is how a backfill ticket's server is told it ended.
func backfillReason(st api.MatchmakingConfigurationStatus) string {
	switch st {
	case stCancelled:
		return BackfillCancelled
	case stTimedOut:
		return BackfillTimedOut
	}
	return BackfillFailed
}

// backfillTx applies a match that holds a backfill ticket: STANDALONE
// completes it with teams; WITH_QUEUE adds the new players to the game
// session through the SessionBackfiller (FAILED without one, or when the
// game session refuses them).
func (s *Service) backfillTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, m *matchRecord, ts []*ticketRecord, bf *ticketRecord, now time.Time) error {
	if m.State != "" {
		if err := tx.Delete(ctx, KindMatch, m.ID); err != nil {
			return err
		}
		m.State = ""
	}
	if c.FlexMatchMode == api.FlexMatchModeStandalone {
		return s.succeedTx(ctx, tx, c, m, ts, now, nil)
	}
	fail := func(code, msg string) error {
		for _, t := range ts {
			if err := s.failTx(ctx, tx, c, t, code, msg, now, m.Metrics); err != nil {
				return err
			}
		}
		return nil
	}
	if s.cfg.Backfiller == nil {
		return fail(failUnexpected, "this Hoist backfills no game sessions of WITH_QUEUE configurations")
	}
	// An automatically backfilled session: its roster becomes the match's
	// players, and the next ticket's ID goes in the match data while slots
	// stay open.
	auto, err := getAuto(ctx, tx, bf.GameSessionArn)
	if err != nil {
		return err
	}
	var players []api.Player
	next := ""
	if auto != nil {
		players = roster(m, ts)
		next = s.autoTicketID(c, len(players), auto.Max)
	}
	data, err := buildMatchData(c, m, ts, next)
	if err != nil {
		return err
	}
	req := SessionBackfill{GameSessionArn: bf.GameSessionArn, TicketID: bf.id(), MatchmakerData: data}
	for _, t := range ts {
		if t != bf {
			for _, p := range t.Ticket.Players {
				req.Players = append(req.Players, api.ToString(p.PlayerId))
			}
		}
	}
	got, err := s.cfg.Backfiller.BackfillTx(ctx, tx, req)
	if err != nil {
		var ae api.Error
		if errors.As(err, &ae) {
			return fail(failBackfillRefused, "the game session could not take the match's players: "+err.Error())
		}
		return err
	}
	if got.Notify != nil {
		later(ctx, got.Notify)
	}
	connect(ts, MatchOutcome{GameSessionArn: got.GameSessionArn, IpAddress: got.IpAddress, DnsName: got.DnsName,
		Port: got.Port, PlayerSessions: got.PlayerSessions})
	if err := s.succeedTx(ctx, tx, c, m, ts, now, &eventSession{GameSessionArn: got.GameSessionArn, IPAddress: got.IpAddress,
		DNSName: got.DnsName, Port: got.Port}); err != nil {
		return err
	}
	if auto == nil {
		return nil
	}
	return s.autoBackfilledTx(ctx, tx, c, bf.GameSessionArn, auto, players, next, now)
}

// connect gives the tickets the game session's connection information,
// each with its players' player sessions.
func connect(ts []*ticketRecord, out MatchOutcome) {
	sessions := map[string]string{}
	for _, ps := range out.PlayerSessions {
		sessions[api.ToString(ps.PlayerId)] = api.ToString(ps.PlayerSessionId)
	}
	for _, t := range ts {
		ci := &api.GameSessionConnectionInfo{GameSessionArn: api.String(out.GameSessionArn), IpAddress: api.String(out.IpAddress),
			DnsName: api.String(out.DnsName), Port: api.Int32(out.Port), MatchedPlayerSessions: []api.MatchedPlayerSession{}}
		for _, p := range t.Ticket.Players {
			id := api.ToString(p.PlayerId)
			if ps, ok := sessions[id]; ok {
				ci.MatchedPlayerSessions = append(ci.MatchedPlayerSessions, api.MatchedPlayerSession{PlayerId: api.String(id), PlayerSessionId: api.String(ps)})
			}
		}
		t.Ticket.GameSessionConnectionInfo = ci
	}
}
