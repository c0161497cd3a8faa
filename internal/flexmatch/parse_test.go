package flexmatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestExampleRuleSets(t *testing.T) {
	for name, body := range exampleRuleSets(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(body); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseRepresentation(t *testing.T) {
	rs := mustParse(t, string(exampleRuleSets(t)["5v5-latency.json"]))
	if got := rs.Rules(); !slices.Equal(got, []string{"SkillBand", "SameMode", "FairTeams", "HasHealer", "Ping"}) {
		t.Errorf("Rules() = %v", got)
	}
	if rs.BackfillPriority() != "high" || rs.algo.expansionAgeSelection != ageOldest || rs.algo.batchingPreference != batchSorted {
		t.Errorf("algorithm = %+v", rs.algo)
	}
	if rs.MaxExpansionWait() != 30*time.Second {
		t.Errorf("MaxExpansionWait = %v", rs.MaxExpansionWait())
	}
	if !rs.HasLatencyRule() || rs.MaxPlayers() != 10 || rs.Name() != "squads" {
		t.Errorf("latency %v, max %d, name %q", rs.HasLatencyRule(), rs.MaxPlayers(), rs.Name())
	}
	if d := rs.attrs[rs.attrIndex["skill"]].def; d == nil || *d.N != 1000 {
		t.Errorf("skill default = %v", d)
	}
	bd := rs.rules[0].(*batchDistanceRule)
	if bd.attr != rs.attrIndex["skill"] || bd.maxDistance != 100 || bd.agg != aggAvg || bd.str {
		t.Errorf("batchDistance = %+v", bd)
	}
	if lr := rs.rules[4].(*latencyRule); lr.maxLatency != 150 || !lr.maxDistance.set || !lr.refAvg || lr.agg != aggMax {
		t.Errorf("latency = %+v", lr)
	}

	rs = mustParse(t, string(exampleRuleSets(t)["large-100-balanced.json"]))
	if len(rs.teams) != 25 || rs.teams[0].name != "squad_1" || rs.teams[24].name != "squad_25" || rs.teams[3].base != "squad" {
		t.Errorf("teams = %+v", rs.teams[:2])
	}
	if rs.algo.strategy != strategyBalanced || rs.algo.balancedAttribute != rs.attrIndex["skill"] || rs.BackfillPriority() != "low" {
		t.Errorf("algorithm = %+v", rs.algo)
	}
	rs = mustParse(t, `{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":1,"maxPlayers":2}]}`)
	if rs.BackfillPriority() != "normal" || rs.algo.strategy != strategyExhaustive || rs.algo.batchingPreference != batchRandom || rs.algo.expansionAgeSelection != ageNewest || rs.MaxExpansionWait() != 0 {
		t.Errorf("defaults = %+v", rs.algo)
	}
}

// TestParseInvalid: every refused rule set names the offending field.
func TestParseInvalid(t *testing.T) {
	const teams = `"teams":[{"name":"red","minPlayers":1,"maxPlayers":5},{"name":"blue","minPlayers":1,"maxPlayers":5}]`
	const attrs = `"playerAttributes":[{"name":"skill","type":"number"},{"name":"mode","type":"string"},{"name":"roles","type":"string_list"},{"name":"ranks","type":"string_number_map"}]`
	base := func(extra string) string {
		return `{"ruleLanguageVersion":"1.0",` + attrs + `,` + teams + extra + `}`
	}
	rules := func(rs ...string) string { return base(`,"rules":[` + strings.Join(rs, ",") + `]`) }
	const skill = `{"name":"s","type":"distance","measurements":"flatten(teams[*].players.attributes[skill])","maxDistance":10}`
	const batch = `{"name":"b","type":"batchDistance","batchAttribute":"skill","maxDistance":10}`
	exp := func(e ...string) string {
		return base(`,"rules":[` + skill + `,` + batch + `],"expansions":[` + strings.Join(e, ",") + `]`)
	}
	large := func(algo string, rs ...string) string {
		return `{"ruleLanguageVersion":"1.0",` + attrs + `,"teams":[{"name":"t","minPlayers":1,"maxPlayers":25,"quantity":2}]` + algo + `,"rules":[` + strings.Join(rs, ",") + `]}`
	}
	cases := []struct {
		name, body, path, msg string
	}{
		{"not json", `{"ruleLanguageVersion":`, "", "not valid JSON"},
		{"comments", `{"ruleLanguageVersion":"1.0"} // x`, "", "not valid JSON"},
		{"array", `[]`, "", "JSON object"},
		{"empty", ``, "", "1 to 65535"},
		{"too long", `{"name":"` + strings.Repeat("x", 65535) + `"}`, "", "1 to 65535"},
		{"no version", `{"teams":[]}`, "ruleLanguageVersion", "required"},
		{"bad version", `{"ruleLanguageVersion":"2.0"}`, "ruleLanguageVersion", `"1.0"`},
		{"unknown top", `{"ruleLanguageVersion":"1.0","team":[]}`, "team", "unknown property"},
		{"name type", `{"ruleLanguageVersion":"1.0","name":3}`, "name", "string"},
		{"no teams", `{"ruleLanguageVersion":"1.0"}`, "teams", "required"},
		{"empty teams", `{"ruleLanguageVersion":"1.0","teams":[]}`, "teams", "at least one"},
		{"team not object", `{"ruleLanguageVersion":"1.0","teams":[3]}`, "teams[0]", "object"},
		{"team unknown", `{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":1,"maxPlayers":2,"min":1}]}`, "teams[0].min", "unknown property"},
		{"team no name", `{"ruleLanguageVersion":"1.0","teams":[{"minPlayers":1,"maxPlayers":2}]}`, "teams[0].name", "required"},
		{"team bad name", `{"ruleLanguageVersion":"1.0","teams":[{"name":"a,b","minPlayers":1,"maxPlayers":2}]}`, "teams[0].name", "without"},
		{"team dup", `{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":1,"maxPlayers":2},{"name":"a","minPlayers":1,"maxPlayers":2}]}`, "teams[1].name", "twice"},
		{"team dup quantity", `{"ruleLanguageVersion":"1.0","teams":[{"name":"a_1","minPlayers":1,"maxPlayers":2},{"name":"a","minPlayers":1,"maxPlayers":2,"quantity":2}]}`, "teams[1].name", "twice"},
		{"team no max", `{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":1}]}`, "teams[0].maxPlayers", "required"},
		{"team max 0", `{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":0,"maxPlayers":0}]}`, "teams[0].maxPlayers", "from 1"},
		{"team min>max", `{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":3,"maxPlayers":2}]}`, "teams[0].minPlayers", "at most maxPlayers"},
		{"team string size", `{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":"one","maxPlayers":2}]}`, "teams[0].minPlayers", "must be an integer from 0 to 200"},
		{"team fraction", `{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":1.5,"maxPlayers":2}]}`, "teams[0].minPlayers", "integer"},
		{"team quantity", `{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":1,"maxPlayers":2,"quantity":0}]}`, "teams[0].quantity", "integer"},
		{"over 200", `{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":1,"maxPlayers":100},{"name":"b","minPlayers":1,"maxPlayers":101}]}`, "teams[1].maxPlayers", "more than 200"},
		{"attr no name", `{"ruleLanguageVersion":"1.0","playerAttributes":[{"type":"number"}],` + teams + `}`, "playerAttributes[0].name", "required"},
		{"attr bad type", `{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"x","type":"int"}],` + teams + `}`, "playerAttributes[0].type", "string_number_map"},
		{"attr dup", `{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"x","type":"number"},{"name":"x","type":"string"}],` + teams + `}`, "playerAttributes[1].name", "twice"},
		{"attr default", `{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"x","type":"number","default":"high"}],` + teams + `}`, "playerAttributes[0].default", "number"},
		{"attr list default", `{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"x","type":"string_list","default":"a"}],` + teams + `}`, "playerAttributes[0].default", "string_list"},
		{"attr unknown", `{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"x","type":"number","dflt":1}],` + teams + `}`, "playerAttributes[0].dflt", "unknown"},
		{"rules not array", base(`,"rules":{}`), "rules", "array"},
		{"rule no name", rules(`{"type":"distance"}`), "rules[0].name", "required"},
		{"rule dup", rules(skill, skill), "rules[1].name", "twice"},
		{"rule no type", rules(`{"name":"x"}`), "rules[0].type", "required"},
		{"rule bad type", rules(`{"name":"x","type":"range"}`), "rules[0].type", "batchDistance"},
		{"eleven measurements", rules(`{"name":"x","type":"distance","measurements":[` + strings.TrimSuffix(strings.Repeat(`"avg(teams[*].players.attributes[skill])",`, 11), ",") + `],"maxDistance":3}`), "rules[0].measurements", "at most 10 per rule"},
		{"rule unknown prop", rules(`{"name":"x","type":"distance","measurements":"flatten(teams[*].players.attributes[skill])","maxDistanse":3}`), "rules[0].maxDistanse", "unknown property"},
		{"rule other type's prop", rules(`{"name":"x","type":"batchDistance","batchAttribute":"skill","maxDistance":3,"operation":"="}`), "rules[0].operation", "unknown property"},
		{"batch no attr", rules(`{"name":"x","type":"batchDistance","maxDistance":3}`), "rules[0].batchAttribute", "required"},
		{"batch undeclared", rules(`{"name":"x","type":"batchDistance","batchAttribute":"elo","maxDistance":3}`), "rules[0].batchAttribute", "not declared"},
		{"batch list attr", rules(`{"name":"x","type":"batchDistance","batchAttribute":"roles","maxDistance":3}`), "rules[0].batchAttribute", "number or string"},
		{"batch no distance", rules(`{"name":"x","type":"batchDistance","batchAttribute":"skill"}`), "rules[0].maxDistance", "required"},
		{"batch negative", rules(`{"name":"x","type":"batchDistance","batchAttribute":"skill","maxDistance":-1}`), "rules[0].maxDistance", "at least 0"},
		{"batch agg", rules(`{"name":"x","type":"batchDistance","batchAttribute":"skill","maxDistance":1,"partyAggregation":"union"}`), "rules[0].partyAggregation", "avg, min, max"},
		{"cmp no measurements", rules(`{"name":"x","type":"comparison","operation":"="}`), "rules[0].measurements", "required"},
		{"cmp empty measurements", rules(`{"name":"x","type":"comparison","measurements":[],"operation":"="}`), "rules[0].measurements", "non-empty"},
		{"cmp bad expr", rules(`{"name":"x","type":"comparison","measurements":["avg(teams[*].players.attributes[skill]"],"operation":"="}`), "rules[0].measurements[0]", "expected )"},
		{"cmp second expr", rules(`{"name":"x","type":"comparison","measurements":["flatten(teams[*].players.attributes[skill])","teams[pink].players.attributes[skill]"],"operation":"="}`), "rules[0].measurements[1]", `no team is named "pink"`},
		{"cmp mixed", rules(`{"name":"x","type":"comparison","measurements":["flatten(teams[*].players.attributes[skill])","teams[red].players.attributes[mode]"],"operation":"="}`), "rules[0].measurements[1]", "all be numbers"},
		{"cmp no op", rules(`{"name":"x","type":"comparison","measurements":"teams[red].players.attributes[mode]"}`), "rules[0].operation", "required"},
		{"cmp bad op", rules(`{"name":"x","type":"comparison","measurements":"teams[red].players.attributes[mode]","operation":"=="}`), "rules[0].operation", "<, <=, ="},
		{"cmp string order", rules(`{"name":"x","type":"comparison","measurements":"teams[red].players.attributes[mode]","operation":"<","referenceValue":"a"}`), "rules[0].operation", "= and !="},
		{"cmp < no ref", rules(`{"name":"x","type":"comparison","measurements":"teams[red].players.attributes[skill]","operation":"<"}`), "rules[0].operation", "without a referenceValue"},
		{"cmp ref kind", rules(`{"name":"x","type":"comparison","measurements":"teams[red].players.attributes[skill]","operation":"<","referenceValue":"fast"}`), "rules[0].referenceValue", "number"},
		{"cmp ref list expr", rules(`{"name":"x","type":"comparison","measurements":"teams[red].players.attributes[skill]","operation":"<","referenceValue":"teams[red].players.attributes[skill]"}`), "rules[0].referenceValue", "one value"},
		{"dist strings", rules(`{"name":"x","type":"distance","measurements":"teams[red].players.attributes[mode]","maxDistance":1}`), "rules[0].measurements", "numbers"},
		{"dist no bounds", rules(`{"name":"x","type":"distance","measurements":"teams[red].players.attributes[skill]"}`), "rules[0].maxDistance", "maxDistance or minDistance"},
		{"dist ref string", rules(`{"name":"x","type":"distance","measurements":"teams[red].players.attributes[skill]","maxDistance":1,"referenceValue":"x"}`), "rules[0].referenceValue", "number"},
		{"dist min negative", rules(`{"name":"x","type":"distance","measurements":"teams[red].players.attributes[skill]","minDistance":-2}`), "rules[0].minDistance", "at least 0"},
		{"expr undeclared attr", rules(`{"name":"x","type":"distance","measurements":"teams[red].players.attributes[elo]","maxDistance":1}`), "rules[0].measurements", `"elo" is not declared`},
		{"expr map attr", rules(`{"name":"x","type":"distance","measurements":"teams[red].players.attributes[ranks]","maxDistance":1}`), "rules[0].measurements", "string_number_map"},
		{"expr unknown fn", rules(`{"name":"x","type":"distance","measurements":"mean(teams[red].players.attributes[skill])","maxDistance":1}`), "rules[0].measurements", `unknown function "mean"`},
		{"expr avg of strings", rules(`{"name":"x","type":"comparison","measurements":"avg(teams[red].players.attributes[mode])","operation":"="}`), "rules[0].measurements", "list of numbers"},
		{"expr flatten flat", rules(`{"name":"x","type":"distance","measurements":"flatten(teams[red].players.attributes[skill])","maxDistance":1}`), "rules[0].measurements", "list of lists"},
		{"expr trailing", rules(`{"name":"x","type":"distance","measurements":"teams[red].players.attributes[skill] x","maxDistance":1}`), "rules[0].measurements", "after the expression"},
		{"expr no players", rules(`{"name":"x","type":"distance","measurements":"teams[red].attributes[skill]","maxDistance":1}`), "rules[0].measurements", "expected .players"},
		{"coll numbers", rules(`{"name":"x","type":"collection","measurements":"teams[red].players.attributes[skill]","operation":"intersection","minCount":1}`), "rules[0].measurements[0]", "list of string lists"},
		{"coll flat list", rules(`{"name":"x","type":"collection","measurements":"flatten(teams[red].players.attributes[roles])","operation":"intersection","minCount":1}`), "rules[0].measurements[0]", "list of string lists"},
		{"coll no op", rules(`{"name":"x","type":"collection","measurements":"teams[red].players.attributes[roles]","minCount":1}`), "rules[0].operation", "required"},
		{"coll bad op", rules(`{"name":"x","type":"collection","measurements":"teams[red].players.attributes[roles]","operation":"union","minCount":1}`), "rules[0].operation", "intersection, contains"},
		{"coll contains no ref", rules(`{"name":"x","type":"collection","measurements":"teams[red].players.attributes[roles]","operation":"contains","minCount":1}`), "rules[0].referenceValue", "required"},
		{"coll contains list", rules(`{"name":"x","type":"collection","measurements":"teams[red].players.attributes[roles]","operation":"contains","referenceValue":["a"],"minCount":1}`), "rules[0].referenceValue", "a string"},
		{"coll refcount string", rules(`{"name":"x","type":"collection","measurements":"teams[red].players.attributes[roles]","operation":"reference_intersection_count","referenceValue":"a","minCount":1}`), "rules[0].referenceValue", "string list"},
		{"coll intersection ref", rules(`{"name":"x","type":"collection","measurements":"teams[red].players.attributes[roles]","operation":"intersection","referenceValue":"a","minCount":1}`), "rules[0].referenceValue", "no referenceValue"},
		{"coll no counts", rules(`{"name":"x","type":"collection","measurements":"teams[red].players.attributes[roles]","operation":"intersection"}`), "rules[0].maxCount", "minCount or maxCount"},
		{"coll agg", rules(`{"name":"x","type":"collection","measurements":"teams[red].players.attributes[roles]","operation":"intersection","minCount":1,"partyAggregation":"avg"}`), "rules[0].partyAggregation", "union, intersection"},
		{"compound no statement", rules(`{"name":"x","type":"compound"}`), "rules[0].statement", "required"},
		{"compound later rule", rules(`{"name":"x","type":"compound","statement":"or(s, t)"}`, skill), "rules[0].statement", `no earlier rule is named "s"`},
		{"compound batch", rules(batch, skill, `{"name":"x","type":"compound","statement":"and(s, b)"}`), "rules[2].statement", "batchDistance"},
		{"compound bad op", rules(skill, `{"name":"x","type":"compound","statement":"nand(s, s)"}`), "rules[1].statement", `unknown operator "nand"`},
		{"compound not arity", rules(skill, `{"name":"x","type":"compound","statement":"not(s, s)"}`), "rules[1].statement", "exactly one"},
		{"compound and arity", rules(skill, `{"name":"x","type":"compound","statement":"and(s)"}`), "rules[1].statement", "at least two"},
		{"compound unclosed", rules(skill, `{"name":"x","type":"compound","statement":"and(s, s"}`), "rules[1].statement", "expected , or )"},
		{"latency no max", rules(`{"name":"x","type":"latency"}`), "rules[0].maxLatency", "required"},
		{"latency zero", rules(`{"name":"x","type":"latency","maxLatency":0}`), "rules[0].maxLatency", "more than 0"},
		{"latency ref", rules(`{"name":"x","type":"latency","maxLatency":50,"distanceReference":"max"}`), "rules[0].distanceReference", "min, avg"},
		{"sort no attr", rules(`{"name":"x","type":"absoluteSort"}`), "rules[0].sortAttribute", "required"},
		{"sort string attr", rules(`{"name":"x","type":"absoluteSort","sortAttribute":"mode"}`), "rules[0].sortAttribute", "number or string_number_map"},
		{"sort direction", rules(`{"name":"x","type":"distanceSort","sortAttribute":"skill","sortDirection":"up"}`), "rules[0].sortDirection", "ascending, descending"},
		{"sort map no key", rules(`{"name":"x","type":"absoluteSort","sortAttribute":"ranks"}`), "rules[0].mapKey", "required"},
		{"sort key on number", rules(`{"name":"x","type":"absoluteSort","sortAttribute":"skill","mapKey":"minValue"}`), "rules[0].mapKey", "only for"},
		{"algo unknown", base(`,"algorithm":{"strategy":"exhaustiveSearch","batching":"random"}`), "algorithm.batching", "unknown property"},
		{"algo strategy", base(`,"algorithm":{"strategy":"greedy"}`), "algorithm.strategy", "exhaustiveSearch, balanced"},
		{"algo sorted balanced", base(`,"algorithm":{"strategy":"balanced","balancedAttribute":"skill","batchingPreference":"sorted","sortByAttributes":["skill"]}`), "algorithm.batchingPreference", "exhaustiveSearch"},
		{"algo sorted no attrs", base(`,"algorithm":{"batchingPreference":"sorted"}`), "algorithm.sortByAttributes", "required"},
		{"algo sort attrs not sorted", base(`,"algorithm":{"sortByAttributes":["skill"]}`), "algorithm.sortByAttributes", "only with"},
		{"algo sort undeclared", base(`,"algorithm":{"batchingPreference":"sorted","sortByAttributes":["skill","elo"]}`), "algorithm.sortByAttributes[1]", "not declared"},
		{"algo fastest exhaustive", base(`,"algorithm":{"batchingPreference":"fastestRegion"}`), "algorithm.batchingPreference", "balanced"},
		{"algo fastest no latency", base(`,"algorithm":{"strategy":"balanced","balancedAttribute":"skill","batchingPreference":"fastestRegion"}`), "algorithm.batchingPreference", "latency rule"},
		{"algo balanced no attr", base(`,"algorithm":{"strategy":"balanced"}`), "algorithm.balancedAttribute", "required"},
		{"algo balanced string", base(`,"algorithm":{"strategy":"balanced","balancedAttribute":"mode"}`), "algorithm.balancedAttribute", "number attribute"},
		{"algo balanced attr exhaustive", base(`,"algorithm":{"balancedAttribute":"skill"}`), "algorithm.balancedAttribute", "only with"},
		{"algo backfill", base(`,"algorithm":{"backfillPriority":"urgent"}`), "algorithm.backfillPriority", "normal, high, low"},
		{"algo age", base(`,"algorithm":{"expansionAgeSelection":"median"}`), "algorithm.expansionAgeSelection", "newest, oldest"},
		{"large exhaustive", large(``, batch), "algorithm.strategy", "balanced"},
		{"large distance rule", large(`,"algorithm":{"strategy":"balanced","balancedAttribute":"skill"}`, batch, skill), "rules[1].type", "only latency and batchDistance"},
		{"large latency distance", large(`,"algorithm":{"strategy":"balanced","balancedAttribute":"skill"}`, `{"name":"l","type":"latency","maxLatency":100,"maxDistance":10}`), "rules[0].maxDistance", "maxLatency only"},
		{"exp no target", exp(`{"steps":[{"waitTimeSeconds":1,"value":2}]}`), "expansions[0].target", "required"},
		{"exp bad target", exp(`{"target":"skill.maxDistance","steps":[{"waitTimeSeconds":1,"value":2}]}`), "expansions[0].target", "expected teams["},
		{"exp unknown team", exp(`{"target":"teams[red,pink].maxPlayers","steps":[{"waitTimeSeconds":1,"value":2}]}`), "expansions[0].target", `no team is named "pink"`},
		{"exp team prop", exp(`{"target":"teams[red].quantity","steps":[{"waitTimeSeconds":1,"value":2}]}`), "expansions[0].target", "minPlayers or maxPlayers"},
		{"exp unknown rule", exp(`{"target":"rules[minSkill].maxDistance","steps":[{"waitTimeSeconds":1,"value":2}]}`), "expansions[0].target", `no rule is named "minSkill"`},
		{"exp rule prop", exp(`{"target":"rules[b].minDistance","steps":[{"waitTimeSeconds":1,"value":2}]}`), "expansions[0].target", "maxDistance"},
		{"exp no reference", exp(`{"target":"rules[s].referenceValue","steps":[{"waitTimeSeconds":1,"value":2}]}`), "expansions[0].target", "no referenceValue"},
		{"exp dup", exp(`{"target":"teams[*].maxPlayers","steps":[{"waitTimeSeconds":1,"value":6}]}`, `{"target":"teams[blue].maxPlayers","steps":[{"waitTimeSeconds":2,"value":7}]}`), "expansions[1].target", "expansions[0] already"},
		{"exp no steps", exp(`{"target":"rules[s].maxDistance","steps":[]}`), "expansions[0].steps", "at least one"},
		{"exp step unknown", exp(`{"target":"rules[s].maxDistance","steps":[{"waitTimeSeconds":1,"value":2,"wait":3}]}`), "expansions[0].steps[0].wait", "unknown"},
		{"exp wait missing", exp(`{"target":"rules[s].maxDistance","steps":[{"value":2}]}`), "expansions[0].steps[0].waitTimeSeconds", "required"},
		{"exp wait zero", exp(`{"target":"rules[s].maxDistance","steps":[{"waitTimeSeconds":0,"value":2}]}`), "expansions[0].steps[0].waitTimeSeconds", "from 1"},
		{"exp wait order", exp(`{"target":"rules[s].maxDistance","steps":[{"waitTimeSeconds":5,"value":2},{"waitTimeSeconds":5,"value":3}]}`), "expansions[0].steps[1].waitTimeSeconds", "more than the previous"},
		{"exp value missing", exp(`{"target":"rules[s].maxDistance","steps":[{"waitTimeSeconds":5}]}`), "expansions[0].steps[0].value", "required"},
		{"exp value type", exp(`{"target":"rules[s].maxDistance","steps":[{"waitTimeSeconds":5,"value":"wide"}]}`), "expansions[0].steps[0].value", "number"},
		{"exp reference kind", base(`,"rules":[{"name":"c","type":"comparison","measurements":"teams[red].players.attributes[skill]","referenceValue":5,"operation":"<"}],"expansions":[{"target":"rules[c].referenceValue","steps":[{"waitTimeSeconds":5,"value":"many"}]}]`), "expansions[0].steps[0].value", "number like"},
		{"exp collection reference kind", base(`,"rules":[{"name":"c","type":"collection","measurements":"teams[*].players.attributes[roles]","referenceValue":"a","operation":"contains","minCount":1}],"expansions":[{"target":"rules[c].referenceValue","steps":[{"waitTimeSeconds":5,"value":["a"]}]}]`), "expansions[0].steps[0].value", "same kind"},
		{"exp team value", exp(`{"target":"teams[red].maxPlayers","steps":[{"waitTimeSeconds":5,"value":2.5}]}`), "expansions[0].steps[0].value", "integer"},
		{"exp min above max", exp(`{"target":"teams[red].minPlayers","steps":[{"waitTimeSeconds":5,"value":3},{"waitTimeSeconds":9,"value":6}]}`), "expansions[0].steps[1].value", "above maxPlayers"},
		{"exp over 200", base(`,"expansions":[{"target":"teams[*].maxPlayers","steps":[{"waitTimeSeconds":5,"value":101}]}]`), "expansions", "more than 200"},
		{"exp over 40", base(`,"expansions":[{"target":"teams[*].maxPlayers","steps":[{"waitTimeSeconds":5,"value":21}]}]`), "algorithm.strategy", "balanced"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.body))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse = %v, want an *Error", err)
			}
			if e.Path != c.path || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("error = %q (path %q), want path %q and a message with %q", e.Error(), e.Path, c.path, c.msg)
			}
		})
	}
}

// TestNumbersAsStrings: GameLift's own examples write some numbers as
// strings ("maxDistance": "500"); they parse as numbers.
func TestNumbersAsStrings(t *testing.T) {
	rs := mustParse(t, `{"ruleLanguageVersion":"1.0","playerAttributes":[{"name":"SkillRating","type":"number"},{"name":"mode","type":"string"}],
	  "teams":[{"name":"a","minPlayers":"1","maxPlayers":"2"}],
	  "rules":[{"name":"SimilarSkillRatings","type":"batchDistance","batchAttribute":"SkillRating","maxDistance":"500"},
	    {"name":"d","type":"distance","measurements":"teams[a].players.attributes[SkillRating]","referenceValue":"100","maxDistance":"50"},
	    {"name":"m","type":"comparison","measurements":"teams[a].players.attributes[mode]","referenceValue":"100","operation":"="}],
	  "expansions":[{"target":"rules[d].referenceValue","steps":[{"waitTimeSeconds":"5","value":"200"}]}]}`)
	if r := rs.rules[0].(*batchDistanceRule); r.maxDistance != 500 {
		t.Errorf("maxDistance = %v", r.maxDistance)
	}
	if r := rs.rules[1].(*distanceRule); r.reference.kind != operandNumber || r.reference.num != 100 || r.maxDistance.v != 50 {
		t.Errorf("distance = %+v %+v", r, r.reference)
	}
	if r := rs.rules[2].(*comparisonRule); r.reference.kind != operandString || r.reference.str != "100" {
		t.Errorf("string comparison reference = %+v", r.reference)
	}
	if r := rs.viewAt(5 * time.Second).rules[1].(*distanceRule); r.reference.kind != operandNumber || r.reference.num != 200 {
		t.Errorf("expanded reference = %+v", r.reference)
	}
	if rs.teams[0].min != 1 || rs.teams[0].max != 2 {
		t.Errorf("teams = %+v", rs.teams)
	}
}

// regions is n latencies of regions with names of size characters.
func regions(n, size int) map[string]int {
	m := map[string]int{}
	for i := range n {
		m[fmt.Sprintf("%0*d", size, i)] = 10
	}
	return m
}

func TestCheckTicket(t *testing.T) {
	rs := mustParse(t, string(exampleRuleSets(t)["5v5-latency.json"]))
	cases := []struct {
		name string
		t    Ticket
		path string
	}{
		{"ok", Ticket{Players: []Player{pl("a", "skill", num(3), "other", str("x"))}}, ""},
		{"wrong type", Ticket{Players: []Player{pl("a"), pl("b", "skill", str("high"))}}, "Players[1].PlayerAttributes[skill]"},
		{"list type", Ticket{Players: []Player{pl("a", "roles", str("tank"))}}, "Players[0].PlayerAttributes[roles]"},
		{"backfill team", Ticket{Backfill: true, Players: []Player{{ID: "a", Team: "red"}, {ID: "b"}}}, ""},
		{"backfill bad team", Ticket{Backfill: true, Players: []Player{{ID: "a", Team: "red"}, {ID: "b", Team: "green"}}}, "Players[1].Team"},
		{"100 regions", Ticket{Players: []Player{pl("a"), {ID: "b", Latencies: regions(100, 9)}}}, ""},
		{"101 regions", Ticket{Players: []Player{pl("a"), {ID: "b", Latencies: regions(101, 9)}}}, "Players[1].LatencyInMs"},
		{"long region name", Ticket{Players: []Player{{ID: "a", Latencies: regions(1, 129)}}}, "Players[0].LatencyInMs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := rs.CheckTicket(c.t)
			if c.path == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Path != c.path {
				t.Fatalf("CheckTicket = %v, want path %q", err, c.path)
			}
		})
	}
}

// TestMutations: every single-property mutation of the example rule sets
// (removed, null, or a value of another JSON type) either parses or is
// refused with an *Error that names a field.
func TestMutations(t *testing.T) {
	replacements := []any{"drop", nil, 3.5, -1.0, "x", "teams[*].players", []any{}, []any{"a"}, map[string]any{}}
	for name, body := range exampleRuleSets(t) {
		var doc any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		var paths [][]any
		var walk func(v any, at []any)
		walk = func(v any, at []any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					p := append(slices.Clone(at), k)
					paths = append(paths, p)
					walk(x, p)
				}
			case []any:
				for i, x := range v {
					p := append(slices.Clone(at), i)
					paths = append(paths, p)
					walk(x, p)
				}
			}
		}
		walk(doc, nil)
		n := 0
		for _, p := range paths {
			for _, r := range replacements {
				var d any
				_ = json.Unmarshal(body, &d)
				parent := d
				for _, k := range p[:len(p)-1] {
					switch k := k.(type) {
					case string:
						parent = parent.(map[string]any)[k]
					case int:
						parent = parent.([]any)[k]
					}
				}
				switch k := p[len(p)-1].(type) {
				case string:
					if r == "drop" {
						delete(parent.(map[string]any), k)
					} else {
						parent.(map[string]any)[k] = r
					}
				case int:
					parent.([]any)[k] = r
				}
				b, _ := json.Marshal(d)
				_, err := Parse(b)
				if err == nil {
					continue
				}
				n++
				var e *Error
				if !errors.As(err, &e) || e.Path == "" {
					t.Errorf("%s: %v set to %v: error %v names no field", name, p, r, err)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no mutation was refused", name)
		}
	}
}
