package matchmaking

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// The bounds of a configuration's fields (GameLift's model).
const (
	MaxRequestTimeout    = 43200
	MaxAcceptanceTimeout = 600
	MaxCustomEventData   = 256
	MaxGameProperties    = 16
	MaxGameSessionData   = 4096
	MaxConfigurationName = 128
)

// DefaultAcceptanceTimeout is AcceptanceTimeoutSeconds when a configuration
// requires acceptance without one (the model makes the field optional and
// GameLift's documents give no default; this is Hoist's).
const DefaultAcceptanceTimeout = 60

// MaxConfigLimit is DescribeMatchmakingConfigurations' page size: without
// a Limit, and the cap of a larger one (GameLift documents the parameter
// as "limited to 10").
const MaxConfigLimit = 10

var configNamePattern = regexp.MustCompile(`^[a-zA-Z0-9.-]*$`)

func (s *Service) arns() arn.Builder {
	return arn.Builder{Region: s.cfg.Region, Account: s.cfg.Account}
}

func (s *Service) configARN(name string) string {
	return s.arns().ARN(arn.TypeMatchmakingConfiguration, name)
}

func (s *Service) ruleSetARN(name string) string {
	return s.arns().ARN(arn.TypeMatchmakingRuleSet, name)
}

// configName returns the configuration name a "name or ARN" parameter names.
func configName(nameOrARN string) string {
	return arn.NameOrARN(nameOrARN, arn.TypeMatchmakingConfiguration)
}

// ruleSetName returns the rule set name a "name or ARN" parameter names.
func ruleSetName(nameOrARN string) string {
	return arn.NameOrARN(nameOrARN, arn.TypeMatchmakingRuleSet)
}

// getNamed reads the record of kind k named name into a new T; an unknown
// one is NotFoundException naming what it is.
func getNamed[T any](ctx context.Context, tx store.Tx, k store.Kind, name, what string) (*T, error) {
	rec, err := tx.Get(ctx, k, name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return namedFound[T](store.Got{Record: rec, Found: err == nil}, name, what)
}

// namedFound is getNamed's answer from got, the record name as read.
func namedFound[T any](got store.Got, name, what string) (*T, error) {
	if !got.Found {
		return nil, api.NewNotFoundException("%s %s does not exist", what, name)
	}
	v := new(T)
	if err := store.Decode(got.Record, v); err != nil {
		return nil, err
	}
	return v, nil
}

// found turns a lookup's NotFoundException into false (for the tags'
// existence checks).
func found(err error) (bool, error) {
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return false, nil
	}
	return err == nil, err
}

// getConfig reads a configuration; an unknown one is NotFoundException.
func getConfig(ctx context.Context, tx store.Tx, nameOrARN string) (*api.MatchmakingConfiguration, error) {
	return getNamed[api.MatchmakingConfiguration](ctx, tx, KindConfiguration, configName(nameOrARN), "matchmaking configuration")
}

// ConfigurationExists reports whether the configuration a name or ARN
// names exists (for tags).
func (s *Service) ConfigurationExists(ctx context.Context, tx store.Tx, nameOrARN string) (bool, error) {
	_, err := getConfig(ctx, tx, nameOrARN)
	return found(err)
}

// CheckConfiguration applies every rule of a configuration's fields, alone
// and together, and fills the defaults (FlexMatchMode WITH_QUEUE,
// BackfillMode MANUAL, AdditionalPlayerCount 0, AcceptanceRequired false,
// AcceptanceTimeoutSeconds DefaultAcceptanceTimeout when acceptance is
// required).
// It checks neither the rule set nor the queues exist (that needs the
// store). It changes nothing else of c.
func CheckConfiguration(c *api.MatchmakingConfiguration) error {
	name := api.ToString(c.Name)
	if name == "" || len(name) > MaxConfigurationName || !configNamePattern.MatchString(name) {
		return api.NewInvalidRequestException("Name %q must be 1 to %d letters, digits, '-' or '.'", name, MaxConfigurationName)
	}
	if c.RequestTimeoutSeconds == nil {
		return api.NewInvalidRequestException("RequestTimeoutSeconds is required")
	}
	if t := *c.RequestTimeoutSeconds; t < 1 || t > MaxRequestTimeout {
		return api.NewInvalidRequestException("RequestTimeoutSeconds %d is out of range: 1 to %d", t, MaxRequestTimeout)
	}
	if c.AcceptanceRequired == nil {
		c.AcceptanceRequired = new(bool)
	}
	if c.AcceptanceTimeoutSeconds != nil {
		if t := *c.AcceptanceTimeoutSeconds; t < 1 || t > MaxAcceptanceTimeout {
			return api.NewInvalidRequestException("AcceptanceTimeoutSeconds %d is out of range: 1 to %d", t, MaxAcceptanceTimeout)
		}
	} else if *c.AcceptanceRequired {
		c.AcceptanceTimeoutSeconds = api.Int32(DefaultAcceptanceTimeout)
	}
	if api.ToString(c.RuleSetName) == "" {
		return api.NewInvalidRequestException("RuleSetName is required")
	}
	switch c.FlexMatchMode {
	case "":
		c.FlexMatchMode = api.FlexMatchModeWithQueue
	case api.FlexMatchModeStandalone, api.FlexMatchModeWithQueue:
	default:
		return api.NewInvalidRequestException("FlexMatchMode %q is not STANDALONE or WITH_QUEUE", c.FlexMatchMode)
	}
	switch c.BackfillMode {
	case "":
		c.BackfillMode = api.BackfillModeManual
	case api.BackfillModeAutomatic, api.BackfillModeManual:
	default:
		return api.NewInvalidRequestException("BackfillMode %q is not AUTOMATIC or MANUAL", c.BackfillMode)
	}
	if c.FlexMatchMode == api.FlexMatchModeStandalone {
		if len(c.GameSessionQueueArns) > 0 {
			return api.NewInvalidRequestException("GameSessionQueueArns is not allowed with FlexMatchMode STANDALONE")
		}
		if c.BackfillMode == api.BackfillModeAutomatic {
			return api.NewInvalidRequestException("BackfillMode AUTOMATIC is not allowed with FlexMatchMode STANDALONE")
		}
	} else if len(c.GameSessionQueueArns) == 0 {
		return api.NewInvalidRequestException("GameSessionQueueArns is required with FlexMatchMode WITH_QUEUE")
	}
	for i, q := range c.GameSessionQueueArns {
		if _, err := queueName(q); err != nil {
			return api.NewInvalidRequestException("GameSessionQueueArns[%d]: %v", i, err)
		}
	}
	if c.AdditionalPlayerCount == nil {
		c.AdditionalPlayerCount = api.Int32(0)
	} else if *c.AdditionalPlayerCount < 0 {
		return api.NewInvalidRequestException("AdditionalPlayerCount %d must not be negative", *c.AdditionalPlayerCount)
	}
	if t := api.ToString(c.NotificationTarget); t != "" {
		if err := arn.CheckSNSTopic(t); err != nil {
			return api.NewInvalidRequestException("NotificationTarget %q is not an SNS topic ARN (arn:<partition>:sns:<region>:<account>:<topic>): %v", t, err)
		}
	}
	if n := len(api.ToString(c.CustomEventData)); n > MaxCustomEventData {
		return api.NewInvalidRequestException("CustomEventData is %d characters, at most %d allowed", n, MaxCustomEventData)
	}
	if n := len(c.GameProperties); n > MaxGameProperties {
		return api.NewInvalidRequestException("GameProperties has %d entries, at most %d allowed", n, MaxGameProperties)
	}
	if c.GameSessionData != nil {
		if n := len(*c.GameSessionData); n < 1 || n > MaxGameSessionData {
			return api.NewInvalidRequestException("GameSessionData is %d characters, 1 to %d allowed", n, MaxGameSessionData)
		}
	}
	if c.Description != nil {
		if n := len(*c.Description); n < 1 || n > 1024 {
			return api.NewInvalidRequestException("Description is %d characters, 1 to 1024 allowed", n)
		}
	}
	return nil
}

// queueName returns the queue name of a GameSessionQueueArns entry: a game
// session queue ARN or, leniently, a bare queue name.
func queueName(s string) (string, error) {
	if !strings.HasPrefix(s, "arn:") {
		if s == "" {
			return "", errors.New("empty queue ARN")
		}
		return s, nil
	}
	a, err := arn.Parse(s)
	if err != nil {
		return "", err
	}
	if a.Service != arn.Service || !strings.EqualFold(a.ResourceType, arn.TypeGameSessionQueue) {
		return "", errors.New(s + " is not a game session queue ARN")
	}
	return a.ResourceID, nil
}

// resolve checks, in tx, that c's rule set and queues exist; it sets
// RuleSetName to the rule set's name, RuleSetArn, and GameSessionQueueArns
// to the queues' ARNs.
func (s *Service) resolve(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration) error {
	rs := ruleSetName(api.ToString(c.RuleSetName))
	if _, err := tx.Get(ctx, KindRuleSet, rs); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return api.NewNotFoundException("matchmaking rule set %s does not exist", rs)
		}
		return err
	}
	c.RuleSetName, c.RuleSetArn = api.String(rs), api.String(s.ruleSetARN(rs))
	arns := make([]string, 0, len(c.GameSessionQueueArns))
	for i, q := range c.GameSessionQueueArns {
		name, err := queueName(q)
		if err != nil {
			return api.NewInvalidRequestException("GameSessionQueueArns[%d]: %v", i, err)
		}
		if s.cfg.QueueExists != nil {
			ok, err := s.cfg.QueueExists(ctx, tx, name)
			if err != nil {
				return err
			}
			if !ok {
				return api.NewNotFoundException("GameSessionQueueArns[%d]: game session queue %s does not exist", i, name)
			}
		}
		qa := s.arns().ARN(arn.TypeGameSessionQueue, name)
		if !slices.Contains(arns, qa) {
			arns = append(arns, qa)
		}
	}
	if len(arns) == 0 {
		arns = nil
	}
	c.GameSessionQueueArns = arns
	return nil
}

// putConfig writes c, keyed by its rule set's name.
func putConfig(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, insert bool) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	rec := store.Record{Kind: KindConfiguration, ID: *c.Name, Key: *c.RuleSetName, Data: data}
	if insert {
		err = tx.Insert(ctx, rec)
		if errors.Is(err, store.ErrExists) {
			return api.NewInvalidRequestException("matchmaking configuration %s already exists", *c.Name)
		}
		return err
	}
	return tx.Put(ctx, rec)
}

// CreateMatchmakingConfiguration creates a configuration.
func (s *Service) CreateMatchmakingConfiguration(ctx context.Context, in *api.CreateMatchmakingConfigurationInput) (*api.CreateMatchmakingConfigurationOutput, error) {
	name := api.ToString(in.Name)
	c := &api.MatchmakingConfiguration{Name: in.Name, ConfigurationArn: api.String(s.configARN(name)),
		CreationTime:       api.Time(s.cfg.Now()),
		AcceptanceRequired: in.AcceptanceRequired, AcceptanceTimeoutSeconds: in.AcceptanceTimeoutSeconds,
		AdditionalPlayerCount: in.AdditionalPlayerCount, BackfillMode: in.BackfillMode,
		CustomEventData: in.CustomEventData, Description: in.Description, FlexMatchMode: in.FlexMatchMode,
		GameProperties: in.GameProperties, GameSessionData: in.GameSessionData,
		GameSessionQueueArns: in.GameSessionQueueArns, NotificationTarget: in.NotificationTarget,
		RequestTimeoutSeconds: in.RequestTimeoutSeconds, RuleSetName: in.RuleSetName}
	if err := CheckConfiguration(c); err != nil {
		return nil, err
	}
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if err := s.resolve(ctx, tx, c); err != nil {
			return err
		}
		if len(in.Tags) > 0 {
			if err := tags.Set(ctx, tx, *c.ConfigurationArn, in.Tags); err != nil {
				return err
			}
		}
		if err := putConfig(ctx, tx, c, true); err != nil {
			return err
		}
		return createCounts(ctx, tx, name)
	})
	if err != nil {
		return nil, err
	}
	return &api.CreateMatchmakingConfigurationOutput{Configuration: c}, nil
}

// DescribeMatchmakingConfigurations lists configurations by name (names
// or ARNs; unknown ones are left out), those using a rule set, or all of
// them, in name order, a page at a time.
func (s *Service) DescribeMatchmakingConfigurations(ctx context.Context, in *api.DescribeMatchmakingConfigurationsInput) (*api.DescribeMatchmakingConfigurationsOutput, error) {
	limit := MaxConfigLimit
	if in.Limit != nil && *in.Limit > 0 && *in.Limit < MaxConfigLimit {
		limit = int(*in.Limit)
	}
	token := api.ToString(in.NextToken)
	rs, byRuleSet := "", in.RuleSetName != nil
	if byRuleSet {
		rs = ruleSetName(*in.RuleSetName)
	}
	out := &api.DescribeMatchmakingConfigurationsOutput{Configurations: []api.MatchmakingConfiguration{}}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		out.Configurations, out.NextToken = out.Configurations[:0], nil
		if len(in.Names) > 0 {
			var found []api.MatchmakingConfiguration
			seen := map[string]bool{}
			for _, n := range in.Names {
				c, err := getConfig(ctx, tx, n)
				var nf *api.NotFoundException
				if errors.As(err, &nf) {
					continue
				}
				if err != nil {
					return err
				}
				if !seen[*c.Name] && (!byRuleSet || api.ToString(c.RuleSetName) == rs) {
					seen[*c.Name] = true
					found = append(found, *c)
				}
			}
			slices.SortFunc(found, func(a, b api.MatchmakingConfiguration) int { return strings.Compare(*a.Name, *b.Name) })
			page, next, err := paging.Sorted(found, func(c api.MatchmakingConfiguration) string { return *c.Name }, token, limit)
			if err != nil {
				return err
			}
			out.Configurations = append(out.Configurations, page...)
			out.NextToken = paging.Token(next)
			return nil
		}
		q := store.Query{Kind: KindConfiguration, Order: store.OrderID, Key: rs, HasKey: byRuleSet}
		recs, next, err := paging.Records(ctx, tx, q, token, limit, nil)
		if err != nil {
			return paging.Err(err)
		}
		for _, rec := range recs {
			var c api.MatchmakingConfiguration
			if err := store.Decode(rec, &c); err != nil {
				return err
			}
			out.Configurations = append(out.Configurations, c)
		}
		out.NextToken = paging.Token(next)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateMatchmakingConfiguration changes the settings given (each replaces
// the configuration's). Switching to STANDALONE drops the configuration's
// queues and turns AUTOMATIC backfill to MANUAL unless the request itself
// sets them (then it is refused as on create).
func (s *Service) UpdateMatchmakingConfiguration(ctx context.Context, in *api.UpdateMatchmakingConfigurationInput) (*api.UpdateMatchmakingConfigurationOutput, error) {
	var c *api.MatchmakingConfiguration
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		if c, err = getConfig(ctx, tx, api.ToString(in.Name)); err != nil {
			return err
		}
		if in.AcceptanceRequired != nil {
			c.AcceptanceRequired = in.AcceptanceRequired
		}
		if in.AcceptanceTimeoutSeconds != nil {
			c.AcceptanceTimeoutSeconds = in.AcceptanceTimeoutSeconds
		}
		if in.AdditionalPlayerCount != nil {
			c.AdditionalPlayerCount = in.AdditionalPlayerCount
		}
		if in.BackfillMode != "" {
			c.BackfillMode = in.BackfillMode
		}
		if in.CustomEventData != nil {
			c.CustomEventData = in.CustomEventData
		}
		if in.Description != nil {
			c.Description = in.Description
		}
		if in.FlexMatchMode != "" {
			c.FlexMatchMode = in.FlexMatchMode
		}
		if in.GameProperties != nil {
			c.GameProperties = in.GameProperties
		}
		if in.GameSessionData != nil {
			c.GameSessionData = in.GameSessionData
		}
		if in.GameSessionQueueArns != nil {
			c.GameSessionQueueArns = in.GameSessionQueueArns
		}
		if in.NotificationTarget != nil {
			c.NotificationTarget = in.NotificationTarget
		}
		if in.RequestTimeoutSeconds != nil {
			c.RequestTimeoutSeconds = in.RequestTimeoutSeconds
		}
		if in.RuleSetName != nil {
			c.RuleSetName = in.RuleSetName
		}
		if in.FlexMatchMode == api.FlexMatchModeStandalone {
			if in.GameSessionQueueArns == nil {
				c.GameSessionQueueArns = nil
			}
			if in.BackfillMode == "" && c.BackfillMode == api.BackfillModeAutomatic {
				c.BackfillMode = api.BackfillModeManual
			}
		}
		if api.ToString(c.NotificationTarget) == "" {
			c.NotificationTarget = nil
		}
		if api.ToString(c.CustomEventData) == "" {
			c.CustomEventData = nil
		}
		if err := CheckConfiguration(c); err != nil {
			return err
		}
		if err := s.resolve(ctx, tx, c); err != nil {
			return err
		}
		return putConfig(ctx, tx, c, false)
	})
	if err != nil {
		return nil, err
	}
	return &api.UpdateMatchmakingConfigurationOutput{Configuration: c}, nil
}

// DeleteMatchmakingConfiguration deletes a configuration and its tags;
// it is refused while the configuration has active tickets.
func (s *Service) DeleteMatchmakingConfiguration(ctx context.Context, in *api.DeleteMatchmakingConfigurationInput) (*api.DeleteMatchmakingConfigurationOutput, error) {
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		c, err := getConfig(ctx, tx, api.ToString(in.Name))
		if err != nil {
			return err
		}
		n, err := s.activeTickets(ctx, tx, *c.Name)
		if err != nil {
			return err
		}
		if n > 0 {
			return api.NewInvalidRequestException("matchmaking configuration %s has %d active matchmaking tickets", *c.Name, n)
		}
		if err := tx.Delete(ctx, KindConfiguration, *c.Name); err != nil {
			return err
		}
		if err := tx.Delete(ctx, KindWait, *c.Name); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := deleteTicketBytes(ctx, tx, *c.Name); err != nil {
			return err
		}
		return tags.DeleteAll(ctx, tx, api.ToString(c.ConfigurationArn))
	})
	if err != nil {
		return nil, err
	}
	return &api.DeleteMatchmakingConfigurationOutput{}, nil
}
