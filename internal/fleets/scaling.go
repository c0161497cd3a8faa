package fleets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
)

// PutScalingPolicy creates or replaces a fleet's scaling policy: a
// target-based policy on PercentAvailableGameSessions, or a rule-based one.
// It is in force at once (ACTIVE).
func (s *Service) PutScalingPolicy(ctx context.Context, in *api.PutScalingPolicyInput) (*api.PutScalingPolicyOutput, error) {
	pol, err := checkPolicy(in)
	if err != nil {
		return nil, err
	}
	err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		f, err := findFleet(ctx, tx, api.ToString(in.FleetId), true)
		if err != nil {
			return err
		}
		if f.anywhere() {
			return api.NewInvalidRequestException("fleet %s is an ANYWHERE fleet: scaling policies are for EC2 fleets", f.id())
		}
		if st := f.status(); st == api.FleetStatusError || st == api.FleetStatusDeleting {
			return api.NewInvalidRequestException("fleet %s is %s: it cannot take scaling policies", f.id(), st)
		}
		pol.FleetId, pol.FleetArn = api.String(f.id()), api.String(f.arn())
		return putPolicy(ctx, tx, &policyRec{Policy: pol})
	})
	if err != nil {
		return nil, err
	}
	return &api.PutScalingPolicyOutput{Name: in.Name}, nil
}

// checkPolicy checks a PutScalingPolicy request and returns the policy. The
// policy type defaults to TargetBased when a TargetConfiguration is given,
// else RuleBased.
func checkPolicy(in *api.PutScalingPolicyInput) (api.ScalingPolicy, error) {
	pol := api.ScalingPolicy{Name: in.Name, PolicyType: in.PolicyType, MetricName: in.MetricName,
		Status: api.ScalingStatusTypeActive}
	if pol.PolicyType == "" {
		pol.PolicyType = api.PolicyTypeRulebased
		if in.TargetConfiguration != nil {
			pol.PolicyType = api.PolicyTypeTargetbased
		}
	}
	if api.ToString(in.Name) == "" {
		return pol, api.NewInvalidRequestException("Name is required")
	}
	if pol.PolicyType == api.PolicyTypeTargetbased {
		tc := in.TargetConfiguration
		switch {
		case in.MetricName != api.MetricNamePercentavailablegamesessions:
			return pol, api.NewInvalidRequestException("a TargetBased policy tracks MetricName PercentAvailableGameSessions")
		case tc == nil || tc.TargetValue == nil:
			return pol, api.NewInvalidRequestException("a TargetBased policy needs TargetConfiguration.TargetValue")
		case *tc.TargetValue < 0 || *tc.TargetValue >= 100:
			return pol, api.NewInvalidRequestException("TargetConfiguration.TargetValue is a percentage of free game session capacity: 0 to less than 100")
		}
		pol.TargetConfiguration = &api.TargetConfiguration{TargetValue: tc.TargetValue}
		return pol, nil
	}
	switch {
	case in.MetricName == "":
		return pol, api.NewInvalidRequestException("a RuleBased policy needs MetricName")
	case in.ComparisonOperator == "":
		return pol, api.NewInvalidRequestException("a RuleBased policy needs ComparisonOperator")
	case in.Threshold == nil:
		return pol, api.NewInvalidRequestException("a RuleBased policy needs Threshold")
	case in.ScalingAdjustmentType == "" || in.ScalingAdjustment == nil:
		return pol, api.NewInvalidRequestException("a RuleBased policy needs ScalingAdjustmentType and ScalingAdjustment")
	case api.ToInt32(in.EvaluationPeriods) < 1:
		return pol, api.NewInvalidRequestException("a RuleBased policy needs EvaluationPeriods of at least 1 (minutes)")
	}
	pol.ComparisonOperator, pol.Threshold, pol.EvaluationPeriods = in.ComparisonOperator, in.Threshold, in.EvaluationPeriods
	pol.ScalingAdjustmentType, pol.ScalingAdjustment = in.ScalingAdjustmentType, in.ScalingAdjustment
	return pol, nil
}

// DescribeScalingPolicies lists a fleet's scaling policies (all ACTIVE
// while they exist), by name. With a Location, each policy names it.
func (s *Service) DescribeScalingPolicies(ctx context.Context, in *api.DescribeScalingPoliciesInput) (*api.DescribeScalingPoliciesOutput, error) {
	var pols []*policyRec
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		f, err := findFleet(ctx, tx, api.ToString(in.FleetId), true)
		if err != nil {
			return err
		}
		if loc := api.ToString(in.Location); loc != "" {
			if _, err := f.liveLocation(loc); err != nil {
				return err
			}
		}
		pols, err = fleetPolicies(ctx, tx, f.id())
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &api.DescribeScalingPoliciesOutput{ScalingPolicies: []api.ScalingPolicy{}}
	for _, p := range pols {
		if in.StatusFilter != "" && p.Policy.Status != in.StatusFilter {
			continue
		}
		pol := p.Policy
		pol.Location = in.Location
		out.ScalingPolicies = append(out.ScalingPolicies, pol)
	}
	return pagePolicies(out, in.Limit, in.NextToken)
}

// pagePolicies pages a fleet's policies by name (paging.Sorted).
func pagePolicies(out *api.DescribeScalingPoliciesOutput, limit *int32, token *string) (*api.DescribeScalingPoliciesOutput, error) {
	all := out.ScalingPolicies
	sort.Slice(all, func(i, j int) bool { return api.ToString(all[i].Name) < api.ToString(all[j].Name) })
	all, next, err := paging.Sorted(all, func(p api.ScalingPolicy) string { return api.ToString(p.Name) }, api.ToString(token), pageSize(limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	out.ScalingPolicies, out.NextToken = all, paging.Token(next)
	return out, nil
}

// DeleteScalingPolicy deletes a fleet's scaling policy.
func (s *Service) DeleteScalingPolicy(ctx context.Context, in *api.DeleteScalingPolicyInput) error {
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		f, err := findFleet(ctx, tx, api.ToString(in.FleetId), true)
		if err != nil {
			return err
		}
		name := api.ToString(in.Name)
		err = tx.Delete(ctx, hosting.KindScalingPolicy, policyID(f.id(), name))
		if errors.Is(err, store.ErrNotFound) {
			return api.NewNotFoundException("fleet %s has no scaling policy %s", f.id(), name)
		}
		return err
	})
}

// EvaluatePolicies evaluates every fleet's scaling policies once, in each
// ACTIVE location whose AUTO_SCALING actions are not stopped, and applies
// the new desired capacities (event FLEET_SCALING_EVENT). Reconcile calls
// it every PolicyInterval; tests call it directly.
func (s *Service) EvaluatePolicies(ctx context.Context) error {
	return s.evaluateHeld(ctx, nil)
}

// evaluateHeld evaluates the scaling policies of the ACTIVE fleets held
// (nil: every one, unfenced), each in a transaction fenced by its grant.
func (s *Service) evaluateHeld(ctx context.Context, held *store.Held) error {
	var ids []string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		ids = ids[:0]
		q := store.Query{Kind: hosting.KindFleet, Key: string(api.FleetStatusActive), HasKey: true, NoData: true}
		return store.Each(ctx, tx, q, func(r store.Record) error {
			if held == nil || held.Has(r.ID) {
				ids = append(ids, r.ID)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		var g store.Grant
		if held != nil {
			g, _ = held.Grant(id)
		}
		err := store.UpdateIn(ctx, s.cfg.Store, g, func(tx store.Tx) error { return s.evaluateFleet(ctx, tx, id) })
		if err != nil {
			errs = append(errs, fmt.Errorf("fleet %s: %w", id, err))
		}
	}
	s.wake()
	return errors.Join(errs...)
}

func (s *Service) evaluateFleet(ctx context.Context, tx store.Tx, id string) error {
	f, err := getFleet(ctx, tx, id)
	if err != nil || f.anywhere() {
		return ignoreNotFound(err)
	}
	pols, err := fleetPolicies(ctx, tx, id)
	if err != nil || len(pols) == 0 {
		return err
	}
	metrics, err := fleetMetrics(ctx, tx, &f.Fleet)
	if err != nil {
		return err
	}
	changed := false
	for i := range f.Locations {
		l := &f.Locations[i]
		if l.Status != api.FleetStatusActive || slices.Contains(l.Stopped, api.FleetActionAutoScaling) {
			continue
		}
		in := evalInput{Metrics: *metrics[l.Location], Desired: int(l.Desired), Min: int(l.Min), Max: int(l.Max),
			PerInstance: perInstance(&f.RuntimeConfiguration), ScaleInPeriods: s.t.ScaleInPeriods}
		for _, p := range pols {
			in.Policies = append(in.Policies, p.Policy)
			in.States = append(in.States, p.State[l.Location])
		}
		res := evaluate(in)
		for j, p := range pols {
			if p.State == nil {
				p.State = map[string]PolicyState{}
			}
			p.State[l.Location] = res.States[j]
		}
		if res.Desired != in.Desired {
			if err := s.addEvent(ctx, tx, id, api.EventCodeFleetScalingEvent, s.now(),
				"%s changed the desired instances of location %s from %d to %d", res.Reason, l.Location, in.Desired, res.Desired); err != nil {
				return err
			}
			l.Desired, changed = int32(res.Desired), true
		}
	}
	for _, p := range pols {
		if err := putPolicy(ctx, tx, p); err != nil {
			return err
		}
	}
	if changed {
		return putFleet(ctx, tx, f)
	}
	return nil
}
