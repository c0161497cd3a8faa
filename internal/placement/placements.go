package placement

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/sessions"
	"github.com/hoistgg/hoist/internal/store"
)

// placementRecord is a placement's stored state.
type placementRecord struct {
	Placement api.GameSessionPlacement `json:"placement"`
	// Players are the DesiredPlayerSessions (not part of the API's
	// GameSessionPlacement).
	Players []api.DesiredPlayerSession `json:"players,omitempty"`
	// Deadline is when a PENDING placement times out.
	Deadline time.Time `json:"deadline"`
	// Fallback: the override's single pass failed; the queue's own
	// configuration applies now (DEFAULT_AFTER_SINGLE_PASS).
	Fallback bool `json:"fallback,omitempty"`
	// Match: the placement is a match's (StartMatchPlacementTx); its end
	// is told to Config.OnMatchPlacement.
	Match bool `json:"match,omitempty"`
	// Attempt is the game session of the attempt in flight while PENDING
	// ("" when none): its activation fulfils the placement.
	Attempt string `json:"attempt,omitempty"`
	// Attempts counts the game sessions the placement created.
	Attempts int `json:"attempts,omitempty"`
	// Failed are the fleet locations ("<fleet ID>/<location>") where an
	// attempt's game session ended without activating: Choose tries them
	// after the others.
	Failed []string `json:"failed,omitempty"`
}

func (p *placementRecord) id() string    { return api.ToString(p.Placement.PlacementId) }
func (p *placementRecord) queue() string { return api.ToString(p.Placement.GameSessionQueueName) }

// putPlacement stores p: Key its status, Rank its deadline while PENDING,
// else its end time.
func putPlacement(ctx context.Context, tx store.Tx, p *placementRecord, insert bool) error {
	rec, err := p.record()
	if err != nil {
		return err
	}
	if !insert {
		return tx.Put(ctx, rec)
	}
	return tx.Insert(ctx, rec)
}

// record is p's store record.
func (p *placementRecord) record() (store.Record, error) {
	rank := p.Deadline.UnixMilli()
	if p.Placement.EndTime != nil {
		rank = p.Placement.EndTime.Time.UnixMilli()
	}
	data, err := json.Marshal(p)
	if err != nil {
		return store.Record{}, err
	}
	return store.Record{Kind: KindPlacement, ID: p.id(), Parent: p.queue(), Key: string(p.Placement.Status), Rank: rank, Data: data}, nil
}

func getPlacement(ctx context.Context, tx store.Tx, id string) (*placementRecord, error) {
	rec, err := tx.Get(ctx, KindPlacement, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return placementFound(id, store.Got{Record: rec, Found: err == nil})
}

// placementFound is getPlacement's answer from got, the placement id as
// read (store.GetRefs).
func placementFound(id string, got store.Got) (*placementRecord, error) {
	if !got.Found {
		return nil, api.NewNotFoundException("game session placement %s does not exist", id)
	}
	p := new(placementRecord)
	if err := store.Decode(got.Record, p); err != nil {
		return nil, err
	}
	return p, nil
}

// StartGameSessionPlacement records a PENDING placement; the loop fulfils
// it.
func (s *Service) StartGameSessionPlacement(ctx context.Context, in *api.StartGameSessionPlacementInput) (*api.StartGameSessionPlacementOutput, error) {
	if err := checkStart(in); err != nil {
		return nil, err
	}
	now := s.now()
	var p *placementRecord
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		q, err := getQueue(ctx, tx, api.ToString(in.GameSessionQueueName))
		if err != nil {
			return err
		}
		p = &placementRecord{
			Placement: api.GameSessionPlacement{
				PlacementId: in.PlacementId, GameSessionQueueName: q.Name, Status: api.GameSessionPlacementStatePending,
				GameProperties: in.GameProperties, GameSessionData: in.GameSessionData, GameSessionName: in.GameSessionName,
				MaximumPlayerSessionCount: in.MaximumPlayerSessionCount, PlayerLatencies: in.PlayerLatencies,
				PriorityConfigurationOverride: in.PriorityConfigurationOverride, StartTime: api.Time(now),
			},
			Players:  in.DesiredPlayerSessions,
			Deadline: now.Add(time.Duration(api.ToInt32(q.TimeoutInSeconds)) * time.Second),
		}
		// Inserted with the commit (store.InsertNew: on PostgreSQL no
		// round trip of its own); a used ID fails the commit.
		rec, err := p.record()
		if err != nil {
			return err
		}
		return store.InsertNew(ctx, tx, rec)
	})
	if errors.Is(err, store.ErrExists) {
		return nil, api.NewInvalidRequestException("PlacementId %s was already used: placement IDs cannot be reused", p.id())
	}
	if err != nil {
		return nil, err
	}
	s.wake.Wake(p.queue())
	return &api.StartGameSessionPlacementOutput{GameSessionPlacement: &p.Placement}, nil
}

// MaxPlayerLatencies is the most PlayerLatencies a StartGameSessionPlacement
// may give (Hoist's bound; GameLift documents none): 200 players, the most a
// game session holds, with 5 locations each. A match's placement is bounded
// by FlexMatch's own limits instead (players and regions per player).
const MaxPlayerLatencies = 1000

// checkStart applies the rules the model leaves open.
func checkStart(in *api.StartGameSessionPlacementInput) error {
	max := api.ToInt32(in.MaximumPlayerSessionCount)
	switch {
	case len(in.PlayerLatencies) > MaxPlayerLatencies:
		return api.NewInvalidRequestException("PlayerLatencies has %d entries: at most %d", len(in.PlayerLatencies), MaxPlayerLatencies)
	case in.MaximumPlayerSessionCount == nil:
		return api.NewInvalidRequestException("MaximumPlayerSessionCount is required")
	case max < 0 || max > sessions.MaxPlayers:
		return api.NewInvalidRequestException("MaximumPlayerSessionCount %d is out of range: a game session holds 0 to %d players", max, sessions.MaxPlayers)
	case len(in.DesiredPlayerSessions) > int(max):
		return api.NewInvalidRequestException("%d DesiredPlayerSessions do not fit in MaximumPlayerSessionCount %d", len(in.DesiredPlayerSessions), max)
	}
	seen := map[string]bool{}
	for i, d := range in.DesiredPlayerSessions {
		id := api.ToString(d.PlayerId)
		switch {
		case id == "":
			return api.NewInvalidRequestException("DesiredPlayerSessions[%d].PlayerId is required", i)
		case seen[id]:
			return api.NewInvalidRequestException("DesiredPlayerSessions[%d] repeats an earlier player ID", i)
		}
		seen[id] = true
	}
	keys := map[string]bool{}
	for i, p := range in.GameProperties {
		k := api.ToString(p.Key)
		if keys[k] {
			return api.NewInvalidRequestException("GameProperties[%d] repeats the key %q", i, k)
		}
		keys[k] = true
	}
	for i, l := range in.PlayerLatencies {
		if l.PlayerId == nil || l.RegionIdentifier == nil || l.LatencyInMilliseconds == nil {
			return api.NewInvalidRequestException("PlayerLatencies[%d] needs PlayerId, RegionIdentifier and LatencyInMilliseconds", i)
		}
		if *l.LatencyInMilliseconds < 0 {
			return api.NewInvalidRequestException("PlayerLatencies[%d].LatencyInMilliseconds is negative", i)
		}
	}
	return nil
}

// DescribeGameSessionPlacement returns one placement.
func (s *Service) DescribeGameSessionPlacement(ctx context.Context, in *api.DescribeGameSessionPlacementInput) (*api.DescribeGameSessionPlacementOutput, error) {
	var p *placementRecord
	err := store.Read(ctx, s.cfg.Store, func(tx store.Tx) error { // one read: one round trip on PostgreSQL
		var err error
		p, err = getPlacement(ctx, tx, api.ToString(in.PlacementId))
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.DescribeGameSessionPlacementOutput{GameSessionPlacement: &p.Placement}, nil
}

// StopGameSessionPlacement cancels a PENDING placement; a placement that
// has ended is InvalidRequestException.
func (s *Service) StopGameSessionPlacement(ctx context.Context, in *api.StopGameSessionPlacementInput) (*api.StopGameSessionPlacementOutput, error) {
	var p *placementRecord
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		if p, err = getPlacement(ctx, tx, api.ToString(in.PlacementId)); err != nil {
			return err
		}
		if st := p.Placement.Status; st != api.GameSessionPlacementStatePending {
			return api.NewInvalidRequestException("placement %s is %s: only a PENDING placement can be stopped", p.id(), st)
		}
		q, err := getQueue(ctx, tx, p.queue())
		if err != nil {
			q = nil // gone: the event has no topic
		}
		return s.finishTx(ctx, tx, q, p, api.GameSessionPlacementStateCancelled, nil)
	})
	if err != nil {
		return nil, err
	}
	return &api.StopGameSessionPlacementOutput{GameSessionPlacement: &p.Placement}, nil
}

// finishTx ends placement p with status (placed is the game session of a
// FULFILLED one, with its player sessions) and publishes its event, in tx.
// q is its queue (nil when gone). Only a FULFILLED placement says where a
// game session is.
func (s *Service) finishTx(ctx context.Context, tx store.Tx, q *api.GameSessionQueue, p *placementRecord, status api.GameSessionPlacementState, placed *sessions.Placed) error {
	now := s.now()
	pl := &p.Placement
	pl.Status, pl.EndTime = status, api.Time(now)
	p.Attempt = ""
	p.clearGameSession()
	if placed != nil {
		gs := &placed.GameSession
		pl.GameSessionArn, pl.GameSessionId = gs.GameSessionId, gs.GameSessionId
		pl.IpAddress, pl.DnsName, pl.Port = gs.IpAddress, gs.DnsName, gs.Port
		pl.GameSessionRegion = gs.Location
		pl.PlacedPlayerSessions = []api.PlacedPlayerSession{}
		for _, ps := range placed.PlayerSessions {
			pl.PlacedPlayerSessions = append(pl.PlacedPlayerSessions,
				api.PlacedPlayerSession{PlayerId: ps.PlayerId, PlayerSessionId: ps.PlayerSessionId})
		}
	}
	if err := putPlacement(ctx, tx, p, false); err != nil {
		return err
	}
	if err := s.matchEnded(ctx, tx, p); err != nil {
		return err
	}
	return s.publish(ctx, tx, q, p)
}

// Event types of the queue placement events.
var eventTypes = map[api.GameSessionPlacementState]string{
	api.GameSessionPlacementStateFulfilled: "PlacementFulfilled",
	api.GameSessionPlacementStateCancelled: "PlacementCancelled",
	api.GameSessionPlacementStateTimedOut:  "PlacementTimedOut",
	api.GameSessionPlacementStateFailed:    "PlacementFailed",
}

// DetailType is the detail-type of queue placement events.
const DetailType = "GameLift Queue Placement Event"

// eventDetail is the detail of a queue placement event.
type eventDetail struct {
	Type                 string        `json:"type"`
	PlacementID          string        `json:"placementId"`
	Port                 string        `json:"port,omitempty"`
	GameSessionArn       string        `json:"gameSessionArn,omitempty"`
	IPAddress            string        `json:"ipAddress,omitempty"`
	DNSName              string        `json:"dnsName,omitempty"`
	StartTime            string        `json:"startTime"`
	EndTime              string        `json:"endTime"`
	GameSessionRegion    string        `json:"gameSessionRegion,omitempty"`
	PlacedPlayerSessions []eventPlayer `json:"placedPlayerSessions,omitempty"`
	CustomEventData      string        `json:"customEventData,omitempty"`
}

type eventPlayer struct {
	PlayerID        string `json:"playerId"`
	PlayerSessionID string `json:"playerSessionId"`
}

// eventTime formats a time as GameLift's events do.
func eventTime(t *api.Timestamp) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// publish records p's event in tx.
func (s *Service) publish(ctx context.Context, tx store.Tx, q *api.GameSessionQueue, p *placementRecord) error {
	pl := &p.Placement
	d := eventDetail{Type: eventTypes[pl.Status], PlacementID: p.id(),
		StartTime: eventTime(pl.StartTime), EndTime: eventTime(pl.EndTime)}
	if pl.Status == api.GameSessionPlacementStateFulfilled {
		d.Port = strconv.Itoa(int(api.ToInt32(pl.Port)))
		d.GameSessionArn, d.IPAddress, d.DNSName = api.ToString(pl.GameSessionArn), api.ToString(pl.IpAddress), api.ToString(pl.DnsName)
		d.GameSessionRegion = api.ToString(pl.GameSessionRegion)
		for _, ps := range pl.PlacedPlayerSessions {
			d.PlacedPlayerSessions = append(d.PlacedPlayerSessions, eventPlayer{api.ToString(ps.PlayerId), api.ToString(ps.PlayerSessionId)})
		}
	}
	queueARN := s.queueARN(p.queue())
	topic := ""
	if q != nil {
		d.CustomEventData = api.ToString(q.CustomEventData)
		topic = api.ToString(q.NotificationTarget)
	}
	detail, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return s.cfg.Publisher.Publish(ctx, tx, events.Event{DetailType: DetailType, Resources: []string{queueARN},
		Time: pl.EndTime.Time, Detail: detail, Topic: topic, OrderKey: queueARN})
}
