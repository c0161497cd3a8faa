package api_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/smithy-go"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestMatchmakingRuleSets: the rule set operations through aws-sdk-go-v2,
// with tags, paging and every refusal.
func TestMatchmakingRuleSets(t *testing.T) {
	h := startHoist(t)
	ctx := hoisttest.Context(t, 2*time.Minute)
	v2 := newV2(h)
	arn := "arn:aws:gamelift:" + hoisttest.Region + ":" + hoisttest.Account + ":matchmakingruleset/duel"

	v, err := v2.ValidateMatchmakingRuleSet(ctx, &glv2.ValidateMatchmakingRuleSetInput{RuleSetBody: awsv2.String(mmDuelBody)})
	if err != nil || !awsv2.ToBool(v.Valid) {
		t.Fatalf("validate: %+v %v", v, err)
	}
	c, err := v2.CreateMatchmakingRuleSet(ctx, &glv2.CreateMatchmakingRuleSetInput{Name: awsv2.String("duel"),
		RuleSetBody: awsv2.String(mmDuelBody), Tags: []types.Tag{{Key: awsv2.String("team"), Value: awsv2.String("mm")}}})
	if err != nil {
		t.Fatal(err)
	}
	if awsv2.ToString(c.RuleSet.RuleSetArn) != arn || awsv2.ToString(c.RuleSet.RuleSetBody) != mmDuelBody || c.RuleSet.CreationTime == nil {
		t.Fatalf("created %+v", c.RuleSet)
	}
	tags, err := v2.ListTagsForResource(ctx, &glv2.ListTagsForResourceInput{ResourceARN: awsv2.String(arn)})
	if err != nil || len(tags.Tags) != 1 {
		t.Fatalf("tags %+v %v", tags, err)
	}
	d, err := v2.DescribeMatchmakingRuleSets(ctx, &glv2.DescribeMatchmakingRuleSetsInput{Names: []string{arn}})
	if err != nil || len(d.RuleSets) != 1 || awsv2.ToString(d.RuleSets[0].RuleSetName) != "duel" {
		t.Fatalf("describe by ARN: %+v %v", d, err)
	}
	for _, n := range []string{"a", "b", "c"} {
		if _, err := v2.CreateMatchmakingRuleSet(ctx, &glv2.CreateMatchmakingRuleSetInput{Name: awsv2.String(n), RuleSetBody: awsv2.String(mmDuelBody)}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	p := glv2.NewDescribeMatchmakingRuleSetsPaginator(v2, &glv2.DescribeMatchmakingRuleSetsInput{Limit: awsv2.Int32(3)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.RuleSets {
			names = append(names, awsv2.ToString(r.RuleSetName))
		}
	}
	if strings.Join(names, ",") != "a,b,c,duel" {
		t.Fatalf("paged %v", names)
	}

	// Refusals.
	wantErr := func(what string, err error, code, has string) {
		t.Helper()
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != code || !strings.Contains(ae.ErrorMessage(), has) {
			t.Errorf("%s: got %v, want %s saying %q", what, err, code, has)
		}
	}
	_, err = v2.CreateMatchmakingRuleSet(ctx, &glv2.CreateMatchmakingRuleSetInput{Name: awsv2.String("duel"), RuleSetBody: awsv2.String(mmDuelBody)})
	wantErr("create twice", err, "InvalidRequestException", "already exists")
	_, err = v2.CreateMatchmakingRuleSet(ctx, &glv2.CreateMatchmakingRuleSetInput{Name: awsv2.String("bad name"), RuleSetBody: awsv2.String(mmDuelBody)})
	wantErr("bad name", err, "InvalidRequestException", "Name")
	_, err = v2.CreateMatchmakingRuleSet(ctx, &glv2.CreateMatchmakingRuleSetInput{Name: awsv2.String("x"), RuleSetBody: awsv2.String(`{"ruleLanguageVersion":"1.0","teams":[]}`)})
	wantErr("no teams", err, "InvalidRequestException", "RuleSetBody: teams")
	_, err = v2.CreateMatchmakingRuleSet(ctx, &glv2.CreateMatchmakingRuleSetInput{Name: awsv2.String("x"), RuleSetBody: awsv2.String(`{`)})
	wantErr("not JSON", err, "InvalidRequestException", "RuleSetBody")
	_, err = v2.ValidateMatchmakingRuleSet(ctx, &glv2.ValidateMatchmakingRuleSetInput{RuleSetBody: awsv2.String(`{"ruleLanguageVersion":"9"}`)})
	wantErr("validate", err, "InvalidRequestException", "RuleSetBody: ruleLanguageVersion")
	_, err = v2.DescribeMatchmakingRuleSets(ctx, &glv2.DescribeMatchmakingRuleSetsInput{Names: []string{"nope"}})
	wantErr("describe unknown", err, "NotFoundException", "nope")
	_, err = v2.DescribeMatchmakingRuleSets(ctx, &glv2.DescribeMatchmakingRuleSetsInput{NextToken: awsv2.String("bogus")})
	wantErr("bogus token", err, "InvalidRequestException", "NextToken")
	_, err = v2.DeleteMatchmakingRuleSet(ctx, &glv2.DeleteMatchmakingRuleSetInput{Name: awsv2.String("nope")})
	wantErr("delete unknown", err, "NotFoundException", "nope")
	_, err = v2.CreateMatchmakingConfiguration(ctx, &glv2.CreateMatchmakingConfigurationInput{Name: awsv2.String("c"),
		RuleSetName: awsv2.String("nope"), RequestTimeoutSeconds: awsv2.Int32(10), AcceptanceRequired: awsv2.Bool(false),
		FlexMatchMode: types.FlexMatchModeStandalone})
	wantErr("configuration of an unknown rule set", err, "NotFoundException", "nope")
	if _, err := v2.CreateMatchmakingConfiguration(ctx, &glv2.CreateMatchmakingConfigurationInput{Name: awsv2.String("c"),
		RuleSetName: awsv2.String(arn), RequestTimeoutSeconds: awsv2.Int32(10), AcceptanceRequired: awsv2.Bool(false),
		FlexMatchMode: types.FlexMatchModeStandalone}); err != nil {
		t.Fatal(err)
	}
	_, err = v2.DeleteMatchmakingRuleSet(ctx, &glv2.DeleteMatchmakingRuleSetInput{Name: awsv2.String("duel")})
	wantErr("delete in use", err, "InvalidRequestException", "matchmaking configuration c")
	if _, err := v2.DeleteMatchmakingConfiguration(ctx, &glv2.DeleteMatchmakingConfigurationInput{Name: awsv2.String("c")}); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.DeleteMatchmakingRuleSet(ctx, &glv2.DeleteMatchmakingRuleSetInput{Name: awsv2.String(arn)}); err != nil {
		t.Fatal(err)
	}
	_, err = v2.ListTagsForResource(ctx, &glv2.ListTagsForResourceInput{ResourceARN: awsv2.String(arn)})
	wantErr("tags of a deleted rule set", err, "NotFoundException", "")
}
