//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/aws-sdk-go/aws/awserr"
	"github.com/aws/aws-sdk-go/aws/request"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/apigen"
)

// overrides replace generated inputs where generation cannot work. Keyed by
// operation; the value is merged over the generated input. Empty today:
// every operation's minimal input comes from the model.
var overrides = map[string]map[string]any{}

// outcome is what one call through an SDK answered.
type outcome struct {
	err       error // nil: success
	code      string
	message   string
	status    int
	requestID string // as the SDK reports it ("" where it does not)
}

func (o outcome) String() string {
	if o.err == nil {
		return "success"
	}
	return fmt.Sprintf("HTTP %d %s: %s", o.status, o.code, o.message)
}

// v2Outcome reads an aws-sdk-go-v2 error.
func v2Outcome(err error) outcome {
	o := outcome{err: err}
	if err == nil {
		return o
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		o.code, o.message = ae.ErrorCode(), ae.ErrorMessage()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		o.status, o.requestID = re.HTTPStatusCode(), re.ServiceRequestID()
	}
	return o
}

// v1Outcome reads an aws-sdk-go v1 error.
func v1Outcome(err error) outcome {
	o := outcome{err: err}
	if err == nil {
		return o
	}
	var ae awserr.Error
	if errors.As(err, &ae) {
		o.code, o.message = ae.Code(), ae.Message()
	}
	var rf awserr.RequestFailure
	if errors.As(err, &rf) {
		o.status, o.requestID = rf.StatusCode(), rf.RequestID()
	}
	return o
}

// decodeInto fills an SDK input struct from a generated input; unknown
// members are an error, so a member the SDK names differently shows.
func decodeInto(in map[string]any, dst any) error {
	b, err := json.Marshal(toJSON(in))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(dst)
}

// callV2 calls op through aws-sdk-go-v2 by reflection:
// func (c *Client) Op(ctx, *OpInput, ...func(*Options)) (*OpOutput, error).
func callV2(ctx context.Context, c *glv2.Client, op string, in map[string]any) (outcome, error) {
	m := reflect.ValueOf(c).MethodByName(op)
	if !m.IsValid() {
		return outcome{}, fmt.Errorf("aws-sdk-go-v2 has no method %s", op)
	}
	mt := m.Type()
	if mt.NumIn() != 3 || mt.NumOut() != 2 || mt.In(1).Kind() != reflect.Pointer {
		return outcome{}, fmt.Errorf("aws-sdk-go-v2 %s has signature %s", op, mt)
	}
	arg := reflect.New(mt.In(1).Elem())
	if err := decodeInto(in, arg.Interface()); err != nil {
		return outcome{}, fmt.Errorf("filling %s: %w", mt.In(1), err)
	}
	res := m.Call([]reflect.Value{reflect.ValueOf(ctx), arg})
	err, _ := res[1].Interface().(error)
	if err == nil && res[0].IsNil() {
		return outcome{}, fmt.Errorf("aws-sdk-go-v2 %s returned neither output nor error", op)
	}
	o := v2Outcome(err)
	if err == nil {
		if md, ok := res[0].Elem().FieldByName("ResultMetadata").Interface().(middleware.Metadata); ok {
			o.requestID, _ = awsmiddleware.GetRequestIDMetadata(md)
		}
	}
	return o, nil
}

// callV1 calls op through aws-sdk-go v1 by reflection:
// OpWithContext(ctx, *OpInput, ...request.Option). For operations newer than
// the last aws-sdk-go v1 release it builds the request with the v1 client's
// own machinery (JSON 1.1 handlers, SigV4 signer, error unmarshaling) and the
// generated body; the same where v1's input struct has an older shape than
// the model. It reports whether v1's own method and input struct were used.
func callV1(ctx context.Context, c *glv1.GameLift, op string, in map[string]any) (outcome, bool, error) {
	m := reflect.ValueOf(c).MethodByName(op + "WithContext")
	if !m.IsValid() {
		o, err := callV1Generic(ctx, c, op, in)
		return o, false, err
	}
	mt := m.Type()
	if mt.NumIn() != 3 || mt.NumOut() != 2 || mt.In(1).Kind() != reflect.Pointer {
		return outcome{}, true, fmt.Errorf("aws-sdk-go %sWithContext has signature %s", op, mt)
	}
	arg := reflect.New(mt.In(1).Elem())
	if err := decodeInto(in, arg.Interface()); err != nil {
		// The last v1 release models an older shape of this input (e.g.
		// CreateContainerGroupDefinition before its 2024 redesign).
		o, err := callV1Generic(ctx, c, op, in)
		return o, false, err
	}
	res := m.Call([]reflect.Value{reflect.ValueOf(ctx), arg})
	err, _ := res[1].Interface().(error)
	return v1Outcome(err), true, nil
}

func callV1Generic(ctx context.Context, c *glv1.GameLift, op string, in map[string]any) (outcome, error) {
	body, err := json.Marshal(toWire(in))
	if err != nil {
		return outcome{}, err
	}
	req := c.NewRequest(&request.Operation{Name: op, HTTPMethod: "POST", HTTPPath: "/"}, nil, nil)
	req.SetContext(ctx)
	req.Handlers.Build.PushBack(func(r *request.Request) { r.SetBufferBody(body) })
	var out map[string]any
	req.Handlers.Unmarshal.PushBack(func(r *request.Request) {
		defer r.HTTPResponse.Body.Close()
		if err := json.NewDecoder(r.HTTPResponse.Body).Decode(&out); err != nil {
			r.Error = awserr.New(request.ErrCodeSerialization, "decoding the response", err)
		}
	})
	err = req.Send()
	if err == nil && out == nil {
		return outcome{}, fmt.Errorf("%s: success without a JSON object", op)
	}
	return v1Outcome(err), nil
}

// TestEveryOperation calls every operation of the service model through
// both real SDKs against one real Hoist with a minimal valid input
// generated from the model, and checks each answer: operations a domain
// implements never answer UnsupportedOperationException and answer success
// or an error the model lists for them; the rest answer
// UnsupportedOperationException, HTTP 501, naming the operation.
func TestEveryOperation(t *testing.T) {
	m := loadModel(t)
	ops := modelOperations(m)
	if len(ops) != 120 {
		t.Errorf("the model has %d operations, want 120", len(ops))
	}
	var tableOps []string
	for _, o := range api.Operations() {
		tableOps = append(tableOps, o.Name)
	}
	if strings.Join(tableOps, ",") != strings.Join(ops, ",") {
		t.Errorf("internal/api's operation table differs from the model:\n api:   %v\n model: %v", tableOps, ops)
	}
	impl := implementedOperations(t, ops)
	h := startHoist(t)
	s := &sweep{m: m, g: &gen{m: m, now: time.Now()}, impl: impl, v2: newV2(h), v1: h.V1(),
		ctx: hoisttest.Context(t, 3*time.Minute)}
	var implemented, fallback []string
	for _, op := range ops {
		if d, ok := impl[op]; ok {
			implemented = append(implemented, op+" ("+d+")")
		} else {
			fallback = append(fallback, op)
		}
		s.run(t, op, nil)
	}
	t.Logf("%d implemented: %s", len(implemented), strings.Join(implemented, ", "))
	t.Logf("%d answered by the fallback: %s", len(fallback), strings.Join(fallback, ", "))
	t.Logf("%d newer in the model than in aws-sdk-go v1 (sent through its request machinery): %s", len(s.v1Generic), strings.Join(s.v1Generic, ", "))
	if len(implemented) == 0 {
		t.Error("no operation is implemented: the reflection over internal/server found no domain")
	}
}

// TestEveryOperationOnResources repeats the implemented operations with
// identifiers of resources that exist (a game server group with a game
// server, a build, an Anywhere fleet with a custom location, a registered
// compute, an alias of that fleet and a game session queue routing to the
// alias), so each reaches further than "not
// found"; the destructive operations run last. Every answer must still be a success or
// an error the model lists for the operation.
func TestEveryOperationOnResources(t *testing.T) {
	m := loadModel(t)
	ops := modelOperations(m)
	impl := implementedOperations(t, ops)
	h := startHoist(t)
	ctx := hoisttest.Context(t, 3*time.Minute)
	v2 := newV2(h)

	const group, gameServer, instance, loc, compute = "MegaFrogServers_NA", "mega-frog-game-12345678", "i-1234567890abcdef0", "custom-e2e", "e2e-compute"
	g, err := v2.CreateGameServerGroup(ctx, &glv2.CreateGameServerGroupInput{
		GameServerGroupName: awsv2.String(group), RoleArn: awsv2.String("arn:aws:iam::123456789012:role/GameLiftGameServerGroupRole"),
		MinSize: awsv2.Int32(0), MaxSize: awsv2.Int32(2),
		LaunchTemplate:      &types.LaunchTemplateSpecification{LaunchTemplateName: awsv2.String("frog")},
		InstanceDefinitions: []types.InstanceDefinition{{InstanceType: types.GameServerGroupInstanceTypeC52xlarge}, {InstanceType: types.GameServerGroupInstanceTypeC5a2xlarge}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v2.RegisterGameServer(ctx, &glv2.RegisterGameServerInput{GameServerGroupName: awsv2.String(group),
		GameServerId: awsv2.String(gameServer), InstanceId: awsv2.String(instance), ConnectionInfo: awsv2.String("192.0.2.0.80")}); err != nil {
		t.Fatal(err)
	}
	b, err := v2.CreateBuild(ctx, &glv2.CreateBuildInput{Name: awsv2.String("e2e"), OperatingSystem: types.OperatingSystemAmazonLinux2023})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v2.CreateLocation(ctx, &glv2.CreateLocationInput{LocationName: awsv2.String(loc)}); err != nil {
		t.Fatal(err)
	}
	f, err := v2.CreateFleet(ctx, &glv2.CreateFleetInput{Name: awsv2.String("anywhere"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: awsv2.String(loc)}}})
	if err != nil {
		t.Fatal(err)
	}
	fleetID := *f.FleetAttributes.FleetId
	if _, err := v2.RegisterCompute(ctx, &glv2.RegisterComputeInput{FleetId: &fleetID, ComputeName: awsv2.String(compute),
		IpAddress: awsv2.String("127.0.0.1"), Location: awsv2.String(loc)}); err != nil {
		t.Fatal(err)
	}
	alias, err := v2.CreateAlias(ctx, &glv2.CreateAliasInput{Name: awsv2.String("e2e"),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeSimple, FleetId: &fleetID}})
	if err != nil {
		t.Fatal(err)
	}
	queue, err := v2.CreateGameSessionQueue(ctx, &glv2.CreateGameSessionQueueInput{Name: awsv2.String("e2e"),
		Destinations: []types.GameSessionQueueDestination{{DestinationArn: alias.Alias.AliasArn}}})
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]any{
		"GameServerGroupName": group, "GameServerId": gameServer, "InstanceId": instance,
		"BuildId": *b.Build.BuildId, "FleetId": fleetID, "Location": loc, "ComputeName": compute,
		"ResourceARN": *g.GameServerGroup.GameServerGroupArn, "AliasId": *alias.Alias.AliasId,
		"GameSessionQueueName": *queue.GameSessionQueue.Name,
	}
	// Destructive operations go last, the ones removing what others
	// depend on (fleets, locations, groups) after those.
	rank := func(op string) int {
		switch {
		case strings.HasPrefix(op, "Deregister"), strings.HasPrefix(op, "Terminate"):
			return 1
		case op == "DeleteFleet", op == "DeleteGameServerGroup", op == "DeleteBuild":
			return 3
		case op == "DeleteLocation":
			return 4
		case strings.HasPrefix(op, "Delete"):
			return 2
		}
		return 0
	}
	var order []string
	for _, op := range ops {
		if _, ok := impl[op]; ok {
			order = append(order, op)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return rank(order[i]) < rank(order[j]) })
	s := &sweep{m: m, g: &gen{m: m, now: time.Now()}, impl: impl, v2: v2, v1: h.V1(), ctx: ctx}
	for _, op := range order {
		s.run(t, op, func(in map[string]any) {
			for k, v := range subs {
				if _, ok := in[k]; ok {
					in[k] = v
				}
			}
		})
	}
}

// sweep calls operations through both SDKs and checks the answers.
type sweep struct {
	m         *apigen.Model
	g         *gen
	impl      map[string]string
	v2        *glv2.Client
	v1        *glv1.GameLift
	ctx       context.Context
	v1Generic []string
}

// run calls op (its generated input changed by adjust, if set) as a subtest.
func (s *sweep) run(t *testing.T, op string, adjust func(map[string]any)) {
	domain, isImpl := s.impl[op]
	t.Run(op, func(t *testing.T) {
		in, err := s.g.input(op)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range overrides[op] {
			in[k] = v
		}
		if adjust != nil {
			adjust(in)
		}
		modeled := map[string]bool{}
		for _, e := range s.m.Operations[op].Errors {
			modeled[e.Shape] = true
		}
		check := func(client string, o outcome) {
			t.Helper()
			if o.err != nil && o.code == "" {
				t.Errorf("%s: not an API error: %v", client, o.err)
				return
			}
			if (o.err != nil || strings.Contains(client, "v2")) && !requestIDPattern.MatchString(o.requestID) {
				t.Errorf("%s: the SDK reports request ID %q, want Hoist's x-amzn-RequestId (a UUID)", client, o.requestID)
			}
			if o.status >= 500 && o.code != "UnsupportedOperationException" {
				t.Errorf("%s: server error %s", client, o)
			}
			if strings.Contains(o.message, "validation error") {
				t.Errorf("%s: the generated input (%v) failed validation: %s", client, in, o)
			}
			if isImpl {
				switch {
				case o.code == "UnsupportedOperationException":
					t.Errorf("%s: implemented by %s but answered %s", client, domain, o)
				case o.err != nil && !modeled[o.code]:
					t.Errorf("%s: %s is not an error the model lists for %s (%v)", client, o, op, keys(modeled))
				}
				return
			}
			if o.code != "UnsupportedOperationException" || o.status != 501 || !strings.Contains(o.message, op) {
				t.Errorf("%s: not implemented, want HTTP 501 UnsupportedOperationException naming %s; got %s", client, op, o)
			}
		}
		o2, err := callV2(s.ctx, s.v2, op, in)
		if err != nil {
			t.Fatalf("v2: %v", err)
		}
		check("aws-sdk-go-v2 (CBOR)", o2)
		o1, known, err := callV1(s.ctx, s.v1, op, in)
		if err != nil {
			t.Fatalf("v1: %v", err)
		}
		if !known {
			s.v1Generic = append(s.v1Generic, op)
		}
		check("aws-sdk-go v1 (JSON 1.1)", o1)
		t.Logf("v2: %s; v1: %s", o2, o1)
	})
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
