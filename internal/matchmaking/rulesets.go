package matchmaking

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/flexmatch"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// Bounds of rule sets (GameLift's model).
const (
	MaxRuleSetName  = 128
	MaxRuleSetBody  = 65535
	MaxRuleSetLimit = 10
	MaxRuleSetNames = 10
)

// parseBody parses a RuleSetBody; a rule set that does not follow the rule
// language is InvalidRequestException "RuleSetBody: <path>: <msg>".
func parseBody(body string) (*flexmatch.RuleSet, error) {
	if n := len(body); n < 1 || n > MaxRuleSetBody {
		return nil, api.NewInvalidRequestException("RuleSetBody is %d characters, 1 to %d allowed", n, MaxRuleSetBody)
	}
	rs, err := flexmatch.Parse([]byte(body))
	if err != nil {
		var fe *flexmatch.Error
		if errors.As(err, &fe) {
			return nil, api.NewInvalidRequestException("RuleSetBody: %s", fe.Error())
		}
		return nil, api.NewInvalidRequestException("RuleSetBody: %v", err)
	}
	return rs, nil
}

// getRuleSet reads a rule set; an unknown one is NotFoundException.
func getRuleSet(ctx context.Context, tx store.Tx, nameOrARN string) (*api.MatchmakingRuleSet, error) {
	return getNamed[api.MatchmakingRuleSet](ctx, tx, KindRuleSet, ruleSetName(nameOrARN), "matchmaking rule set")
}

// RuleSetExists reports whether the rule set a name or ARN names exists
// (for tags).
func (s *Service) RuleSetExists(ctx context.Context, tx store.Tx, nameOrARN string) (bool, error) {
	_, err := getRuleSet(ctx, tx, nameOrARN)
	return found(err)
}

// ruleSetCache keeps parsed rule sets: a rule set record is never
// rewritten (a rule set cannot change), so its name and store Seq name
// one parse for good.
type ruleSetCache struct {
	m sync.Map // ruleSetKey -> *flexmatch.RuleSet
}

type ruleSetKey struct {
	name string
	seq  int64
}

// parsed returns the parsed rule set a name or ARN names, in tx; an
// unknown one is NotFoundException.
func (c *ruleSetCache) parsed(ctx context.Context, tx store.Tx, nameOrARN string) (*flexmatch.RuleSet, error) {
	name := ruleSetName(nameOrARN)
	rec, err := tx.Get(ctx, KindRuleSet, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.NewNotFoundException("matchmaking rule set %s does not exist", name)
	}
	if err != nil {
		return nil, err
	}
	return c.fromRecord(name, rec)
}

// fromRecord returns the parsed rule set of rec, the record of the rule
// set name.
func (c *ruleSetCache) fromRecord(name string, rec store.Record) (*flexmatch.RuleSet, error) {
	key := ruleSetKey{name, rec.Seq}
	if v, ok := c.m.Load(key); ok {
		return v.(*flexmatch.RuleSet), nil
	}
	var r api.MatchmakingRuleSet
	if err := store.Decode(rec, &r); err != nil {
		return nil, err
	}
	rs, err := parseBody(api.ToString(r.RuleSetBody))
	if err != nil {
		return nil, err
	}
	c.m.Store(key, rs)
	return rs, nil
}

// CreateMatchmakingRuleSet checks and stores a rule set, with its tags.
func (s *Service) CreateMatchmakingRuleSet(ctx context.Context, in *api.CreateMatchmakingRuleSetInput) (*api.CreateMatchmakingRuleSetOutput, error) {
	name := api.ToString(in.Name)
	if name == "" || len(name) > MaxRuleSetName || !configNamePattern.MatchString(name) {
		return nil, api.NewInvalidRequestException("Name %q must be 1 to %d letters, digits, '-' or '.'", name, MaxRuleSetName)
	}
	if in.RuleSetBody == nil {
		return nil, api.NewInvalidRequestException("RuleSetBody is required")
	}
	if _, err := parseBody(*in.RuleSetBody); err != nil {
		return nil, err
	}
	r := &api.MatchmakingRuleSet{RuleSetName: api.String(name), RuleSetArn: api.String(s.ruleSetARN(name)),
		RuleSetBody: in.RuleSetBody, CreationTime: api.Time(s.cfg.Now())}
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if len(in.Tags) > 0 {
			if err := tags.Set(ctx, tx, *r.RuleSetArn, in.Tags); err != nil {
				return err
			}
		}
		err := tx.Insert(ctx, store.Record{Kind: KindRuleSet, ID: name, Data: data})
		if errors.Is(err, store.ErrExists) {
			return api.NewInvalidRequestException("matchmaking rule set %s already exists", name)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.CreateMatchmakingRuleSetOutput{RuleSet: r}, nil
}

// DescribeMatchmakingRuleSets lists rule sets by name (names or ARNs; an
// unknown one is NotFoundException) or all of them, in name order, a page
// at a time.
func (s *Service) DescribeMatchmakingRuleSets(ctx context.Context, in *api.DescribeMatchmakingRuleSetsInput) (*api.DescribeMatchmakingRuleSetsOutput, error) {
	if len(in.Names) > MaxRuleSetNames {
		return nil, api.NewInvalidRequestException("Names has %d entries, at most %d allowed", len(in.Names), MaxRuleSetNames)
	}
	limit := MaxRuleSetLimit
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > MaxRuleSetLimit {
			return nil, api.NewInvalidRequestException("Limit %d is out of range: 1 to %d", *in.Limit, MaxRuleSetLimit)
		}
		limit = int(*in.Limit)
	}
	token := api.ToString(in.NextToken)
	out := &api.DescribeMatchmakingRuleSetsOutput{}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		out.RuleSets, out.NextToken = []api.MatchmakingRuleSet{}, nil
		if len(in.Names) > 0 {
			var found []api.MatchmakingRuleSet
			for _, n := range in.Names {
				r, err := getRuleSet(ctx, tx, n)
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(found, func(f api.MatchmakingRuleSet) bool { return *f.RuleSetName == *r.RuleSetName }) {
					found = append(found, *r)
				}
			}
			slices.SortFunc(found, func(a, b api.MatchmakingRuleSet) int { return strings.Compare(*a.RuleSetName, *b.RuleSetName) })
			page, next, err := paging.Sorted(found, func(r api.MatchmakingRuleSet) string { return *r.RuleSetName }, token, limit)
			if err != nil {
				return err
			}
			out.RuleSets = append(out.RuleSets, page...)
			out.NextToken = paging.Token(next)
			return nil
		}
		recs, next, err := paging.Records(ctx, tx, store.Query{Kind: KindRuleSet, Order: store.OrderID}, token, limit, nil)
		if err != nil {
			return paging.Err(err)
		}
		for _, rec := range recs {
			var r api.MatchmakingRuleSet
			if err := store.Decode(rec, &r); err != nil {
				return err
			}
			out.RuleSets = append(out.RuleSets, r)
		}
		out.NextToken = paging.Token(next)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteMatchmakingRuleSet deletes a rule set and its tags; it is refused
// while a configuration uses it.
func (s *Service) DeleteMatchmakingRuleSet(ctx context.Context, in *api.DeleteMatchmakingRuleSetInput) (*api.DeleteMatchmakingRuleSetOutput, error) {
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		r, err := getRuleSet(ctx, tx, api.ToString(in.Name))
		if err != nil {
			return err
		}
		recs, _, err := tx.List(ctx, store.Query{Kind: KindConfiguration, Key: *r.RuleSetName, HasKey: true, Order: store.OrderID, Limit: 1})
		if err != nil {
			return err
		}
		if len(recs) > 0 {
			return api.NewInvalidRequestException("matchmaking rule set %s is used by matchmaking configuration %s", *r.RuleSetName, recs[0].ID)
		}
		if err := tx.Delete(ctx, KindRuleSet, *r.RuleSetName); err != nil {
			return err
		}
		return tags.DeleteAll(ctx, tx, api.ToString(r.RuleSetArn))
	})
	if err != nil {
		return nil, err
	}
	return &api.DeleteMatchmakingRuleSetOutput{}, nil
}

// ValidateMatchmakingRuleSet answers {Valid: true} for a rule set body that
// follows the rule language, and InvalidRequestException naming the
// offending field for one that does not.
func (s *Service) ValidateMatchmakingRuleSet(ctx context.Context, in *api.ValidateMatchmakingRuleSetInput) (*api.ValidateMatchmakingRuleSetOutput, error) {
	if in.RuleSetBody == nil {
		return nil, api.NewInvalidRequestException("RuleSetBody is required")
	}
	if _, err := parseBody(*in.RuleSetBody); err != nil {
		return nil, err
	}
	return &api.ValidateMatchmakingRuleSetOutput{Valid: new(true)}, nil
}
