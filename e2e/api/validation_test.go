//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"
	"github.com/fxamacker/cbor/v2"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

const seedGroup = "MegaFrogServers_NA"

// validGroupV1 is a CreateGameServerGroup input that passes every
// constraint; cases break one member of a copy.
func validGroupV1(name string) *glv1.CreateGameServerGroupInput {
	return &glv1.CreateGameServerGroupInput{
		GameServerGroupName: awsv1.String(name),
		RoleArn:             awsv1.String("arn:aws:iam::123456789012:role/GameLiftGameServerGroupRole"),
		MinSize:             awsv1.Int64(0), MaxSize: awsv1.Int64(2),
		LaunchTemplate: &glv1.LaunchTemplateSpecification{LaunchTemplateName: awsv1.String("frog-template")},
		InstanceDefinitions: []*glv1.InstanceDefinition{
			{InstanceType: awsv1.String("c5.large")}, {InstanceType: awsv1.String("c5a.large")}},
	}
}

// TestValidationThroughTheWire sends inputs that break one constraint of
// each kind with aws-sdk-go v1 whose client-side validation is off, and
// checks the InvalidRequestException names the member and the constraint.
func TestValidationThroughTheWire(t *testing.T) {
	h := startHoist(t)
	c := newV1(h, &awsv1.Config{DisableParamValidation: awsv1.Bool(true)})
	ctx := hoisttest.Context(t, time.Minute)
	long := strings.Repeat("a", 129)
	tests := []struct {
		name string
		call func() error
		want []string // substrings of the message
	}{
		{"required", func() error {
			_, err := c.ClaimGameServerWithContext(ctx, &glv1.ClaimGameServerInput{})
			return err
		}, []string{"'GameServerGroupName'", "Member must not be null"}},
		{"required nested", func() error {
			in := validGroupV1("frogs-nested")
			in.InstanceDefinitions[1].InstanceType = nil
			_, err := c.CreateGameServerGroupWithContext(ctx, in)
			return err
		}, []string{"'InstanceDefinitions[1].InstanceType'", "Member must not be null"}},
		{"length min", func() error {
			_, err := c.DescribeGameServerGroupWithContext(ctx, &glv1.DescribeGameServerGroupInput{GameServerGroupName: awsv1.String("")})
			return err
		}, []string{"'GameServerGroupName'", "length greater than or equal to 1"}},
		{"length max", func() error {
			_, err := c.CreateGameServerGroupWithContext(ctx, validGroupV1(long))
			return err
		}, []string{"'GameServerGroupName'", "length less than or equal to 128"}},
		{"length max of a name-or-ARN", func() error {
			_, err := c.DescribeGameServerGroupWithContext(ctx, &glv1.DescribeGameServerGroupInput{GameServerGroupName: awsv1.String(long + long)})
			return err
		}, []string{"'GameServerGroupName'", "length less than or equal to 256"}},
		{"length of a nested member", func() error {
			in := validGroupV1("frogs-lt")
			in.LaunchTemplate.LaunchTemplateName = awsv1.String("ab")
			_, err := c.CreateGameServerGroupWithContext(ctx, in)
			return err
		}, []string{"'LaunchTemplate.LaunchTemplateName'", "length greater than or equal to 3"}},
		{"numeric min", func() error {
			_, err := c.ListGameServerGroupsWithContext(ctx, &glv1.ListGameServerGroupsInput{Limit: awsv1.Int64(0)})
			return err
		}, []string{"'Limit'", "value greater than or equal to 1"}},
		{"numeric min of a required member", func() error {
			in := validGroupV1("frogs-max")
			in.MaxSize = awsv1.Int64(0)
			_, err := c.CreateGameServerGroupWithContext(ctx, in)
			return err
		}, []string{"'MaxSize'", "value greater than or equal to 1"}},
		{"list length min", func() error {
			in := validGroupV1("frogs-defs")
			in.InstanceDefinitions = in.InstanceDefinitions[:1]
			_, err := c.CreateGameServerGroupWithContext(ctx, in)
			return err
		}, []string{"'InstanceDefinitions'", "length greater than or equal to 2"}},
		{"list length max", func() error {
			keys := make([]*string, 201)
			for i := range keys {
				keys[i] = awsv1.String("k")
			}
			_, err := c.UntagResourceWithContext(ctx, &glv1.UntagResourceInput{
				ResourceARN: awsv1.String("arn:aws:gamelift:us-west-2:123456789012:gameservergroup/x"), TagKeys: keys})
			return err
		}, []string{"'TagKeys'", "length less than or equal to 200"}},
		{"enum", func() error {
			_, err := c.UpdateGameServerWithContext(ctx, &glv1.UpdateGameServerInput{GameServerGroupName: awsv1.String("g"),
				GameServerId: awsv1.String("gs-1"), UtilizationStatus: awsv1.String("BUSY")})
			return err
		}, []string{"'UtilizationStatus'", "enum value set", "AVAILABLE", "UTILIZED"}},
		{"pattern (anchored)", func() error {
			_, err := c.RegisterGameServerWithContext(ctx, &glv1.RegisterGameServerInput{GameServerGroupName: awsv1.String("g"),
				GameServerId: awsv1.String("gs-1"), InstanceId: awsv1.String("x-1234567890abcdef0")})
			return err
		}, []string{"'InstanceId'", "regular expression pattern"}},
		{"pattern (unanchored, no matching character)", func() error {
			_, err := c.DescribeGameServerGroupWithContext(ctx, &glv1.DescribeGameServerGroupInput{GameServerGroupName: awsv1.String("!!!")})
			return err
		}, []string{"'GameServerGroupName'", "regular expression pattern"}},
		{"pattern of list elements", func() error {
			_, err := c.DescribeGameServerInstancesWithContext(ctx, &glv1.DescribeGameServerInstancesInput{
				GameServerGroupName: awsv1.String("g"), InstanceIds: []*string{awsv1.String("i-1234567890abcdef0"), awsv1.String("i-12345678_0abcdef0")}})
			return err
		}, []string{"'InstanceIds[1]'", "regular expression pattern"}},
		{"two failures", func() error {
			_, err := c.RegisterGameServerWithContext(ctx, &glv1.RegisterGameServerInput{GameServerGroupName: awsv1.String("g")})
			return err
		}, []string{"2 validation errors detected", "'GameServerId'", "'InstanceId'", "Member must not be null"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := v1Outcome(tc.call())
			if o.code != "InvalidRequestException" || o.status != http.StatusBadRequest {
				t.Fatalf("got %s, want HTTP 400 InvalidRequestException", o)
			}
			for _, w := range tc.want {
				if !strings.Contains(o.message, w) {
					t.Errorf("message %q does not contain %q", o.message, w)
				}
			}
		})
	}
}

// TestValidationAcceptsSeedAndARN: the seed's group name (with an
// underscore, which the model's unanchored pattern allows) is accepted by
// every path, and an ARN names the same group.
func TestValidationAcceptsSeedAndARN(t *testing.T) {
	h := startHoist(t)
	ctx := hoisttest.Context(t, time.Minute)
	c1 := newV1(h, &awsv1.Config{DisableParamValidation: awsv1.Bool(true)})
	out, err := c1.CreateGameServerGroupWithContext(ctx, validGroupV1(seedGroup))
	if err != nil {
		t.Fatalf("CreateGameServerGroup %s: %v", seedGroup, err)
	}
	groupARN := awsv1.StringValue(out.GameServerGroup.GameServerGroupArn)
	if !strings.HasPrefix(groupARN, "arn:aws:gamelift:us-west-2:") || !strings.HasSuffix(groupARN, "/"+seedGroup) {
		t.Errorf("group ARN %q", groupARN)
	}
	v2 := newV2(h)
	for _, name := range []string{seedGroup, groupARN} {
		d, err := v2.DescribeGameServerGroup(ctx, &glv2.DescribeGameServerGroupInput{GameServerGroupName: awsv2.String(name)})
		if err != nil || awsv2.ToString(d.GameServerGroup.GameServerGroupName) != seedGroup {
			t.Errorf("DescribeGameServerGroup(%s): %+v, %v", name, d, err)
		}
		if _, err := c1.DescribeGameServerGroupWithContext(ctx, &glv1.DescribeGameServerGroupInput{GameServerGroupName: awsv1.String(name)}); err != nil {
			t.Errorf("v1 DescribeGameServerGroup(%s): %v", name, err)
		}
	}
	// The seed's sample request, as JSON and as CBOR.
	for _, proto := range []string{"json", "cbor"} {
		var r rawResponse
		if proto == "json" {
			r = jsonCall(t, h, "ClaimGameServer", []byte(`{"GameServerGroupName": "MegaFrogServers_NA"}`), rawOpts{})
		} else {
			r = cborCall(t, h, "ClaimGameServer", mustCBOR(t, map[string]any{"GameServerGroupName": seedGroup}), rawOpts{})
		}
		code, msg := errorOf(t, proto, r)
		// Nothing is registered: GameLift answers OutOfCapacityException.
		if r.Status != http.StatusBadRequest || code != "OutOfCapacityException" {
			t.Errorf("%s ClaimGameServer(seed sample): HTTP %d %s %s", proto, r.Status, code, msg)
		}
	}
	// An ARN of the right form for a group that does not exist validates
	// and is not found.
	_, err = v2.DescribeGameServerGroup(ctx, &glv2.DescribeGameServerGroupInput{
		GameServerGroupName: awsv2.String("arn:aws:gamelift:us-west-2:123456789012:gameservergroup/Nope")})
	var nf *types.NotFoundException
	if !asErr(err, &nf) {
		t.Errorf("DescribeGameServerGroup(unknown ARN): %v, want NotFoundException", err)
	}
}

// TestValidationRaw sends invalid inputs as raw signed CBOR and JSON bodies,
// including what no SDK sends (values of the wrong type).
func TestValidationRaw(t *testing.T) {
	h := startHoist(t)
	tests := []struct {
		name, op string
		body     map[string]any
		code     string
		want     []string
	}{
		{"required", "ClaimGameServer", map[string]any{}, "InvalidRequestException",
			[]string{"'GameServerGroupName'", "Member must not be null"}},
		{"enum", "ListGameServers", map[string]any{"GameServerGroupName": "g", "SortOrder": "SIDEWAYS"}, "InvalidRequestException",
			[]string{"'SortOrder'", "enum value set", "ASCENDING"}},
		{"length max", "UpdateGameServer", map[string]any{"GameServerGroupName": "g", "GameServerId": "gs-1",
			"GameServerData": strings.Repeat("d", 1025)}, "InvalidRequestException",
			[]string{"'GameServerData'", "length less than or equal to 1024"}},
		{"numeric", "CreateGameSession", map[string]any{"FleetId": "fleet-1", "MaximumPlayerSessionCount": -1}, "InvalidRequestException",
			[]string{"'MaximumPlayerSessionCount'", "value greater than or equal to 0"}},
		{"pattern", "RegisterGameServer", map[string]any{"GameServerGroupName": "g", "GameServerId": "gs-1",
			"InstanceId": "i-123"}, "InvalidRequestException",
			[]string{"'InstanceId'", "length greater than or equal to 19"}},
		{"list length", "CreateGameServerGroup", map[string]any{"GameServerGroupName": "g", "RoleArn": "arn:aws:iam::1:role/r",
			"MinSize": 0, "MaxSize": 1, "LaunchTemplate": map[string]any{"LaunchTemplateId": "lt-1"},
			"InstanceDefinitions": []any{}}, "InvalidRequestException",
			[]string{"'InstanceDefinitions'", "length greater than or equal to 2"}},
		{"wrong type", "ListGameServerGroups", map[string]any{"Limit": "ten"}, "SerializationException",
			[]string{"Limit"}},
	}
	for _, tc := range tests {
		for _, proto := range []string{"json", "cbor"} {
			t.Run(tc.name+"/"+proto, func(t *testing.T) {
				var r rawResponse
				if proto == "json" {
					r = jsonCall(t, h, tc.op, mustJSON(t, tc.body), rawOpts{})
				} else {
					r = cborCall(t, h, tc.op, mustCBOR(t, tc.body), rawOpts{})
				}
				code, msg := errorOf(t, proto, r)
				if r.Status != http.StatusBadRequest || code != tc.code {
					t.Fatalf("HTTP %d %s %q, want 400 %s", r.Status, code, msg, tc.code)
				}
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						t.Errorf("message %q does not contain %q", msg, w)
					}
				}
			})
		}
	}
}

// errorOf reads an error response of either protocol: the code (the part of
// __type after '#') and the message. It checks the protocol's error form.
func errorOf(t testing.TB, proto string, r rawResponse) (code, message string) {
	t.Helper()
	if r.Status < 300 {
		return "", ""
	}
	var body map[string]any
	switch proto {
	case "json":
		if err := jsonUnmarshal(r.Body, &body); err != nil {
			t.Fatalf("JSON error body %q: %v", r.Body, err)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
			t.Errorf("JSON error Content-Type %q", ct)
		}
		if et := r.Header.Get("X-Amzn-ErrorType"); et == "" || et != body["__type"] {
			t.Errorf("x-amzn-ErrorType %q, __type %v", et, body["__type"])
		}
	case "cbor":
		if err := cbor.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("CBOR error body %x: %v", r.Body, err)
		}
		if sp := r.Header.Get("Smithy-Protocol"); sp != "rpc-v2-cbor" {
			t.Errorf("CBOR error smithy-protocol %q", sp)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/cbor" {
			t.Errorf("CBOR error Content-Type %q", ct)
		}
	}
	typ, _ := body["__type"].(string)
	if typ == "" {
		t.Errorf("error body without __type: %v", body)
	}
	if i := strings.LastIndexByte(typ, '#'); i >= 0 {
		typ = typ[i+1:]
	}
	message, _ = body["message"].(string)
	if message == "" {
		message, _ = body["Message"].(string)
	}
	return typ, message
}
