package sigv4_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/sigv4"
)

// botoSignScript signs each request of the JSON list on stdin with
// botocore's own signers (SigV4Auth, or S3SigV4Auth for service s3) and
// prints the signed headers of each as a JSON list.
const botoSignScript = `
import json, sys
from botocore.auth import SigV4Auth, S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
out = []
for r in json.load(sys.stdin):
    req = AWSRequest(method=r["method"], url=r["url"], data=r["body"].encode(), headers=r["headers"])
    creds = Credentials(r["akid"], r["secret"], r["token"] or None)
    auth = S3SigV4Auth if r["service"] == "s3" else SigV4Auth
    auth(creds, r["service"], "us-west-2").add_auth(req)
    out.append(dict(req.headers.items()))
print(json.dumps(out))
`

type botoRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
	Service string            `json:"service"`
	AKID    string            `json:"akid"`
	Secret  string            `json:"secret"`
	Token   string            `json:"token"`
}

// TestBotocoreSigner verifies requests botocore signs: it normalises the
// path (dot segments, empty segments) before encoding it twice, which the
// Go SDKs do not. Skipped when python3 or botocore is not installed.
// botocore signs with the real clock, so the verifier uses it too.
func TestBotocoreSigner(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	if err := exec.Command("python3", "-c", "import botocore").Run(); err != nil {
		t.Skip("botocore not installed")
	}
	srv := newVerifyServer(t)
	cases := []struct {
		name     string
		req      botoRequest
		flavour  sigv4.Flavour
		tamper   func(*http.Request)
		wantCode string
	}{
		{name: "json", req: botoRequest{Method: "POST", URL: "/", Body: jsonBody, Headers: apiHeaders}},
		{name: "session token", req: botoRequest{Method: "POST", URL: "/", Body: jsonBody, Headers: apiHeaders, Token: "tok+/="}},
		{name: "cbor route", req: botoRequest{Method: "POST", URL: "/service/GameLift/operation/ListBuilds", Headers: map[string]string{"Content-Type": "application/cbor", "Smithy-Protocol": "rpc-v2-cbor"}}},
		{name: "path needing encoding", req: botoRequest{Method: "GET", URL: "/a%20b/%C3%BC/~x"}},
		{name: "dot segments", req: botoRequest{Method: "GET", URL: "/a/./b/../c//d/"}},
		{name: "query", req: botoRequest{Method: "GET", URL: "/?b=x%20y&a=%2F&%C3%BC=1"}},
		{name: "wrong secret", req: botoRequest{Method: "POST", URL: "/", Body: jsonBody, Secret: "other"}, wantCode: "InvalidSignatureException"},
		{name: "tampered body", req: botoRequest{Method: "POST", URL: "/", Body: jsonBody}, tamper: func(r *http.Request) {
			b := strings.Replace(jsonBody, "gs-1", "gs-2", 1)
			r.Body, r.ContentLength = nopCloser(b), int64(len(b))
		}, wantCode: "InvalidSignatureException"},
		{name: "s3", flavour: sigv4.S3, req: botoRequest{Method: "PUT", URL: "/hoist-builds/a%20b/k.zip?partNumber=1&uploadId=x%2Fy", Body: "data", Service: "s3"}},
	}
	reqs := make([]botoRequest, len(cases))
	for i, c := range cases {
		r := c.req
		r.URL = srv.URL + r.URL
		r.Service, r.AKID, r.Secret = or(r.Service, "gamelift"), testKey, or(r.Secret, testSecret)
		if r.Headers == nil {
			r.Headers = map[string]string{}
		}
		reqs[i] = r
	}
	in, _ := json.Marshal(reqs)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "-c", botoSignScript)
	cmd.Stdin = strings.NewReader(string(in))
	cmd.Env = append(os.Environ(), "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("botocore: %v\n%s", err, stderr)
	}
	var headers []map[string]string
	if err := json.Unmarshal(out, &headers); err != nil || len(headers) != len(cases) {
		t.Fatalf("botocore printed %s (%v)", out, err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := http.NewRequest(reqs[i].Method, reqs[i].URL, strings.NewReader(reqs[i].Body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range headers[i] {
				r.Header.Set(k, v)
			}
			if c.tamper != nil {
				c.tamper(r)
			}
			service := map[sigv4.Flavour]string{sigv4.API: "gamelift", sigv4.S3: "s3"}[c.flavour]
			v := &sigv4.Verifier{Service: service, Flavour: c.flavour, Keys: func(id string) (string, bool) {
				return testSecret, id == testKey
			}, Now: time.Now}
			signed, err := srv.do(t, v, r)
			checkOutcome(t, err, c.wantCode, 403, "", reqs[i].Secret, r.Header.Get("Authorization"))
			if err == nil && signed.SecurityToken != c.req.Token {
				t.Errorf("token = %q, want %q", signed.SecurityToken, c.req.Token)
			}
		})
	}
}

func nopCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }
