package fleets

import (
	"reflect"
	"slices"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
)

func target(name string, v float64) api.ScalingPolicy {
	return api.ScalingPolicy{Name: api.String(name), PolicyType: api.PolicyTypeTargetbased,
		MetricName: api.MetricNamePercentavailablegamesessions, TargetConfiguration: &api.TargetConfiguration{TargetValue: api.Float64(v)}}
}

func rule(name string, m api.MetricName, op api.ComparisonOperatorType, th float64, periods int32, typ api.ScalingAdjustmentType, adj int32) api.ScalingPolicy {
	return api.ScalingPolicy{Name: api.String(name), PolicyType: api.PolicyTypeRulebased, MetricName: m, ComparisonOperator: op,
		Threshold: api.Float64(th), EvaluationPeriods: api.Int32(periods), ScalingAdjustmentType: typ, ScalingAdjustment: api.Int32(adj)}
}

func TestEvaluate(t *testing.T) {
	idleHigh := rule("idle", api.MetricNamePercentidleinstances, api.ComparisonOperatorTypeGreaterthanthreshold, 20, 3,
		api.ScalingAdjustmentTypePercentchangeincapacity, -10)
	full := rule("full", api.MetricNameAvailablegamesessions, api.ComparisonOperatorTypeLessthanorequaltothreshold, 0, 1,
		api.ScalingAdjustmentTypeChangeincapacity, 2)
	tests := map[string]struct {
		in         evalInput
		wantDes    int
		wantStates []PolicyState
	}{
		"target: scale out at once": {
			in: evalInput{Policies: []api.ScalingPolicy{target("t", 50)}, Desired: 1, Max: 10, PerInstance: 2,
				Metrics: Metrics{ActiveGameSessions: 2}},
			wantDes: 2, wantStates: []PolicyState{{}},
		},
		"target: within max": {
			in: evalInput{Policies: []api.ScalingPolicy{target("t", 50)}, Desired: 1, Max: 3, PerInstance: 1,
				Metrics: Metrics{ActiveGameSessions: 10}},
			wantDes: 3, wantStates: []PolicyState{{}},
		},
		"target: scale in waits": {
			in: evalInput{Policies: []api.ScalingPolicy{target("t", 20)}, Desired: 4, Max: 10, PerInstance: 10, ScaleInPeriods: 5,
				Metrics: Metrics{ActiveGameSessions: 5, AvailableGameSessions: 35}, States: []PolicyState{{ScaleIn: 3}}},
			wantDes: 4, wantStates: []PolicyState{{ScaleIn: 4}},
		},
		"target: scale in after the periods": {
			in: evalInput{Policies: []api.ScalingPolicy{target("t", 20)}, Desired: 4, Max: 10, PerInstance: 10, ScaleInPeriods: 5,
				Metrics: Metrics{ActiveGameSessions: 5, AvailableGameSessions: 35}, States: []PolicyState{{ScaleIn: 4}}},
			wantDes: 1, wantStates: []PolicyState{{}},
		},
		"target: keeps one instance": {
			in:      evalInput{Policies: []api.ScalingPolicy{target("t", 10)}, Desired: 2, Max: 10, PerInstance: 10, ScaleInPeriods: 1},
			wantDes: 1, wantStates: []PolicyState{{}},
		},
		"target: on target resets": {
			in: evalInput{Policies: []api.ScalingPolicy{target("t", 50)}, Desired: 2, Max: 10, PerInstance: 2, ScaleInPeriods: 5,
				Metrics: Metrics{ActiveGameSessions: 2}, States: []PolicyState{{ScaleIn: 2}}},
			wantDes: 2, wantStates: []PolicyState{{}},
		},
		"rule: counts breaches": {
			in: evalInput{Policies: []api.ScalingPolicy{idleHigh}, Desired: 10, Max: 20,
				Metrics: Metrics{IdleInstances: 5, ActiveInstances: 5}, States: []PolicyState{{Breaches: 1}}},
			wantDes: 10, wantStates: []PolicyState{{Breaches: 2}},
		},
		"rule: fires after its periods": {
			in: evalInput{Policies: []api.ScalingPolicy{idleHigh}, Desired: 10, Max: 20,
				Metrics: Metrics{IdleInstances: 5, ActiveInstances: 5}, States: []PolicyState{{Breaches: 2}}},
			wantDes: 9, wantStates: []PolicyState{{}},
		},
		"rule: a break resets": {
			in: evalInput{Policies: []api.ScalingPolicy{idleHigh}, Desired: 10, Max: 20,
				Metrics: Metrics{IdleInstances: 1, ActiveInstances: 9}, States: []PolicyState{{Breaches: 2}}},
			wantDes: 10, wantStates: []PolicyState{{}},
		},
		"rule: no data does not fire": {
			in:      evalInput{Policies: []api.ScalingPolicy{idleHigh}, Desired: 10, Max: 20, States: []PolicyState{{Breaches: 2}}},
			wantDes: 10, wantStates: []PolicyState{{}},
		},
		"largest proposal wins": {
			in: evalInput{Policies: []api.ScalingPolicy{full, idleHigh}, Desired: 10, Max: 20,
				Metrics: Metrics{IdleInstances: 5, ActiveInstances: 5}, States: []PolicyState{{}, {Breaches: 2}}},
			wantDes: 12, wantStates: []PolicyState{{}, {}},
		},
		"kept within min": {
			in: evalInput{Policies: []api.ScalingPolicy{rule("zero", api.MetricNameActivegamesessions,
				api.ComparisonOperatorTypeLessthanorequaltothreshold, 0, 1, api.ScalingAdjustmentTypeExactcapacity, 0)},
				Desired: 3, Min: 2, Max: 5},
			wantDes: 2, wantStates: []PolicyState{{}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := evaluate(tc.in)
			if res.Desired != tc.wantDes || !reflect.DeepEqual(res.States, tc.wantStates) {
				t.Fatalf("evaluate = %d %+v, want %d %+v", res.Desired, res.States, tc.wantDes, tc.wantStates)
			}
			if (res.Reason != "") != (tc.wantDes != tc.in.Desired) {
				t.Fatalf("reason %q for %d -> %d", res.Reason, tc.in.Desired, res.Desired)
			}
		})
	}
}

func TestAdjust(t *testing.T) {
	tests := []struct {
		cur  int
		typ  api.ScalingAdjustmentType
		adj  int
		want int
	}{
		{5, api.ScalingAdjustmentTypeChangeincapacity, 2, 7},
		{1, api.ScalingAdjustmentTypeChangeincapacity, -3, 0},
		{5, api.ScalingAdjustmentTypeExactcapacity, 2, 2},
		{10, api.ScalingAdjustmentTypePercentchangeincapacity, 25, 12},
		{10, api.ScalingAdjustmentTypePercentchangeincapacity, -25, 8},
		{2, api.ScalingAdjustmentTypePercentchangeincapacity, 10, 3},
		{2, api.ScalingAdjustmentTypePercentchangeincapacity, -10, 1},
		{0, api.ScalingAdjustmentTypePercentchangeincapacity, 50, 0},
	}
	for _, tc := range tests {
		if got := adjust(tc.cur, tc.typ, tc.adj); got != tc.want {
			t.Errorf("adjust(%d, %s, %d) = %d, want %d", tc.cur, tc.typ, tc.adj, got, tc.want)
		}
	}
}

func TestMetricValues(t *testing.T) {
	m := Metrics{AvailableGameSessions: 3, ActiveGameSessions: 5, ActivatingGameSessions: 2, IdleInstances: 1, ActiveInstances: 3,
		CurrentPlayerSessions: 7, AvailablePlayerSessions: 9}
	tests := map[api.MetricName]float64{
		api.MetricNamePercentavailablegamesessions: 30,
		api.MetricNamePercentidleinstances:         25,
		api.MetricNameAvailablegamesessions:        3,
		api.MetricNameCurrentplayersessions:        7,
		api.MetricNameAvailableplayersessions:      9,
		api.MetricNameQueuedepth:                   0,
	}
	for name, want := range tests {
		if got, ok := m.Value(name); !ok || got != want {
			t.Errorf("%s = %v (%v), want %v", name, got, ok, want)
		}
	}
	if _, ok := (Metrics{}).Value(api.MetricNamePercentavailablegamesessions); ok {
		t.Error("a percentage of nothing has data")
	}
}

func TestScalingPolicies(t *testing.T) {
	h := newHarness(t)
	id, inst := h.activeFleet(ec2Input(1))
	if _, err := h.svc.UpdateFleetCapacity(h.ctx, &api.UpdateFleetCapacityInput{FleetId: api.String(id), MaxSize: api.Int32(5)}); err != nil {
		t.Fatal(err)
	}
	_, err := h.svc.PutScalingPolicy(h.ctx, &api.PutScalingPolicyInput{FleetId: api.String(id), Name: api.String("buffer"),
		PolicyType: api.PolicyTypeTargetbased, MetricName: api.MetricNamePercentavailablegamesessions,
		TargetConfiguration: &api.TargetConfiguration{TargetValue: api.Float64(50)}})
	if err != nil {
		t.Fatal(err)
	}
	pols, _ := h.svc.DescribeScalingPolicies(h.ctx, &api.DescribeScalingPoliciesInput{FleetId: api.String(id)})
	if len(pols.ScalingPolicies) != 1 || pols.ScalingPolicies[0].Status != api.ScalingStatusTypeActive {
		t.Fatalf("policies %+v", pols.ScalingPolicies)
	}
	// The one process hosts a game session: no capacity is free.
	gs, err := h.sess.CreateGameSession(h.ctx, &api.CreateGameSessionInput{FleetId: api.String(id), MaximumPlayerSessionCount: api.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	activate(t, h, id, inst, *gs.GameSession.GameSessionId)
	if _, err := h.svc.StopFleetActions(h.ctx, &api.StopFleetActionsInput{FleetId: api.String(id),
		Actions: []api.FleetAction{api.FleetActionAutoScaling}}); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.EvaluatePolicies(h.ctx); err != nil {
		t.Fatal(err)
	}
	if d := h.fleet(id).home().Desired; d != 1 {
		t.Fatalf("desired %d while auto-scaling is stopped", d)
	}
	if _, err := h.svc.StartFleetActions(h.ctx, &api.StartFleetActionsInput{FleetId: api.String(id),
		Actions: []api.FleetAction{api.FleetActionAutoScaling}}); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.EvaluatePolicies(h.ctx); err != nil {
		t.Fatal(err)
	}
	if d := h.fleet(id).home().Desired; d != 2 {
		t.Fatalf("desired %d after the target policy ran, want 2", d)
	}
	if got := h.events(id); got[len(got)-1] != api.EventCodeFleetScalingEvent {
		t.Fatalf("events %v", got)
	}
	h.reconcile()
	if n := len(h.prov.started()); n != 2 {
		t.Fatalf("%d instances after scale-out", n)
	}
	if err := h.svc.DeleteScalingPolicy(h.ctx, &api.DeleteScalingPolicyInput{FleetId: api.String(id), Name: api.String("buffer")}); err != nil {
		t.Fatal(err)
	}
	wantErr[*api.NotFoundException](t, h.svc.DeleteScalingPolicy(h.ctx, &api.DeleteScalingPolicyInput{FleetId: api.String(id), Name: api.String("buffer")}))
}

func TestPutScalingPolicyRefusals(t *testing.T) {
	tests := map[string]api.PutScalingPolicyInput{
		"target on another metric": {PolicyType: api.PolicyTypeTargetbased, MetricName: api.MetricNameIdleinstances,
			TargetConfiguration: &api.TargetConfiguration{TargetValue: api.Float64(10)}},
		"target of 100%": {MetricName: api.MetricNamePercentavailablegamesessions,
			TargetConfiguration: &api.TargetConfiguration{TargetValue: api.Float64(100)}},
		"rule without threshold": {PolicyType: api.PolicyTypeRulebased, MetricName: api.MetricNameIdleinstances,
			ComparisonOperator: api.ComparisonOperatorTypeGreaterthanthreshold, EvaluationPeriods: api.Int32(1),
			ScalingAdjustmentType: api.ScalingAdjustmentTypeChangeincapacity, ScalingAdjustment: api.Int32(-1)},
		"rule without periods": {MetricName: api.MetricNameIdleinstances, Threshold: api.Float64(1),
			ComparisonOperator:    api.ComparisonOperatorTypeGreaterthanthreshold,
			ScalingAdjustmentType: api.ScalingAdjustmentTypeChangeincapacity, ScalingAdjustment: api.Int32(-1)},
	}
	h := newHarness(t)
	id := h.createFleet(ec2Input(1))
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			in.FleetId, in.Name = api.String(id), api.String("p")
			_, err := h.svc.PutScalingPolicy(h.ctx, &in)
			wantErr[*api.InvalidRequestException](t, err)
		})
	}
	pols, _ := h.svc.DescribeScalingPolicies(h.ctx, &api.DescribeScalingPoliciesInput{FleetId: api.String(id)})
	if !slices.Equal(pols.ScalingPolicies, []api.ScalingPolicy{}) {
		t.Fatalf("refused policies were stored: %+v", pols.ScalingPolicies)
	}
}
