package placement

import (
	"context"
	"errors"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/sessions"
	"github.com/hoistgg/hoist/internal/store"
)

// MatchRequest asks for a game session for a match (FlexMatch WITH_QUEUE).
type MatchRequest struct {
	PlacementID, QueueName    string // PlacementID = the match ID
	GameProperties            []api.GameProperty
	GameSessionData           string
	MatchmakerData            string
	MaximumPlayerSessionCount int32
	Players                   []MatchPlayer
}

// MatchPlayer is one player of a match: a player session is created for
// each, and their latencies choose the destination as PlayerLatencies do.
type MatchPlayer struct {
	PlayerID    string
	LatencyInMs map[string]int32
}

// MatchOutcome is how a match's placement ended, given to
// Config.OnMatchPlacement in the transaction that ends it.
type MatchOutcome struct {
	PlacementID string
	// Status is FULFILLED, TIMED_OUT, CANCELLED or FAILED.
	Status                             api.GameSessionPlacementState
	GameSessionArn, IpAddress, DnsName string
	Port                               int32
	PlayerSessions                     []api.PlacedPlayerSession
}

// MatchPlacementFunc is called inside the transaction that ends a match's
// placement; an error aborts that transaction (the placement stays as it
// was and is tried again).
type MatchPlacementFunc func(ctx context.Context, tx store.Tx, out MatchOutcome) error

// Bounds of a match placement: the model's for GameSessionData
// (LargeGameSessionData) and MatchmakerData, and GameLift's for a
// placement ID.
const (
	maxPlacementID      = 48
	maxGameSessionData  = 262144
	maxMatchmakerData   = 390000
	maxGameProperties   = 16
	maxGamePropertyText = 1024
)

// SetOnMatchPlacement sets the function called when a match's placement
// ends (replacing Config.OnMatchPlacement). internal/server calls it once
// matchmaking exists, before anything is served.
func (s *Service) SetOnMatchPlacement(fn MatchPlacementFunc) {
	s.onMatch.Store(&fn)
}

// Kick wakes the placement loop, on every replica holding a queue's
// shard. A caller of StartMatchPlacementTx calls it once its transaction
// committed, so that the placement is tried at once rather than on the
// loop's next interval.
func (s *Service) Kick() { s.wake.Wake("") }

// StartMatchPlacementTx records a PENDING placement for a match in tx (the
// caller's transaction). It behaves as a StartGameSessionPlacement on the
// queue whose DesiredPlayerSessions are the players and whose
// PlayerLatencies are theirs; the game session it creates carries
// MatchmakerData. Bad input is InvalidRequestException naming the field;
// an unknown queue NotFoundException; a PlacementID already used
// InvalidRequestException.
func (s *Service) StartMatchPlacementTx(ctx context.Context, tx store.Tx, req MatchRequest) error {
	if err := checkMatch(req); err != nil {
		return err
	}
	q, err := getQueue(ctx, tx, req.QueueName)
	if err != nil {
		return err
	}
	now := s.now()
	pl := api.GameSessionPlacement{
		PlacementId: api.String(req.PlacementID), GameSessionQueueName: q.Name,
		Status: api.GameSessionPlacementStatePending, GameProperties: req.GameProperties,
		MaximumPlayerSessionCount: api.Int32(req.MaximumPlayerSessionCount),
		MatchmakerData:            optString(req.MatchmakerData), GameSessionData: optString(req.GameSessionData),
		PlayerLatencies: matchLatencies(req.Players), StartTime: api.Time(now),
	}
	p := &placementRecord{Placement: pl, Match: true,
		Deadline: now.Add(time.Duration(api.ToInt32(q.TimeoutInSeconds)) * time.Second)}
	for _, mp := range req.Players {
		p.Players = append(p.Players, api.DesiredPlayerSession{PlayerId: api.String(mp.PlayerID)})
	}
	err = putPlacement(ctx, tx, p, true)
	if errors.Is(err, store.ErrExists) {
		return api.NewInvalidRequestException("PlacementId %s was already used: placement IDs cannot be reused", req.PlacementID)
	}
	if err != nil {
		return err
	}
	s.kickLoop() // may run before the commit; the caller's Kick covers that
	return nil
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return api.String(s)
}

// checkMatch checks a MatchRequest as StartGameSessionPlacement's input is
// checked.
func checkMatch(req MatchRequest) error {
	switch id := req.PlacementID; {
	case id == "":
		return api.NewInvalidRequestException("PlacementId is required")
	case len(id) > maxPlacementID || !placementIDChars(id):
		return api.NewInvalidRequestException("PlacementId %q must be 1 to %d letters, digits and '-'", id, maxPlacementID)
	case req.QueueName == "":
		return api.NewInvalidRequestException("GameSessionQueueName is required")
	case req.MaximumPlayerSessionCount < 0 || req.MaximumPlayerSessionCount > sessions.MaxPlayers:
		return api.NewInvalidRequestException("MaximumPlayerSessionCount %d is out of range: a game session holds 0 to %d players", req.MaximumPlayerSessionCount, sessions.MaxPlayers)
	case len(req.Players) > int(req.MaximumPlayerSessionCount):
		return api.NewInvalidRequestException("%d players do not fit in MaximumPlayerSessionCount %d", len(req.Players), req.MaximumPlayerSessionCount)
	case len(req.GameSessionData) > maxGameSessionData:
		return api.NewInvalidRequestException("GameSessionData is %d characters: at most %d", len(req.GameSessionData), maxGameSessionData)
	case utf8.RuneCountInString(req.MatchmakerData) > maxMatchmakerData:
		return api.NewInvalidRequestException("MatchmakerData is longer than %d characters", maxMatchmakerData)
	case len(req.GameProperties) > maxGameProperties:
		return api.NewInvalidRequestException("GameProperties has %d entries: at most %d", len(req.GameProperties), maxGameProperties)
	}
	keys := map[string]bool{}
	for i, gp := range req.GameProperties {
		k := api.ToString(gp.Key)
		switch {
		case gp.Key == nil || gp.Value == nil:
			return api.NewInvalidRequestException("GameProperties[%d] needs both Key and Value", i)
		case len(k) > maxGamePropertyText || len(api.ToString(gp.Value)) > maxGamePropertyText:
			return api.NewInvalidRequestException("GameProperties[%d] is longer than %d characters", i, maxGamePropertyText)
		case keys[k]:
			return api.NewInvalidRequestException("GameProperties[%d] repeats the key %q", i, k)
		}
		keys[k] = true
	}
	seen := map[string]bool{}
	for i, p := range req.Players {
		switch {
		case p.PlayerID == "":
			return api.NewInvalidRequestException("Players[%d].PlayerId is required", i)
		case seen[p.PlayerID]:
			return api.NewInvalidRequestException("Players[%d] repeats an earlier player ID", i)
		}
		seen[p.PlayerID] = true
		for region, ms := range p.LatencyInMs {
			if region == "" || ms < 0 {
				return api.NewInvalidRequestException("Players[%d].LatencyInMs needs a region and a non-negative latency", i)
			}
		}
	}
	return nil
}

func placementIDChars(id string) bool {
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// matchLatencies turns the players' latencies into PlayerLatencies, in
// player order then region order.
func matchLatencies(players []MatchPlayer) []api.PlayerLatency {
	var out []api.PlayerLatency
	for _, p := range players {
		regions := make([]string, 0, len(p.LatencyInMs))
		for r := range p.LatencyInMs {
			regions = append(regions, r)
		}
		sort.Strings(regions)
		for _, r := range regions {
			ms := float32(p.LatencyInMs[r])
			out = append(out, api.PlayerLatency{PlayerId: api.String(p.PlayerID), RegionIdentifier: api.String(r), LatencyInMilliseconds: &ms})
		}
	}
	return out
}

// matchEnded tells the matchmaker, in tx, how match placement p ended.
func (s *Service) matchEnded(ctx context.Context, tx store.Tx, p *placementRecord) error {
	fn := s.onMatch.Load()
	if !p.Match || fn == nil || *fn == nil {
		return nil
	}
	pl := &p.Placement
	out := MatchOutcome{PlacementID: p.id(), Status: pl.Status,
		GameSessionArn: api.ToString(pl.GameSessionArn), IpAddress: api.ToString(pl.IpAddress),
		DnsName: api.ToString(pl.DnsName), Port: api.ToInt32(pl.Port), PlayerSessions: pl.PlacedPlayerSessions}
	return (*fn)(ctx, tx, out)
}
