//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

package fleetiq_test

import (
	"context"
	"net/http"
	"time"

	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	credsv1 "github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// client is the FleetIQ and tagging API in aws-sdk-go-v2's terms.
// *gl.Client implements it as it is (RPC v2 CBOR); v1 implements it over
// aws-sdk-go v1 (AWS JSON 1.1), translating inputs and outputs field by
// field, so a test written once runs through both SDKs and both wire
// protocols. Errors are each SDK's own: see code().
type client interface {
	CreateGameServerGroup(context.Context, *gl.CreateGameServerGroupInput, ...func(*gl.Options)) (*gl.CreateGameServerGroupOutput, error)
	DescribeGameServerGroup(context.Context, *gl.DescribeGameServerGroupInput, ...func(*gl.Options)) (*gl.DescribeGameServerGroupOutput, error)
	ListGameServerGroups(context.Context, *gl.ListGameServerGroupsInput, ...func(*gl.Options)) (*gl.ListGameServerGroupsOutput, error)
	UpdateGameServerGroup(context.Context, *gl.UpdateGameServerGroupInput, ...func(*gl.Options)) (*gl.UpdateGameServerGroupOutput, error)
	DeleteGameServerGroup(context.Context, *gl.DeleteGameServerGroupInput, ...func(*gl.Options)) (*gl.DeleteGameServerGroupOutput, error)
	SuspendGameServerGroup(context.Context, *gl.SuspendGameServerGroupInput, ...func(*gl.Options)) (*gl.SuspendGameServerGroupOutput, error)
	ResumeGameServerGroup(context.Context, *gl.ResumeGameServerGroupInput, ...func(*gl.Options)) (*gl.ResumeGameServerGroupOutput, error)
	RegisterGameServer(context.Context, *gl.RegisterGameServerInput, ...func(*gl.Options)) (*gl.RegisterGameServerOutput, error)
	ClaimGameServer(context.Context, *gl.ClaimGameServerInput, ...func(*gl.Options)) (*gl.ClaimGameServerOutput, error)
	UpdateGameServer(context.Context, *gl.UpdateGameServerInput, ...func(*gl.Options)) (*gl.UpdateGameServerOutput, error)
	DeregisterGameServer(context.Context, *gl.DeregisterGameServerInput, ...func(*gl.Options)) (*gl.DeregisterGameServerOutput, error)
	DescribeGameServer(context.Context, *gl.DescribeGameServerInput, ...func(*gl.Options)) (*gl.DescribeGameServerOutput, error)
	ListGameServers(context.Context, *gl.ListGameServersInput, ...func(*gl.Options)) (*gl.ListGameServersOutput, error)
	DescribeGameServerInstances(context.Context, *gl.DescribeGameServerInstancesInput, ...func(*gl.Options)) (*gl.DescribeGameServerInstancesOutput, error)
	TagResource(context.Context, *gl.TagResourceInput, ...func(*gl.Options)) (*gl.TagResourceOutput, error)
	UntagResource(context.Context, *gl.UntagResourceInput, ...func(*gl.Options)) (*gl.UntagResourceOutput, error)
	ListTagsForResource(context.Context, *gl.ListTagsForResourceInput, ...func(*gl.Options)) (*gl.ListTagsForResourceOutput, error)
}

var _ client = (*gl.Client)(nil)

// newV2 returns hoisttest's aws-sdk-go-v2 client for h (retries off; it
// sends a copy of each request body, see hoisttest.V2). validate=false
// removes the SDK's client-side check of required members, so that requests
// missing them reach Hoist.
func newV2(h *hoisttest.Hoist, validate bool) *gl.Client {
	c := h.V2()
	if validate {
		return c
	}
	return gl.New(c.Options(), func(o *gl.Options) {
		o.APIOptions = append(o.APIOptions, removeValidation)
	})
}

// v1 is the client interface over aws-sdk-go v1 (AWS JSON 1.1), with the
// SDK's client-side parameter validation off so that every request reaches
// Hoist (Hoist's answers are what the tests check).
type v1 struct{ c *glv1.GameLift }

func newV1(h *hoisttest.Hoist) v1 {
	sess := session.Must(session.NewSession(&awsv1.Config{
		Region:                 awsv1.String(hoisttest.Region),
		Endpoint:               awsv1.String(h.URL),
		Credentials:            credsv1.NewStaticCredentials(hoisttest.AccessKeyID, hoisttest.SecretAccessKey, ""),
		MaxRetries:             awsv1.Int(0),
		DisableParamValidation: awsv1.Bool(true),
		HTTPClient:             &http.Client{Timeout: 60 * time.Second, Transport: httpTransport()},
	}))
	return v1{glv1.New(sess)}
}

// --- value translation ---

func i64(p *int32) *int64 {
	if p == nil {
		return nil
	}
	v := int64(*p)
	return &v
}

// enum returns a v1 enum member for a v2 one ("" is absent).
func enum[T ~string](v T) *string {
	if v == "" {
		return nil
	}
	s := string(v)
	return &s
}

// enum2 returns a v2 enum member for a v1 one.
func enum2[T ~string](p *string) T { return T(awsv1.StringValue(p)) }

func enums[T ~string](vs []T) []*string {
	if vs == nil {
		return nil
	}
	out := make([]*string, len(vs))
	for i, v := range vs {
		out[i] = enum(v)
	}
	return out
}

func enums2[T ~string](ps []*string) []T {
	if ps == nil {
		return nil
	}
	out := make([]T, len(ps))
	for i, p := range ps {
		out[i] = enum2[T](p)
	}
	return out
}

// strs returns v1's []*string for a []string (nil stays nil: absent).
func strs(vs []string) []*string {
	if vs == nil {
		return nil
	}
	return awsv1.StringSlice(vs)
}

func tagsV1(tags []types.Tag) []*glv1.Tag {
	if tags == nil {
		return nil
	}
	out := make([]*glv1.Tag, len(tags))
	for i, t := range tags {
		out[i] = &glv1.Tag{Key: t.Key, Value: t.Value}
	}
	return out
}

func instanceDefsV1(defs []types.InstanceDefinition) []*glv1.InstanceDefinition {
	if defs == nil {
		return nil
	}
	out := make([]*glv1.InstanceDefinition, len(defs))
	for i, d := range defs {
		out[i] = &glv1.InstanceDefinition{InstanceType: enum(d.InstanceType), WeightedCapacity: d.WeightedCapacity}
	}
	return out
}

func instanceDefsV2(defs []*glv1.InstanceDefinition) []types.InstanceDefinition {
	if defs == nil {
		return nil
	}
	out := make([]types.InstanceDefinition, len(defs))
	for i, d := range defs {
		out[i] = types.InstanceDefinition{InstanceType: enum2[types.GameServerGroupInstanceType](d.InstanceType), WeightedCapacity: d.WeightedCapacity}
	}
	return out
}

func groupV2(g *glv1.GameServerGroup) *types.GameServerGroup {
	if g == nil {
		return nil
	}
	return &types.GameServerGroup{
		AutoScalingGroupArn:        g.AutoScalingGroupArn,
		BalancingStrategy:          enum2[types.BalancingStrategy](g.BalancingStrategy),
		CreationTime:               g.CreationTime,
		GameServerGroupArn:         g.GameServerGroupArn,
		GameServerGroupName:        g.GameServerGroupName,
		GameServerProtectionPolicy: enum2[types.GameServerProtectionPolicy](g.GameServerProtectionPolicy),
		InstanceDefinitions:        instanceDefsV2(g.InstanceDefinitions),
		LastUpdatedTime:            g.LastUpdatedTime,
		RoleArn:                    g.RoleArn,
		Status:                     enum2[types.GameServerGroupStatus](g.Status),
		StatusReason:               g.StatusReason,
		SuspendedActions:           enums2[types.GameServerGroupAction](g.SuspendedActions),
	}
}

func serverV2(g *glv1.GameServer) *types.GameServer {
	if g == nil {
		return nil
	}
	return &types.GameServer{
		ClaimStatus:         enum2[types.GameServerClaimStatus](g.ClaimStatus),
		ConnectionInfo:      g.ConnectionInfo,
		GameServerData:      g.GameServerData,
		GameServerGroupArn:  g.GameServerGroupArn,
		GameServerGroupName: g.GameServerGroupName,
		GameServerId:        g.GameServerId,
		InstanceId:          g.InstanceId,
		LastClaimTime:       g.LastClaimTime,
		LastHealthCheckTime: g.LastHealthCheckTime,
		RegistrationTime:    g.RegistrationTime,
		UtilizationStatus:   enum2[types.GameServerUtilizationStatus](g.UtilizationStatus),
	}
}

// --- operations ---

func (c v1) CreateGameServerGroup(ctx context.Context, in *gl.CreateGameServerGroupInput, _ ...func(*gl.Options)) (*gl.CreateGameServerGroupOutput, error) {
	v := &glv1.CreateGameServerGroupInput{
		BalancingStrategy:          enum(in.BalancingStrategy),
		GameServerGroupName:        in.GameServerGroupName,
		GameServerProtectionPolicy: enum(in.GameServerProtectionPolicy),
		InstanceDefinitions:        instanceDefsV1(in.InstanceDefinitions),
		MaxSize:                    i64(in.MaxSize),
		MinSize:                    i64(in.MinSize),
		RoleArn:                    in.RoleArn,
		Tags:                       tagsV1(in.Tags),
		VpcSubnets:                 strs(in.VpcSubnets),
	}
	if lt := in.LaunchTemplate; lt != nil {
		v.LaunchTemplate = &glv1.LaunchTemplateSpecification{LaunchTemplateId: lt.LaunchTemplateId,
			LaunchTemplateName: lt.LaunchTemplateName, Version: lt.Version}
	}
	if p := in.AutoScalingPolicy; p != nil {
		v.AutoScalingPolicy = &glv1.GameServerGroupAutoScalingPolicy{EstimatedInstanceWarmup: i64(p.EstimatedInstanceWarmup)}
		if tt := p.TargetTrackingConfiguration; tt != nil {
			v.AutoScalingPolicy.TargetTrackingConfiguration = &glv1.TargetTrackingConfiguration{TargetValue: tt.TargetValue}
		}
	}
	out, err := c.c.CreateGameServerGroupWithContext(ctx, v)
	if err != nil {
		return nil, err
	}
	return &gl.CreateGameServerGroupOutput{GameServerGroup: groupV2(out.GameServerGroup)}, nil
}

func (c v1) DescribeGameServerGroup(ctx context.Context, in *gl.DescribeGameServerGroupInput, _ ...func(*gl.Options)) (*gl.DescribeGameServerGroupOutput, error) {
	out, err := c.c.DescribeGameServerGroupWithContext(ctx, &glv1.DescribeGameServerGroupInput{GameServerGroupName: in.GameServerGroupName})
	if err != nil {
		return nil, err
	}
	return &gl.DescribeGameServerGroupOutput{GameServerGroup: groupV2(out.GameServerGroup)}, nil
}

func (c v1) ListGameServerGroups(ctx context.Context, in *gl.ListGameServerGroupsInput, _ ...func(*gl.Options)) (*gl.ListGameServerGroupsOutput, error) {
	out, err := c.c.ListGameServerGroupsWithContext(ctx, &glv1.ListGameServerGroupsInput{Limit: i64(in.Limit), NextToken: in.NextToken})
	if err != nil {
		return nil, err
	}
	res := &gl.ListGameServerGroupsOutput{NextToken: out.NextToken}
	if out.GameServerGroups != nil {
		res.GameServerGroups = []types.GameServerGroup{}
	}
	for _, g := range out.GameServerGroups {
		res.GameServerGroups = append(res.GameServerGroups, *groupV2(g))
	}
	return res, nil
}

func (c v1) UpdateGameServerGroup(ctx context.Context, in *gl.UpdateGameServerGroupInput, _ ...func(*gl.Options)) (*gl.UpdateGameServerGroupOutput, error) {
	out, err := c.c.UpdateGameServerGroupWithContext(ctx, &glv1.UpdateGameServerGroupInput{
		BalancingStrategy:          enum(in.BalancingStrategy),
		GameServerGroupName:        in.GameServerGroupName,
		GameServerProtectionPolicy: enum(in.GameServerProtectionPolicy),
		InstanceDefinitions:        instanceDefsV1(in.InstanceDefinitions),
		RoleArn:                    in.RoleArn,
	})
	if err != nil {
		return nil, err
	}
	return &gl.UpdateGameServerGroupOutput{GameServerGroup: groupV2(out.GameServerGroup)}, nil
}

func (c v1) DeleteGameServerGroup(ctx context.Context, in *gl.DeleteGameServerGroupInput, _ ...func(*gl.Options)) (*gl.DeleteGameServerGroupOutput, error) {
	out, err := c.c.DeleteGameServerGroupWithContext(ctx, &glv1.DeleteGameServerGroupInput{
		GameServerGroupName: in.GameServerGroupName, DeleteOption: enum(in.DeleteOption)})
	if err != nil {
		return nil, err
	}
	return &gl.DeleteGameServerGroupOutput{GameServerGroup: groupV2(out.GameServerGroup)}, nil
}

func (c v1) SuspendGameServerGroup(ctx context.Context, in *gl.SuspendGameServerGroupInput, _ ...func(*gl.Options)) (*gl.SuspendGameServerGroupOutput, error) {
	out, err := c.c.SuspendGameServerGroupWithContext(ctx, &glv1.SuspendGameServerGroupInput{
		GameServerGroupName: in.GameServerGroupName, SuspendActions: enums(in.SuspendActions)})
	if err != nil {
		return nil, err
	}
	return &gl.SuspendGameServerGroupOutput{GameServerGroup: groupV2(out.GameServerGroup)}, nil
}

func (c v1) ResumeGameServerGroup(ctx context.Context, in *gl.ResumeGameServerGroupInput, _ ...func(*gl.Options)) (*gl.ResumeGameServerGroupOutput, error) {
	out, err := c.c.ResumeGameServerGroupWithContext(ctx, &glv1.ResumeGameServerGroupInput{
		GameServerGroupName: in.GameServerGroupName, ResumeActions: enums(in.ResumeActions)})
	if err != nil {
		return nil, err
	}
	return &gl.ResumeGameServerGroupOutput{GameServerGroup: groupV2(out.GameServerGroup)}, nil
}

func (c v1) RegisterGameServer(ctx context.Context, in *gl.RegisterGameServerInput, _ ...func(*gl.Options)) (*gl.RegisterGameServerOutput, error) {
	out, err := c.c.RegisterGameServerWithContext(ctx, &glv1.RegisterGameServerInput{
		ConnectionInfo: in.ConnectionInfo, GameServerData: in.GameServerData,
		GameServerGroupName: in.GameServerGroupName, GameServerId: in.GameServerId, InstanceId: in.InstanceId})
	if err != nil {
		return nil, err
	}
	return &gl.RegisterGameServerOutput{GameServer: serverV2(out.GameServer)}, nil
}

func (c v1) ClaimGameServer(ctx context.Context, in *gl.ClaimGameServerInput, _ ...func(*gl.Options)) (*gl.ClaimGameServerOutput, error) {
	v := &glv1.ClaimGameServerInput{GameServerData: in.GameServerData,
		GameServerGroupName: in.GameServerGroupName, GameServerId: in.GameServerId}
	if f := in.FilterOption; f != nil {
		v.FilterOption = &glv1.ClaimFilterOption{InstanceStatuses: enums(f.InstanceStatuses)}
	}
	out, err := c.c.ClaimGameServerWithContext(ctx, v)
	if err != nil {
		return nil, err
	}
	return &gl.ClaimGameServerOutput{GameServer: serverV2(out.GameServer)}, nil
}

func (c v1) UpdateGameServer(ctx context.Context, in *gl.UpdateGameServerInput, _ ...func(*gl.Options)) (*gl.UpdateGameServerOutput, error) {
	out, err := c.c.UpdateGameServerWithContext(ctx, &glv1.UpdateGameServerInput{
		GameServerData: in.GameServerData, GameServerGroupName: in.GameServerGroupName, GameServerId: in.GameServerId,
		HealthCheck: enum(in.HealthCheck), UtilizationStatus: enum(in.UtilizationStatus)})
	if err != nil {
		return nil, err
	}
	return &gl.UpdateGameServerOutput{GameServer: serverV2(out.GameServer)}, nil
}

func (c v1) DeregisterGameServer(ctx context.Context, in *gl.DeregisterGameServerInput, _ ...func(*gl.Options)) (*gl.DeregisterGameServerOutput, error) {
	_, err := c.c.DeregisterGameServerWithContext(ctx, &glv1.DeregisterGameServerInput{
		GameServerGroupName: in.GameServerGroupName, GameServerId: in.GameServerId})
	if err != nil {
		return nil, err
	}
	return &gl.DeregisterGameServerOutput{}, nil
}

func (c v1) DescribeGameServer(ctx context.Context, in *gl.DescribeGameServerInput, _ ...func(*gl.Options)) (*gl.DescribeGameServerOutput, error) {
	out, err := c.c.DescribeGameServerWithContext(ctx, &glv1.DescribeGameServerInput{
		GameServerGroupName: in.GameServerGroupName, GameServerId: in.GameServerId})
	if err != nil {
		return nil, err
	}
	return &gl.DescribeGameServerOutput{GameServer: serverV2(out.GameServer)}, nil
}

func (c v1) ListGameServers(ctx context.Context, in *gl.ListGameServersInput, _ ...func(*gl.Options)) (*gl.ListGameServersOutput, error) {
	out, err := c.c.ListGameServersWithContext(ctx, &glv1.ListGameServersInput{
		GameServerGroupName: in.GameServerGroupName, Limit: i64(in.Limit), NextToken: in.NextToken, SortOrder: enum(in.SortOrder)})
	if err != nil {
		return nil, err
	}
	res := &gl.ListGameServersOutput{NextToken: out.NextToken}
	if out.GameServers != nil {
		res.GameServers = []types.GameServer{}
	}
	for _, g := range out.GameServers {
		res.GameServers = append(res.GameServers, *serverV2(g))
	}
	return res, nil
}

func (c v1) DescribeGameServerInstances(ctx context.Context, in *gl.DescribeGameServerInstancesInput, _ ...func(*gl.Options)) (*gl.DescribeGameServerInstancesOutput, error) {
	out, err := c.c.DescribeGameServerInstancesWithContext(ctx, &glv1.DescribeGameServerInstancesInput{
		GameServerGroupName: in.GameServerGroupName, InstanceIds: strs(in.InstanceIds),
		Limit: i64(in.Limit), NextToken: in.NextToken})
	if err != nil {
		return nil, err
	}
	res := &gl.DescribeGameServerInstancesOutput{NextToken: out.NextToken}
	if out.GameServerInstances != nil {
		res.GameServerInstances = []types.GameServerInstance{}
	}
	for _, i := range out.GameServerInstances {
		res.GameServerInstances = append(res.GameServerInstances, types.GameServerInstance{
			GameServerGroupArn: i.GameServerGroupArn, GameServerGroupName: i.GameServerGroupName,
			InstanceId: i.InstanceId, InstanceStatus: enum2[types.GameServerInstanceStatus](i.InstanceStatus)})
	}
	return res, nil
}

func (c v1) TagResource(ctx context.Context, in *gl.TagResourceInput, _ ...func(*gl.Options)) (*gl.TagResourceOutput, error) {
	_, err := c.c.TagResourceWithContext(ctx, &glv1.TagResourceInput{ResourceARN: in.ResourceARN, Tags: tagsV1(in.Tags)})
	if err != nil {
		return nil, err
	}
	return &gl.TagResourceOutput{}, nil
}

func (c v1) UntagResource(ctx context.Context, in *gl.UntagResourceInput, _ ...func(*gl.Options)) (*gl.UntagResourceOutput, error) {
	_, err := c.c.UntagResourceWithContext(ctx, &glv1.UntagResourceInput{ResourceARN: in.ResourceARN, TagKeys: strs(in.TagKeys)})
	if err != nil {
		return nil, err
	}
	return &gl.UntagResourceOutput{}, nil
}

func (c v1) ListTagsForResource(ctx context.Context, in *gl.ListTagsForResourceInput, _ ...func(*gl.Options)) (*gl.ListTagsForResourceOutput, error) {
	out, err := c.c.ListTagsForResourceWithContext(ctx, &glv1.ListTagsForResourceInput{ResourceARN: in.ResourceARN})
	if err != nil {
		return nil, err
	}
	res := &gl.ListTagsForResourceOutput{}
	if out.Tags != nil {
		res.Tags = []types.Tag{}
	}
	for _, t := range out.Tags {
		res.Tags = append(res.Tags, types.Tag{Key: t.Key, Value: t.Value})
	}
	return res, nil
}

// ms truncates t to milliseconds, GameLift's timestamp precision.
func ms(t time.Time) time.Time { return t.Truncate(time.Millisecond) }
