package placement

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// Bounds of a queue: TimeoutInSeconds is GameLift's documented range;
// MaxDestinations is Hoist's (GameLift documents none), which bounds the
// capacity snapshot each pass of the placement loop reads for the queue.
const (
	MinTimeout      = 10
	MaxTimeout      = 600
	MaxDestinations = 100
)

// defaultLimit is DescribeGameSessionQueues' page size without a Limit.
const defaultLimit = 100

// CreateGameSessionQueue creates a queue.
func (s *Service) CreateGameSessionQueue(ctx context.Context, in *api.CreateGameSessionQueueInput) (*api.CreateGameSessionQueueOutput, error) {
	name := api.ToString(in.Name)
	q := &api.GameSessionQueue{Name: in.Name, GameSessionQueueArn: api.String(s.queueARN(name)),
		CustomEventData: in.CustomEventData, Destinations: in.Destinations, FilterConfiguration: in.FilterConfiguration,
		NotificationTarget: in.NotificationTarget, PlayerLatencyPolicies: in.PlayerLatencyPolicies,
		PriorityConfiguration: in.PriorityConfiguration, TimeoutInSeconds: in.TimeoutInSeconds}
	if err := checkQueue(q); err != nil {
		return nil, err
	}
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if err := s.checkDestinations(ctx, tx, q.Destinations); err != nil {
			return err
		}
		if len(in.Tags) > 0 {
			if err := tags.Set(ctx, tx, s.queueARN(name), in.Tags); err != nil {
				return err
			}
		}
		data, err := json.Marshal(q)
		if err != nil {
			return err
		}
		err = tx.Insert(ctx, store.Record{Kind: KindQueue, ID: name, Data: data})
		if errors.Is(err, store.ErrExists) {
			return api.NewInvalidRequestException("game session queue %s already exists", name)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.CreateGameSessionQueueOutput{GameSessionQueue: q}, nil
}

// checkQueue applies the rules the model leaves open and fills defaults.
func checkQueue(q *api.GameSessionQueue) error {
	switch t := api.ToInt32(q.TimeoutInSeconds); {
	case q.TimeoutInSeconds == nil:
		q.TimeoutInSeconds = api.Int32(DefaultTimeout)
	case t < MinTimeout || t > MaxTimeout:
		return api.NewInvalidRequestException("TimeoutInSeconds %d is out of range: %d to %d (none: %d)", t, MinTimeout, MaxTimeout, DefaultTimeout)
	}
	if q.NotificationTarget != nil && *q.NotificationTarget == "" {
		q.NotificationTarget = nil // an empty target removes it
	}
	if t := api.ToString(q.NotificationTarget); t != "" {
		if err := arn.CheckSNSTopic(t); err != nil {
			return api.NewInvalidRequestException("NotificationTarget %q is not an SNS topic ARN (arn:<partition>:sns:<region>:<account>:<topic>): %v", t, err)
		}
	}
	if err := checkDestinationList(q.Destinations); err != nil {
		return err
	}
	for i, p := range q.PlayerLatencyPolicies {
		if p.MaximumIndividualPlayerLatencyMilliseconds == nil {
			return api.NewInvalidRequestException("PlayerLatencyPolicies[%d].MaximumIndividualPlayerLatencyMilliseconds is required", i)
		}
	}
	if pc := q.PriorityConfiguration; pc != nil {
		seen := map[api.PriorityType]bool{}
		for _, p := range pc.PriorityOrder {
			if seen[p] {
				return api.NewInvalidRequestException("PriorityConfiguration.PriorityOrder lists %s twice", p)
			}
			seen[p] = true
		}
	}
	return nil
}

// checkDestinationList refuses more than MaxDestinations destinations, one
// that is not a fleet or alias, and one named twice (as an ARN or an ID).
func checkDestinationList(ds []api.GameSessionQueueDestination) error {
	if len(ds) > MaxDestinations {
		return api.NewInvalidRequestException("Destinations has %d entries: at most %d", len(ds), MaxDestinations)
	}
	seen := make(map[string]int, len(ds))
	for i, d := range ds {
		typ, id, err := destination(api.ToString(d.DestinationArn))
		if err != nil {
			return api.NewInvalidRequestException("Destinations[%d]: %v", i, err)
		}
		if j, ok := seen[typ+"/"+id]; ok {
			return api.NewInvalidRequestException("Destinations[%d] repeats Destinations[%d] (%s %s): name each destination once", i, j, typ, id)
		}
		seen[typ+"/"+id] = i
	}
	return nil
}

// destination parses a DestinationArn: a fleet or alias ARN (or, leniently,
// a bare fleet or alias ID). It returns the resource type and ID.
func destination(s string) (typ, id string, err error) {
	if strings.HasPrefix(s, "arn:") {
		a, err := arn.Parse(s)
		if err != nil {
			return "", "", err
		}
		if a.ResourceType != arn.TypeFleet && a.ResourceType != arn.TypeAlias {
			return "", "", errors.New("DestinationArn " + s + " is not a fleet or alias ARN")
		}
		return a.ResourceType, a.ResourceID, nil
	}
	switch {
	case strings.HasPrefix(s, "fleet-"):
		return arn.TypeFleet, s, nil
	case strings.HasPrefix(s, "alias-"):
		return arn.TypeAlias, s, nil
	}
	return "", "", errors.New("DestinationArn " + s + " is not a fleet or alias ARN")
}

// checkDestinations refuses destinations whose fleet or alias does not
// exist when the queue is created or updated.
func (s *Service) checkDestinations(ctx context.Context, tx store.Tx, ds []api.GameSessionQueueDestination) error {
	for i, d := range ds {
		typ, id, _ := destination(api.ToString(d.DestinationArn))
		check := s.cfg.FleetExists
		if typ == arn.TypeAlias {
			check = s.cfg.AliasExists
		}
		if check == nil {
			continue
		}
		ok, err := check(ctx, tx, id)
		if err != nil {
			return err
		}
		if !ok {
			return api.NewInvalidRequestException("Destinations[%d]: %s %s does not exist", i, typ, id)
		}
	}
	return nil
}

// DescribeGameSessionQueues lists queues by name (names or ARNs; unknown
// ones are left out) or all of them, in name order, a page at a time.
func (s *Service) DescribeGameSessionQueues(ctx context.Context, in *api.DescribeGameSessionQueuesInput) (*api.DescribeGameSessionQueuesOutput, error) {
	limit := defaultLimit
	if in.Limit != nil && *in.Limit > 0 {
		limit = int(*in.Limit)
	}
	token := api.ToString(in.NextToken)
	out := &api.DescribeGameSessionQueuesOutput{GameSessionQueues: []api.GameSessionQueue{}}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		out.GameSessionQueues, out.NextToken = out.GameSessionQueues[:0], nil
		if len(in.Names) > 0 {
			var found []api.GameSessionQueue
			seen := map[string]bool{}
			for _, n := range in.Names {
				q, err := getQueue(ctx, tx, n)
				var nf *api.NotFoundException
				if errors.As(err, &nf) {
					continue
				}
				if err != nil {
					return err
				}
				if !seen[*q.Name] {
					seen[*q.Name] = true
					found = append(found, *q)
				}
			}
			sortQueues(found)
			page, next, err := paging.Sorted(found, func(q api.GameSessionQueue) string { return *q.Name }, token, limit)
			if err != nil {
				return err
			}
			out.GameSessionQueues = append(out.GameSessionQueues, page...)
			out.NextToken = paging.Token(next)
			return nil
		}
		recs, next, err := paging.Records(ctx, tx, store.Query{Kind: KindQueue, Order: store.OrderID}, token, limit, nil)
		if err != nil {
			return paging.Err(err)
		}
		for _, rec := range recs {
			var q api.GameSessionQueue
			if err := store.Decode(rec, &q); err != nil {
				return err
			}
			out.GameSessionQueues = append(out.GameSessionQueues, q)
		}
		out.NextToken = paging.Token(next)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func sortQueues(qs []api.GameSessionQueue) {
	for i := 1; i < len(qs); i++ {
		for j := i; j > 0 && *qs[j].Name < *qs[j-1].Name; j-- {
			qs[j], qs[j-1] = qs[j-1], qs[j]
		}
	}
}

// UpdateGameSessionQueue changes the settings given (each replaces the
// queue's).
func (s *Service) UpdateGameSessionQueue(ctx context.Context, in *api.UpdateGameSessionQueueInput) (*api.UpdateGameSessionQueueOutput, error) {
	var q *api.GameSessionQueue
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		if q, err = getQueue(ctx, tx, api.ToString(in.Name)); err != nil {
			return err
		}
		if in.CustomEventData != nil {
			q.CustomEventData = in.CustomEventData
		}
		if in.Destinations != nil {
			q.Destinations = in.Destinations
		}
		if in.FilterConfiguration != nil {
			q.FilterConfiguration = in.FilterConfiguration
		}
		if in.NotificationTarget != nil {
			q.NotificationTarget = in.NotificationTarget
		}
		if in.PlayerLatencyPolicies != nil {
			q.PlayerLatencyPolicies = in.PlayerLatencyPolicies
		}
		if in.PriorityConfiguration != nil {
			q.PriorityConfiguration = in.PriorityConfiguration
		}
		if in.TimeoutInSeconds != nil {
			q.TimeoutInSeconds = in.TimeoutInSeconds
		}
		if err := checkQueue(q); err != nil {
			return err
		}
		if in.Destinations != nil {
			if err := s.checkDestinations(ctx, tx, q.Destinations); err != nil {
				return err
			}
		}
		return store.PutJSON(ctx, tx, store.Record{Kind: KindQueue, ID: *q.Name}, q)
	})
	if err != nil {
		return nil, err
	}
	return &api.UpdateGameSessionQueueOutput{GameSessionQueue: q}, nil
}

// DeleteGameSessionQueue deletes a queue and its tags; its PENDING
// placements end FAILED (each with its event), in the same transaction.
func (s *Service) DeleteGameSessionQueue(ctx context.Context, in *api.DeleteGameSessionQueueInput) (*api.DeleteGameSessionQueueOutput, error) {
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		q, err := getQueue(ctx, tx, api.ToString(in.Name))
		if err != nil {
			return err
		}
		pending := store.Query{Kind: KindPlacement, Parent: *q.Name, HasParent: true,
			Key: string(api.GameSessionPlacementStatePending), HasKey: true}
		for {
			recs, _, err := tx.List(ctx, pending)
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				break
			}
			for _, rec := range recs {
				p := new(placementRecord)
				if err := store.Decode(rec, p); err != nil {
					return err
				}
				if err := s.finishTx(ctx, tx, q, p, api.GameSessionPlacementStateFailed, nil); err != nil {
					return err
				}
			}
		}
		if err := tx.Delete(ctx, KindQueue, *q.Name); err != nil {
			return err
		}
		return tags.DeleteAll(ctx, tx, api.ToString(q.GameSessionQueueArn))
	})
	if err != nil {
		return nil, err
	}
	return &api.DeleteGameSessionQueueOutput{}, nil
}
