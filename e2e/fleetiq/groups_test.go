package fleetiq_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// groupARN is the ARN Hoist gives the group named name.
func groupARN(name string) string {
	return "arn:aws:gamelift:" + hoisttest.Region + ":" + hoisttest.Account + ":gameservergroup/" + name
}

// waitGroupStatus polls DescribeGameServerGroup until the group reads want
// and returns it with every status seen on the way (consecutive repeats
// dropped).
func waitGroupStatus(t *testing.T, c client, name string, want types.GameServerGroupStatus) (*types.GameServerGroup, []types.GameServerGroupStatus) {
	t.Helper()
	var seen []types.GameServerGroupStatus
	var last *types.GameServerGroup
	eventually(t, 30*time.Second, "group "+name+" "+string(want), func() (bool, string) {
		g, err := describeGroup(t, c, name)
		if err != nil {
			t.Fatalf("DescribeGameServerGroup %s: %v", name, err)
		}
		last = g
		if len(seen) == 0 || seen[len(seen)-1] != g.Status {
			seen = append(seen, g.Status)
		}
		return g.Status == want, string(g.Status)
	})
	return last, seen
}

// inOrder reports whether seen is a subsequence of order that starts with
// order[from] or later (statuses only move forward).
func inOrder(seen, order []types.GameServerGroupStatus) bool {
	i := 0
	for _, s := range seen {
		for i < len(order) && order[i] != s {
			i++
		}
		if i == len(order) {
			return false
		}
	}
	return true
}

func TestGameServerGroupLifecycle(t *testing.T) {
	t.Parallel()
	eachClientParallel(t, func(t *testing.T, c client) {
		name := uniq("lifecycle-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		in := groupInput(name)
		in.BalancingStrategy = types.BalancingStrategyOnDemandOnly
		in.GameServerProtectionPolicy = types.GameServerProtectionPolicyFullProtection
		in.VpcSubnets = []string{"subnet-0123abcd"}
		in.AutoScalingPolicy = &types.GameServerGroupAutoScalingPolicy{EstimatedInstanceWarmup: aws.Int32(60),
			TargetTrackingConfiguration: &types.TargetTrackingConfiguration{TargetValue: aws.Float64(66.5)}}
		in.Tags = []types.Tag{{Key: aws.String("team"), Value: aws.String("frogs")}, {Key: aws.String("env"), Value: aws.String("dev")}}
		before := ms(time.Now())
		out, err := c.CreateGameServerGroup(ctx(t), in)
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		g := out.GameServerGroup
		if aws.ToString(g.GameServerGroupName) != name || aws.ToString(g.GameServerGroupArn) != groupARN(name) ||
			aws.ToString(g.RoleArn) != aws.ToString(in.RoleArn) || g.Status != types.GameServerGroupStatusNew ||
			g.BalancingStrategy != types.BalancingStrategyOnDemandOnly ||
			g.GameServerProtectionPolicy != types.GameServerProtectionPolicyFullProtection || len(g.SuspendedActions) != 0 {
			t.Errorf("created %+v", g)
		}
		asg := aws.ToString(g.AutoScalingGroupArn)
		if !strings.HasPrefix(asg, "arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:") ||
			!strings.HasSuffix(asg, ":autoScalingGroupName/"+name) {
			t.Errorf("AutoScalingGroupArn %q", asg)
		}
		if !slices.EqualFunc(g.InstanceDefinitions, in.InstanceDefinitions, func(a, b types.InstanceDefinition) bool {
			return a.InstanceType == b.InstanceType && aws.ToString(a.WeightedCapacity) == aws.ToString(b.WeightedCapacity)
		}) {
			t.Errorf("InstanceDefinitions %+v", g.InstanceDefinitions)
		}
		created := aws.ToTime(g.CreationTime)
		if created.Before(before) || created.After(after) || !aws.ToTime(g.LastUpdatedTime).Equal(created) {
			t.Errorf("CreationTime %v LastUpdatedTime %v, called in [%v, %v]", created, g.LastUpdatedTime, before, after)
		}

		// NEW -> ACTIVATING -> ACTIVE, one status step each.
		g, seen := waitGroupStatus(t, c, name, types.GameServerGroupStatusActive)
		order := []types.GameServerGroupStatus{types.GameServerGroupStatusNew, types.GameServerGroupStatusActivating, types.GameServerGroupStatusActive}
		if !inOrder(seen, order) {
			t.Errorf("statuses seen %v, want in order %v", seen, order)
		}
		if got := aws.ToTime(g.LastUpdatedTime).Sub(created); got != 2*statusStep {
			t.Errorf("ACTIVE since %v after creation, want two status steps (%v)", got, 2*statusStep)
		}
		if !aws.ToTime(g.CreationTime).Equal(created) || aws.ToString(g.AutoScalingGroupArn) != asg {
			t.Errorf("described %+v", g)
		}
		// By ARN, including the documentation's ARN form (no account).
		for _, ref := range []string{groupARN(name), "arn:aws:gamelift:us-west-2::gameservergroup/" + name} {
			if g, err := describeGroup(t, c, ref); err != nil || aws.ToString(g.GameServerGroupName) != name {
				t.Errorf("DescribeGameServerGroup %s: %+v %v", ref, g, err)
			}
		}
		// Tags given at creation.
		tags, err := c.ListTagsForResource(ctx(t), &gl.ListTagsForResourceInput{ResourceARN: aws.String(groupARN(name))})
		if err != nil {
			t.Fatal(err)
		}
		if got := tagString(tags.Tags); got != "team=frogs,env=dev" {
			t.Errorf("tags %s", got)
		}

		// GameLift's defaults.
		g = createGroup(t, c, name+"-defaults")
		if g.BalancingStrategy != types.BalancingStrategySpotPreferred || g.GameServerProtectionPolicy != types.GameServerProtectionPolicyNoProtection {
			t.Errorf("defaults: %s %s", g.BalancingStrategy, g.GameServerProtectionPolicy)
		}

		// Errors.
		_, err = c.CreateGameServerGroup(ctx(t), groupInput(name))
		wantErr(t, err, "ConflictException", name)
		_, err = describeGroup(t, c, name+"-nope")
		wantErr(t, err, "NotFoundException", name+"-nope")
	})
}

func TestUpdateSuspendResume(t *testing.T) {
	eachClient(t, func(t *testing.T, c client) {
		name := uniq("update-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		created := createGroup(t, c, name)
		before := ms(time.Now())
		out, err := c.UpdateGameServerGroup(ctx(t), &gl.UpdateGameServerGroupInput{
			GameServerGroupName:        aws.String(groupARN(name)),
			RoleArn:                    aws.String("arn:aws:iam::123456789012:role/other"),
			BalancingStrategy:          types.BalancingStrategySpotOnly,
			GameServerProtectionPolicy: types.GameServerProtectionPolicyFullProtection,
			InstanceDefinitions:        []types.InstanceDefinition{{InstanceType: "m5.large"}, {InstanceType: "m5a.large"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		g := out.GameServerGroup
		if aws.ToString(g.RoleArn) != "arn:aws:iam::123456789012:role/other" || g.BalancingStrategy != types.BalancingStrategySpotOnly ||
			g.GameServerProtectionPolicy != types.GameServerProtectionPolicyFullProtection ||
			len(g.InstanceDefinitions) != 2 || g.InstanceDefinitions[0].InstanceType != "m5.large" ||
			aws.ToTime(g.LastUpdatedTime).Before(before) || !aws.ToTime(g.CreationTime).Equal(aws.ToTime(created.CreationTime)) {
			t.Errorf("updated %+v", g)
		}
		// An update without changes keeps every value.
		out, err = c.UpdateGameServerGroup(ctx(t), &gl.UpdateGameServerGroupInput{GameServerGroupName: aws.String(name)})
		if err != nil || aws.ToString(out.GameServerGroup.RoleArn) != "arn:aws:iam::123456789012:role/other" ||
			out.GameServerGroup.BalancingStrategy != types.BalancingStrategySpotOnly || len(out.GameServerGroup.InstanceDefinitions) != 2 {
			t.Errorf("empty update: %+v %v", out, err)
		}

		for range 2 { // suspending twice lists the action once
			s, err := c.SuspendGameServerGroup(ctx(t), &gl.SuspendGameServerGroupInput{GameServerGroupName: aws.String(name),
				SuspendActions: []types.GameServerGroupAction{types.GameServerGroupActionReplaceInstanceTypes}})
			if err != nil || !slices.Equal(s.GameServerGroup.SuspendedActions, []types.GameServerGroupAction{types.GameServerGroupActionReplaceInstanceTypes}) {
				t.Fatalf("suspend: %+v %v", s, err)
			}
		}
		if g, err := describeGroup(t, c, name); err != nil || len(g.SuspendedActions) != 1 {
			t.Errorf("described after suspend: %+v %v", g, err)
		}
		r, err := c.ResumeGameServerGroup(ctx(t), &gl.ResumeGameServerGroupInput{GameServerGroupName: aws.String(name),
			ResumeActions: []types.GameServerGroupAction{types.GameServerGroupActionReplaceInstanceTypes}})
		if err != nil || len(r.GameServerGroup.SuspendedActions) != 0 {
			t.Errorf("resume: %+v %v", r, err)
		}

		// Errors.
		_, err = c.UpdateGameServerGroup(ctx(t), &gl.UpdateGameServerGroupInput{GameServerGroupName: aws.String(name),
			InstanceDefinitions: []types.InstanceDefinition{{InstanceType: "m5.large"}, {InstanceType: "m5.large"}}})
		wantErr(t, err, "InvalidRequestException", "InstanceDefinitions", "m5.large")
		_, err = c.UpdateGameServerGroup(ctx(t), &gl.UpdateGameServerGroupInput{GameServerGroupName: aws.String(name + "-nope")})
		wantErr(t, err, "NotFoundException", name+"-nope")
		_, err = c.SuspendGameServerGroup(ctx(t), &gl.SuspendGameServerGroupInput{GameServerGroupName: aws.String(name + "-nope"),
			SuspendActions: []types.GameServerGroupAction{types.GameServerGroupActionReplaceInstanceTypes}})
		wantErr(t, err, "NotFoundException", name+"-nope")
		_, err = c.ResumeGameServerGroup(ctx(t), &gl.ResumeGameServerGroupInput{GameServerGroupName: aws.String(name + "-nope"),
			ResumeActions: []types.GameServerGroupAction{types.GameServerGroupActionReplaceInstanceTypes}})
		wantErr(t, err, "NotFoundException", name+"-nope")
	})
}

func TestListGameServerGroupsPages(t *testing.T) {
	eachClient(t, func(t *testing.T, c client) {
		base := uniq("list-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		var mine []string
		for i := range 5 {
			name := base + "-" + string(rune('a'+i))
			createGroup(t, c, name)
			mine = append(mine, name)
		}
		var listed []string
		in := &gl.ListGameServerGroupsInput{Limit: aws.Int32(2)}
		pages := 0
		for {
			out, err := c.ListGameServerGroups(ctx(t), in)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(out.GameServerGroups) > 2 {
				t.Fatalf("page of %d groups with Limit 2", len(out.GameServerGroups))
			}
			for _, g := range out.GameServerGroups {
				if strings.HasPrefix(aws.ToString(g.GameServerGroupName), base+"-") {
					listed = append(listed, aws.ToString(g.GameServerGroupName))
					if aws.ToString(g.GameServerGroupArn) != groupARN(aws.ToString(g.GameServerGroupName)) || g.Status == "" {
						t.Errorf("listed %+v", g)
					}
				}
			}
			if out.NextToken == nil {
				break
			}
			in.NextToken = out.NextToken
		}
		if !slices.Equal(listed, mine) {
			t.Errorf("listed %v over %d pages, want %v in creation order", listed, pages, mine)
		}
		// Without a Limit: pages of up to 100 (Hoist's default).
		out, err := c.ListGameServerGroups(ctx(t), &gl.ListGameServerGroupsInput{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(out.GameServerGroups); n > 100 || n < 100 && out.NextToken != nil || n < len(mine) {
			t.Errorf("list without Limit: %d groups, NextToken %v", n, out.NextToken)
		}
		_, err = c.ListGameServerGroups(ctx(t), &gl.ListGameServerGroupsInput{NextToken: aws.String("not-a-token")})
		wantErr(t, err, "InvalidRequestException", "NextToken")
	})
}

func TestDeleteGameServerGroup(t *testing.T) {
	t.Parallel()
	eachClientParallel(t, func(t *testing.T, c client) {
		base := uniq("delete-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		// A group with a UTILIZED game server: SAFE_DELETE (the default)
		// and RETAIN refuse; FORCE_DELETE deletes.
		busy := base + "-busy"
		createGroup(t, c, busy)
		register(t, c, busy, busy+"-gs1", instanceN(1))
		register(t, c, busy, busy+"-gs2", instanceN(1))
		setUtilization(t, c, busy, busy+"-gs1", types.GameServerUtilizationStatusUtilized)
		for _, opt := range []types.GameServerGroupDeleteOption{"", types.GameServerGroupDeleteOptionSafeDelete, types.GameServerGroupDeleteOptionRetain} {
			_, err := c.DeleteGameServerGroup(ctx(t), &gl.DeleteGameServerGroupInput{GameServerGroupName: aws.String(busy), DeleteOption: opt})
			wantErr(t, err, "InvalidRequestException", busy, "UTILIZED")
		}
		before := ms(time.Now())
		out, err := c.DeleteGameServerGroup(ctx(t), &gl.DeleteGameServerGroupInput{GameServerGroupName: aws.String(busy),
			DeleteOption: types.GameServerGroupDeleteOptionForceDelete})
		if err != nil || out.GameServerGroup.Status != types.GameServerGroupStatusDeleteScheduled {
			t.Fatalf("FORCE_DELETE: %+v %v", out, err)
		}
		deletedAt := aws.ToTime(out.GameServerGroup.LastUpdatedTime)
		if deletedAt.Before(before) {
			t.Errorf("LastUpdatedTime %v before the delete call (%v)", deletedAt, before)
		}
		// Its game servers are gone at once; their IDs are free again.
		_, err = describe(t, c, busy, busy+"-gs1")
		wantErr(t, err, "NotFoundException", busy+"-gs1")
		// While it is being deleted: changes refused, claims and
		// registrations conflict, the name is taken, deleting again
		// answers the group as it is.
		_, err = c.UpdateGameServerGroup(ctx(t), &gl.UpdateGameServerGroupInput{GameServerGroupName: aws.String(busy)})
		wantErr(t, err, "InvalidRequestException", busy, "being deleted")
		_, err = claim(t, c, busy, "")
		wantErr(t, err, "ConflictException", busy, "being deleted")
		_, err = c.RegisterGameServer(ctx(t), &gl.RegisterGameServerInput{GameServerGroupName: aws.String(busy),
			GameServerId: aws.String(busy + "-gs3"), InstanceId: aws.String(instanceN(1))})
		wantErr(t, err, "ConflictException", busy, "being deleted")
		_, err = c.CreateGameServerGroup(ctx(t), groupInput(busy))
		wantErr(t, err, "ConflictException", busy)
		again, err := c.DeleteGameServerGroup(ctx(t), &gl.DeleteGameServerGroupInput{GameServerGroupName: aws.String(busy)})
		if err != nil || !slices.Contains([]types.GameServerGroupStatus{types.GameServerGroupStatusDeleteScheduled,
			types.GameServerGroupStatusDeleting}, again.GameServerGroup.Status) {
			t.Errorf("deleting again: %+v %v", again, err)
		}
		_, err = c.ListTagsForResource(ctx(t), &gl.ListTagsForResourceInput{ResourceARN: aws.String(groupARN(busy))})
		wantErr(t, err, "NotFoundException", groupARN(busy))

		// DELETE_SCHEDULED -> DELETING -> DELETED, one status step each;
		// a DELETED group is still listed and described.
		g, seen := waitGroupStatus(t, c, busy, types.GameServerGroupStatusDeleted)
		order := []types.GameServerGroupStatus{types.GameServerGroupStatusDeleteScheduled, types.GameServerGroupStatusDeleting, types.GameServerGroupStatusDeleted}
		if !inOrder(seen, order) {
			t.Errorf("statuses seen %v, want in order %v", seen, order)
		}
		if got := aws.ToTime(g.LastUpdatedTime).Sub(deletedAt); got != 2*statusStep {
			t.Errorf("DELETED %v after the delete, want two status steps", got)
		}
		_, err = c.UpdateGameServerGroup(ctx(t), &gl.UpdateGameServerGroupInput{GameServerGroupName: aws.String(busy)})
		wantErr(t, err, "NotFoundException", busy)
		_, err = claim(t, c, busy, "")
		wantErr(t, err, "NotFoundException", busy)
		_, err = c.RegisterGameServer(ctx(t), &gl.RegisterGameServerInput{GameServerGroupName: aws.String(busy),
			GameServerId: aws.String(busy + "-gs3"), InstanceId: aws.String(instanceN(1))})
		wantErr(t, err, "ConflictException", busy, "DELETED")
		if !listsGroup(t, c, busy, types.GameServerGroupStatusDeleted) {
			t.Errorf("DELETED group %s not listed", busy)
		}
		// Once DELETED, the name may be used again, and the game server
		// IDs of the deleted group too.
		if g := createGroup(t, c, busy); g.Status != types.GameServerGroupStatusNew {
			t.Errorf("re-created: %+v", g)
		}
		register(t, c, busy, busy+"-gs1", instanceN(1))

		// SAFE_DELETE of a group whose game servers are AVAILABLE or
		// CLAIMED deletes it.
		idle := base + "-idle"
		createGroup(t, c, idle)
		register(t, c, idle, idle+"-gs1", instanceN(1))
		register(t, c, idle, idle+"-gs2", instanceN(2))
		mustClaim(t, c, idle, idle+"-gs1")
		out, err = c.DeleteGameServerGroup(ctx(t), &gl.DeleteGameServerGroupInput{GameServerGroupName: aws.String(groupARN(idle))})
		if err != nil || out.GameServerGroup.Status != types.GameServerGroupStatusDeleteScheduled {
			t.Fatalf("SAFE_DELETE: %+v %v", out, err)
		}
		// RETAIN of a group without UTILIZED game servers deletes it too.
		retain := base + "-retain"
		createGroup(t, c, retain)
		out, err = c.DeleteGameServerGroup(ctx(t), &gl.DeleteGameServerGroupInput{GameServerGroupName: aws.String(retain),
			DeleteOption: types.GameServerGroupDeleteOptionRetain})
		if err != nil || out.GameServerGroup.Status != types.GameServerGroupStatusDeleteScheduled {
			t.Fatalf("RETAIN: %+v %v", out, err)
		}

		_, err = c.DeleteGameServerGroup(ctx(t), &gl.DeleteGameServerGroupInput{GameServerGroupName: aws.String(base + "-nope")})
		wantErr(t, err, "NotFoundException", base+"-nope")
	})
}

// listsGroup reports whether ListGameServerGroups lists name with status.
func listsGroup(t *testing.T, c client, name string, status types.GameServerGroupStatus) bool {
	t.Helper()
	in := &gl.ListGameServerGroupsInput{}
	for {
		out, err := c.ListGameServerGroups(ctx(t), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range out.GameServerGroups {
			if aws.ToString(g.GameServerGroupName) == name {
				return g.Status == status
			}
		}
		if out.NextToken == nil {
			return false
		}
		in.NextToken = out.NextToken
	}
}

// tagString renders tags as "k=v,k2=v2" in their order.
func tagString(tags []types.Tag) string {
	var parts []string
	for _, t := range tags {
		parts = append(parts, aws.ToString(t.Key)+"="+aws.ToString(t.Value))
	}
	return strings.Join(parts, ",")
}
