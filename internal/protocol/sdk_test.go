//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

package protocol

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	credsv1 "github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"
	"github.com/aws/smithy-go"
)

// newV2Client is an aws-sdk-go-v2 client (RPC v2 CBOR) for url, retries off.
func newV2Client(url string) *glv2.Client {
	cfg := awsv2.Config{
		Region:      "us-west-2",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		HTTPClient:  loopbackClient,
		Retryer:     func() awsv2.Retryer { return awsv2.NopRetryer{} },
	}
	return glv2.NewFromConfig(cfg, func(o *glv2.Options) { o.BaseEndpoint = awsv2.String(url) })
}

// newV1Client is an aws-sdk-go (v1) client (AWS JSON 1.1) for url, retries
// and client-side parameter validation off, no shared config files.
func newV1Client(t *testing.T, url string) *glv1.GameLift {
	sess, err := session.NewSessionWithOptions(session.Options{
		SharedConfigState: session.SharedConfigDisable,
		Config: awsv1.Config{
			Region:                 awsv1.String("us-west-2"),
			Endpoint:               awsv1.String(url),
			Credentials:            credsv1.NewStaticCredentials("AKIDTEST", "secret", ""),
			HTTPClient:             loopbackClient,
			MaxRetries:             awsv1.Int(0),
			DisableParamValidation: awsv1.Bool(true),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return glv1.New(sess)
}

func TestSDKv2(t *testing.T) {
	s := newTestServer(t, Options{})
	c := newV2Client(s.URL)
	ctx := t.Context()

	t.Run("describe", func(t *testing.T) {
		out, err := c.DescribeGameServer(ctx, &glv2.DescribeGameServerInput{GameServerGroupName: awsv2.String("group-1"), GameServerId: awsv2.String("gs-1")})
		if err != nil {
			t.Fatal(err)
		}
		gs := out.GameServer
		if awsv2.ToString(gs.GameServerId) != "gs-1" || gs.ClaimStatus != types.GameServerClaimStatusClaimed ||
			gs.UtilizationStatus != types.GameServerUtilizationStatusAvailable || gs.GameServerData != nil {
			t.Errorf("game server = %+v", gs)
		}
		if !gs.RegistrationTime.Equal(registered) || !gs.LastClaimTime.Equal(claimed) {
			t.Errorf("times = %v, %v; want %v, %v", gs.RegistrationTime, gs.LastClaimTime, registered, claimed)
		}
		if id, _ := awsmiddleware.GetRequestIDMetadata(out.ResultMetadata); len(id) != 36 {
			t.Errorf("request ID = %q", id)
		}
	})
	t.Run("list", func(t *testing.T) {
		out, err := c.ListGameServers(ctx, &glv2.ListGameServersInput{GameServerGroupName: awsv2.String("group-1"), Limit: awsv2.Int32(2)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.GameServers) != 2 || awsv2.ToString(out.GameServers[1].GameServerId) != "gs-2" || awsv2.ToString(out.NextToken) != "token-2" {
			t.Errorf("list = %+v", out)
		}
	})
	t.Run("no output shape", func(t *testing.T) {
		if _, err := c.DeleteAlias(ctx, &glv2.DeleteAliasInput{AliasId: awsv2.String("alias-1234")}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("timestamp and integer round trip", func(t *testing.T) {
		out, err := c.DescribeFleetEvents(ctx, &glv2.DescribeFleetEventsInput{FleetId: awsv2.String("fleet-1"), StartTime: awsv2.Time(registered), Limit: awsv2.Int32(7)})
		if err != nil {
			t.Fatal(err)
		}
		if ev := out.Events[0]; !ev.EventTime.Equal(registered) || awsv2.ToInt64(ev.Count) != 7 {
			t.Errorf("event = %+v", ev)
		}
	})
	t.Run("blob", func(t *testing.T) {
		out, err := c.CreateScript(ctx, &glv2.CreateScriptInput{Name: awsv2.String("s"), ZipFile: []byte("PK\x03\x04zip")})
		if err != nil {
			t.Fatal(err)
		}
		if awsv2.ToInt64(out.Script.SizeOnDisk) != 7 {
			t.Errorf("script = %+v", out.Script)
		}
	})
	t.Run("modeled errors", func(t *testing.T) {
		_, err := c.DescribeGameServer(ctx, &glv2.DescribeGameServerInput{GameServerGroupName: awsv2.String("g"), GameServerId: awsv2.String("gs-missing")})
		var nf *types.NotFoundException
		if !errors.As(err, &nf) || nf.ErrorMessage() != "game server gs-missing does not exist" {
			t.Errorf("err = %v, want NotFoundException with our message", err)
		}
		checkV2Status(t, err, 400)

		_, err = c.ClaimGameServer(ctx, &glv2.ClaimGameServerInput{GameServerGroupName: awsv2.String("g"), GameServerId: awsv2.String("gs-1")})
		var ce *types.ConflictException
		if !errors.As(err, &ce) || !strings.Contains(ce.ErrorMessage(), "already claimed") {
			t.Errorf("err = %v, want ConflictException", err)
		}

		_, err = c.DescribeGameServer(ctx, &glv2.DescribeGameServerInput{GameServerGroupName: awsv2.String("g"), GameServerId: awsv2.String("gs-internal")})
		var ie *types.InternalServiceException
		if !errors.As(err, &ie) || !strings.Contains(ie.ErrorMessage(), "request ID") || strings.Contains(ie.ErrorMessage(), "fire") {
			t.Errorf("err = %v, want a generic InternalServiceException", err)
		}
		checkV2Status(t, err, 500)
	})
	t.Run("server-side validation", func(t *testing.T) {
		// The SDK checks required members only; the length is ours to reject.
		_, err := c.DescribeGameServer(ctx, &glv2.DescribeGameServerInput{GameServerGroupName: awsv2.String("g"), GameServerId: awsv2.String("ab")})
		var ir *types.InvalidRequestException
		if !errors.As(err, &ir) || !strings.Contains(ir.ErrorMessage(), "'GameServerId' failed to satisfy constraint") {
			t.Errorf("err = %v, want our InvalidRequestException", err)
		}
	})
	t.Run("not implemented", func(t *testing.T) {
		_, err := c.DescribeAlias(ctx, &glv2.DescribeAliasInput{AliasId: awsv2.String("alias-1")})
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "UnsupportedOperationException" || !strings.Contains(ae.ErrorMessage(), "DescribeAlias") {
			t.Errorf("err = %v, want UnsupportedOperationException", err)
		}
		checkV2Status(t, err, 501)
	})
}

// checkV2Status checks the HTTP status and request ID an SDK v2 error carries.
func checkV2Status(t *testing.T, err error, status int) {
	t.Helper()
	var re *awshttp.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("err %v carries no HTTP response", err)
	}
	if re.HTTPStatusCode() != status || len(re.ServiceRequestID()) != 36 {
		t.Errorf("status %d, request ID %q; want %d and a UUID", re.HTTPStatusCode(), re.ServiceRequestID(), status)
	}
}

func TestSDKv1(t *testing.T) {
	s := newTestServer(t, Options{})
	c := newV1Client(t, s.URL)
	ctx := t.Context()

	t.Run("describe", func(t *testing.T) {
		out, err := c.DescribeGameServerWithContext(ctx, &glv1.DescribeGameServerInput{GameServerGroupName: awsv1.String("group-1"), GameServerId: awsv1.String("gs-1")})
		if err != nil {
			t.Fatal(err)
		}
		gs := out.GameServer
		if awsv1.StringValue(gs.GameServerId) != "gs-1" || awsv1.StringValue(gs.ClaimStatus) != "CLAIMED" || gs.GameServerData != nil {
			t.Errorf("game server = %v", gs)
		}
		if !gs.RegistrationTime.Equal(registered) || !gs.LastClaimTime.Equal(claimed) {
			t.Errorf("times = %v, %v; want %v, %v", gs.RegistrationTime, gs.LastClaimTime, registered, claimed)
		}
	})
	t.Run("list", func(t *testing.T) {
		out, err := c.ListGameServersWithContext(ctx, &glv1.ListGameServersInput{GameServerGroupName: awsv1.String("group-1")})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.GameServers) != 2 || awsv1.StringValue(out.NextToken) != "token-2" {
			t.Errorf("list = %v", out)
		}
	})
	t.Run("no output shape", func(t *testing.T) {
		if _, err := c.DeleteAliasWithContext(ctx, &glv1.DeleteAliasInput{AliasId: awsv1.String("alias-1234")}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("timestamp and blob round trip", func(t *testing.T) {
		out, err := c.DescribeFleetEventsWithContext(ctx, &glv1.DescribeFleetEventsInput{FleetId: awsv1.String("fleet-1"), StartTime: awsv1.Time(registered)})
		if err != nil {
			t.Fatal(err)
		}
		if !out.Events[0].EventTime.Equal(registered) {
			t.Errorf("event time = %v", out.Events[0].EventTime)
		}
		sc, err := c.CreateScriptWithContext(ctx, &glv1.CreateScriptInput{Name: awsv1.String("s"), ZipFile: []byte("PK\x03\x04zip")})
		if err != nil {
			t.Fatal(err)
		}
		if awsv1.Int64Value(sc.Script.SizeOnDisk) != 7 {
			t.Errorf("script = %v", sc.Script)
		}
	})
	tests := map[string]struct {
		call   func() error
		code   string
		status int
		msg    string
		typed  func(error) bool
	}{
		"not found": {
			call: func() error {
				_, err := c.DescribeGameServerWithContext(ctx, &glv1.DescribeGameServerInput{GameServerGroupName: awsv1.String("g"), GameServerId: awsv1.String("gs-missing")})
				return err
			},
			code: "NotFoundException", status: 400, msg: "game server gs-missing does not exist",
			typed: func(err error) bool { var e *glv1.NotFoundException; return errors.As(err, &e) },
		},
		"conflict": {
			call: func() error {
				_, err := c.ClaimGameServerWithContext(ctx, &glv1.ClaimGameServerInput{GameServerGroupName: awsv1.String("g"), GameServerId: awsv1.String("gs-1")})
				return err
			},
			code: "ConflictException", status: 400, msg: "already claimed",
			typed: func(err error) bool { var e *glv1.ConflictException; return errors.As(err, &e) },
		},
		"server-side validation (client validation off)": {
			call: func() error {
				_, err := c.DescribeGameServerWithContext(ctx, &glv1.DescribeGameServerInput{GameServerGroupName: awsv1.String("g"), GameServerId: awsv1.String("x")})
				return err
			},
			code: "InvalidRequestException", status: 400, msg: "'GameServerId' failed to satisfy constraint",
			typed: func(err error) bool { var e *glv1.InvalidRequestException; return errors.As(err, &e) },
		},
		"not implemented": {
			call: func() error {
				_, err := c.DescribeAliasWithContext(ctx, &glv1.DescribeAliasInput{AliasId: awsv1.String("alias-1")})
				return err
			},
			code: "UnsupportedOperationException", status: 501, msg: "does not implement the GameLift operation DescribeAlias",
		},
		"internal": {
			call: func() error {
				_, err := c.DescribeGameServerWithContext(ctx, &glv1.DescribeGameServerInput{GameServerGroupName: awsv1.String("g"), GameServerId: awsv1.String("gs-panic")})
				return err
			},
			code: "InternalServiceException", status: 500, msg: "internal error (request ID ",
			typed: func(err error) bool { var e *glv1.InternalServiceException; return errors.As(err, &e) },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.call()
			var ae awserr.RequestFailure
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want an awserr.RequestFailure", err, err)
			}
			if ae.Code() != tc.code || ae.StatusCode() != tc.status || !strings.Contains(ae.Message(), tc.msg) || len(ae.RequestID()) != 36 {
				t.Errorf("got %s %d %q (request %q), want %s %d containing %q", ae.Code(), ae.StatusCode(), ae.Message(), ae.RequestID(), tc.code, tc.status, tc.msg)
			}
			if tc.typed != nil && !tc.typed(err) {
				t.Errorf("err %T is not the modeled error type", err)
			}
		})
	}
}

// TestSDKv2SeesSmithyProtocolOnEveryError runs each error path through the
// v2 SDK, which refuses any response without smithy-protocol.
func TestSDKv2SeesSmithyProtocolOnEveryError(t *testing.T) {
	s := newTestServer(t, Options{Auth: fakeAuth{}, MaxBodyBytes: 256})
	c := newV2Client(s.URL)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// Unauthenticated (no "ok" Authorization): the fake lets it through;
	// a too-large body gets 413 before authentication.
	_, err := c.DescribeGameServer(ctx, &glv2.DescribeGameServerInput{GameServerGroupName: awsv2.String("g"), GameServerId: awsv2.String(strings.Repeat("x", 300))})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != CodeRequestTooLarge {
		t.Errorf("err = %v, want %s", err, CodeRequestTooLarge)
	}
	checkV2Status(t, err, http.StatusRequestEntityTooLarge)
}
