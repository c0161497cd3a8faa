package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

// TestClaimExpiresOnAdvance: a FleetIQ claim (60 s) holds while the
// manual clock stands still, and ends within a second of wall time of
// `hoist admin clock advance 60s`: DescribeGameServer shows no
// ClaimStatus, and ClaimGameServer takes the game server again. From the
// claim to its expiry seen, less than a second of wall time passes.
func TestClaimExpiresOnAdvance(t *testing.T) {
	h, c := startManual(t)
	ctx := t.Context()
	const group, server = "clock-claims", "gs-1"
	_, err := c.CreateGameServerGroup(ctx, &gl.CreateGameServerGroupInput{GameServerGroupName: aws.String(group),
		RoleArn: aws.String("arn:aws:iam::123456789012:role/gamelift"), MinSize: aws.Int32(1), MaxSize: aws.Int32(2),
		LaunchTemplate: &types.LaunchTemplateSpecification{LaunchTemplateId: aws.String("lt-0123456789abcdef0")},
		InstanceDefinitions: []types.InstanceDefinition{{InstanceType: types.GameServerGroupInstanceTypeC5Large},
			{InstanceType: types.GameServerGroupInstanceTypeC5Xlarge}}})
	if err != nil {
		t.Fatalf("CreateGameServerGroup: %v", err)
	}
	_, err = c.RegisterGameServer(ctx, &gl.RegisterGameServerInput{GameServerGroupName: aws.String(group),
		GameServerId: aws.String(server), InstanceId: aws.String("i-1234567890abcdef0")})
	if err != nil {
		t.Fatalf("RegisterGameServer: %v", err)
	}
	claim := func() error {
		_, err := c.ClaimGameServer(ctx, &gl.ClaimGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: aws.String(server)})
		return err
	}
	began := time.Now()
	if err := claim(); err != nil {
		t.Fatalf("ClaimGameServer: %v", err)
	}
	claimed := func(ctx context.Context) (types.GameServerClaimStatus, error) {
		out, err := c.DescribeGameServer(ctx, &gl.DescribeGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: aws.String(server)})
		if err != nil {
			return "", err
		}
		return out.GameServer.ClaimStatus, nil
	}
	advance(t, h, "59s")
	if st, err := claimed(ctx); err != nil || st != types.GameServerClaimStatusClaimed {
		t.Fatalf("59 s after the claim: ClaimStatus %q (%v), want CLAIMED", st, err)
	}
	if err := claim(); err == nil {
		t.Fatal("59 s after the claim, a second ClaimGameServer succeeded; want ConflictException")
	}
	start := advance(t, h, "1s")
	within(t, start, "the claim expired", func(ctx context.Context) (bool, error) {
		st, err := claimed(ctx)
		return err == nil && st == "", err
	})
	passedWithin(t, began, "the 60 s claim")
	if err := claim(); err != nil {
		t.Fatalf("ClaimGameServer after the claim expired: %v", err)
	}
}
