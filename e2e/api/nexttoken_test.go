package api_test

import (
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/paging"
)

// TestNextTokens: every paginated operation Hoist implements refuses a
// NextToken it did not issue (InvalidRequestException, one message), and
// the tokens it issues are opaque (they do not spell the last item shown)
// and lead to the next page.
func TestNextTokens(t *testing.T) {
	m := loadModel(t)
	ops := modelOperations(m)
	impl := implementedOperations(t, ops)
	h := startHoist(t)
	ctx := hoisttest.Context(t, 3*time.Minute)
	v2 := newV2(h)

	const group, loc = "nexttoken-group", "custom-nexttoken"
	if _, err := v2.CreateGameServerGroup(ctx, &glv2.CreateGameServerGroupInput{
		GameServerGroupName: awsv2.String(group), RoleArn: awsv2.String("arn:aws:iam::123456789012:role/GameLiftGameServerGroupRole"),
		MinSize: awsv2.Int32(0), MaxSize: awsv2.Int32(2),
		LaunchTemplate:      &types.LaunchTemplateSpecification{LaunchTemplateName: awsv2.String("frog")},
		InstanceDefinitions: []types.InstanceDefinition{{InstanceType: types.GameServerGroupInstanceTypeC52xlarge}, {InstanceType: types.GameServerGroupInstanceTypeC5a2xlarge}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.CreateLocation(ctx, &glv2.CreateLocationInput{LocationName: awsv2.String(loc)}); err != nil {
		t.Fatal(err)
	}
	var fleets []string
	for _, name := range []string{"a", "b"} {
		f, err := v2.CreateFleet(ctx, &glv2.CreateFleetInput{Name: awsv2.String(name), ComputeType: types.ComputeTypeAnywhere,
			Locations: []types.LocationConfiguration{{Location: awsv2.String(loc)}}})
		if err != nil {
			t.Fatal(err)
		}
		fleets = append(fleets, *f.FleetAttributes.FleetId)
	}
	fleetID := fleets[0]

	// One request per paginated operation, each with a NextToken that no
	// operation issues.
	inputs := map[string]map[string]any{
		"DescribeFleetAttributes":           {},
		"DescribeFleetCapacity":             {},
		"DescribeFleetEvents":               {"FleetId": fleetID},
		"DescribeFleetLocationAttributes":   {"FleetId": fleetID},
		"DescribeFleetUtilization":          {},
		"DescribeGameServerInstances":       {"GameServerGroupName": group},
		"DescribeGameSessionDetails":        {"FleetId": fleetID},
		"DescribeGameSessionQueues":         {},
		"DescribeGameSessions":              {"FleetId": fleetID},
		"DescribeMatchmakingConfigurations": {},
		"DescribeMatchmakingRuleSets":       {},
		"DescribeInstances":                 {"FleetId": fleetID},
		"DescribePlayerSessions":            {"PlayerId": "player-1"},
		"DescribeScalingPolicies":           {"FleetId": fleetID},
		"ListAliases":                       {},
		"SearchGameSessions":                {"FleetId": fleetID},
		"ListBuilds":                        {},
		"ListCompute":                       {"FleetId": fleetID},
		"ListFleets":                        {},
		"ListGameServerGroups":              {},
		"ListGameServers":                   {"GameServerGroupName": group},
		"ListLocations":                     {},
	}
	for _, op := range ops {
		in := m.Shapes[m.Operations[op].Input.Shape]
		if _, paginated := in.Members["NextToken"]; !paginated {
			continue
		}
		if _, ok := impl[op]; !ok {
			continue
		}
		base, ok := inputs[op]
		if !ok {
			t.Errorf("%s is paginated and implemented but not tested here", op)
			continue
		}
		for _, bogus := range []string{"bogus-token", fleetID, loc, "AQ", "eyJpZCI6MX0"} {
			req := map[string]any{"NextToken": bogus}
			for k, v := range base {
				req[k] = v
			}
			o, err := callV2(ctx, v2, op, req)
			if err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			if o.code != "InvalidRequestException" || o.message != paging.Message {
				t.Errorf("%s with NextToken %q: %s, want InvalidRequestException %q", op, bogus, o, paging.Message)
			}
		}
	}

	// Tokens Hoist issues are opaque and continue the list.
	page1, err := v2.ListFleets(ctx, &glv2.ListFleetsInput{Limit: awsv2.Int32(1)})
	if err != nil || len(page1.FleetIds) != 1 || page1.NextToken == nil {
		t.Fatalf("ListFleets Limit 1: %+v, %v", page1, err)
	}
	if tok := *page1.NextToken; strings.Contains(tok, "fleet-") {
		t.Errorf("ListFleets' NextToken %q spells a fleet ID", tok)
	}
	page2, err := v2.ListFleets(ctx, &glv2.ListFleetsInput{Limit: awsv2.Int32(1), NextToken: page1.NextToken})
	if err != nil || len(page2.FleetIds) != 1 || page2.FleetIds[0] == page1.FleetIds[0] {
		t.Fatalf("ListFleets second page: %+v, %v", page2, err)
	}
	locs, err := v2.ListLocations(ctx, &glv2.ListLocationsInput{Limit: awsv2.Int32(1)})
	if err != nil || locs.NextToken == nil || strings.Contains(*locs.NextToken, *locs.Locations[0].LocationName) {
		t.Errorf("ListLocations Limit 1: %+v, %v", locs, err)
	}
}
