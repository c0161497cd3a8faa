//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

package sigv4_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	credsv1 "github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"
	"github.com/aws/smithy-go"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/protocol"
	"github.com/hoistgg/hoist/internal/sigv4"
)

var _ protocol.Authenticator = (*sigv4.Authenticator)(nil)

// callerService answers ListBuilds with the caller's access key ID as its
// NextToken; every other operation is unimplemented.
type callerService struct{ api.Unimplemented }

func (callerService) ListBuilds(ctx context.Context, _ *api.ListBuildsInput) (*api.ListBuildsOutput, error) {
	return &api.ListBuildsOutput{NextToken: api.String("caller=" + sigv4.AccessKeyID(ctx))}, nil
}

// noProxy is an HTTP client for loopback servers.
func noProxy() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
}

func newV2(endpoint string, creds awsv2.CredentialsProvider) *glv2.Client {
	return glv2.NewFromConfig(awsv2.Config{
		Region:      testRegion,
		Credentials: creds,
		HTTPClient:  noProxy(),
		Retryer:     func() awsv2.Retryer { return awsv2.NopRetryer{} },
	}, func(o *glv2.Options) { o.BaseEndpoint = awsv2.String(endpoint) })
}

func newV1(endpoint, akid, secret string) *glv1.GameLift {
	return glv1.New(session.Must(session.NewSession(&awsv1.Config{
		Region:      awsv1.String(testRegion),
		Endpoint:    awsv1.String(endpoint),
		Credentials: credsv1.NewStaticCredentials(akid, secret, ""),
		HTTPClient:  noProxy(),
		MaxRetries:  awsv1.Int(0),
	})))
}

// TestThroughProtocolHandler serves the GameLift API with the
// authenticator and calls it with the real SDK clients. The SDKs sign with
// the real clock, so the authenticator's clock is the real one.
func TestThroughProtocolHandler(t *testing.T) {
	serve := func(keys map[string]string) string {
		h := protocol.NewHandler(callerService{}, protocol.Options{Auth: sigv4.NewAuthenticator(keys, time.Now)})
		srv := httptest.NewServer(h) // 127.0.0.1
		t.Cleanup(srv.Close)
		return srv.URL
	}
	authURL := serve(map[string]string{testKey: testSecret})
	unauthURL := serve(nil)
	ctx := t.Context()

	v2Code := func(err error) (string, string) {
		var ae smithy.APIError
		if !errors.As(err, &ae) {
			t.Fatalf("err = %v, want an API error", err)
		}
		return ae.ErrorCode(), ae.ErrorMessage()
	}
	static := func(akid, secret string) awsv2.CredentialsProvider {
		return credentials.NewStaticCredentialsProvider(akid, secret, "")
	}

	t.Run("v2 right secret", func(t *testing.T) {
		out, err := newV2(authURL, static(testKey, testSecret)).ListBuilds(ctx, &glv2.ListBuildsInput{})
		if err != nil || awsv2.ToString(out.NextToken) != "caller="+testKey {
			t.Fatalf("ListBuilds = %+v, %v", out, err)
		}
	})
	t.Run("v2 session token", func(t *testing.T) {
		c := newV2(authURL, credentials.NewStaticCredentialsProvider(testKey, testSecret, "a-session-token"))
		if _, err := c.ListBuilds(ctx, &glv2.ListBuildsInput{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("v2 wrong secret", func(t *testing.T) {
		_, err := newV2(authURL, static(testKey, "wrong")).ListBuilds(ctx, &glv2.ListBuildsInput{})
		if code, msg := v2Code(err); code != "InvalidSignatureException" || msg != msgSignature {
			t.Fatalf("got %s: %s", code, msg)
		}
		var re interface{ HTTPStatusCode() int }
		if !errors.As(err, &re) || re.HTTPStatusCode() != 403 {
			t.Fatalf("status: %v", err)
		}
	})
	t.Run("v2 unknown key", func(t *testing.T) {
		_, err := newV2(authURL, static("AKIDOTHER", testSecret)).ListBuilds(ctx, &glv2.ListBuildsInput{})
		if code, _ := v2Code(err); code != "UnrecognizedClientException" {
			t.Fatalf("got %s", code)
		}
	})
	t.Run("v2 unsigned", func(t *testing.T) {
		_, err := newV2(authURL, awsv2.AnonymousCredentials{}).ListBuilds(ctx, &glv2.ListBuildsInput{})
		if code, msg := v2Code(err); code != "MissingAuthenticationTokenException" || msg != "Missing Authentication Token" {
			t.Fatalf("got %s: %s", code, msg)
		}
	})
	t.Run("v2 unimplemented operation after authentication", func(t *testing.T) {
		_, err := newV2(authURL, static(testKey, testSecret)).ListFleets(ctx, &glv2.ListFleetsInput{})
		if code, _ := v2Code(err); code != "UnsupportedOperationException" {
			t.Fatalf("got %s", code)
		}
	})
	t.Run("v1 right secret", func(t *testing.T) {
		out, err := newV1(authURL, testKey, testSecret).ListBuildsWithContext(ctx, &glv1.ListBuildsInput{})
		if err != nil || awsv1.StringValue(out.NextToken) != "caller="+testKey {
			t.Fatalf("ListBuilds = %+v, %v", out, err)
		}
	})
	t.Run("v1 wrong secret", func(t *testing.T) {
		_, err := newV1(authURL, testKey, "wrong").ListBuildsWithContext(ctx, &glv1.ListBuildsInput{})
		var rf awserr.RequestFailure
		if !errors.As(err, &rf) || rf.Code() != "InvalidSignatureException" || rf.StatusCode() != 403 {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unauthenticated mode takes any key", func(t *testing.T) {
		out, err := newV2(unauthURL, static("AKIDANY", "anything")).ListBuilds(ctx, &glv2.ListBuildsInput{})
		if err != nil || awsv2.ToString(out.NextToken) != "caller=AKIDANY" {
			t.Fatalf("ListBuilds = %+v, %v", out, err)
		}
	})
	t.Run("unauthenticated mode still wants a signature", func(t *testing.T) {
		_, err := newV2(unauthURL, awsv2.AnonymousCredentials{}).ListBuilds(ctx, &glv2.ListBuildsInput{})
		if code, _ := v2Code(err); code != "MissingAuthenticationTokenException" {
			t.Fatalf("got %s", code)
		}
	})
}
