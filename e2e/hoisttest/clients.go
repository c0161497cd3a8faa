package hoisttest

import (
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
func (h *Hoist) V2() *glv2.Client {
	return NewV2(h.URL, AccessKeyID, SecretAccessKey)
}

// NewV2 returns an aws-sdk-go-v2 GameLift client for any endpoint and keys.
func NewV2(endpoint, akid, secret string) *glv2.Client {
	cfg := awsv2.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider(akid, secret, ""),
		HTTPClient:  httpClient(),
		Retryer:     func() awsv2.Retryer { return awsv2.NopRetryer{} },
	}
	return glv2.NewFromConfig(cfg, func(o *glv2.Options) { o.BaseEndpoint = awsv2.String(endpoint) })
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
