//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

// Package api_test drives every GameLift operation of the service model
// through the real AWS SDKs (aws-sdk-go-v2 over Smithy RPC v2 CBOR,
// aws-sdk-go v1 over AWS JSON 1.1) and raw signed HTTP against a real Hoist
// binary started by e2e/hoisttest.
package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	credsv1 "github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"
	"github.com/fxamacker/cbor/v2"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/server"
)

// startHoist starts a Hoist for one test (stopped when it ends): three
// replicas on PostgreSQL behind a round-robin balancer when the test runs
// under TestOnCluster.
func startHoist(t *testing.T) *hoisttest.Hoist {
	t.Helper()
	if onCluster(t) {
		return startCluster(t)
	}
	return hoisttest.Start(t, hoisttest.Options{})
}

// newV1 returns an aws-sdk-go v1 client for h with extra configuration
// (e.g. DisableParamValidation).
func newV1(h *hoisttest.Hoist, extra *awsv1.Config) *glv1.GameLift {
	sess := session.Must(session.NewSession(&awsv1.Config{
		Region:      awsv1.String(hoisttest.Region),
		Endpoint:    awsv1.String(h.URL),
		Credentials: credsv1.NewStaticCredentials(hoisttest.AccessKeyID, hoisttest.SecretAccessKey, ""),
		HTTPClient:  &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}},
		MaxRetries:  awsv1.Int(0),
	}, extra))
	return glv1.New(sess)
}

// newV2 returns an aws-sdk-go-v2 client for h as hoisttest.NewV2 does, whose
// HTTP transport sends a copy of each request body.
//
// Why: smithy-go closes the request body as soon as the response headers
// arrive, and its closed body answers WriteTo with io.EOF. When Hoist (on
// loopback) answers before net/http's write loop has made its final read of
// the body, that read fails, the write loop closes the connection, and a
// response body still in flight fails with "use of closed network
// connection" (aws/aws-sdk-go-v2#2737; the SDK's default retryer retries it,
// hoisttest's NopRetryer does not). Seen here on DescribeEC2InstanceLimits
// (41 KB) in about one call in eight. A body of its own makes the race
// harmless without changing what is sent.
func newV2(h *hoisttest.Hoist) *glv2.Client {
	return newV2Keys(h, hoisttest.AccessKeyID, hoisttest.SecretAccessKey)
}

func newV2Keys(h *hoisttest.Hoist, akid, secret string) *glv2.Client {
	cfg := awsv2.Config{
		Region:      hoisttest.Region,
		Credentials: credentials.NewStaticCredentialsProvider(akid, secret, ""),
		HTTPClient: &http.Client{Timeout: 60 * time.Second, Transport: ownBodyTransport{&http.Transport{
			Proxy: nil, MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}}},
		Retryer: func() awsv2.Retryer { return awsv2.NopRetryer{} },
	}
	return glv2.NewFromConfig(cfg, func(o *glv2.Options) { o.BaseEndpoint = awsv2.String(h.URL) })
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

// rawClient sends raw HTTP to loopback only, never through a proxy.
var rawClient = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: nil}}

// signRequest signs req (whose body is body) with SigV4 for GameLift with
// the credentials Hoist is started with, as the SDKs do.
func signRequest(t testing.TB, req *http.Request, body []byte, akid, secret string) {
	t.Helper()
	sum := sha256.Sum256(body)
	err := v4.NewSigner().SignHTTP(context.Background(), awsv2.Credentials{AccessKeyID: akid, SecretAccessKey: secret},
		req, hex.EncodeToString(sum[:]), "gamelift", hoisttest.Region, time.Now())
	if err != nil {
		t.Fatal(err)
	}
}

// rawResponse is a response read in full.
type rawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// request options of raw requests.
type rawOpts struct {
	method      string            // default POST
	contentType *string           // default by protocol; pointer to "" sends none
	headers     map[string]string // added (an empty value deletes)
	unsigned    bool
	akid        string // default hoisttest.AccessKeyID
	secret      string // default hoisttest.SecretAccessKey
	tamper      func(*http.Request)
}

func str(s string) *string { return &s }

// doRaw sends one request to path on h.
func doRaw(t testing.TB, h *hoisttest.Hoist, path string, body []byte, o rawOpts) rawResponse {
	t.Helper()
	method := o.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, h.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == nil {
		req.Body = http.NoBody
	}
	if o.contentType != nil {
		if *o.contentType != "" {
			req.Header.Set("Content-Type", *o.contentType)
		}
	}
	for k, v := range o.headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if !o.unsigned {
		akid, secret := o.akid, o.secret
		if akid == "" {
			akid, secret = hoisttest.AccessKeyID, hoisttest.SecretAccessKey
		}
		signRequest(t, req, body, akid, secret)
	}
	if o.tamper != nil {
		o.tamper(req)
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// jsonCall sends an AWS JSON 1.1 request for op.
func jsonCall(t testing.TB, h *hoisttest.Hoist, op string, body []byte, o rawOpts) rawResponse {
	t.Helper()
	if o.contentType == nil {
		o.contentType = str("application/x-amz-json-1.1")
	}
	hdr := map[string]string{"X-Amz-Target": "GameLift." + op}
	for k, v := range o.headers {
		hdr[k] = v
	}
	o.headers = hdr
	return doRaw(t, h, "/", body, o)
}

// cborCall sends a Smithy RPC v2 CBOR request for op.
func cborCall(t testing.TB, h *hoisttest.Hoist, op string, body []byte, o rawOpts) rawResponse {
	t.Helper()
	if o.contentType == nil {
		o.contentType = str("application/cbor")
	}
	hdr := map[string]string{"smithy-protocol": "rpc-v2-cbor", "Accept": "application/cbor"}
	for k, v := range o.headers {
		hdr[k] = v
	}
	o.headers = hdr
	return doRaw(t, h, "/service/GameLift/operation/"+op, body, o)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustCBOR(t testing.TB, v any) []byte {
	t.Helper()
	b, err := cbor.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// implementedOperations finds, by reflection over the service internal/server
// composes, which operations a domain serves: the service struct embeds
// each domain's Service and, one level deeper, api.Unimplemented; an
// operation is implemented when an embedded field other than the fallback
// has the method. It returns operation -> the domain's field name.
func implementedOperations(t testing.TB, ops []string) map[string]string {
	t.Helper()
	cfg := &config.Config{DataDir: t.TempDir(), Region: hoisttest.Region, Account: hoisttest.Account,
		InstanceIP: "127.0.0.1", LogLevel: "error", LogFormat: "text", ShutdownGrace: 5 * time.Second}
	srv, err := server.New(server.Options{Config: cfg, Addr: "127.0.0.1:1"})
	if err != nil {
		t.Fatalf("composing a server to inspect its service: %v", err)
	}
	defer srv.Close(context.Background())
	typ := reflect.TypeOf(srv.Service())
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		t.Fatalf("server's service is a %s, not a struct of embedded domains", typ.Kind())
	}
	unimpl := reflect.TypeOf(api.Unimplemented{})
	var isFallback func(reflect.Type) bool
	isFallback = func(ft reflect.Type) bool {
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft == unimpl {
			return true
		}
		if ft.Kind() != reflect.Struct {
			return false
		}
		for i := 0; i < ft.NumField(); i++ {
			if f := ft.Field(i); f.Anonymous && isFallback(f.Type) {
				return true
			}
		}
		return false
	}
	out := map[string]string{}
	fallbacks := 0
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if !f.Anonymous {
			continue
		}
		if isFallback(f.Type) {
			fallbacks++
			continue
		}
		for _, op := range ops {
			if _, ok := f.Type.MethodByName(op); ok {
				if prev, dup := out[op]; dup {
					t.Errorf("%s is served by both %s and %s", op, prev, f.Name)
				}
				out[op] = f.Name
			}
		}
	}
	if fallbacks != 1 {
		t.Fatalf("the composed service embeds %d fallbacks holding api.Unimplemented, want 1: the reflection no longer fits internal/server", fallbacks)
	}
	return out
}

// validateLocally decodes a generated input as a JSON request would be and
// runs internal/api's validation on it.
func validateLocally(op string, in map[string]any) error {
	o, ok := api.LookupOperation(op)
	if !ok {
		return &api.NotImplementedError{Operation: op}
	}
	v := o.NewInput()
	b, err := json.Marshal(toWire(in))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	return v.Validate()
}

// jsonUnmarshal decodes a JSON document keeping numbers as json.Number.
func jsonUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// asErr is errors.As.
func asErr(err error, target any) bool { return errors.As(err, target) }
