package matchmaking

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// KindAutoBackfill records a game session placed for a match of a
// configuration with BackfillMode AUTOMATIC: ID the game session ARN,
// Parent the configuration name, Data its current players (autoRecord).
// It is written in the transactions that place the match, backfill the
// session and see a player leave, and removed in the one that ends the
// session, so automatic backfill never scans game sessions.
const KindAutoBackfill store.Kind = "MatchmakingAutoBackfill"

// autoRecord is the roster of an automatically backfilled game session.
type autoRecord struct {
	Config string `json:"config"`
	// Max is the most players the rule set puts in a match.
	Max int `json:"max"`
	// Players are the session's current players, each with its team,
	// attributes and latencies as its ticket gave them.
	Players []api.Player `json:"players"`
}

func getAuto(ctx context.Context, tx store.Tx, gameSession string) (*autoRecord, error) {
	a := new(autoRecord)
	if _, err := store.GetJSON(ctx, tx, KindAutoBackfill, gameSession, a); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	return a, nil
}

func putAuto(ctx context.Context, tx store.Tx, gameSession string, a *autoRecord) error {
	return store.PutJSON(ctx, tx, store.Record{Kind: KindAutoBackfill, ID: gameSession, Parent: a.Config}, a)
}

// roster lists the players of a match's tickets, each with its team.
func roster(m *matchRecord, ts []*ticketRecord) []api.Player {
	team := map[string]string{}
	for _, tm := range m.Teams {
		for _, id := range tm.Players {
			team[id] = tm.Name
		}
	}
	var out []api.Player
	for _, t := range ts {
		for _, p := range t.Ticket.Players {
			if tm, ok := team[api.ToString(p.PlayerId)]; ok {
				p.Team = api.String(tm)
				out = append(out, p)
			}
		}
	}
	return out
}

// autoTicketID returns the ID of the automatic backfill ticket a game
// session of c with n of at most max players gets ("" when it gets none:
// MANUAL, or no open slot).
func (s *Service) autoTicketID(c *api.MatchmakingConfiguration, n, max int) string {
	if c.BackfillMode != api.BackfillModeAutomatic || n >= max {
		return ""
	}
	return s.cfg.NewID()
}

// autoPlacedTx records a game session placed for match m of an AUTOMATIC
// configuration and starts its backfill ticket (m.AutoTicket) when it has
// open slots.
func (s *Service) autoPlacedTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, m *matchRecord, ts []*ticketRecord, gameSession string, now time.Time) error {
	if c.BackfillMode != api.BackfillModeAutomatic || m.AutoMax == 0 {
		return nil
	}
	a := &autoRecord{Config: api.ToString(c.Name), Max: m.AutoMax, Players: roster(m, ts)}
	if err := putAuto(ctx, tx, gameSession, a); err != nil {
		return err
	}
	return s.autoStartTx(ctx, tx, c, gameSession, a, m.AutoTicket, now)
}

// autoStartTx starts the automatic backfill ticket id (a new ID when "")
// of a game session with open slots; a session that is full, or whose
// configuration is no longer AUTOMATIC, gets none. A ticket the rule set
// refuses (the roster no longer fits it) is logged and skipped.
func (s *Service) autoStartTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, gameSession string, a *autoRecord, id string, now time.Time) error {
	if c.BackfillMode != api.BackfillModeAutomatic || len(a.Players) >= a.Max || len(a.Players) == 0 {
		return nil
	}
	if id == "" {
		id = s.cfg.NewID()
	}
	_, err := s.startBackfillTx(ctx, tx, c, gameSession, id, a.Players, now)
	var ae api.Error
	if errors.As(err, &ae) {
		s.log.Warn("automatic backfill ticket refused", "gameSession", gameSession, "config", a.Config, "err", err)
		return nil
	}
	if err == nil {
		s.kickLoop()
	}
	return err
}

// autoBackfilledTx updates the roster of an automatically backfilled game
// session after a backfill match (players the match's teams) and starts
// the next ticket, next, while it has open slots.
func (s *Service) autoBackfilledTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, gameSession string, a *autoRecord, players []api.Player, next string, now time.Time) error {
	a.Players = players
	if err := putAuto(ctx, tx, gameSession, a); err != nil {
		return err
	}
	return s.autoStartTx(ctx, tx, c, gameSession, a, next, now)
}

// autoTimedOutTx starts a new automatic backfill ticket when the backfill
// ticket of an automatically backfilled game session timed out while it
// still has open slots.
func (s *Service) autoTimedOutTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, gameSession string, now time.Time) error {
	a, err := getAuto(ctx, tx, gameSession)
	if err != nil || a == nil {
		return err
	}
	return s.autoStartTx(ctx, tx, c, gameSession, a, "", now)
}

// PlayerLeftTx takes a player who left a game session off its automatic
// backfill roster and starts a backfill ticket for the open slot (which
// replaces an active one: its roster had the player). sessions calls it in
// the transaction that ends the player session.
func (s *Service) PlayerLeftTx(ctx context.Context, tx store.Tx, gameSession, playerID string) error {
	a, err := getAuto(ctx, tx, gameSession)
	if err != nil || a == nil {
		return err
	}
	i := slices.IndexFunc(a.Players, func(p api.Player) bool { return api.ToString(p.PlayerId) == playerID })
	if i < 0 {
		return nil
	}
	a.Players = slices.Delete(a.Players, i, i+1)
	if err := putAuto(ctx, tx, gameSession, a); err != nil {
		return err
	}
	if len(a.Players) == 0 {
		// Nobody is left to backfill for.
		return s.cancelSessionTicketTx(ctx, tx, gameSession, "Every player left the game session.")
	}
	c, err := getConfig(ctx, tx, a.Config)
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.autoStartTx(ctx, tx, c, gameSession, a, "", s.now())
}

// GameSessionEndedTx stops the automatic backfill of a game session that
// ended: its roster goes and its active backfill ticket is cancelled.
// sessions calls it in the transaction that ends the game session.
func (s *Service) GameSessionEndedTx(ctx context.Context, tx store.Tx, gameSession string) error {
	a, err := getAuto(ctx, tx, gameSession)
	if err != nil || a == nil {
		return err
	}
	if err := tx.Delete(ctx, KindAutoBackfill, gameSession); err != nil {
		return err
	}
	return s.cancelSessionTicketTx(ctx, tx, gameSession, "The game session ended.")
}

// cancelSessionTicketTx cancels the latest backfill ticket of a game
// session, if it has not ended.
func (s *Service) cancelSessionTicketTx(ctx context.Context, tx store.Tx, gameSession, msg string) error {
	rec, err := tx.Get(ctx, KindBackfill, gameSession)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.cancelTx(ctx, tx, string(rec.Data), msg)
}
