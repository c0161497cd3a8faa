package matchmaking

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/paging"
)

// duelBody is a 1v1 rule set with a skill attribute.
const duelBody = `{"name":"duel","ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"number","default":10}],
 "teams":[{"name":"red","minPlayers":1,"maxPlayers":1},{"name":"blue","minPlayers":1,"maxPlayers":1}]}`

func TestRuleSetLifecycle(t *testing.T) {
	h := newConfigHarness(t)
	out, err := h.svc.CreateMatchmakingRuleSet(h.ctx, &api.CreateMatchmakingRuleSetInput{Name: cfgStr("duel"),
		RuleSetBody: cfgStr(duelBody), Tags: []api.Tag{{Key: cfgStr("k"), Value: cfgStr("v")}}})
	if err != nil {
		t.Fatal(err)
	}
	r := out.RuleSet
	if *r.RuleSetArn != "arn:aws:gamelift:us-west-2:123456789012:matchmakingruleset/duel" || *r.RuleSetBody != duelBody || r.CreationTime == nil {
		t.Fatalf("created %+v", r)
	}
	tg, err := h.tags.ListTagsForResource(h.ctx, &api.ListTagsForResourceRequest{ResourceARN: r.RuleSetArn})
	if err != nil || len(tg.Tags) != 1 {
		t.Fatalf("tags %+v %v", tg, err)
	}
	d, err := h.svc.DescribeMatchmakingRuleSets(h.ctx, &api.DescribeMatchmakingRuleSetsInput{Names: []string{*r.RuleSetArn, "duel"}})
	if err != nil || len(d.RuleSets) != 1 || *d.RuleSets[0].RuleSetName != "duel" {
		t.Fatalf("by name: %+v %v", d, err)
	}
	_, err = h.svc.DescribeMatchmakingRuleSets(h.ctx, &api.DescribeMatchmakingRuleSetsInput{Names: []string{"nope"}})
	var nf *api.NotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("unknown name: %v", err)
	}
	// In use by a configuration: refused.
	in := cfgStandalone("c1")
	in.RuleSetName = cfgStr("duel")
	if _, err := h.svc.CreateMatchmakingConfiguration(h.ctx, in); err != nil {
		t.Fatal(err)
	}
	_, err = h.svc.DeleteMatchmakingRuleSet(h.ctx, &api.DeleteMatchmakingRuleSetInput{Name: cfgStr("duel")})
	cfgWantInvalid(t, "delete in use", err, "used by matchmaking configuration c1")
	if _, err := h.svc.DeleteMatchmakingConfiguration(h.ctx, &api.DeleteMatchmakingConfigurationInput{Name: cfgStr("c1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.DeleteMatchmakingRuleSet(h.ctx, &api.DeleteMatchmakingRuleSetInput{Name: r.RuleSetArn}); err != nil {
		t.Fatal(err)
	}
	_, err = h.svc.DeleteMatchmakingRuleSet(h.ctx, &api.DeleteMatchmakingRuleSetInput{Name: cfgStr("duel")})
	if !errors.As(err, &nf) {
		t.Fatalf("delete twice: %v", err)
	}
	if tg, err := h.tags.ListTagsForResource(h.ctx, &api.ListTagsForResourceRequest{ResourceARN: r.RuleSetArn}); err == nil {
		t.Fatalf("tags of a deleted rule set: %+v", tg)
	}
	// A configuration of a rule set that does not exist.
	in = cfgStandalone("c2")
	in.RuleSetName = cfgStr("duel")
	if _, err := h.svc.CreateMatchmakingConfiguration(h.ctx, in); !errors.As(err, &nf) {
		t.Fatalf("configuration of a deleted rule set: %v", err)
	}
}

func TestRuleSetRefusals(t *testing.T) {
	h := newConfigHarness(t)
	for _, c := range []struct {
		name, body, want string
	}{
		{"", duelBody, "Name"},
		{"bad name", duelBody, "Name"},
		{strings.Repeat("n", 129), duelBody, "Name"},
		{"x", "", "RuleSetBody is 0 characters"},
		{"x", "{", "RuleSetBody: "},
		{"x", `{"ruleLanguageVersion":"2.0","teams":[{"name":"a","minPlayers":1,"maxPlayers":1}]}`, "RuleSetBody: ruleLanguageVersion"},
		{"x", `{"ruleLanguageVersion":"1.0","teams":[]}`, "RuleSetBody: teams"},
		{"rs1", duelBody, "already exists"},
	} {
		_, err := h.svc.CreateMatchmakingRuleSet(h.ctx, &api.CreateMatchmakingRuleSetInput{Name: cfgStr(c.name), RuleSetBody: cfgStr(c.body)})
		cfgWantInvalid(t, fmt.Sprintf("create %q %q", c.name, c.body), err, c.want)
	}
	v, err := h.svc.ValidateMatchmakingRuleSet(h.ctx, &api.ValidateMatchmakingRuleSetInput{RuleSetBody: cfgStr(duelBody)})
	if err != nil || !*v.Valid {
		t.Fatalf("validate: %+v %v", v, err)
	}
	_, err = h.svc.ValidateMatchmakingRuleSet(h.ctx, &api.ValidateMatchmakingRuleSetInput{RuleSetBody: cfgStr(`{"ruleLanguageVersion":"1.0","teams":[]}`)})
	cfgWantInvalid(t, "validate", err, "RuleSetBody: teams")
	_, err = h.svc.DescribeMatchmakingRuleSets(h.ctx, &api.DescribeMatchmakingRuleSetsInput{NextToken: cfgStr("bogus")})
	cfgWantInvalid(t, "bogus token", err, paging.Message)
	_, err = h.svc.DescribeMatchmakingRuleSets(h.ctx, &api.DescribeMatchmakingRuleSetsInput{Limit: cfgI32(11)})
	cfgWantInvalid(t, "limit", err, "Limit")
	_, err = h.svc.DescribeMatchmakingRuleSets(h.ctx, &api.DescribeMatchmakingRuleSetsInput{Names: strings.Split("a,b,c,d,e,f,g,h,i,j,k", ",")})
	cfgWantInvalid(t, "names", err, "Names")
}

func TestRuleSetPages(t *testing.T) {
	h := newConfigHarness(t) // rs1, rs2
	for i := range 11 {
		h.addRuleSet(fmt.Sprintf("p%02d", i))
	}
	var names []string
	var token *string
	for {
		out, err := h.svc.DescribeMatchmakingRuleSets(h.ctx, &api.DescribeMatchmakingRuleSetsInput{Limit: cfgI32(4), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.RuleSets) > 4 {
			t.Fatalf("page of %d", len(out.RuleSets))
		}
		for _, r := range out.RuleSets {
			names = append(names, *r.RuleSetName)
		}
		if token = out.NextToken; token == nil {
			break
		}
	}
	if len(names) != 13 || names[0] != "p00" || names[12] != "rs2" {
		t.Fatalf("listed %v", names)
	}
}
