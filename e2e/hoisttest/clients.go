//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

package hoisttest

import (
	"bytes"
	"io"
	"net/http"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	credsv1 "github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"
)

// httpClient keeps connections alive and never uses a proxy (tests talk only
// to loopback).
func httpClient() *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		Proxy: nil, MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}}
}

// V2 returns an aws-sdk-go-v2 GameLift client (Smithy RPC v2 CBOR) for h,
// signing with the e2e credentials; retries are off so tests see every error.
//
// Its transport sends a copy of each request body: smithy-go closes the
// request body as soon as the response headers arrive, and when Hoist (on
// loopback) answers before net/http's write loop made its final read of
// the body, that read fails and the connection is closed under the response
// still being read ("use of closed network connection",
// aws/aws-sdk-go-v2#2737). The SDK's default retryer hides it; with retries
// off it would make tests flaky.
func (h *Hoist) V2() *glv2.Client {
	return NewV2(h.URL, AccessKeyID, SecretAccessKey)
}

// NewV2 returns an aws-sdk-go-v2 GameLift client for any endpoint and keys;
// optFns adjust its options after the endpoint is set.
func NewV2(endpoint, akid, secret string, optFns ...func(*glv2.Options)) *glv2.Client {
	cfg := awsv2.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider(akid, secret, ""),
		HTTPClient:  &http.Client{Timeout: 60 * time.Second, Transport: ownBodyTransport{httpClient().Transport}},
		Retryer:     func() awsv2.Retryer { return awsv2.NopRetryer{} },
	}
	optFns = append([]func(*glv2.Options){func(o *glv2.Options) { o.BaseEndpoint = awsv2.String(endpoint) }}, optFns...)
	return glv2.NewFromConfig(cfg, optFns...)
}

// V1 returns an aws-sdk-go (v1) GameLift client (AWS JSON 1.1) for h.
func (h *Hoist) V1() *glv1.GameLift {
	return NewV1(h.URL, AccessKeyID, SecretAccessKey)
}

// NewV1 returns an aws-sdk-go (v1) GameLift client for any endpoint and keys.
func NewV1(endpoint, akid, secret string) *glv1.GameLift {
	sess := session.Must(session.NewSession(&awsv1.Config{
		Region:      awsv1.String(Region),
		Endpoint:    awsv1.String(endpoint),
		Credentials: credsv1.NewStaticCredentials(akid, secret, ""),
		HTTPClient:  httpClient(),
		MaxRetries:  awsv1.Int(0),
	}))
	return glv1.New(sess)
}

// ownBodyTransport sends each request with an in-memory copy of its body.
type ownBodyTransport struct{ next http.RoundTripper }

func (t ownBodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.ContentLength = int64(len(b))
	}
	return t.next.RoundTrip(req)
}
