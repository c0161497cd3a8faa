package api_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestDNSRebinding: a Hoist without credentials, reached under a name
// that is not a loopback one (what DNS rebinding makes a browser send),
// refuses aws-sdk-go-v2's signed request with 403; under 127.0.0.1 and
// localhost it answers. The client always connects to Hoist's loopback
// port: only the name differs, as after a rebinding.
func TestDNSRebinding(t *testing.T) {
	h := hoisttest.Start(t, hoisttest.Options{Unauthenticated: true})
	u, err := url.Parse(h.URL)
	if err != nil {
		t.Fatal(err)
	}
	loopback := u.Host
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	transport := &http.Transport{Proxy: nil, DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, loopback) // every name "resolves" to Hoist
	}}
	newClient := func(endpoint string) *glv2.Client {
		return glv2.NewFromConfig(awsv2.Config{
			Region:      hoisttest.Region,
			Credentials: credentials.NewStaticCredentialsProvider("AKIDANY", "any-secret", ""),
			HTTPClient:  &http.Client{Timeout: 30 * time.Second, Transport: ownBodyTransport{transport}},
			Retryer:     func() awsv2.Retryer { return awsv2.NopRetryer{} },
		}, func(o *glv2.Options) { o.BaseEndpoint = awsv2.String(endpoint) })
	}
	port := u.Port()
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := newClient("http://"+host+":"+port).ListBuilds(context.Background(), &glv2.ListBuildsInput{}); err != nil {
			t.Errorf("as %s: %v", host, err)
		}
	}
	for _, host := range []string{"rebind.attacker.example", "192.0.2.1"} {
		_, err := newClient("http://"+host+":"+port).ListBuilds(context.Background(), &glv2.ListBuildsInput{})
		o := v2Outcome(err)
		if o.status != http.StatusForbidden {
			t.Errorf("as %s: %v, want HTTP 403", host, o)
		}
	}
}
