package fleetiq

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

func TestCreateGameServerGroup(t *testing.T) {
	h := newHarness(t, nil)
	in := h.createInput(seedGroup)
	in.AutoScalingPolicy = &api.GameServerGroupAutoScalingPolicy{EstimatedInstanceWarmup: api.Int32(60),
		TargetTrackingConfiguration: &api.TargetTrackingConfiguration{TargetValue: api.Float64(66)}}
	in.VpcSubnets = []string{"subnet-0123456789abcdef0"}
	in.Tags = []api.Tag{{Key: api.String("team"), Value: api.String("frogs")}}
	out, err := h.svc.CreateGameServerGroup(h.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	g := out.GameServerGroup
	wantARN := "arn:aws:gamelift:us-west-2:123456789012:gameservergroup/" + seedGroup
	if *g.GameServerGroupArn != wantARN || *g.GameServerGroupName != seedGroup || g.Status != statusNew ||
		g.BalancingStrategy != api.BalancingStrategySpotPreferred ||
		g.GameServerProtectionPolicy != api.GameServerProtectionPolicyNoProtection ||
		*g.RoleArn != *in.RoleArn || !g.CreationTime.Equal(t0) || !g.LastUpdatedTime.Equal(t0) ||
		!reflect.DeepEqual(g.InstanceDefinitions, in.InstanceDefinitions) || g.SuspendedActions != nil {
		t.Errorf("created group = %+v", g)
	}
	if asg := *g.AutoScalingGroupArn; !strings.HasPrefix(asg, "arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:") ||
		!strings.HasSuffix(asg, ":autoScalingGroupName/"+seedGroup) {
		t.Errorf("AutoScalingGroupArn = %s", asg)
	}
	// Every input is stored, including those the API never shows.
	var stored *groupRec
	h.st.View(h.ctx, func(tx store.Tx) error {
		stored, err = loadGroup(h.ctx, tx, seedGroup)
		return err
	})
	if stored.MinSize != 1 || stored.MaxSize != 10 || *stored.LaunchTemplate.LaunchTemplateName != "frog-template" ||
		*stored.AutoScalingPolicy.TargetTrackingConfiguration.TargetValue != 66 || stored.VpcSubnets[0] != "subnet-0123456789abcdef0" {
		t.Errorf("stored group = %+v", stored)
	}
	tagsOut, err := h.tags.ListTagsForResource(h.ctx, &api.ListTagsForResourceRequest{ResourceARN: api.String(wantARN)})
	if err != nil || len(tagsOut.Tags) != 1 || *tagsOut.Tags[0].Value != "frogs" {
		t.Errorf("tags = %+v, %v", tagsOut, err)
	}

	// NEW -> ACTIVATING -> ACTIVE, one StatusStep apart.
	for _, want := range []api.GameServerGroupStatus{statusNew, statusActivating, statusActive, statusActive} {
		if got := h.groupStatus(seedGroup); got != want {
			t.Fatalf("status = %s, want %s", got, want)
		}
		h.clock.Advance(DefaultStatusStep)
	}
	d, _ := h.svc.DescribeGameServerGroup(h.ctx, &api.DescribeGameServerGroupInput{GameServerGroupName: api.String(wantARN)})
	if !d.GameServerGroup.LastUpdatedTime.Equal(t0.Add(2 * DefaultStatusStep)) {
		t.Errorf("LastUpdatedTime = %v, want when it became ACTIVE", d.GameServerGroup.LastUpdatedTime)
	}
}

func TestCreateGameServerGroupErrors(t *testing.T) {
	h := newHarness(t, nil)
	h.group("taken")
	tooManyTags := h.createInput("many-tags")
	for i := range 51 {
		tooManyTags.Tags = append(tooManyTags.Tags, api.Tag{Key: api.String(fmt.Sprint("k", i)), Value: api.String("v")})
	}
	edit := func(name string, fn func(in *api.CreateGameServerGroupInput)) *api.CreateGameServerGroupInput {
		in := h.createInput(name)
		fn(in)
		return in
	}
	tests := map[string]struct {
		in       *api.CreateGameServerGroupInput
		conflict bool
	}{
		"name taken":     {h.createInput("taken"), true},
		"min above max":  {edit("g1", func(in *api.CreateGameServerGroupInput) { in.MinSize = api.Int32(11) }), false},
		"template both":  {edit("g2", func(in *api.CreateGameServerGroupInput) { in.LaunchTemplate.LaunchTemplateId = api.String("lt-1") }), false},
		"template none":  {edit("g3", func(in *api.CreateGameServerGroupInput) { in.LaunchTemplate.LaunchTemplateName = nil }), false},
		"instance twice": {edit("g4", func(in *api.CreateGameServerGroupInput) { in.InstanceDefinitions[1].InstanceType = "c5.large" }), false},
		"slash in name":  {h.createInput("a/b"), false},
		"name is an ARN": {h.createInput("arn:aws:gamelift:us-west-2::gameservergroup/x"), false},
		"51 tags":        {tooManyTags, false},
		"reserved tag": {edit("g5", func(in *api.CreateGameServerGroupInput) {
			in.Tags = []api.Tag{{Key: api.String("aws:x"), Value: api.String("")}}
		}), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := h.svc.CreateGameServerGroup(h.ctx, tc.in)
			if tc.conflict && !isErr[*api.ConflictException](err) || !tc.conflict && !isErr[*api.InvalidRequestException](err) {
				t.Fatalf("err = %v", err)
			}
			if !tc.conflict && h.groupStatus(*tc.in.GameServerGroupName) != "" {
				t.Error("a refused group was stored")
			}
		})
	}
	if got := h.groupStatus("taken"); got != statusNew {
		t.Errorf("the existing group changed: %s", got)
	}
}

func TestListGameServerGroups(t *testing.T) {
	h := newHarness(t, nil)
	for _, name := range []string{"c", "a", "b"} {
		h.group(name)
		h.clock.Advance(time.Millisecond)
	}
	var got []string
	var token *string
	for pages := 0; ; pages++ {
		out, err := h.svc.ListGameServerGroups(h.ctx, &api.ListGameServerGroupsInput{Limit: api.Int32(2), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range out.GameServerGroups {
			got = append(got, *g.GameServerGroupName)
		}
		if token = out.NextToken; token == nil {
			break
		}
		if pages > 3 {
			t.Fatal("too many pages")
		}
	}
	if want := []string{"c", "a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("groups = %v, want creation order %v", got, want)
	}
	_, err := h.svc.ListGameServerGroups(h.ctx, &api.ListGameServerGroupsInput{NextToken: api.String("bogus")})
	if !isErr[*api.InvalidRequestException](err) {
		t.Errorf("bad NextToken: %v", err)
	}
}

func TestUpdateSuspendResume(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.clock.Advance(time.Minute)
	out, err := h.svc.UpdateGameServerGroup(h.ctx, &api.UpdateGameServerGroupInput{
		GameServerGroupName:        api.String(seedGroup),
		BalancingStrategy:          api.BalancingStrategyOnDemandOnly,
		GameServerProtectionPolicy: api.GameServerProtectionPolicyFullProtection,
		RoleArn:                    api.String("arn:aws:iam::123456789012:role/other"),
		InstanceDefinitions:        []api.InstanceDefinition{{InstanceType: "m5.large"}, {InstanceType: "m5a.large"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	g := out.GameServerGroup
	if g.BalancingStrategy != api.BalancingStrategyOnDemandOnly || g.GameServerProtectionPolicy != api.GameServerProtectionPolicyFullProtection ||
		*g.RoleArn != "arn:aws:iam::123456789012:role/other" || g.InstanceDefinitions[0].InstanceType != "m5.large" ||
		g.Status != statusActive || !g.LastUpdatedTime.Equal(t0.Add(time.Minute)) {
		t.Errorf("updated group = %+v", g)
	}
	// An update without fields changes nothing but LastUpdatedTime.
	out, err = h.svc.UpdateGameServerGroup(h.ctx, &api.UpdateGameServerGroupInput{GameServerGroupName: api.String(seedGroup)})
	if err != nil || out.GameServerGroup.BalancingStrategy != api.BalancingStrategyOnDemandOnly {
		t.Errorf("empty update: %+v %v", out, err)
	}
	_, err = h.svc.UpdateGameServerGroup(h.ctx, &api.UpdateGameServerGroupInput{GameServerGroupName: api.String(seedGroup),
		InstanceDefinitions: []api.InstanceDefinition{{InstanceType: "m5.large"}, {InstanceType: "m5.large"}}})
	if !isErr[*api.InvalidRequestException](err) {
		t.Errorf("duplicate instance types: %v", err)
	}

	action := []api.GameServerGroupAction{api.GameServerGroupActionReplaceInstanceTypes}
	for range 2 { // suspending twice lists the action once
		s, err := h.svc.SuspendGameServerGroup(h.ctx, &api.SuspendGameServerGroupInput{GameServerGroupName: api.String(seedGroup), SuspendActions: action})
		if err != nil || !reflect.DeepEqual(s.GameServerGroup.SuspendedActions, action) {
			t.Fatalf("suspend: %+v %v", s, err)
		}
	}
	d, _ := h.svc.DescribeGameServerGroup(h.ctx, &api.DescribeGameServerGroupInput{GameServerGroupName: api.String(seedGroup)})
	if !reflect.DeepEqual(d.GameServerGroup.SuspendedActions, action) {
		t.Errorf("described SuspendedActions = %v", d.GameServerGroup.SuspendedActions)
	}
	r, err := h.svc.ResumeGameServerGroup(h.ctx, &api.ResumeGameServerGroupInput{GameServerGroupName: api.String(seedGroup), ResumeActions: action})
	if err != nil || r.GameServerGroup.SuspendedActions != nil {
		t.Errorf("resume: %+v %v", r, err)
	}

	for name, call := range map[string]func(string) error{
		"update": func(n string) error {
			_, err := h.svc.UpdateGameServerGroup(h.ctx, &api.UpdateGameServerGroupInput{GameServerGroupName: api.String(n)})
			return err
		},
		"suspend": func(n string) error {
			_, err := h.svc.SuspendGameServerGroup(h.ctx, &api.SuspendGameServerGroupInput{GameServerGroupName: api.String(n), SuspendActions: action})
			return err
		},
		"resume": func(n string) error {
			_, err := h.svc.ResumeGameServerGroup(h.ctx, &api.ResumeGameServerGroupInput{GameServerGroupName: api.String(n), ResumeActions: action})
			return err
		},
		"describe": func(n string) error {
			_, err := h.svc.DescribeGameServerGroup(h.ctx, &api.DescribeGameServerGroupInput{GameServerGroupName: api.String(n)})
			return err
		},
	} {
		t.Run(name+" missing", func(t *testing.T) {
			if err := call("nope"); !isErr[*api.NotFoundException](err) || !strings.Contains(err.Error(), "nope") {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestDeleteGameServerGroup(t *testing.T) {
	tests := map[string]struct {
		option   api.GameServerGroupDeleteOption
		utilized bool
		refused  bool
	}{
		"default, nothing utilized":      {"", false, false},
		"default, one utilized":          {"", true, true},
		"safe, one utilized":             {api.GameServerGroupDeleteOptionSafeDelete, true, true},
		"retain, one utilized":           {api.GameServerGroupDeleteOptionRetain, true, true},
		"retain, nothing utilized":       {api.GameServerGroupDeleteOptionRetain, false, false},
		"force, one utilized":            {api.GameServerGroupDeleteOptionForceDelete, true, false},
		"safe, claimed but not utilized": {api.GameServerGroupDeleteOptionSafeDelete, false, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.group(seedGroup)
			h.tags.TagResource(h.ctx, &api.TagResourceRequest{ResourceARN: api.String(h.svc.groupARN(seedGroup)),
				Tags: []api.Tag{{Key: api.String("k"), Value: api.String("v")}}})
			h.register(seedGroup, seedServer, seedInstance)
			h.register(seedGroup, "gs-2", seedInstance)
			h.mustClaim(seedGroup, "gs-2")
			if tc.utilized {
				h.utilization(seedGroup, seedServer, api.GameServerUtilizationStatusUtilized)
			}
			out, err := h.svc.DeleteGameServerGroup(h.ctx, &api.DeleteGameServerGroupInput{
				GameServerGroupName: api.String(seedGroup), DeleteOption: tc.option})
			if tc.refused {
				if !isErr[*api.InvalidRequestException](err) || !strings.Contains(err.Error(), "UTILIZED") {
					t.Fatalf("err = %v, want InvalidRequestException", err)
				}
				if h.describe(seedGroup, seedServer) == nil || h.groupStatus(seedGroup) != statusNew {
					t.Fatal("a refused delete changed something")
				}
				return
			}
			if err != nil || out.GameServerGroup.Status != statusDeleteScheduled {
				t.Fatalf("delete: %+v, %v", out, err)
			}
			h.checkDeleted(seedGroup)
		})
	}
}

// checkDeleted follows a deleted group through its statuses until it is
// gone, and checks that its game servers, instances and tags went with it.
func (h *harness) checkDeleted(name string) {
	h.t.Helper()
	if h.describe(name, seedServer) != nil || len(h.keys()) != 0 || len(h.instances(name)) != 0 {
		h.t.Error("game servers or instances left after delete")
	}
	_, err := h.tags.ListTagsForResource(h.ctx, &api.ListTagsForResourceRequest{ResourceARN: api.String(h.svc.groupARN(name))})
	if !isErr[*api.NotFoundException](err) {
		h.t.Errorf("tagging a deleted group: %v", err)
	}
	for _, want := range []api.GameServerGroupStatus{statusDeleteScheduled, statusDeleting, statusDeleted} {
		if got := h.groupStatus(name); got != want {
			h.t.Fatalf("status = %s, want %s", got, want)
		}
		h.clock.Advance(DefaultStatusStep)
	}
	// Deleting again returns the group as it is.
	out, err := h.svc.DeleteGameServerGroup(h.ctx, &api.DeleteGameServerGroupInput{GameServerGroupName: api.String(name)})
	if err != nil || out.GameServerGroup.Status != statusDeleted {
		h.t.Errorf("second delete: %+v %v", out, err)
	}
	h.clock.Advance(DefaultDeletedRetention - DefaultStatusStep)
	if got := h.groupStatus(name); got != "" {
		h.t.Fatalf("status after the retention = %s, want not found", got)
	}
}

func TestDeleteThenReuse(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.group("other")
	h.register(seedGroup, seedServer, seedInstance)
	if _, err := h.svc.DeleteGameServerGroup(h.ctx, &api.DeleteGameServerGroupInput{GameServerGroupName: api.String(seedGroup)}); err != nil {
		t.Fatal(err)
	}
	// While being deleted: changes refused, the name still taken, no
	// registrations, no claims.
	_, err := h.svc.UpdateGameServerGroup(h.ctx, &api.UpdateGameServerGroupInput{GameServerGroupName: api.String(seedGroup)})
	if !isErr[*api.InvalidRequestException](err) {
		t.Errorf("update while deleting: %v", err)
	}
	if _, err := h.svc.CreateGameServerGroup(h.ctx, h.createInput(seedGroup)); !isErr[*api.ConflictException](err) {
		t.Errorf("create while deleting: %v", err)
	}
	_, err = h.svc.RegisterGameServer(h.ctx, &api.RegisterGameServerInput{GameServerGroupName: api.String(seedGroup),
		GameServerId: api.String("gs-x"), InstanceId: api.String(seedInstance)})
	if !isErr[*api.ConflictException](err) {
		t.Errorf("register while deleting: %v", err)
	}
	if _, err := h.claim(seedGroup, ""); !isErr[*api.ConflictException](err) {
		t.Errorf("claim while deleting: %v", err)
	}
	// The deleted group's game server ID is free again.
	h.register("other", seedServer, seedInstance)

	h.clock.Advance(2 * DefaultStatusStep) // DELETED
	if _, err := h.svc.UpdateGameServerGroup(h.ctx, &api.UpdateGameServerGroupInput{GameServerGroupName: api.String(seedGroup)}); !isErr[*api.NotFoundException](err) {
		t.Errorf("update when deleted: %v", err)
	}
	if _, err := h.claim(seedGroup, ""); !isErr[*api.NotFoundException](err) {
		t.Errorf("claim when deleted: %v", err)
	}
	// A DELETED group's name may be used again.
	if g := h.group(seedGroup); g.Status != statusNew {
		t.Errorf("recreated group: %+v", g)
	}
	if _, err := h.svc.DeleteGameServerGroup(h.ctx, &api.DeleteGameServerGroupInput{GameServerGroupName: api.String("nope")}); !isErr[*api.NotFoundException](err) {
		t.Errorf("delete missing: %v", err)
	}
}
