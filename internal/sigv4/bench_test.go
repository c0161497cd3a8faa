package sigv4_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4v2 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/hoistgg/hoist/internal/sigv4"
)

// BenchmarkAuthenticate verifies one AWS JSON 1.1 request signed by
// aws-sdk-go-v2, as the API does for every call (the hot path of a claim).
func BenchmarkAuthenticate(b *testing.B) {
	body := []byte(`{"GameServerGroupName":"load-group","GameServerId":"gs-000042","UtilizationStatus":"UTILIZED"}`)
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9080/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "GameLift.UpdateGameServer")
	err := v4v2.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: testKey, SecretAccessKey: testSecret},
		req, sha256Hex(body), "gamelift", testRegion, testNow)
	if err != nil {
		b.Fatal(err)
	}
	a := sigv4.NewAuthenticator(map[string]string{testKey: testSecret}, func() time.Time { return testNow })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(req, body); err != nil {
			b.Fatal(err)
		}
	}
}
