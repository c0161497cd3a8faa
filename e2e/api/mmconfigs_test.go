//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

package api_test

import (
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// mmDuelBody is a 1v1 rule set.
const mmDuelBody = `{"name":"duel","ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"number","default":10}],
 "teams":[{"name":"red","minPlayers":1,"maxPlayers":1},{"name":"blue","minPlayers":1,"maxPlayers":1}]}`

// startHoistWithRuleSets starts Hoist and creates 1v1 rule sets with these
// names through CreateMatchmakingRuleSet.
func startHoistWithRuleSets(t *testing.T, names ...string) *hoisttest.Hoist {
	t.Helper()
	h := startHoist(t)
	ctx := hoisttest.Context(t, time.Minute)
	v2 := h.V2()
	for _, n := range names {
		if _, err := v2.CreateMatchmakingRuleSet(ctx, &glv2.CreateMatchmakingRuleSetInput{Name: awsv2.String(n),
			RuleSetBody: awsv2.String(mmDuelBody)}); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func TestMatchmakingConfigurations(t *testing.T) {
	h := startHoistWithRuleSets(t, "rules-a", "rules-b")
	ctx := hoisttest.Context(t, 2*time.Minute)
	v2 := newV2(h)
	prefix := "arn:aws:gamelift:" + hoisttest.Region + ":" + hoisttest.Account + ":"

	q, err := v2.CreateGameSessionQueue(ctx, &glv2.CreateGameSessionQueueInput{Name: awsv2.String("mm-queue")})
	if err != nil {
		t.Fatal(err)
	}
	queueARN := awsv2.ToString(q.GameSessionQueue.GameSessionQueueArn)

	// STANDALONE, rule set by ARN, with tags.
	before := time.Now().Add(-time.Second)
	c, err := v2.CreateMatchmakingConfiguration(ctx, &glv2.CreateMatchmakingConfigurationInput{
		Name: awsv2.String("duel"), RuleSetName: awsv2.String(prefix + "matchmakingruleset/rules-a"),
		RequestTimeoutSeconds: awsv2.Int32(120), AcceptanceRequired: awsv2.Bool(false),
		FlexMatchMode: types.FlexMatchModeStandalone, CustomEventData: awsv2.String("duel-events"),
		Tags: []types.Tag{{Key: awsv2.String("mode"), Value: awsv2.String("duel")}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Configuration
	if awsv2.ToString(cfg.ConfigurationArn) != prefix+"matchmakingconfiguration/duel" ||
		awsv2.ToString(cfg.RuleSetName) != "rules-a" || awsv2.ToString(cfg.RuleSetArn) != prefix+"matchmakingruleset/rules-a" ||
		cfg.FlexMatchMode != types.FlexMatchModeStandalone || cfg.BackfillMode != types.BackfillModeManual ||
		cfg.CreationTime == nil || cfg.CreationTime.Before(before) || awsv2.ToString(cfg.CustomEventData) != "duel-events" {
		t.Errorf("created %+v", cfg)
	}
	tl, err := v2.ListTagsForResource(ctx, &glv2.ListTagsForResourceInput{ResourceARN: cfg.ConfigurationArn})
	if err != nil || len(tl.Tags) != 1 || awsv2.ToString(tl.Tags[0].Value) != "duel" {
		t.Errorf("tags: %+v %v", tl, err)
	}
	if _, err := v2.TagResource(ctx, &glv2.TagResourceInput{ResourceARN: cfg.ConfigurationArn,
		Tags: []types.Tag{{Key: awsv2.String("env"), Value: awsv2.String("test")}}}); err != nil {
		t.Errorf("TagResource: %v", err)
	}

	// WITH_QUEUE, with acceptance and automatic backfill.
	if _, err := v2.CreateMatchmakingConfiguration(ctx, &glv2.CreateMatchmakingConfigurationInput{
		Name: awsv2.String("squad"), RuleSetName: awsv2.String("rules-b"), RequestTimeoutSeconds: awsv2.Int32(300),
		AcceptanceRequired: awsv2.Bool(true), AcceptanceTimeoutSeconds: awsv2.Int32(30),
		FlexMatchMode: types.FlexMatchModeWithQueue, GameSessionQueueArns: []string{queueARN},
		BackfillMode: types.BackfillModeAutomatic, AdditionalPlayerCount: awsv2.Int32(2),
		NotificationTarget: awsv2.String("arn:aws:sns:us-west-2:123456789012:mm"),
		GameProperties:     []types.GameProperty{{Key: awsv2.String("map"), Value: awsv2.String("dust")}},
		GameSessionData:    awsv2.String("squad data")}); err != nil {
		t.Fatal(err)
	}

	// Describe: all, by names (and ARNs, unknown left out), by rule set.
	all, err := v2.DescribeMatchmakingConfigurations(ctx, &glv2.DescribeMatchmakingConfigurationsInput{})
	if err != nil || len(all.Configurations) != 2 || awsv2.ToString(all.Configurations[0].Name) != "duel" ||
		awsv2.ToString(all.Configurations[1].Name) != "squad" {
		t.Fatalf("describe all: %+v %v", all, err)
	}
	if sq := all.Configurations[1]; awsv2.ToInt32(sq.AcceptanceTimeoutSeconds) != 30 || len(sq.GameSessionQueueArns) != 1 ||
		sq.GameSessionQueueArns[0] != queueARN || len(sq.GameProperties) != 1 || awsv2.ToString(sq.GameSessionData) != "squad data" {
		t.Errorf("squad: %+v", sq)
	}
	byName, err := v2.DescribeMatchmakingConfigurations(ctx, &glv2.DescribeMatchmakingConfigurationsInput{
		Names: []string{prefix + "matchmakingconfiguration/squad", "nope"}})
	if err != nil || len(byName.Configurations) != 1 || awsv2.ToString(byName.Configurations[0].Name) != "squad" {
		t.Errorf("by names: %+v %v", byName, err)
	}
	byRS, err := v2.DescribeMatchmakingConfigurations(ctx, &glv2.DescribeMatchmakingConfigurationsInput{RuleSetName: awsv2.String("rules-a")})
	if err != nil || len(byRS.Configurations) != 1 || awsv2.ToString(byRS.Configurations[0].Name) != "duel" {
		t.Errorf("by rule set: %+v %v", byRS, err)
	}

	// Update: to WITH_QUEUE on the other rule set.
	u, err := v2.UpdateMatchmakingConfiguration(ctx, &glv2.UpdateMatchmakingConfigurationInput{Name: awsv2.String("duel"),
		FlexMatchMode: types.FlexMatchModeWithQueue, GameSessionQueueArns: []string{"mm-queue"}, RuleSetName: awsv2.String("rules-b"),
		Description: awsv2.String("now hosted")})
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Configuration; got.FlexMatchMode != types.FlexMatchModeWithQueue || len(got.GameSessionQueueArns) != 1 ||
		got.GameSessionQueueArns[0] != queueARN || awsv2.ToString(got.RuleSetName) != "rules-b" ||
		awsv2.ToString(got.CustomEventData) != "duel-events" || !got.CreationTime.Equal(*cfg.CreationTime) {
		t.Errorf("updated %+v", got)
	}
	byRS, err = v2.DescribeMatchmakingConfigurations(ctx, &glv2.DescribeMatchmakingConfigurationsInput{RuleSetName: awsv2.String("rules-b")})
	if err != nil || len(byRS.Configurations) != 2 {
		t.Errorf("by rule set after the update: %+v %v", byRS, err)
	}

	// Delete: the configuration and its tags go.
	if _, err := v2.DeleteMatchmakingConfiguration(ctx, &glv2.DeleteMatchmakingConfigurationInput{Name: cfg.ConfigurationArn}); err != nil {
		t.Fatal(err)
	}
	_, err = v2.DeleteMatchmakingConfiguration(ctx, &glv2.DeleteMatchmakingConfigurationInput{Name: awsv2.String("duel")})
	wantV2[*types.NotFoundException](t, "second delete", err)
	_, err = v2.ListTagsForResource(ctx, &glv2.ListTagsForResourceInput{ResourceARN: cfg.ConfigurationArn})
	wantV2[*types.NotFoundException](t, "tags of a deleted configuration", err)
	_, err = v2.UpdateMatchmakingConfiguration(ctx, &glv2.UpdateMatchmakingConfigurationInput{Name: awsv2.String("duel")})
	wantV2[*types.NotFoundException](t, "update of a deleted configuration", err)
}

func TestMatchmakingConfigurationRefusals(t *testing.T) {
	h := startHoistWithRuleSets(t, "rules")
	ctx := hoisttest.Context(t, 2*time.Minute)
	v2 := newV2(h)
	q, err := v2.CreateGameSessionQueue(ctx, &glv2.CreateGameSessionQueueInput{Name: awsv2.String("mmq")})
	if err != nil {
		t.Fatal(err)
	}
	queueARN := awsv2.ToString(q.GameSessionQueue.GameSessionQueueArn)
	valid := func() *glv2.CreateMatchmakingConfigurationInput {
		return &glv2.CreateMatchmakingConfigurationInput{Name: awsv2.String("c"), RuleSetName: awsv2.String("rules"),
			RequestTimeoutSeconds: awsv2.Int32(60), AcceptanceRequired: awsv2.Bool(false), FlexMatchMode: types.FlexMatchModeStandalone}
	}
	cases := []struct {
		name     string
		mod      func(in *glv2.CreateMatchmakingConfigurationInput)
		notFound bool
		says     string
	}{
		{"name pattern", func(in *glv2.CreateMatchmakingConfigurationInput) { in.Name = awsv2.String("no spaces") }, false, "Name"},
		{"request timeout 0", func(in *glv2.CreateMatchmakingConfigurationInput) { in.RequestTimeoutSeconds = awsv2.Int32(0) }, false, "RequestTimeoutSeconds"},
		{"request timeout 43201", func(in *glv2.CreateMatchmakingConfigurationInput) { in.RequestTimeoutSeconds = awsv2.Int32(43201) }, false, "RequestTimeoutSeconds"},
		{"acceptance timeout 601", func(in *glv2.CreateMatchmakingConfigurationInput) {
			in.AcceptanceRequired, in.AcceptanceTimeoutSeconds = awsv2.Bool(true), awsv2.Int32(601)
		}, false, "AcceptanceTimeoutSeconds"},
		{"unknown rule set", func(in *glv2.CreateMatchmakingConfigurationInput) { in.RuleSetName = awsv2.String("other") }, true, "rule set other"},
		{"STANDALONE with a queue", func(in *glv2.CreateMatchmakingConfigurationInput) { in.GameSessionQueueArns = []string{queueARN} }, false, "GameSessionQueueArns is not allowed"},
		{"STANDALONE AUTOMATIC", func(in *glv2.CreateMatchmakingConfigurationInput) { in.BackfillMode = types.BackfillModeAutomatic }, false, "BackfillMode AUTOMATIC"},
		{"WITH_QUEUE without queues", func(in *glv2.CreateMatchmakingConfigurationInput) { in.FlexMatchMode = types.FlexMatchModeWithQueue }, false, "GameSessionQueueArns is required"},
		{"WITH_QUEUE unknown queue", func(in *glv2.CreateMatchmakingConfigurationInput) {
			in.FlexMatchMode, in.GameSessionQueueArns = types.FlexMatchModeWithQueue, []string{strings.Replace(queueARN, "/mmq", "/gone", 1)}
		}, true, "gone"},
		{"WITH_QUEUE fleet ARN", func(in *glv2.CreateMatchmakingConfigurationInput) {
			in.FlexMatchMode, in.GameSessionQueueArns = types.FlexMatchModeWithQueue, []string{"arn:aws:gamelift:us-west-2:123456789012:fleet/fleet-1"}
		}, false, "GameSessionQueueArns[0]"},
		{"negative additional players", func(in *glv2.CreateMatchmakingConfigurationInput) { in.AdditionalPlayerCount = awsv2.Int32(-1) }, false, "AdditionalPlayerCount"},
		{"notification not SNS", func(in *glv2.CreateMatchmakingConfigurationInput) {
			in.NotificationTarget = awsv2.String("arn:aws:sqs:us-west-2:123456789012:q")
		}, false, "NotificationTarget"},
		{"notification without region or account", func(in *glv2.CreateMatchmakingConfigurationInput) {
			in.NotificationTarget = awsv2.String("arn:aws:sns:::mm")
		}, false, "NotificationTarget"},
		{"notification to a subscription", func(in *glv2.CreateMatchmakingConfigurationInput) {
			in.NotificationTarget = awsv2.String("arn:aws:sns:us-west-2:123456789012:mm/sub")
		}, false, "NotificationTarget"},
		{"custom event data 257", func(in *glv2.CreateMatchmakingConfigurationInput) {
			in.CustomEventData = awsv2.String(strings.Repeat("x", 257))
		}, false, "CustomEventData"},
		{"17 game properties", func(in *glv2.CreateMatchmakingConfigurationInput) {
			for i := range 17 {
				in.GameProperties = append(in.GameProperties, types.GameProperty{Key: awsv2.String("k"), Value: awsv2.String(string(rune('a' + i)))})
			}
		}, false, "GameProperties"},
		{"game session data 4097", func(in *glv2.CreateMatchmakingConfigurationInput) {
			in.GameSessionData = awsv2.String(strings.Repeat("x", 4097))
		}, false, "GameSessionData"},
	}
	for _, tc := range cases {
		in := valid()
		tc.mod(in)
		_, err := v2.CreateMatchmakingConfiguration(ctx, in)
		if tc.notFound {
			e := wantV2[*types.NotFoundException](t, tc.name, err)
			if !strings.Contains(e.ErrorMessage(), tc.says) {
				t.Errorf("%s: %q does not say %q", tc.name, e.ErrorMessage(), tc.says)
			}
			continue
		}
		e := wantV2[*types.InvalidRequestException](t, tc.name, err)
		if !strings.Contains(e.ErrorMessage(), tc.says) {
			t.Errorf("%s: %q does not say %q", tc.name, e.ErrorMessage(), tc.says)
		}
	}
	all, err := v2.DescribeMatchmakingConfigurations(ctx, &glv2.DescribeMatchmakingConfigurationsInput{})
	if err != nil || len(all.Configurations) != 0 {
		t.Fatalf("a refused configuration was stored: %+v %v", all, err)
	}

	// Updates are checked by the same rules.
	if _, err := v2.CreateMatchmakingConfiguration(ctx, valid()); err != nil {
		t.Fatal(err)
	}
	_, err = v2.CreateMatchmakingConfiguration(ctx, valid())
	wantV2[*types.InvalidRequestException](t, "a second configuration named c", err)
	_, err = v2.UpdateMatchmakingConfiguration(ctx, &glv2.UpdateMatchmakingConfigurationInput{Name: awsv2.String("c"),
		BackfillMode: types.BackfillModeAutomatic})
	wantV2[*types.InvalidRequestException](t, "update to AUTOMATIC on STANDALONE", err)
	_, err = v2.UpdateMatchmakingConfiguration(ctx, &glv2.UpdateMatchmakingConfigurationInput{Name: awsv2.String("c"),
		FlexMatchMode: types.FlexMatchModeWithQueue})
	wantV2[*types.InvalidRequestException](t, "update to WITH_QUEUE without queues", err)
	_, err = v2.UpdateMatchmakingConfiguration(ctx, &glv2.UpdateMatchmakingConfigurationInput{Name: awsv2.String("c"),
		RuleSetName: awsv2.String("missing")})
	wantV2[*types.NotFoundException](t, "update to an unknown rule set", err)
	_, err = v2.UpdateMatchmakingConfiguration(ctx, &glv2.UpdateMatchmakingConfigurationInput{Name: awsv2.String("c"),
		NotificationTarget: awsv2.String("arn:aws:sns:us-west-2:1234:mm")})
	wantV2[*types.InvalidRequestException](t, "update to a target with a short account", err)
}

// TestMatchmakingAcceptanceTimeoutDefault: AcceptanceTimeoutSeconds is
// optional (the model requires only AcceptanceRequired); a configuration
// that requires acceptance without one gets Hoist's default, 60 s, on
// creation and on update.
func TestMatchmakingAcceptanceTimeoutDefault(t *testing.T) {
	h := startHoistWithRuleSets(t, "rules")
	ctx := hoisttest.Context(t, 2*time.Minute)
	v2 := newV2(h)
	c, err := v2.CreateMatchmakingConfiguration(ctx, &glv2.CreateMatchmakingConfigurationInput{Name: awsv2.String("accept"),
		RuleSetName: awsv2.String("rules"), RequestTimeoutSeconds: awsv2.Int32(60), AcceptanceRequired: awsv2.Bool(true),
		FlexMatchMode: types.FlexMatchModeStandalone})
	if err != nil || awsv2.ToInt32(c.Configuration.AcceptanceTimeoutSeconds) != 60 {
		t.Fatalf("acceptance without a timeout: %+v, %v", c, err)
	}
	c, err = v2.CreateMatchmakingConfiguration(ctx, &glv2.CreateMatchmakingConfigurationInput{Name: awsv2.String("later"),
		RuleSetName: awsv2.String("rules"), RequestTimeoutSeconds: awsv2.Int32(60), AcceptanceRequired: awsv2.Bool(false),
		FlexMatchMode: types.FlexMatchModeStandalone})
	if err != nil || c.Configuration.AcceptanceTimeoutSeconds != nil {
		t.Fatalf("no acceptance: %+v, %v", c, err)
	}
	u, err := v2.UpdateMatchmakingConfiguration(ctx, &glv2.UpdateMatchmakingConfigurationInput{Name: awsv2.String("later"),
		AcceptanceRequired: awsv2.Bool(true)})
	if err != nil || awsv2.ToInt32(u.Configuration.AcceptanceTimeoutSeconds) != 60 {
		t.Fatalf("update to acceptance without a timeout: %+v, %v", u, err)
	}
}

func TestMatchmakingConfigurationPages(t *testing.T) {
	h := startHoistWithRuleSets(t, "rules")
	ctx := hoisttest.Context(t, 2*time.Minute)
	v2 := newV2(h)
	names := []string{"c-3", "c-1", "c-5", "c-2", "c-4"}
	for _, n := range names {
		if _, err := v2.CreateMatchmakingConfiguration(ctx, &glv2.CreateMatchmakingConfigurationInput{Name: awsv2.String(n),
			RuleSetName: awsv2.String("rules"), RequestTimeoutSeconds: awsv2.Int32(60), AcceptanceRequired: awsv2.Bool(false),
			FlexMatchMode: types.FlexMatchModeStandalone}); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range []*glv2.DescribeMatchmakingConfigurationsInput{
		{Limit: awsv2.Int32(2)},
		{Limit: awsv2.Int32(2), RuleSetName: awsv2.String("rules")},
		{Limit: awsv2.Int32(2), Names: names},
	} {
		var got []string
		p := glv2.NewDescribeMatchmakingConfigurationsPaginator(v2, in)
		pages := 0
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, c := range out.Configurations {
				got = append(got, awsv2.ToString(c.Name))
			}
		}
		if strings.Join(got, ",") != "c-1,c-2,c-3,c-4,c-5" || pages != 3 {
			t.Errorf("%+v: %d pages of %v", in, pages, got)
		}
	}
}

// TestMatchmakingConfigurationsV1 goes through aws-sdk-go v1 (AWS JSON 1.1;
// aws-sdk-go-v2 speaks CBOR).
func TestMatchmakingConfigurationsV1(t *testing.T) {
	h := startHoistWithRuleSets(t, "rules")
	ctx := hoisttest.Context(t, 2*time.Minute)
	v1 := h.V1()
	q, err := v1.CreateGameSessionQueueWithContext(ctx, &glv1.CreateGameSessionQueueInput{Name: awsv1.String("v1q")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := v1.CreateMatchmakingConfigurationWithContext(ctx, &glv1.CreateMatchmakingConfigurationInput{
		Name: awsv1.String("v1cfg"), RuleSetName: awsv1.String("rules"), RequestTimeoutSeconds: awsv1.Int64(90),
		AcceptanceRequired: awsv1.Bool(true), AcceptanceTimeoutSeconds: awsv1.Int64(20),
		GameSessionQueueArns: []*string{q.GameSessionQueue.GameSessionQueueArn},
		Tags:                 []*glv1.Tag{{Key: awsv1.String("k"), Value: awsv1.String("v")}}})
	if err != nil {
		t.Fatal(err)
	}
	if awsv1.StringValue(c.Configuration.FlexMatchMode) != "WITH_QUEUE" || awsv1.StringValue(c.Configuration.BackfillMode) != "MANUAL" ||
		awsv1.Int64Value(c.Configuration.AcceptanceTimeoutSeconds) != 20 || c.Configuration.CreationTime == nil {
		t.Errorf("created %+v", c.Configuration)
	}
	d, err := v1.DescribeMatchmakingConfigurationsWithContext(ctx, &glv1.DescribeMatchmakingConfigurationsInput{
		Names: []*string{c.Configuration.ConfigurationArn}})
	if err != nil || len(d.Configurations) != 1 || awsv1.StringValue(d.Configurations[0].RuleSetArn) == "" {
		t.Errorf("describe: %+v %v", d, err)
	}
	_, err = v1.UpdateMatchmakingConfigurationWithContext(ctx, &glv1.UpdateMatchmakingConfigurationInput{Name: awsv1.String("v1cfg"),
		FlexMatchMode: awsv1.String("STANDALONE"), BackfillMode: awsv1.String("AUTOMATIC")})
	wantV1(t, "STANDALONE with AUTOMATIC backfill", err, "InvalidRequestException")
	if _, err := v1.DeleteMatchmakingConfigurationWithContext(ctx, &glv1.DeleteMatchmakingConfigurationInput{Name: awsv1.String("v1cfg")}); err != nil {
		t.Fatal(err)
	}
	_, err = v1.DeleteMatchmakingConfigurationWithContext(ctx, &glv1.DeleteMatchmakingConfigurationInput{Name: awsv1.String("v1cfg")})
	wantV1(t, "second delete", err, "NotFoundException")
}
