package flexmatch

import (
	"fmt"
	"sort"
	"strings"
)

// expandable are the properties an expansion may target, per rule type.
var expandable = map[string][]string{
	"batchDistance": {"maxDistance"},
	"comparison":    {"referenceValue"},
	"distance":      {"referenceValue", "minDistance", "maxDistance"},
	"collection":    {"referenceValue", "minCount", "maxCount"},
	"latency":       {"maxLatency", "maxDistance"},
}

// stepRef names the expansion step that set a property in a view.
type stepRef struct{ exp, step int }

func (p *parser) expansions(top *jobj) error {
	rs := p.rs
	list, err := top.arr("expansions", false)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for i, raw := range list {
		o, err := object(raw, fmt.Sprintf("expansions[%d]", i))
		if err != nil {
			return err
		}
		if err := o.only("target", "steps"); err != nil {
			return err
		}
		src, _, err := o.str("target", true)
		if err != nil {
			return err
		}
		tgt, err := p.target(src)
		if err != nil {
			return errf(o.at("target"), "%s", err.Error())
		}
		keys := []string{fmt.Sprintf("rules[%d].%s", tgt.rule, tgt.property)}
		if tgt.teams != nil {
			keys = keys[:0]
			for _, t := range tgt.teams {
				keys = append(keys, fmt.Sprintf("teams[%d].%s", t, tgt.property))
			}
		}
		for _, k := range keys {
			if j, dup := seen[k]; dup {
				return errf(o.at("target"), "expansions[%d] already expands this property", j)
			}
			seen[k] = i
		}
		steps, err := o.arr("steps", true)
		if err != nil {
			return err
		}
		if len(steps) == 0 {
			return errf(o.at("steps"), "at least one step is required")
		}
		e := expansion{target: tgt}
		for j, raw := range steps {
			so, err := object(raw, fmt.Sprintf("expansions[%d].steps[%d]", i, j))
			if err != nil {
				return err
			}
			if err := so.only("waitTimeSeconds", "value"); err != nil {
				return err
			}
			w, err := so.integer("waitTimeSeconds", true, 0, 1, 43200)
			if err != nil {
				return err
			}
			if j > 0 && float64(w) <= e.steps[j-1].wait {
				return errf(so.at("waitTimeSeconds"), "must be more than the previous step's (%g)", e.steps[j-1].wait)
			}
			v, err := p.stepValue(so, tgt)
			if err != nil {
				return err
			}
			e.steps = append(e.steps, expansionStep{wait: float64(w), value: v})
		}
		rs.expansions = append(rs.expansions, e)
	}
	return p.buildViews()
}

// target parses an expansion target: teams[a,b|*].minPlayers|maxPlayers or
// rules[name].property.
func (p *parser) target(s string) (expansionTarget, error) {
	var t expansionTarget
	open, close := strings.IndexByte(s, '['), strings.LastIndexByte(s, ']')
	if open < 0 || close < open || !strings.HasPrefix(s[close:], "].") {
		return t, fmt.Errorf("expected teams[name,...].minPlayers, teams[*].maxPlayers or rules[name].property, not %q", s)
	}
	kind, inner, prop := s[:open], s[open+1:close], s[close+2:]
	t.property = prop
	switch kind {
	case "teams":
		if prop != "minPlayers" && prop != "maxPlayers" {
			return t, fmt.Errorf("a team target expands minPlayers or maxPlayers, not %q", prop)
		}
		t.teams = []int{}
		if strings.TrimSpace(inner) == "*" {
			for i := range p.rs.teams {
				t.teams = append(t.teams, i)
			}
			return t, nil
		}
		for _, n := range strings.Split(inner, ",") {
			n = strings.TrimSpace(n)
			k := len(t.teams)
			if t.teams = p.rs.appendTeams(t.teams, n); len(t.teams) == k {
				return t, fmt.Errorf("no team is named %q", n)
			}
		}
		return t, nil
	case "rules":
		i, ok := p.ruleAt[strings.TrimSpace(inner)]
		if !ok {
			return t, fmt.Errorf("no rule is named %q", inner)
		}
		t.rule = i
		props := expandable[p.ruleTypes[i]]
		if len(props) == 0 {
			return t, fmt.Errorf("rule %q is a %s rule, which expansions cannot change", inner, p.ruleTypes[i])
		}
		found := false
		for _, q := range props {
			found = found || q == prop
		}
		if !found {
			return t, fmt.Errorf("a %s rule's expandable properties are %s, not %q", p.ruleTypes[i], strings.Join(props, ", "), prop)
		}
		if prop == "referenceValue" && ruleReference(p.rs.rules[i]) == nil {
			return t, fmt.Errorf("rule %q has no referenceValue to expand", inner)
		}
		return t, nil
	}
	return t, fmt.Errorf("a target starts with teams[ or rules[, not %q", kind)
}

// ruleReference is a rule's referenceValue (nil when none).
func ruleReference(r rule) *operand {
	switch r := r.(type) {
	case *comparisonRule:
		return r.reference
	case *distanceRule:
		return r.reference
	case *collectionRule:
		return r.reference
	}
	return nil
}

// stepValue reads a step's value as the target's property needs it.
func (p *parser) stepValue(so *jobj, t expansionTarget) (operand, error) {
	path := so.at("value")
	raw, ok := so.get("value")
	if !ok {
		return operand{}, errf(path, "is required")
	}
	if t.property == "referenceValue" {
		ref := ruleReference(p.rs.rules[t.rule])
		v, err := p.operand(raw, path)
		if err != nil {
			return operand{}, err
		}
		if _, coll := p.rs.rules[t.rule].(*collectionRule); coll || ref.kind == operandList {
			if v.kind != ref.kind {
				return operand{}, errf(path, "must be of the same kind as the rule's referenceValue")
			}
			return *v, nil
		}
		num := ref.kind == operandNumber || (ref.kind == operandExpr && ref.expr.num)
		if !refMatches(v, num) {
			return operand{}, errf(path, "must be a %s like the rule's referenceValue", map[bool]string{true: "number", false: "string"}[num])
		}
		return *v, nil
	}
	f, ok := number(raw)
	switch {
	case !ok:
		return operand{}, errf(path, "must be a number")
	case t.teams != nil && (f != float64(int(f)) || f < 0 || f > maxMatch):
		return operand{}, errf(path, "must be an integer from 0 to %d", maxMatch)
	case t.property == "maxPlayers" && f < 1:
		return operand{}, errf(path, "must be at least 1")
	case f < 0:
		return operand{}, errf(path, "must be at least 0")
	case t.property == "maxLatency" && f <= 0:
		return operand{}, errf(path, "must be more than 0")
	}
	return operand{kind: operandNumber, num: f}, nil
}

// buildViews precomputes the view before any step and after each distinct
// step time.
func (p *parser) buildViews() error {
	rs := p.rs
	times := map[float64]bool{}
	for _, e := range rs.expansions {
		for _, s := range e.steps {
			times[s.wait] = true
		}
	}
	rs.steps = rs.steps[:0]
	for t := range times {
		rs.steps = append(rs.steps, t)
	}
	sort.Float64s(rs.steps)
	base, err := p.viewAfter(-1)
	if err != nil {
		return err
	}
	rs.views = []*view{base}
	for _, t := range rs.steps {
		v, err := p.viewAfter(t)
		if err != nil {
			return err
		}
		rs.views = append(rs.views, v)
	}
	return nil
}

// viewAfter is the view with every step whose wait is at most t applied.
// Views share the rule set's teams and rules until a step changes them
// (copy on write), so many steps cost little memory.
func (p *parser) viewAfter(t float64) (*view, error) {
	rs := p.rs
	v := &view{rs: rs, teams: rs.teams, rules: rs.rules}
	var setBy []stepRef
	var copied []bool
	for ei, e := range rs.expansions {
		si := -1
		for j, s := range e.steps {
			if s.wait <= t {
				si = j
			}
		}
		if si < 0 {
			continue
		}
		val := e.steps[si].value
		if e.target.teams != nil {
			if setBy == nil {
				v.teams = append([]teamSpec(nil), rs.teams...)
				setBy = make([]stepRef, len(v.teams))
				for i := range setBy {
					setBy[i] = stepRef{-1, -1}
				}
			}
			for _, k := range e.target.teams {
				if e.target.property == "minPlayers" {
					v.teams[k].min = int(val.num)
				} else {
					v.teams[k].max = int(val.num)
				}
				if setBy[k].exp < 0 || e.steps[si].wait >= rs.expansions[setBy[k].exp].steps[setBy[k].step].wait {
					setBy[k] = stepRef{ei, si}
				}
			}
			continue
		}
		if copied == nil {
			v.rules = append([]rule(nil), rs.rules...)
			copied = make([]bool, len(v.rules))
		}
		if r := e.target.rule; !copied[r] {
			v.rules[r], copied[r] = copyRule(v.rules[r]), true
		}
		setRuleProp(v.rules[e.target.rule], e.target.property, val)
	}
	for k, ts := range v.teams {
		if ts.min > ts.max {
			s := setBy[k]
			return nil, errf(fmt.Sprintf("expansions[%d].steps[%d].value", s.exp, s.step), "after this step team %s has minPlayers %d above maxPlayers %d", ts.name, ts.min, ts.max)
		}
	}
	return v, nil
}

func copyRule(r rule) rule {
	switch r := r.(type) {
	case *batchDistanceRule:
		c := *r
		return &c
	case *comparisonRule:
		c := *r
		return &c
	case *distanceRule:
		c := *r
		return &c
	case *collectionRule:
		c := *r
		return &c
	case *latencyRule:
		c := *r
		return &c
	}
	return r // compound and sort rules are not expandable
}

func setRuleProp(r rule, prop string, v operand) {
	ref := &v
	switch r := r.(type) {
	case *batchDistanceRule:
		r.maxDistance = v.num
	case *comparisonRule:
		r.reference = ref
	case *distanceRule:
		switch prop {
		case "referenceValue":
			r.reference = ref
		case "minDistance":
			r.minDistance = bound{true, v.num}
		default:
			r.maxDistance = bound{true, v.num}
		}
	case *collectionRule:
		switch prop {
		case "referenceValue":
			r.reference = ref
		case "minCount":
			r.minCount = bound{true, v.num}
		default:
			r.maxCount = bound{true, v.num}
		}
	case *latencyRule:
		if prop == "maxLatency" {
			r.maxLatency = v.num
		} else {
			r.maxDistance = bound{true, v.num}
		}
	}
}
