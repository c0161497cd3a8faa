package matchmaking

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/tags"
)

var cfgT0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

type configHarness struct {
	t     testing.TB
	ctx   context.Context
	st    store.Store
	clock *clocktest.Clock
	svc   *Service
	tags  *tags.Service
	// queues are the game session queues that exist.
	queues map[string]bool
}

func newConfigHarness(t testing.TB) *configHarness {
	t.Helper()
	st, err := journal.Open(filepath.Join(t.TempDir(), "store"), journal.Options{BufferedWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newConfigHarnessOn(t, st)
}

// newConfigHarnessOn is newConfigHarness on st.
func newConfigHarnessOn(t testing.TB, st store.Store) *configHarness {
	t.Helper()
	h := &configHarness{t: t, ctx: context.Background(), st: st, clock: clocktest.New(cfgT0), tags: tags.New(st),
		queues: map[string]bool{"q1": true, "q2": true}}
	_, shared := st.(*postgres.Store) // as the server sets it
	h.svc = New(Config{Store: st, Region: "us-west-2", Account: "123456789012", Tags: h.tags, Now: h.clock.Now, Shared: shared,
		QueueExists: func(_ context.Context, _ store.Tx, name string) (bool, error) { return h.queues[name], nil }})
	h.addRuleSet("rs1")
	h.addRuleSet("rs2")
	return h
}

// addRuleSet creates a 1v1 rule set.
func (h *configHarness) addRuleSet(name string) {
	h.t.Helper()
	if _, err := h.svc.CreateMatchmakingRuleSet(h.ctx, &api.CreateMatchmakingRuleSetInput{Name: cfgStr(name), RuleSetBody: cfgStr(duelBody)}); err != nil {
		h.t.Fatal(err)
	}
}

func cfgI32(v int32) *int32   { return &v }
func cfgStr(s string) *string { return &s }
func cfgYes() *bool           { b := true; return &b }

// standalone returns a valid STANDALONE create input.
func cfgStandalone(name string) *api.CreateMatchmakingConfigurationInput {
	return &api.CreateMatchmakingConfigurationInput{Name: cfgStr(name), RequestTimeoutSeconds: cfgI32(60),
		AcceptanceRequired: new(bool), RuleSetName: cfgStr("rs1"), FlexMatchMode: api.FlexMatchModeStandalone}
}

func cfgWantInvalid(t *testing.T, what string, err error, contains string) {
	t.Helper()
	var ir *api.InvalidRequestException
	if !errors.As(err, &ir) {
		t.Fatalf("%s: got %v, want InvalidRequestException", what, err)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Errorf("%s: message %q does not say %q", what, err.Error(), contains)
	}
}

func TestCheckConfigurationRules(t *testing.T) {
	valid := func() *api.MatchmakingConfiguration {
		return &api.MatchmakingConfiguration{Name: cfgStr("cfg-1.a"), RequestTimeoutSeconds: cfgI32(60), RuleSetName: cfgStr("rs1"),
			GameSessionQueueArns: []string{"arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q1"}}
	}
	long := func(n int) *string { return cfgStr(strings.Repeat("x", n)) }
	cases := []struct {
		name   string
		mod    func(c *api.MatchmakingConfiguration)
		errHas string // "" = valid
	}{
		{"valid WITH_QUEUE by default", func(*api.MatchmakingConfiguration) {}, ""},
		{"name pattern", func(c *api.MatchmakingConfiguration) { c.Name = cfgStr("bad name") }, "Name"},
		{"name empty", func(c *api.MatchmakingConfiguration) { c.Name = cfgStr("") }, "Name"},
		{"name 128", func(c *api.MatchmakingConfiguration) { c.Name = long(128) }, ""},
		{"name 129", func(c *api.MatchmakingConfiguration) { c.Name = long(129) }, "Name"},
		{"request timeout missing", func(c *api.MatchmakingConfiguration) { c.RequestTimeoutSeconds = nil }, "RequestTimeoutSeconds is required"},
		{"request timeout 0", func(c *api.MatchmakingConfiguration) { c.RequestTimeoutSeconds = cfgI32(0) }, "RequestTimeoutSeconds 0"},
		{"request timeout 43200", func(c *api.MatchmakingConfiguration) { c.RequestTimeoutSeconds = cfgI32(43200) }, ""},
		{"request timeout 43201", func(c *api.MatchmakingConfiguration) { c.RequestTimeoutSeconds = cfgI32(43201) }, "RequestTimeoutSeconds 43201"},
		{"acceptance without timeout (the default)", func(c *api.MatchmakingConfiguration) { c.AcceptanceRequired = cfgYes() }, ""},
		{"acceptance with timeout", func(c *api.MatchmakingConfiguration) {
			c.AcceptanceRequired, c.AcceptanceTimeoutSeconds = cfgYes(), cfgI32(600)
		}, ""},
		{"acceptance timeout 0", func(c *api.MatchmakingConfiguration) { c.AcceptanceTimeoutSeconds = cfgI32(0) }, "AcceptanceTimeoutSeconds 0"},
		{"acceptance timeout 601", func(c *api.MatchmakingConfiguration) { c.AcceptanceTimeoutSeconds = cfgI32(601) }, "AcceptanceTimeoutSeconds 601"},
		{"rule set missing", func(c *api.MatchmakingConfiguration) { c.RuleSetName = nil }, "RuleSetName"},
		{"flex mode bogus", func(c *api.MatchmakingConfiguration) { c.FlexMatchMode = "BOGUS" }, "FlexMatchMode"},
		{"WITH_QUEUE without queues", func(c *api.MatchmakingConfiguration) { c.GameSessionQueueArns = nil }, "GameSessionQueueArns is required"},
		{"STANDALONE with queues", func(c *api.MatchmakingConfiguration) { c.FlexMatchMode = api.FlexMatchModeStandalone }, "not allowed with FlexMatchMode STANDALONE"},
		{"STANDALONE", func(c *api.MatchmakingConfiguration) {
			c.FlexMatchMode, c.GameSessionQueueArns = api.FlexMatchModeStandalone, nil
		}, ""},
		{"STANDALONE AUTOMATIC", func(c *api.MatchmakingConfiguration) {
			c.FlexMatchMode, c.GameSessionQueueArns, c.BackfillMode = api.FlexMatchModeStandalone, nil, api.BackfillModeAutomatic
		}, "BackfillMode AUTOMATIC"},
		{"WITH_QUEUE AUTOMATIC", func(c *api.MatchmakingConfiguration) { c.BackfillMode = api.BackfillModeAutomatic }, ""},
		{"backfill bogus", func(c *api.MatchmakingConfiguration) { c.BackfillMode = "SOMETIMES" }, "BackfillMode"},
		{"queue name", func(c *api.MatchmakingConfiguration) { c.GameSessionQueueArns = []string{"q1"} }, ""},
		{"queue ARN of a fleet", func(c *api.MatchmakingConfiguration) {
			c.GameSessionQueueArns = []string{"arn:aws:gamelift:us-west-2:123456789012:fleet/fleet-1"}
		}, "GameSessionQueueArns[0]"},
		{"negative additional players", func(c *api.MatchmakingConfiguration) { c.AdditionalPlayerCount = cfgI32(-1) }, "AdditionalPlayerCount"},
		{"additional players", func(c *api.MatchmakingConfiguration) { c.AdditionalPlayerCount = cfgI32(3) }, ""},
		{"SNS topic", func(c *api.MatchmakingConfiguration) {
			c.NotificationTarget = cfgStr("arn:aws:sns:us-west-2:123456789012:mm-events")
		}, ""},
		{"SNS FIFO topic", func(c *api.MatchmakingConfiguration) {
			c.NotificationTarget = cfgStr("arn:aws:sns:us-west-2:123456789012:mm-events.fifo")
		}, ""},
		{"notification not SNS", func(c *api.MatchmakingConfiguration) {
			c.NotificationTarget = cfgStr("arn:aws:sqs:us-west-2:123456789012:q")
		}, "NotificationTarget"},
		{"notification junk", func(c *api.MatchmakingConfiguration) { c.NotificationTarget = cfgStr("http://x") }, "NotificationTarget"},
		{"notification without account", func(c *api.MatchmakingConfiguration) {
			c.NotificationTarget = cfgStr("arn:aws:sns:us-west-2::mm-events")
		}, "NotificationTarget"},
		{"custom event data 256", func(c *api.MatchmakingConfiguration) { c.CustomEventData = long(256) }, ""},
		{"custom event data 257", func(c *api.MatchmakingConfiguration) { c.CustomEventData = long(257) }, "CustomEventData"},
		{"game properties 16", func(c *api.MatchmakingConfiguration) { c.GameProperties = make([]api.GameProperty, 16) }, ""},
		{"game properties 17", func(c *api.MatchmakingConfiguration) { c.GameProperties = make([]api.GameProperty, 17) }, "GameProperties"},
		{"game session data 4096", func(c *api.MatchmakingConfiguration) { c.GameSessionData = long(4096) }, ""},
		{"game session data 4097", func(c *api.MatchmakingConfiguration) { c.GameSessionData = long(4097) }, "GameSessionData"},
		{"game session data empty", func(c *api.MatchmakingConfiguration) { c.GameSessionData = cfgStr("") }, "GameSessionData"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.mod(c)
			err := CheckConfiguration(c)
			if tc.errHas == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			cfgWantInvalid(t, tc.name, err, tc.errHas)
		})
	}
}

func TestCheckConfigurationDefaults(t *testing.T) {
	c := &api.MatchmakingConfiguration{Name: cfgStr("c"), RequestTimeoutSeconds: cfgI32(1), RuleSetName: cfgStr("rs1"),
		GameSessionQueueArns: []string{"q1"}}
	if err := CheckConfiguration(c); err != nil {
		t.Fatal(err)
	}
	if c.FlexMatchMode != api.FlexMatchModeWithQueue || c.BackfillMode != api.BackfillModeManual ||
		api.ToInt32(c.AdditionalPlayerCount) != 0 || c.AcceptanceRequired == nil || *c.AcceptanceRequired ||
		c.AcceptanceTimeoutSeconds != nil {
		t.Errorf("defaults: %+v", c)
	}
	c.AcceptanceRequired = cfgYes()
	if err := CheckConfiguration(c); err != nil || api.ToInt32(c.AcceptanceTimeoutSeconds) != DefaultAcceptanceTimeout {
		t.Errorf("acceptance without a timeout: %v, %v", c.AcceptanceTimeoutSeconds, err)
	}
}

func TestConfigurationLifecycle(t *testing.T) {
	h := newConfigHarness(t)
	in := cfgStandalone("cfg")
	in.RuleSetName = cfgStr("arn:aws:gamelift:us-west-2:123456789012:matchmakingruleset/rs1")
	in.Tags = []api.Tag{{Key: cfgStr("team"), Value: cfgStr("red")}}
	out, err := h.svc.CreateMatchmakingConfiguration(h.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	c := out.Configuration
	if api.ToString(c.ConfigurationArn) != "arn:aws:gamelift:us-west-2:123456789012:matchmakingconfiguration/cfg" ||
		api.ToString(c.RuleSetName) != "rs1" ||
		api.ToString(c.RuleSetArn) != "arn:aws:gamelift:us-west-2:123456789012:matchmakingruleset/rs1" ||
		!c.CreationTime.Equal(cfgT0) || c.BackfillMode != api.BackfillModeManual {
		t.Errorf("created %+v", c)
	}
	if _, err := h.svc.CreateMatchmakingConfiguration(h.ctx, cfgStandalone("cfg")); err == nil {
		t.Error("a second configuration of the same name was created")
	}
	// The record is keyed by its rule set's name.
	err = h.st.View(h.ctx, func(tx store.Tx) error {
		rec, err := tx.Get(h.ctx, KindConfiguration, "cfg")
		if err == nil && rec.Key != "rs1" {
			t.Errorf("record Key %q, want rs1", rec.Key)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	lt, err := h.tags.ListTagsForResource(h.ctx, &api.ListTagsForResourceRequest{ResourceARN: c.ConfigurationArn})
	if err != nil || len(lt.Tags) != 1 {
		t.Fatalf("tags %+v %v", lt, err)
	}

	// Update to WITH_QUEUE with a queue given by name: stored as its ARN.
	u, err := h.svc.UpdateMatchmakingConfiguration(h.ctx, &api.UpdateMatchmakingConfigurationInput{Name: c.ConfigurationArn,
		FlexMatchMode: api.FlexMatchModeWithQueue, GameSessionQueueArns: []string{"q1"}, BackfillMode: api.BackfillModeAutomatic,
		RuleSetName: cfgStr("rs2")})
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Configuration.GameSessionQueueArns; len(got) != 1 || got[0] != "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q1" ||
		api.ToString(u.Configuration.RuleSetName) != "rs2" || !u.Configuration.CreationTime.Equal(cfgT0) {
		t.Errorf("updated %+v", u.Configuration)
	}
	// Back to STANDALONE: queues dropped, AUTOMATIC backfill made MANUAL.
	u, err = h.svc.UpdateMatchmakingConfiguration(h.ctx, &api.UpdateMatchmakingConfigurationInput{Name: cfgStr("cfg"),
		FlexMatchMode: api.FlexMatchModeStandalone})
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Configuration.GameSessionQueueArns) != 0 || u.Configuration.BackfillMode != api.BackfillModeManual {
		t.Errorf("STANDALONE again: %+v", u.Configuration)
	}
	_, err = h.svc.UpdateMatchmakingConfiguration(h.ctx, &api.UpdateMatchmakingConfigurationInput{Name: cfgStr("cfg"),
		BackfillMode: api.BackfillModeAutomatic})
	cfgWantInvalid(t, "AUTOMATIC on STANDALONE", err, "BackfillMode AUTOMATIC")

	d, err := h.svc.DescribeMatchmakingConfigurations(h.ctx, &api.DescribeMatchmakingConfigurationsInput{RuleSetName: cfgStr("rs2")})
	if err != nil || len(d.Configurations) != 1 {
		t.Fatalf("by rs2: %+v %v", d, err)
	}
	d, err = h.svc.DescribeMatchmakingConfigurations(h.ctx, &api.DescribeMatchmakingConfigurationsInput{RuleSetName: cfgStr("rs1")})
	if err != nil || len(d.Configurations) != 0 {
		t.Fatalf("by rs1: %+v %v", d, err)
	}

	if _, err := h.svc.DeleteMatchmakingConfiguration(h.ctx, &api.DeleteMatchmakingConfigurationInput{Name: cfgStr("cfg")}); err != nil {
		t.Fatal(err)
	}
	var nf *api.NotFoundException
	if _, err := h.svc.DeleteMatchmakingConfiguration(h.ctx, &api.DeleteMatchmakingConfigurationInput{Name: cfgStr("cfg")}); !errors.As(err, &nf) {
		t.Errorf("second delete: %v", err)
	}
	if _, err := h.tags.ListTagsForResource(h.ctx, &api.ListTagsForResourceRequest{ResourceARN: c.ConfigurationArn}); !errors.As(err, &nf) {
		t.Errorf("tags of a deleted configuration: %v", err)
	}
}

func TestConfigurationReferences(t *testing.T) {
	h := newConfigHarness(t)
	var nf *api.NotFoundException
	in := cfgStandalone("c")
	in.RuleSetName = cfgStr("nope")
	if _, err := h.svc.CreateMatchmakingConfiguration(h.ctx, in); !errors.As(err, &nf) || !strings.Contains(err.Error(), "rule set nope") {
		t.Errorf("unknown rule set: %v", err)
	}
	in = cfgStandalone("c")
	in.FlexMatchMode, in.GameSessionQueueArns = api.FlexMatchModeWithQueue, []string{"q1", "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q9"}
	if _, err := h.svc.CreateMatchmakingConfiguration(h.ctx, in); !errors.As(err, &nf) || !strings.Contains(err.Error(), "GameSessionQueueArns[1]") {
		t.Errorf("unknown queue: %v", err)
	}
	if _, err := h.svc.UpdateMatchmakingConfiguration(h.ctx, &api.UpdateMatchmakingConfigurationInput{Name: cfgStr("c")}); !errors.As(err, &nf) {
		t.Errorf("update of an unknown configuration: %v", err)
	}
}

func TestDeleteRefusedWithActiveTickets(t *testing.T) {
	h := newConfigHarness(t)
	if _, err := h.svc.CreateMatchmakingConfiguration(h.ctx, cfgStandalone("busy")); err != nil {
		t.Fatal(err)
	}
	h.svc.activeTickets = func(context.Context, store.Tx, string) (int, error) { return 2, nil }
	_, err := h.svc.DeleteMatchmakingConfiguration(h.ctx, &api.DeleteMatchmakingConfigurationInput{Name: cfgStr("busy")})
	cfgWantInvalid(t, "delete with active tickets", err, "2 active matchmaking tickets")
}

func TestDescribeConfigurationsPages(t *testing.T) {
	h := newConfigHarness(t)
	for _, n := range []string{"e", "a", "d", "b", "c"} {
		if _, err := h.svc.CreateMatchmakingConfiguration(h.ctx, cfgStandalone(n)); err != nil {
			t.Fatal(err)
		}
	}
	for _, names := range [][]string{nil, {"e", "d", "zz", "c", "b", "a", "a"}} {
		var got []string
		var token *string
		for range 10 {
			d, err := h.svc.DescribeMatchmakingConfigurations(h.ctx, &api.DescribeMatchmakingConfigurationsInput{
				Names: names, Limit: cfgI32(2), NextToken: token})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range d.Configurations {
				got = append(got, *c.Name)
			}
			if token = d.NextToken; token == nil {
				break
			}
		}
		if strings.Join(got, ",") != "a,b,c,d,e" {
			t.Errorf("names %v: pages gave %v", names, got)
		}
	}
	_, err := h.svc.DescribeMatchmakingConfigurations(h.ctx, &api.DescribeMatchmakingConfigurationsInput{NextToken: cfgStr("bogus")})
	cfgWantInvalid(t, "bogus NextToken", err, "")
}

func TestDescribeConfigurationsLimitCapped(t *testing.T) {
	h := newConfigHarness(t)
	for i := range 12 {
		if _, err := h.svc.CreateMatchmakingConfiguration(h.ctx, cfgStandalone(fmt.Sprintf("c%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []*int32{nil, cfgI32(10), cfgI32(50)} {
		d, err := h.svc.DescribeMatchmakingConfigurations(h.ctx, &api.DescribeMatchmakingConfigurationsInput{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Configurations) != MaxConfigLimit || d.NextToken == nil {
			t.Errorf("Limit %v: %d configurations, NextToken %v; want %d and a token", limit, len(d.Configurations), d.NextToken, MaxConfigLimit)
		}
	}
}
