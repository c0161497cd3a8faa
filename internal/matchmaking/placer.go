package matchmaking

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/flexmatch"
	"github.com/hoistgg/hoist/internal/placement"
	"github.com/hoistgg/hoist/internal/store"
)

// MatchRequest asks the placer to place a match as a game session;
// MatchPlayer is one of its players; MatchOutcome is how the placement
// ended (placement calls OnMatchPlacement with it inside the transaction
// that ends it). They are internal/placement's types.
type (
	MatchRequest = placement.MatchRequest
	MatchPlayer  = placement.MatchPlayer
	MatchOutcome = placement.MatchOutcome
)

// Placer starts the placement of a match, in the matchmaker's transaction.
// A Placer that also has a Kick method (placement.Service does) is kicked
// after the transactions that started placements committed, so they are
// tried at once.
type Placer interface {
	StartMatchPlacementTx(ctx context.Context, tx store.Tx, req MatchRequest) error
}

// kickPlacer wakes the placer, if it can be woken.
func (s *Service) kickPlacer() {
	if k, ok := s.cfg.Placer.(interface{ Kick() }); ok {
		k.Kick()
	}
}

// matchData is GameSession.MatchmakerData.
type matchData struct {
	MatchID          string          `json:"matchId"`
	ConfigurationArn string          `json:"matchmakingConfigurationArn"`
	Teams            []matchDataTeam `json:"teams"`
	AutoBackfillID   string          `json:"autoBackfillTicketId,omitempty"`
	AutoBackfillMode string          `json:"autoBackfillMode,omitempty"`
}

type matchDataTeam struct {
	Name    string            `json:"name"`
	Players []matchDataPlayer `json:"players"`
}

type matchDataPlayer struct {
	PlayerID   string                    `json:"playerId"`
	Attributes map[string]matchDataValue `json:"attributes,omitempty"`
}

type matchDataValue struct {
	Type  string `json:"attributeType"`
	Value any    `json:"valueAttribute"`
}

// buildMatchData writes the MatchmakerData of a match.
// autoTicket is the automatic backfill ticket of the game session ("" for
// none).
func buildMatchData(c *api.MatchmakingConfiguration, m *matchRecord, ts []*ticketRecord, autoTicket string) (string, error) {
	players := map[string]api.Player{}
	for _, t := range ts {
		for _, p := range t.Ticket.Players {
			players[api.ToString(p.PlayerId)] = p
		}
	}
	d := matchData{MatchID: m.ID, ConfigurationArn: api.ToString(c.ConfigurationArn), Teams: []matchDataTeam{}, AutoBackfillID: autoTicket}
	if c.BackfillMode == api.BackfillModeAutomatic {
		d.AutoBackfillMode = "AUTOMATIC"
	}
	for _, team := range m.Teams {
		dt := matchDataTeam{Name: team.Name, Players: []matchDataPlayer{}}
		for _, id := range team.Players {
			dp := matchDataPlayer{PlayerID: id}
			attrs := players[id].PlayerAttributes
			if len(attrs) > 0 {
				dp.Attributes = map[string]matchDataValue{}
				for _, k := range slices.Sorted(maps.Keys(attrs)) {
					v := attrs[k]
					switch {
					case v.S != nil:
						dp.Attributes[k] = matchDataValue{"STRING", *v.S}
					case v.N != nil:
						dp.Attributes[k] = matchDataValue{"DOUBLE", *v.N}
					case v.SL != nil:
						dp.Attributes[k] = matchDataValue{"STRING_LIST", v.SL}
					case v.SDM != nil:
						dp.Attributes[k] = matchDataValue{"STRING_DOUBLE_MAP", v.SDM}
					}
				}
			}
			dt.Players = append(dt.Players, dp)
		}
		d.Teams = append(d.Teams, dt)
	}
	b, err := json.Marshal(d)
	return string(b), err
}

// placeTx starts the placement of a match of a WITH_QUEUE configuration:
// its tickets go PLACING, or FAILED when it cannot be placed.
func (s *Service) placeTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, rs *flexmatch.RuleSet, m *matchRecord, ts []*ticketRecord, now time.Time) error {
	fail := func(code, msg string) error {
		for _, t := range ts {
			if err := s.failTx(ctx, tx, c, t, code, msg, now, m.Metrics); err != nil {
				return err
			}
		}
		return nil
	}
	if s.cfg.Placer == nil {
		return fail(failUnexpected, "this Hoist places no matches of WITH_QUEUE configurations")
	}
	if len(c.GameSessionQueueArns) == 0 {
		return fail(failQueueNotAccessible, "the configuration has no game session queue")
	}
	queue, err := queueName(c.GameSessionQueueArns[0])
	if err != nil {
		return fail(failQueueNotAccessible, err.Error())
	}
	if c.BackfillMode == api.BackfillModeAutomatic {
		n := 0
		for _, team := range m.Teams {
			n += len(team.Players)
		}
		m.AutoMax = rs.MaxPlayers()
		m.AutoTicket = s.autoTicketID(c, n, m.AutoMax)
	}
	data, err := buildMatchData(c, m, ts, m.AutoTicket)
	if err != nil {
		return err
	}
	req := MatchRequest{PlacementID: m.ID, QueueName: queue, GameProperties: c.GameProperties,
		GameSessionData: api.ToString(c.GameSessionData), MatchmakerData: data,
		MaximumPlayerSessionCount: int32(rs.MaxPlayers()) + api.ToInt32(c.AdditionalPlayerCount)}
	for _, team := range m.Teams {
		for _, id := range team.Players {
			mp := MatchPlayer{PlayerID: id}
			for _, t := range ts {
				for _, p := range t.Ticket.Players {
					if api.ToString(p.PlayerId) == id {
						mp.LatencyInMs = p.LatencyInMs
					}
				}
			}
			req.Players = append(req.Players, mp)
		}
	}
	if err := s.cfg.Placer.StartMatchPlacementTx(ctx, tx, req); err != nil {
		var ae api.Error
		if errors.As(err, &ae) {
			return fail(failQueueNotAccessible, "the match could not be placed: "+err.Error())
		}
		return err
	}
	m.State = matchPlacing
	if err := putMatch(ctx, tx, m); err != nil {
		return err
	}
	for _, t := range ts {
		t.Ticket.Status = stPlacing
		t.Ticket.StatusReason, t.Ticket.StatusMessage = nil, nil
		t.Accepted = nil
		if err := putTicket(ctx, tx, t, 0, false); err != nil {
			return err
		}
	}
	return nil
}

// OnMatchPlacement ends the tickets of a match whose placement ended, in
// the placement's transaction: COMPLETED with the game session's
// connection information when it was FULFILLED, else FAILED. A placement
// that is not a match's is ignored.
func (s *Service) OnMatchPlacement(ctx context.Context, tx store.Tx, out MatchOutcome) error {
	m, err := getMatch(ctx, tx, out.PlacementID)
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil || m.State != matchPlacing {
		return err
	}
	c, err := getConfig(ctx, tx, m.Config)
	if errors.As(err, &nf) {
		c = &api.MatchmakingConfiguration{Name: api.String(m.Config), ConfigurationArn: api.String(s.configARN(m.Config))}
	} else if err != nil {
		return err
	}
	ts, err := matchTickets(ctx, tx, m, stPlacing)
	if err != nil {
		return err
	}
	now := s.now()
	if err := tx.Delete(ctx, KindMatch, m.ID); err != nil {
		return err
	}
	if out.Status != api.GameSessionPlacementStateFulfilled {
		for _, t := range ts {
			if err := s.failTx(ctx, tx, c, t, placementFailure(out.Status), "the game session placement of the match ended "+string(out.Status), now, m.Metrics); err != nil {
				return err
			}
		}
		return nil
	}
	connect(ts, out)
	if err := s.succeedTx(ctx, tx, c, m, ts, now, &eventSession{GameSessionArn: out.GameSessionArn, IPAddress: out.IpAddress,
		DNSName: out.DnsName, Port: out.Port}); err != nil {
		return err
	}
	return s.autoPlacedTx(ctx, tx, c, m, ts, out.GameSessionArn, now)
}
