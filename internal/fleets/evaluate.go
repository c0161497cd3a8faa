package fleets

import (
	"fmt"
	"math"

	"github.com/hoistgg/hoist/internal/api"
)

// PolicyState is a scaling policy's evaluation state in one fleet location.
type PolicyState struct {
	// Breaches counts the evaluations in a row at which a rule-based
	// policy's condition held.
	Breaches int `json:"breaches,omitempty"`
	// ScaleIn counts the evaluations in a row at which a target-based
	// policy wanted fewer instances.
	ScaleIn int `json:"scaleIn,omitempty"`
}

// evalInput is one location's scaling policies with what they need.
type evalInput struct {
	Policies []api.ScalingPolicy
	States   []PolicyState // one per policy
	Metrics  Metrics
	// Desired, Min and Max are the location's capacity settings.
	Desired, Min, Max int
	// PerInstance is how many game sessions an instance hosts at once
	// (the runtime configuration's server process count).
	PerInstance int
	// ScaleInPeriods is how many evaluations in a row a target-based policy
	// must want fewer instances before it scales in.
	ScaleInPeriods int
}

// evalResult is what one evaluation decided.
type evalResult struct {
	Desired int
	States  []PolicyState
	// Reason names the policy that set Desired and why ("" when nothing
	// changed).
	Reason string
}

// evaluate runs one evaluation of a location's scaling policies: pure, so
// that every rule is a table test. Each policy that fires proposes a
// desired count; when several fire the largest wins, and the result is kept
// within [Min, Max].
func evaluate(in evalInput) evalResult {
	res := evalResult{Desired: in.Desired, States: make([]PolicyState, len(in.Policies))}
	best, reason := -1, ""
	for i, p := range in.Policies {
		var st PolicyState
		if i < len(in.States) {
			st = in.States[i]
		}
		var want int
		var fired bool
		if p.PolicyType == api.PolicyTypeTargetbased {
			want, fired, st = evalTarget(p, st, in)
		} else {
			want, fired, st = evalRule(p, st, in)
		}
		res.States[i] = st
		if fired && want > best {
			best, reason = want, fmt.Sprintf("scaling policy %s", api.ToString(p.Name))
		}
	}
	if best < 0 {
		return res
	}
	best = min(max(best, in.Min), in.Max)
	if best != in.Desired {
		res.Desired, res.Reason = best, reason
	}
	return res
}

// evalTarget evaluates a target-based policy on PercentAvailableGameSessions:
// the instance count at which the free share of game session capacity
// would be the target. Scale-out is immediate; scale-in waits
// ScaleInPeriods evaluations. It keeps at least one instance, so that the
// fleet can always host a game session.
func evalTarget(p api.ScalingPolicy, st PolicyState, in evalInput) (int, bool, PolicyState) {
	if p.TargetConfiguration == nil || p.TargetConfiguration.TargetValue == nil || in.PerInstance <= 0 {
		return 0, false, PolicyState{}
	}
	target := *p.TargetConfiguration.TargetValue
	target = min(max(target, 0), 99)
	used := float64(in.Metrics.ActiveGameSessions + in.Metrics.ActivatingGameSessions)
	want := int(math.Ceil(used / ((1 - target/100) * float64(in.PerInstance))))
	want = max(want, 1)
	switch {
	case want > in.Desired:
		return want, true, PolicyState{}
	case want < in.Desired:
		st.ScaleIn++
		if st.ScaleIn >= in.ScaleInPeriods {
			return want, true, PolicyState{}
		}
		return 0, false, st
	}
	return 0, false, PolicyState{}
}

// evalRule evaluates a rule-based policy: "if MetricName is
// ComparisonOperator Threshold for EvaluationPeriods evaluations, adjust".
// After firing it needs a full EvaluationPeriods again.
func evalRule(p api.ScalingPolicy, st PolicyState, in evalInput) (int, bool, PolicyState) {
	v, ok := in.Metrics.Value(p.MetricName)
	if !ok || p.Threshold == nil || !compare(v, p.ComparisonOperator, *p.Threshold) {
		return 0, false, PolicyState{}
	}
	st.Breaches++
	if st.Breaches < max(int(api.ToInt32(p.EvaluationPeriods)), 1) {
		return 0, false, st
	}
	return adjust(in.Desired, p.ScalingAdjustmentType, int(api.ToInt32(p.ScalingAdjustment))), true, PolicyState{}
}

// compare applies a comparison operator.
func compare(v float64, op api.ComparisonOperatorType, threshold float64) bool {
	switch op {
	case api.ComparisonOperatorTypeGreaterthanorequaltothreshold:
		return v >= threshold
	case api.ComparisonOperatorTypeGreaterthanthreshold:
		return v > threshold
	case api.ComparisonOperatorTypeLessthanthreshold:
		return v < threshold
	case api.ComparisonOperatorTypeLessthanorequaltothreshold:
		return v <= threshold
	}
	return false
}

// adjust applies a scaling adjustment to the current count. A percentage
// change rounds toward zero, except that a change between 0 and 1 instance
// (either way) counts as one, as EC2 Auto Scaling does.
func adjust(current int, typ api.ScalingAdjustmentType, adj int) int {
	switch typ {
	case api.ScalingAdjustmentTypeExactcapacity:
		return max(adj, 0)
	case api.ScalingAdjustmentTypePercentchangeincapacity:
		delta := float64(current) * float64(adj) / 100
		switch {
		case delta > 0 && delta < 1:
			delta = 1
		case delta < 0 && delta > -1:
			delta = -1
		}
		return max(current+int(delta), 0)
	}
	return max(current+adj, 0)
}

// perInstance is how many game sessions one instance of a runtime
// configuration hosts at once.
func perInstance(rc *api.RuntimeConfiguration) int {
	n := 0
	for _, sp := range rc.ServerProcesses {
		n += int(api.ToInt32(sp.ConcurrentExecutions))
	}
	return n
}
