package flexmatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxBodyLength is the longest rule set body, in characters.
const MaxBodyLength = 65535

// Match size limits.
const (
	maxSmallMatch = 40  // largest match exhaustiveSearch builds
	maxMatch      = 200 // largest match of any rule set
)

// jobj is a JSON object being read, with the JSON path of the object.
type jobj struct {
	path string
	m    map[string]json.RawMessage
}

func errf(path, format string, args ...any) *Error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// object reads raw as a JSON object.
func object(raw json.RawMessage, path string) (*jobj, error) {
	var m map[string]json.RawMessage
	if !isKind(raw, '{') || json.Unmarshal(raw, &m) != nil {
		return nil, errf(path, "must be a JSON object")
	}
	return &jobj{path: path, m: m}, nil
}

func isKind(raw json.RawMessage, c byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == c
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// at is the path of a property of the object.
func (o *jobj) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// only refuses properties other than keys.
func (o *jobj) only(keys ...string) error {
	var unknown []string
	for k := range o.m {
		if !slices.Contains(keys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return errf(o.at(unknown[0]), "unknown property (expected one of %s)", strings.Join(keys, ", "))
	}
	return nil
}

// get is a property's raw value; false when absent or null.
func (o *jobj) get(key string) (json.RawMessage, bool) {
	raw, ok := o.m[key]
	if !ok || isNull(raw) {
		return nil, false
	}
	return raw, true
}

func (o *jobj) str(key string, required bool) (string, bool, error) {
	raw, ok := o.get(key)
	if !ok {
		if required {
			return "", false, errf(o.at(key), "is required (a string)")
		}
		return "", false, nil
	}
	var s string
	if !isKind(raw, '"') || json.Unmarshal(raw, &s) != nil {
		return "", false, errf(o.at(key), "must be a string")
	}
	return s, true, nil
}

// enum reads a string property that must be one of values; def when absent.
func (o *jobj) enum(key, def string, values ...string) (string, error) {
	s, ok, err := o.str(key, false)
	if err != nil {
		return "", err
	}
	if !ok {
		return def, nil
	}
	if !slices.Contains(values, s) {
		return "", errf(o.at(key), "must be one of %s, not %q", strings.Join(values, ", "), s)
	}
	return s, nil
}

// number reads a number property: a JSON number or, as GameLift's own
// examples write some ("maxDistance": "500"), a string holding one.
func number(raw json.RawMessage) (float64, bool) {
	if f, ok := jsonNumber(raw); ok {
		return f, true
	}
	var s string
	if isKind(raw, '"') && json.Unmarshal(raw, &s) == nil {
		return numericString(s)
	}
	return 0, false
}

// numericString reads a number written as a string.
func numericString(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// jsonNumber reads a JSON number.
func jsonNumber(raw json.RawMessage) (float64, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || !(t[0] == '-' || t[0] >= '0' && t[0] <= '9') {
		return 0, false
	}
	var f float64
	if json.Unmarshal(t, &f) != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func (o *jobj) num(key string, required bool) (bound, error) {
	raw, ok := o.get(key)
	if !ok {
		if required {
			return bound{}, errf(o.at(key), "is required (a number)")
		}
		return bound{}, nil
	}
	f, ok := number(raw)
	if !ok {
		return bound{}, errf(o.at(key), "must be a number")
	}
	return bound{set: true, v: f}, nil
}

// nonNeg reads an optional number that must be at least 0.
func (o *jobj) nonNeg(key string, required bool) (bound, error) {
	b, err := o.num(key, required)
	if err == nil && b.set && b.v < 0 {
		err = errf(o.at(key), "must be at least 0")
	}
	return b, err
}

func (o *jobj) integer(key string, required bool, def, lo, hi int) (int, error) {
	raw, ok := o.get(key)
	if !ok {
		if required {
			return 0, errf(o.at(key), "is required (an integer from %d to %d)", lo, hi)
		}
		return def, nil
	}
	f, ok := number(raw)
	if !ok || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, errf(o.at(key), "must be an integer from %d to %d", lo, hi)
	}
	return int(f), nil
}

func (o *jobj) arr(key string, required bool) ([]json.RawMessage, error) {
	raw, ok := o.get(key)
	if !ok {
		if required {
			return nil, errf(o.at(key), "is required (an array)")
		}
		return nil, nil
	}
	var a []json.RawMessage
	if !isKind(raw, '[') || json.Unmarshal(raw, &a) != nil {
		return nil, errf(o.at(key), "must be an array")
	}
	return a, nil
}

// Parse parses and validates a rule set body (RuleSetBody). A rule set that
// does not follow the rule language is an *Error naming the field.
func Parse(body []byte) (*RuleSet, error) {
	if n := utf8.RuneCount(body); n == 0 || n > MaxBodyLength {
		return nil, errf("", "the rule set body must be 1 to %d characters long", MaxBodyLength)
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, errf("", "the rule set is not valid JSON (at character %d): %s", utf8.RuneCount(body[:min(int(se.Offset), len(body))]), se.Error())
		case err != nil:
			return nil, errf("", "the rule set is not valid JSON: %s", err.Error())
		}
		return nil, errf("", "the rule set is not valid JSON")
	}
	top, err := object(body, "")
	if err != nil {
		return nil, errf("", "the rule set must be a JSON object")
	}
	p := &parser{rs: &RuleSet{attributes: map[string]AttrType{}, attrIndex: map[string]int{}}}
	if err := p.parse(top); err != nil {
		return nil, err
	}
	return p.rs, nil
}

type parser struct {
	rs *RuleSet
	// ruleAt maps a rule name to its index.
	ruleAt map[string]int
	// ruleTypes are the rules' types as spelled in the rule set.
	ruleTypes []string
}

func (p *parser) parse(top *jobj) error {
	rs := p.rs
	if err := top.only("name", "ruleLanguageVersion", "playerAttributes", "algorithm", "teams", "rules", "expansions"); err != nil {
		return err
	}
	var err error
	if rs.name, _, err = top.str("name", false); err != nil {
		return err
	}
	v, _, err := top.str("ruleLanguageVersion", true)
	if err != nil {
		return err
	}
	if v != "1.0" {
		return errf("ruleLanguageVersion", `must be "1.0", not %q`, v)
	}
	if err := p.attributes(top); err != nil {
		return err
	}
	if err := p.teams(top); err != nil {
		return err
	}
	if err := p.rules(top); err != nil {
		return err
	}
	if err := p.algorithm(top); err != nil {
		return err
	}
	if err := p.expansions(top); err != nil {
		return err
	}
	return p.largeMatch()
}

func (p *parser) attributes(top *jobj) error {
	rs := p.rs
	list, err := top.arr("playerAttributes", false)
	if err != nil {
		return err
	}
	for i, raw := range list {
		o, err := object(raw, fmt.Sprintf("playerAttributes[%d]", i))
		if err != nil {
			return err
		}
		if err := o.only("name", "type", "default"); err != nil {
			return err
		}
		name, _, err := o.str("name", true)
		if err != nil {
			return err
		}
		if name == "" {
			return errf(o.at("name"), "must not be empty")
		}
		if _, dup := rs.attrIndex[name]; dup {
			return errf(o.at("name"), "attribute %q is declared twice", name)
		}
		typ, _, err := o.str("type", true)
		if err != nil {
			return err
		}
		t := AttrType(typ)
		switch t {
		case TypeString, TypeNumber, TypeStringList, TypeStringNumberMap:
		default:
			return errf(o.at("type"), "must be one of string, number, string_list, string_number_map, not %q", typ)
		}
		d := attrDef{name: name, typ: t}
		if raw, ok := o.get("default"); ok {
			v, ok := defaultValue(raw, t)
			if !ok {
				return errf(o.at("default"), "must be a %s value", t)
			}
			d.def = &v
		}
		rs.attrIndex[name] = len(rs.attrs)
		rs.attrs = append(rs.attrs, d)
		rs.attributes[name] = t
	}
	return nil
}

// defaultValue reads a default of type t. A number may also be written as
// a string holding a number.
func defaultValue(raw json.RawMessage, t AttrType) (Value, bool) {
	switch t {
	case TypeNumber:
		if f, ok := number(raw); ok {
			return Value{N: &f}, true
		}
	case TypeString:
		var s string
		if isKind(raw, '"') && json.Unmarshal(raw, &s) == nil {
			return Value{S: &s}, true
		}
	case TypeStringList:
		var l []string
		if isKind(raw, '[') && json.Unmarshal(raw, &l) == nil && !slices.Contains(l, "") {
			if l == nil {
				l = []string{}
			}
			return Value{SL: l}, true
		}
	case TypeStringNumberMap:
		var m map[string]float64
		if isKind(raw, '{') && json.Unmarshal(raw, &m) == nil {
			return Value{SDM: m}, true
		}
	}
	return Value{}, false
}

func (p *parser) teams(top *jobj) error {
	rs := p.rs
	list, err := top.arr("teams", true)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return errf("teams", "at least one team is required")
	}
	names := map[string]bool{}
	total := 0
	for i, raw := range list {
		o, err := object(raw, fmt.Sprintf("teams[%d]", i))
		if err != nil {
			return err
		}
		if err := o.only("name", "minPlayers", "maxPlayers", "quantity"); err != nil {
			return err
		}
		name, _, err := o.str("name", true)
		if err != nil {
			return err
		}
		if name == "" || strings.ContainsAny(name, ",[]") || strings.TrimSpace(name) != name || name == "*" {
			return errf(o.at("name"), "must be a non-empty name without , [ ] or surrounding spaces")
		}
		lo, err := o.integer("minPlayers", true, 0, 0, maxMatch)
		if err != nil {
			return err
		}
		hi, err := o.integer("maxPlayers", true, 0, 1, maxMatch)
		if err != nil {
			return err
		}
		if lo > hi {
			return errf(o.at("minPlayers"), "must be at most maxPlayers (%d)", hi)
		}
		q, err := o.integer("quantity", false, 1, 1, maxMatch)
		if err != nil {
			return err
		}
		for k := 1; k <= q; k++ {
			n := name
			if q > 1 {
				n = fmt.Sprintf("%s_%d", name, k)
			}
			if names[n] {
				return errf(o.at("name"), "team %q is named twice (quantity copies are named name_1, name_2, ...)", n)
			}
			names[n] = true
			rs.teams = append(rs.teams, teamSpec{name: n, base: name, min: lo, max: hi})
			total += hi
			if total > maxMatch {
				return errf(fmt.Sprintf("teams[%d].maxPlayers", i), "the teams' maxPlayers add up to more than %d players", maxMatch)
			}
		}
	}
	rs.teamIndex = make(map[string]int, len(rs.teams))
	for i, t := range rs.teams {
		rs.teamIndex[t.name] = i
	}
	for _, t := range rs.teams {
		if t.base != t.name && names[t.base] {
			return errf("teams", "team name %q is both a team and a quantity team's base name", t.base)
		}
	}
	return nil
}

func (p *parser) algorithm(top *jobj) error {
	rs := p.rs
	a := &rs.algo
	a.balancedAttribute = -1
	o := &jobj{path: "algorithm", m: map[string]json.RawMessage{}}
	if raw, ok := top.get("algorithm"); ok {
		var err error
		if o, err = object(raw, "algorithm"); err != nil {
			return err
		}
	}
	if err := o.only("strategy", "batchingPreference", "sortByAttributes", "balancedAttribute", "backfillPriority", "expansionAgeSelection"); err != nil {
		return err
	}
	var err error
	if a.strategy, err = o.enum("strategy", strategyExhaustive, strategyExhaustive, strategyBalanced); err != nil {
		return err
	}
	def := batchRandom
	if a.strategy == strategyBalanced {
		def = batchLargestPopulation
	}
	if a.batchingPreference, err = o.enum("batchingPreference", def, batchRandom, batchSorted, batchLargestPopulation, batchFastestRegion); err != nil {
		return err
	}
	switch a.batchingPreference {
	case batchSorted:
		if a.strategy != strategyExhaustive {
			return errf("algorithm.batchingPreference", "sorted needs strategy exhaustiveSearch")
		}
	case batchLargestPopulation, batchFastestRegion:
		if a.strategy != strategyBalanced {
			return errf("algorithm.batchingPreference", "%s needs strategy balanced", a.batchingPreference)
		}
	}
	sortBy, err := o.arr("sortByAttributes", false)
	if err != nil {
		return err
	}
	if len(sortBy) > 0 && a.batchingPreference != batchSorted {
		return errf("algorithm.sortByAttributes", "only with batchingPreference sorted")
	}
	if a.batchingPreference == batchSorted && len(sortBy) == 0 {
		return errf("algorithm.sortByAttributes", "is required (at least one attribute) with batchingPreference sorted")
	}
	for i, raw := range sortBy {
		path := fmt.Sprintf("algorithm.sortByAttributes[%d]", i)
		var s string
		if !isKind(raw, '"') || json.Unmarshal(raw, &s) != nil {
			return errf(path, "must be a string")
		}
		k, ok := rs.attrIndex[s]
		if !ok {
			return errf(path, "attribute %q is not declared in playerAttributes", s)
		}
		if t := rs.attrs[k].typ; t != TypeNumber && t != TypeString {
			return errf(path, "attribute %q must be a number or string attribute", s)
		}
		a.sortByAttributes = append(a.sortByAttributes, k)
	}
	ba, ok, err := o.str("balancedAttribute", false)
	if err != nil {
		return err
	}
	if ok {
		if a.strategy != strategyBalanced {
			return errf("algorithm.balancedAttribute", "only with strategy balanced")
		}
		k, found := rs.attrIndex[ba]
		if !found {
			return errf("algorithm.balancedAttribute", "attribute %q is not declared in playerAttributes", ba)
		}
		if rs.attrs[k].typ != TypeNumber {
			return errf("algorithm.balancedAttribute", "attribute %q must be a number attribute", ba)
		}
		a.balancedAttribute = k
	} else if a.strategy == strategyBalanced {
		return errf("algorithm.balancedAttribute", "is required (a number attribute) with strategy balanced")
	}
	if a.backfillPriority, err = o.enum("backfillPriority", "normal", "normal", "high", "low"); err != nil {
		return err
	}
	if a.expansionAgeSelection, err = o.enum("expansionAgeSelection", ageNewest, ageNewest, ageOldest); err != nil {
		return err
	}
	if a.batchingPreference == batchFastestRegion && !rs.latency {
		return errf("algorithm.batchingPreference", "fastestRegion needs a latency rule")
	}
	return nil
}

// largeMatch applies the restrictions of matches of more than 40 players
// (at the largest team sizes any expansion reaches).
func (p *parser) largeMatch() error {
	rs := p.rs
	largest := rs.MaxPlayers()
	if largest > maxMatch {
		return errf("expansions", "an expansion lets the teams' maxPlayers add up to %d, more than %d players", largest, maxMatch)
	}
	if largest <= maxSmallMatch {
		return nil
	}
	if rs.algo.strategy != strategyBalanced {
		return errf("algorithm.strategy", "matches of more than %d players (here up to %d) need strategy balanced", maxSmallMatch, largest)
	}
	for i, r := range rs.rules {
		switch r := r.(type) {
		case *batchDistanceRule:
		case *latencyRule:
			if r.maxDistance.set {
				return errf(fmt.Sprintf("rules[%d].maxDistance", i), "matches of more than %d players allow latency rules with maxLatency only", maxSmallMatch)
			}
		default:
			return errf(fmt.Sprintf("rules[%d].type", i), "matches of more than %d players allow only latency and batchDistance rules, not %s", maxSmallMatch, p.ruleTypes[i])
		}
	}
	return nil
}

var ruleProps = map[string][]string{
	"batchDistance": {"batchAttribute", "maxDistance", "partyAggregation"},
	"comparison":    {"measurements", "referenceValue", "operation", "partyAggregation"},
	"distance":      {"measurements", "referenceValue", "minDistance", "maxDistance", "partyAggregation"},
	"collection":    {"measurements", "referenceValue", "operation", "minCount", "maxCount", "partyAggregation"},
	"compound":      {"statement"},
	"latency":       {"maxLatency", "maxDistance", "distanceReference", "partyAggregation"},
	"absoluteSort":  {"sortDirection", "sortAttribute", "mapKey", "partyAggregation"},
	"distanceSort":  {"sortDirection", "sortAttribute", "mapKey", "partyAggregation"},
}

var aggNames = map[string]aggregation{"avg": aggAvg, "min": aggMin, "max": aggMax, "union": aggUnion, "intersection": aggIntersection}

func (p *parser) rules(top *jobj) error {
	rs := p.rs
	list, err := top.arr("rules", false)
	if err != nil {
		return err
	}
	p.ruleAt = map[string]int{}
	for i, raw := range list {
		o, err := object(raw, fmt.Sprintf("rules[%d]", i))
		if err != nil {
			return err
		}
		name, _, err := o.str("name", true)
		if err != nil {
			return err
		}
		if name == "" || strings.ContainsAny(name, ",()[]") || strings.TrimSpace(name) != name {
			return errf(o.at("name"), "must be a non-empty name without , ( ) [ ] or surrounding spaces")
		}
		if _, dup := p.ruleAt[name]; dup {
			return errf(o.at("name"), "rule %q is named twice", name)
		}
		typ, _, err := o.str("type", true)
		if err != nil {
			return err
		}
		props, ok := ruleProps[typ]
		if !ok {
			return errf(o.at("type"), "must be one of batchDistance, comparison, distance, collection, compound, latency, absoluteSort, distanceSort, not %q", typ)
		}
		if err := o.only(append([]string{"name", "type", "description"}, props...)...); err != nil {
			return err
		}
		if _, _, err := o.str("description", false); err != nil {
			return err
		}
		r, err := p.rule(o, name, typ)
		if err != nil {
			return err
		}
		p.ruleAt[name] = i
		p.ruleTypes = append(p.ruleTypes, typ)
		rs.rules = append(rs.rules, r)
	}
	rs.inCompound = make([]bool, len(rs.rules))
	for _, r := range rs.rules {
		if c, ok := r.(*compoundRule); ok {
			markCompound(c.stmt, rs.inCompound)
		}
	}
	return nil
}

func markCompound(b *boolExpr, in []bool) {
	if b.op == boolRule {
		in[b.rule] = true
	}
	for _, a := range b.args {
		markCompound(a, in)
	}
}

func (p *parser) agg(o *jobj, def aggregation, allowed ...string) (aggregation, error) {
	s, ok, err := o.str("partyAggregation", false)
	if err != nil || !ok {
		return def, err
	}
	if !slices.Contains(allowed, s) {
		return 0, errf(o.at("partyAggregation"), "must be one of %s, not %q", strings.Join(allowed, ", "), s)
	}
	return aggNames[s], nil
}

// attrProp reads a property naming a declared attribute of one of types.
func (p *parser) attrProp(o *jobj, key string, types ...AttrType) (int, error) {
	s, _, err := o.str(key, true)
	if err != nil {
		return 0, err
	}
	k, ok := p.rs.attrIndex[s]
	if !ok {
		return 0, errf(o.at(key), "attribute %q is not declared in playerAttributes", s)
	}
	if !slices.Contains(types, p.rs.attrs[k].typ) {
		names := make([]string, len(types))
		for i, t := range types {
			names[i] = string(t)
		}
		return 0, errf(o.at(key), "attribute %q must be a %s attribute", s, strings.Join(names, " or "))
	}
	return k, nil
}

// maxMeasurements bounds a rule's measurements (Hoist's own limit: the
// values of one rule's expressions are held at once while it is
// evaluated, up to a few thousand per expression in a 40-player match).
const maxMeasurements = 10

// measurements reads a rule's measurements: one expression or an array.
func (p *parser) measurements(o *jobj) ([]*expr, error) {
	raw, ok := o.get("measurements")
	if !ok {
		return nil, errf(o.at("measurements"), "is required (a property expression or an array of them)")
	}
	var srcs []string
	var one string
	if isKind(raw, '"') && json.Unmarshal(raw, &one) == nil {
		srcs = []string{one}
	} else if !isKind(raw, '[') || json.Unmarshal(raw, &srcs) != nil || len(srcs) == 0 {
		return nil, errf(o.at("measurements"), "must be a property expression or a non-empty array of them")
	}
	if len(srcs) > maxMeasurements {
		return nil, errf(o.at("measurements"), "has %d expressions: Hoist takes at most %d per rule", len(srcs), maxMeasurements)
	}
	out := make([]*expr, len(srcs))
	for i, s := range srcs {
		path := o.at("measurements")
		if isKind(raw, '[') {
			path = fmt.Sprintf("%s[%d]", path, i)
		}
		e, err := p.rs.parseExpr(s)
		if err != nil {
			return nil, errf(path, "%s", err.Error())
		}
		if i > 0 && e.num != out[0].num {
			return nil, errf(path, "measurements must all be numbers or all be strings")
		}
		out[i] = e
	}
	return out, nil
}

// operand reads a referenceValue (or an expansion step's value): a number,
// a string list, a property expression, or a string.
func (p *parser) operand(raw json.RawMessage, path string) (*operand, error) {
	if f, ok := jsonNumber(raw); ok {
		return &operand{kind: operandNumber, num: f}, nil
	}
	if isKind(raw, '[') {
		var l []string
		if json.Unmarshal(raw, &l) != nil {
			return nil, errf(path, "must be a number, a string, a string list or a property expression")
		}
		return &operand{kind: operandList, list: l}, nil
	}
	var s string
	if !isKind(raw, '"') || json.Unmarshal(raw, &s) != nil {
		return nil, errf(path, "must be a number, a string, a string list or a property expression")
	}
	if looksLikeExpr(s) {
		e, err := p.rs.parseExpr(s)
		if err != nil {
			return nil, errf(path, "%s", err.Error())
		}
		if e.depth != 0 {
			return nil, errf(path, "a property expression used as a value must give one value (apply min, max, avg, ... to the list)")
		}
		return &operand{kind: operandExpr, expr: e}, nil
	}
	return &operand{kind: operandString, str: s}, nil
}

// refMatches checks a reference operand against what the rule needs:
// numbers (num) or strings. A literal string holding a number is taken as
// the number where a number is needed.
func refMatches(ref *operand, num bool) bool {
	if num && ref.kind == operandString {
		if f, ok := numericString(ref.str); ok {
			*ref = operand{kind: operandNumber, num: f}
		}
	}
	switch ref.kind {
	case operandNumber:
		return num
	case operandString:
		return !num
	case operandExpr:
		return ref.expr.num == num
	}
	return false
}

func (p *parser) rule(o *jobj, name, typ string) (rule, error) {
	switch typ {
	case "batchDistance":
		r := &batchDistanceRule{name: name}
		var err error
		if r.attr, err = p.attrProp(o, "batchAttribute", TypeNumber, TypeString); err != nil {
			return nil, err
		}
		r.str = p.rs.attrs[r.attr].typ == TypeString
		d, err := o.nonNeg("maxDistance", !r.str)
		if err != nil {
			return nil, err
		}
		r.maxDistance = d.v
		if r.agg, err = p.agg(o, aggAvg, "avg", "min", "max"); err != nil {
			return nil, err
		}
		return r, nil
	case "comparison":
		r := &comparisonRule{name: name}
		var err error
		if r.measurements, err = p.measurements(o); err != nil {
			return nil, err
		}
		op, _, err := o.str("operation", true)
		if err != nil {
			return nil, err
		}
		ops := map[string]cmpOp{"=": opEq, "!=": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe}
		var ok bool
		if r.op, ok = ops[op]; !ok {
			return nil, errf(o.at("operation"), "must be one of <, <=, =, !=, >, >=, not %q", op)
		}
		num := r.measurements[0].num
		if !num && r.op != opEq && r.op != opNe {
			return nil, errf(o.at("operation"), "string measurements compare only with = and !=")
		}
		if raw, ok := o.get("referenceValue"); ok {
			if r.reference, err = p.operand(raw, o.at("referenceValue")); err != nil {
				return nil, err
			}
			if !refMatches(r.reference, num) {
				return nil, errf(o.at("referenceValue"), "must be a %s like the measurements", map[bool]string{true: "number", false: "string"}[num])
			}
		} else if r.op != opEq && r.op != opNe {
			return nil, errf(o.at("operation"), "without a referenceValue only = (all equal) and != (all different) apply")
		}
		if r.agg, err = p.agg(o, aggAvg, "avg", "min", "max"); err != nil {
			return nil, err
		}
		return r, nil
	case "distance":
		r := &distanceRule{name: name}
		var err error
		if r.measurements, err = p.measurements(o); err != nil {
			return nil, err
		}
		if !r.measurements[0].num {
			return nil, errf(o.at("measurements"), "must measure numbers")
		}
		if raw, ok := o.get("referenceValue"); ok {
			if r.reference, err = p.operand(raw, o.at("referenceValue")); err != nil {
				return nil, err
			}
			if !refMatches(r.reference, true) {
				return nil, errf(o.at("referenceValue"), "must be a number or a property expression giving a number")
			}
		}
		if r.minDistance, err = o.nonNeg("minDistance", false); err != nil {
			return nil, err
		}
		if r.maxDistance, err = o.nonNeg("maxDistance", false); err != nil {
			return nil, err
		}
		if !r.minDistance.set && !r.maxDistance.set {
			return nil, errf(o.at("maxDistance"), "a distance rule needs maxDistance or minDistance")
		}
		if r.agg, err = p.agg(o, aggAvg, "avg", "min", "max"); err != nil {
			return nil, err
		}
		return r, nil
	case "collection":
		r := &collectionRule{name: name}
		var err error
		if r.measurements, err = p.measurements(o); err != nil {
			return nil, err
		}
		for i, m := range r.measurements {
			if m.num || m.depth < 2 {
				return nil, errf(o.at("measurements")+fmt.Sprintf("[%d]", i), "must give a list of string lists (such as teams[*].players.attributes[roles] or flatten(...) of it)")
			}
		}
		op, err := o.enum("operation", "", "intersection", "contains", "reference_intersection_count")
		if err != nil {
			return nil, err
		}
		switch op {
		case "":
			return nil, errf(o.at("operation"), "is required (intersection, contains or reference_intersection_count)")
		case "intersection":
			r.op = collIntersection
			if _, ok := o.get("referenceValue"); ok {
				return nil, errf(o.at("referenceValue"), "intersection takes no referenceValue")
			}
		case "contains", "reference_intersection_count":
			r.op = collContains
			want := operandString
			if op == "reference_intersection_count" {
				r.op, want = collRefIntersectCount, operandList
			}
			raw, ok := o.get("referenceValue")
			if !ok {
				return nil, errf(o.at("referenceValue"), "is required with %s", op)
			}
			if r.reference, err = p.operand(raw, o.at("referenceValue")); err != nil {
				return nil, err
			}
			if r.reference.kind != want {
				return nil, errf(o.at("referenceValue"), "must be a %s with %s", map[operandKind]string{operandString: "string", operandList: "string list"}[want], op)
			}
		}
		if r.minCount, err = o.nonNeg("minCount", false); err != nil {
			return nil, err
		}
		if r.maxCount, err = o.nonNeg("maxCount", false); err != nil {
			return nil, err
		}
		if !r.minCount.set && !r.maxCount.set {
			return nil, errf(o.at("maxCount"), "a collection rule needs minCount or maxCount")
		}
		if r.agg, err = p.agg(o, aggUnion, "union", "intersection"); err != nil {
			return nil, err
		}
		return r, nil
	case "compound":
		s, _, err := o.str("statement", true)
		if err != nil {
			return nil, err
		}
		cp := &compoundParser{p: p, s: s}
		st, err := cp.stmt(0)
		if err == nil {
			cp.space()
			if cp.pos < len(s) {
				err = cp.errorf("unexpected %q after the statement", s[cp.pos:])
			}
		}
		if err != nil {
			return nil, errf(o.at("statement"), "%s", err.Error())
		}
		return &compoundRule{name: name, stmt: st}, nil
	case "latency":
		r := &latencyRule{name: name}
		b, err := o.num("maxLatency", true)
		if err != nil {
			return nil, err
		}
		if b.v <= 0 {
			return nil, errf(o.at("maxLatency"), "must be more than 0")
		}
		r.maxLatency = b.v
		if r.maxDistance, err = o.nonNeg("maxDistance", false); err != nil {
			return nil, err
		}
		ref, err := o.enum("distanceReference", "min", "min", "avg")
		if err != nil {
			return nil, err
		}
		r.refAvg = ref == "avg"
		if r.agg, err = p.agg(o, aggMax, "avg", "min", "max"); err != nil {
			return nil, err
		}
		p.rs.latency = true
		return r, nil
	case "absoluteSort", "distanceSort":
		attr, err := p.attrProp(o, "sortAttribute", TypeNumber, TypeStringNumberMap)
		if err != nil {
			return nil, err
		}
		dir, err := o.enum("sortDirection", "ascending", "ascending", "descending")
		if err != nil {
			return nil, err
		}
		mk := mapKeyNone
		key, err := o.enum("mapKey", "", "minValue", "maxValue")
		if err != nil {
			return nil, err
		}
		if p.rs.attrs[attr].typ == TypeStringNumberMap {
			switch key {
			case "":
				return nil, errf(o.at("mapKey"), "is required (minValue or maxValue) for a string_number_map attribute")
			case "minValue":
				mk = mapKeyMin
			default:
				mk = mapKeyMax
			}
		} else if key != "" {
			return nil, errf(o.at("mapKey"), "only for a string_number_map sortAttribute")
		}
		agg, err := p.agg(o, aggAvg, "avg", "min", "max")
		if err != nil {
			return nil, err
		}
		if typ == "absoluteSort" {
			return &absoluteSortRule{name: name, attr: attr, descending: dir == "descending", mapKey: mk, agg: agg}, nil
		}
		return &distanceSortRule{name: name, attr: attr, descending: dir == "descending", mapKey: mk, agg: agg}, nil
	}
	return nil, errf(o.at("type"), "unknown rule type %q", typ)
}

// compoundParser parses a compound rule's statement.
type compoundParser struct {
	p   *parser
	s   string
	pos int
}

func (c *compoundParser) errorf(format string, args ...any) error {
	return errorAt(c.pos, c.s, format, args...)
}

func (c *compoundParser) space() {
	for c.pos < len(c.s) && strings.IndexByte(" \t\r\n", c.s[c.pos]) >= 0 {
		c.pos++
	}
}

func (c *compoundParser) stmt(depth int) (*boolExpr, error) {
	if depth > maxExprDepth {
		return nil, c.errorf("statements nest at most %d deep", maxExprDepth)
	}
	c.space()
	start := c.pos
	for c.pos < len(c.s) && strings.IndexByte(",()[] \t\r\n", c.s[c.pos]) < 0 {
		c.pos++
	}
	word := c.s[start:c.pos]
	if word == "" {
		return nil, c.errorf("expected and(, or(, not(, xor( or a rule name")
	}
	c.space()
	if c.pos < len(c.s) && c.s[c.pos] == '(' {
		ops := map[string]boolOp{"and": boolAnd, "or": boolOr, "not": boolNot, "xor": boolXor}
		op, ok := ops[word]
		if !ok {
			c.pos = start
			return nil, c.errorf("unknown operator %q: expected and, or, not or xor", word)
		}
		c.pos++
		e := &boolExpr{op: op}
		for {
			a, err := c.stmt(depth + 1)
			if err != nil {
				return nil, err
			}
			e.args = append(e.args, a)
			c.space()
			if c.pos < len(c.s) && c.s[c.pos] == ',' {
				c.pos++
				continue
			}
			if c.pos < len(c.s) && c.s[c.pos] == ')' {
				c.pos++
				break
			}
			return nil, c.errorf("expected , or )")
		}
		if op == boolNot && len(e.args) != 1 {
			return nil, c.errorf("not takes exactly one argument")
		}
		if op != boolNot && len(e.args) < 2 {
			return nil, c.errorf("%s takes at least two arguments", word)
		}
		return e, nil
	}
	i, ok := c.p.ruleAt[word]
	if !ok {
		c.pos = start
		return nil, c.errorf("no earlier rule is named %q (a compound rule reads rules declared before it)", word)
	}
	switch c.p.rs.rules[i].(type) {
	case *batchDistanceRule, *absoluteSortRule, *distanceSortRule:
		c.pos = start
		return nil, c.errorf("rule %q is a %s rule: a compound rule reads comparison, distance, collection, latency and compound rules", word, c.p.ruleTypes[i])
	}
	return &boolExpr{op: boolRule, rule: i}, nil
}
