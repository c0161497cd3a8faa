//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

package sigv4_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4v2 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	credsv1 "github.com/aws/aws-sdk-go/aws/credentials"
	v4v1 "github.com/aws/aws-sdk-go/aws/signer/v4"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/sigv4"
)

var (
	_ api.Error = (*sigv4.Error)(nil)

	testNow = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
)

const (
	testKey    = "AKIDHOIST"
	testSecret = "hoist-test-secret"
	testRegion = "us-west-2"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// verifyServer is a loopback server whose handler verifies each request
// with the verifier of the moment and records the outcome.
type verifyServer struct {
	*httptest.Server
	mu     sync.Mutex
	v      *sigv4.Verifier
	signed *sigv4.Signed
	err    error
}

func newVerifyServer(t *testing.T) *verifyServer {
	s := &verifyServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read body: %v", err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.signed, s.err = s.v.Verify(r, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// do sends r to the server and returns what v made of it.
func (s *verifyServer) do(t *testing.T, v *sigv4.Verifier, r *http.Request) (*sigv4.Signed, error) {
	t.Helper()
	s.mu.Lock()
	s.v, s.signed, s.err = v, nil, nil
	s.mu.Unlock()
	resp, err := s.Client().Do(r)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	_ = resp.Body.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signed, s.err
}

// creds are the keys a request is signed with.
type creds struct{ akid, secret, token string }

// signFunc signs r (whose body is body) with a real SDK signer.
type signFunc func(t *testing.T, r *http.Request, body []byte, c creds, service string, at time.Time, s3 bool)

// signV2 signs with aws-sdk-go-v2's signer, as the v2 clients do: the S3
// client disables path escaping and signs the x-amz-content-sha256 value.
func signV2(t *testing.T, r *http.Request, body []byte, c creds, service string, at time.Time, s3 bool) {
	t.Helper()
	hash := sha256Hex(body)
	if s3 {
		hash = r.Header.Get("X-Amz-Content-Sha256")
	}
	signer := v4v2.NewSigner(func(o *v4v2.SignerOptions) { o.DisableURIPathEscaping = s3 })
	err := signer.SignHTTP(context.Background(), aws.Credentials{AccessKeyID: c.akid, SecretAccessKey: c.secret, SessionToken: c.token},
		r, hash, service, testRegion, at)
	if err != nil {
		t.Fatalf("v2 sign: %v", err)
	}
}

// signV1 signs with aws-sdk-go v1's signer, which reads the body itself
// and takes a preset X-Amz-Content-Sha256 header as the payload hash.
func signV1(t *testing.T, r *http.Request, body []byte, c creds, service string, at time.Time, s3 bool) {
	t.Helper()
	signer := v4v1.NewSigner(credsv1.NewStaticCredentials(c.akid, c.secret, c.token), func(s *v4v1.Signer) {
		s.DisableURIPathEscaping = s3
	})
	if _, err := signer.Sign(r, bytes.NewReader(body), service, testRegion, at); err != nil {
		t.Fatalf("v1 sign: %v", err)
	}
}

var signers = map[string]signFunc{"aws-sdk-go-v2": signV2, "aws-sdk-go": signV1}

// signCase is one request signed by every signer.
type signCase struct {
	flavour sigv4.Flavour
	method  string // default POST (API) or PUT (S3)
	target  string // path and query; default "/"
	body    string
	header  map[string]string // set before signing
	service string            // signed for; default gamelift (API) or s3 (S3)
	creds   *creds            // default testKey/testSecret
	at      time.Time         // signing time; default testNow
	tamper  func(r *http.Request)
	unauth  bool // verify in unauthenticated mode

	code   string // expected error code; "" for accepted
	status int
	msg    string // expected message (exact); "" to skip
}

const (
	msgSignature = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	jsonBody     = `{"GameServerGroupName":"group-1","GameServerId":"gs-1"}`
)

var apiHeaders = map[string]string{
	"Content-Type": "application/x-amz-json-1.1",
	"X-Amz-Target": "GameLift.DescribeGameServer",
}

var s3Unsigned = map[string]string{"X-Amz-Content-Sha256": sigv4.UnsignedPayload, "X-Amz-Checksum-Crc32": "AAAAAA=="}

func signCases() map[string]signCase {
	wrong := creds{testKey, "not-the-secret", ""}
	unknown := creds{"AKIDUNKNOWN", testSecret, ""}
	withToken := creds{testKey, testSecret, "session-token/with+odd=chars"}
	return map[string]signCase{
		// The API flavour.
		"good":       {body: jsonBody, header: apiHeaders},
		"good cbor":  {target: "/service/GameLift/operation/ListBuilds", body: "\xa0", header: map[string]string{"Content-Type": "application/cbor", "Smithy-Protocol": "rpc-v2-cbor"}},
		"empty body": {header: apiHeaders},
		"wrong secret": {body: jsonBody, header: apiHeaders, creds: &wrong,
			code: "InvalidSignatureException", status: 403, msg: msgSignature},
		"unknown key": {body: jsonBody, header: apiHeaders, creds: &unknown,
			code: "UnrecognizedClientException", status: 400, msg: "The security token included in the request is invalid."},
		"tampered body": {body: jsonBody, header: apiHeaders, tamper: func(r *http.Request) {
			b := strings.Replace(jsonBody, "gs-1", "gs-2", 1) // same length
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(b)), int64(len(b))
		}, code: "InvalidSignatureException", status: 403, msg: msgSignature},
		"tampered signed header": {body: jsonBody, header: apiHeaders, tamper: func(r *http.Request) {
			r.Header.Set("X-Amz-Target", "GameLift.DeleteGameServerGroup")
		}, code: "InvalidSignatureException", status: 403},
		"unsigned header changed": {body: jsonBody, header: apiHeaders, tamper: func(r *http.Request) {
			r.Header.Set("User-Agent", "something-else")
		}},
		"tampered path": {target: "/service/GameLift/operation/ListBuilds", tamper: func(r *http.Request) {
			r.URL.Path, r.URL.RawPath = "/service/GameLift/operation/DeleteBuild", ""
		}, code: "InvalidSignatureException", status: 403},
		"tampered query": {target: "/?a=1", tamper: func(r *http.Request) {
			r.URL.RawQuery = "a=2"
		}, code: "InvalidSignatureException", status: 403},
		"query added":            {tamper: func(r *http.Request) { r.URL.RawQuery = "x" }, code: "InvalidSignatureException", status: 403},
		"query needing encoding": {target: "/?b=x%20y&a=%2F%2B~&a=1&c&%C3%BC=%E2%9C%93"},
		"path needing encoding":  {target: "/a%20b/%C3%BC/x+y:z@!$'()*,;=/%2F/~-_."},
		"path with dot segments": {target: "/a/./b/../c//d/"},
		"missing authorization": {body: jsonBody, header: apiHeaders, tamper: func(r *http.Request) {
			r.Header.Del("Authorization")
		}, code: "MissingAuthenticationTokenException", status: 403, msg: "Missing Authentication Token"},
		"missing X-Amz-Date": {body: jsonBody, header: apiHeaders, tamper: func(r *http.Request) {
			r.Header.Del("X-Amz-Date")
		}, code: "IncompleteSignatureException", status: 400, msg: "Authorization header requires existence of a 'X-Amz-Date' header."},
		"authorization without signature": {tamper: func(r *http.Request) {
			a := r.Header.Get("Authorization")
			r.Header.Set("Authorization", a[:strings.Index(a, ", SignedHeaders")])
		}, code: "IncompleteSignatureException", status: 400,
			msg: "Authorization header requires 'Signature' parameter. Authorization header requires 'SignedHeaders' parameter."},
		"not sigv4": {tamper: func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc") },
			code: "IncompleteSignatureException", status: 400},
		"expired": {at: testNow.Add(-16 * time.Minute), code: "InvalidSignatureException", status: 403,
			msg: "Signature expired: 20250601T094400Z is now earlier than 20250601T094500Z (20250601T100000Z - 15 min.)"},
		"future": {at: testNow.Add(16 * time.Minute), code: "InvalidSignatureException", status: 403,
			msg: "Signature not yet current: 20250601T101600Z is still later than 20250601T101500Z (20250601T100000Z + 15 min.)"},
		"15 minutes late":  {at: testNow.Add(-15 * time.Minute)},
		"15 minutes early": {at: testNow.Add(15 * time.Minute)},
		"session token":    {body: jsonBody, header: apiHeaders, creds: &withToken},
		"session token tampered": {body: jsonBody, header: apiHeaders, creds: &withToken, tamper: func(r *http.Request) {
			r.Header.Set("X-Amz-Security-Token", "another")
		}, code: "InvalidSignatureException", status: 403},
		"other service": {service: "s3", code: "InvalidSignatureException", status: 403,
			msg: "Credential should be scoped to correct service: 'gamelift'."},
		"content sha256 agrees": {body: jsonBody, header: map[string]string{"X-Amz-Content-Sha256": sha256Hex([]byte(jsonBody))}},
		"content sha256 disagrees": {body: jsonBody, header: map[string]string{"X-Amz-Content-Sha256": sha256Hex([]byte("other"))},
			code: "InvalidSignatureException", status: 403, msg: "The provided 'x-amz-content-sha256' header does not match what was computed."},

		// Unauthenticated mode: a well-formed header is enough.
		"unauthenticated: wrong secret": {creds: &wrong, unauth: true},
		"unauthenticated: expired":      {at: testNow.Add(-time.Hour), unauth: true},
		"unauthenticated: missing": {unauth: true, tamper: func(r *http.Request) { r.Header.Del("Authorization") },
			code: "MissingAuthenticationTokenException", status: 403},
		"unauthenticated: malformed": {unauth: true, tamper: func(r *http.Request) { r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Signature=00") },
			code: "IncompleteSignatureException", status: 400},
		"unauthenticated: no date": {unauth: true, tamper: func(r *http.Request) { r.Header.Del("X-Amz-Date") },
			code: "IncompleteSignatureException", status: 400},

		// The S3 flavour.
		"s3 unsigned payload": {flavour: sigv4.S3, target: "/hoist-builds/builds/a%20b/%C3%BC+x%2Bz.zip?x-id=UploadPart&partNumber=2&uploadId=a%2Fb", body: "data", header: s3Unsigned},
		"s3 multipart create": {flavour: sigv4.S3, method: "POST", target: "/hoist-builds/k.zip?uploads", header: s3Unsigned},
		"s3 payload hash":     {flavour: sigv4.S3, target: "/b/k", body: "data", header: map[string]string{"X-Amz-Content-Sha256": sha256Hex([]byte("data"))}},
		"s3 streaming trailer": {flavour: sigv4.S3, target: "/b/k", body: "4\r\ndata\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n", header: map[string]string{
			"X-Amz-Content-Sha256": sigv4.StreamingUnsignedPayloadTrailer, "Content-Encoding": "aws-chunked",
			"X-Amz-Trailer": "x-amz-checksum-crc32", "X-Amz-Decoded-Content-Length": "4"}},
		"s3 session token": {flavour: sigv4.S3, target: "/b/k", header: s3Unsigned, creds: &withToken},
		"s3 wrong secret": {flavour: sigv4.S3, target: "/b/k", header: s3Unsigned, creds: &wrong,
			code: "SignatureDoesNotMatch", status: 403},
		"s3 unknown key": {flavour: sigv4.S3, target: "/b/k", header: s3Unsigned, creds: &unknown,
			code: "InvalidAccessKeyId", status: 403},
		"s3 tampered path": {flavour: sigv4.S3, target: "/b/k", header: s3Unsigned, tamper: func(r *http.Request) { r.URL.Path = "/b/other" },
			code: "SignatureDoesNotMatch", status: 403},
		"s3 payload hash changed": {flavour: sigv4.S3, target: "/b/k", header: s3Unsigned, tamper: func(r *http.Request) {
			r.Header.Set("X-Amz-Content-Sha256", sha256Hex(nil))
		}, code: "SignatureDoesNotMatch", status: 403},
		"s3 skewed": {flavour: sigv4.S3, target: "/b/k", header: s3Unsigned, at: testNow.Add(time.Hour),
			code: "RequestTimeTooSkewed", status: 403},
		"s3 missing": {flavour: sigv4.S3, target: "/b/k", header: s3Unsigned, tamper: func(r *http.Request) { r.Header.Del("Authorization") },
			code: "AccessDenied", status: 403},
		"s3 other service": {flavour: sigv4.S3, target: "/b/k", header: s3Unsigned, service: "gamelift",
			code: "AuthorizationHeaderMalformed", status: 400},
	}
}

func TestVerifyRealSigners(t *testing.T) {
	srv := newVerifyServer(t)
	keys := map[string]string{testKey: testSecret}
	for signerName, sign := range signers {
		for name, tc := range signCases() {
			t.Run(signerName+"/"+name, func(t *testing.T) {
				c := creds{testKey, testSecret, ""}
				if tc.creds != nil {
					c = *tc.creds
				}
				service, method := "gamelift", "POST"
				if tc.flavour == sigv4.S3 {
					service, method = "s3", "PUT"
				}
				service, method = or(tc.service, service), or(tc.method, method)
				at := tc.at
				if at.IsZero() {
					at = testNow
				}
				r, err := http.NewRequest(method, srv.URL+or(tc.target, "/"), strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range tc.header {
					r.Header.Set(k, v)
				}
				sign(t, r, []byte(tc.body), c, service, at, tc.flavour == sigv4.S3)
				sentSig := r.Header.Get("Authorization")
				if tc.tamper != nil {
					tc.tamper(r)
				}
				v := &sigv4.Verifier{
					Service: map[sigv4.Flavour]string{sigv4.API: "gamelift", sigv4.S3: "s3"}[tc.flavour],
					Flavour: tc.flavour,
					Keys: func(id string) (string, bool) {
						s, ok := keys[id]
						return s, ok
					},
					Unauthenticated: tc.unauth,
					Now:             func() time.Time { return testNow },
				}
				signed, err := srv.do(t, v, r)
				checkOutcome(t, err, tc.code, tc.status, tc.msg, c.secret, sentSig)
				if err != nil {
					return
				}
				if signed.AccessKeyID != c.akid || signed.Region != testRegion || signed.Service != service || signed.SecurityToken != c.token {
					t.Errorf("signed = %+v, want key %s, region %s, service %s, token %q", signed, c.akid, testRegion, service, c.token)
				}
				if want := r.Header.Get("X-Amz-Content-Sha256"); tc.flavour == sigv4.S3 && signed.PayloadHash != want {
					t.Errorf("payload hash = %q, want %q", signed.PayloadHash, want)
				}
				if tc.flavour == sigv4.API && signed.PayloadHash != sha256Hex([]byte(tc.body)) {
					t.Errorf("payload hash = %q, want the body's", signed.PayloadHash)
				}
			})
		}
	}
}

// checkOutcome checks err against the expected code, status and message,
// and that no secret or signature leaks into it.
func checkOutcome(t *testing.T, err error, code string, status int, msg, secret, authorization string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	var e *sigv4.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *sigv4.Error %s", err, err, code)
	}
	if e.ErrorCode() != code || e.HTTPStatus() != status {
		t.Fatalf("err = %d %v, want %d %s", e.HTTPStatus(), e, status, code)
	}
	if msg != "" && e.ErrorMessage() != msg {
		t.Errorf("message = %q\nwant      %q", e.ErrorMessage(), msg)
	}
	if strings.Contains(e.Error(), secret) {
		t.Errorf("message %q holds the secret", e.Error())
	}
	if _, sig, ok := strings.Cut(authorization, "Signature="); ok && sig != "" && strings.Contains(e.Error(), sig) {
		t.Errorf("message %q holds the signature", e.Error())
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestVerifierWithoutKeys(t *testing.T) {
	r := httptest.NewRequest("POST", "http://127.0.0.1/", nil)
	signV2(t, r, nil, creds{testKey, testSecret, ""}, "gamelift", testNow, false)
	v := &sigv4.Verifier{Service: "gamelift", Now: func() time.Time { return testNow }}
	_, err := v.Verify(r, nil)
	checkOutcome(t, err, "UnrecognizedClientException", 400, "", testSecret, "")
}

func TestVerifySecret(t *testing.T) {
	r := httptest.NewRequest("PUT", "http://127.0.0.1:9080/b/k", nil)
	r.Header.Set("X-Amz-Content-Sha256", sigv4.UnsignedPayload)
	signV2(t, r, nil, creds{"ASIAUPLOAD", "upload-secret", "tok"}, "s3", testNow, true)
	v := &sigv4.Verifier{Service: "s3", Flavour: sigv4.S3, Unauthenticated: true, Now: func() time.Time { return testNow }}
	s, err := v.VerifySecret(r, nil, "upload-secret")
	if err != nil || s.AccessKeyID != "ASIAUPLOAD" || s.SecurityToken != "tok" || s.PayloadHash != sigv4.UnsignedPayload {
		t.Fatalf("VerifySecret = %+v, %v", s, err)
	}
	// VerifySecret checks even in unauthenticated mode.
	_, err = v.VerifySecret(r, nil, "other")
	checkOutcome(t, err, "SignatureDoesNotMatch", 403, "", "other", r.Header.Get("Authorization"))
	if s, err := v.Parse(r); err != nil || s.AccessKeyID != "ASIAUPLOAD" {
		t.Fatalf("Parse = %+v, %v", s, err)
	}
}

func TestParseAuthorization(t *testing.T) {
	const sig = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	a, err := sigv4.ParseAuthorization("AWS4-HMAC-SHA256 Credential=AKID/20250601/eu-west-1/gamelift/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=" + sig)
	if err != nil {
		t.Fatal(err)
	}
	want := sigv4.Authorization{AccessKeyID: "AKID", Date: "20250601", Region: "eu-west-1", Service: "gamelift",
		SignedHeaders: []string{"content-type", "host", "x-amz-date"}, Signature: sig}
	if a.AccessKeyID != want.AccessKeyID || a.Scope() != want.Scope() || strings.Join(a.SignedHeaders, ";") != "content-type;host;x-amz-date" || a.Signature != sig {
		t.Fatalf("got %+v, want %+v", a, want)
	}
	if s := a.String(); strings.Contains(s, sig) || !strings.Contains(s, "Credential=AKID/20250601/eu-west-1/gamelift/aws4_request") {
		t.Errorf("String() = %q", s)
	}
	// No spaces after the commas, as some clients send.
	if _, err := sigv4.ParseAuthorization("AWS4-HMAC-SHA256 Credential=AKID/20250601/r/s/aws4_request,SignedHeaders=host,Signature=" + sig); err != nil {
		t.Errorf("compact form: %v", err)
	}

	bad := map[string]struct{ value, code, msg string }{
		"empty":              {"", "MissingAuthenticationTokenException", "Missing Authentication Token"},
		"other scheme":       {"AWS AKID:abc", "IncompleteSignatureException", ""},
		"algorithm only":     {"AWS4-HMAC-SHA256", "IncompleteSignatureException", ""},
		"glued":              {"AWS4-HMAC-SHA256Credential=a/20250601/r/s/aws4_request", "IncompleteSignatureException", ""},
		"no credential":      {"AWS4-HMAC-SHA256 SignedHeaders=host, Signature=" + sig, "IncompleteSignatureException", "Authorization header requires 'Credential' parameter."},
		"all missing":        {"AWS4-HMAC-SHA256 Foo=bar", "IncompleteSignatureException", "Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter. Authorization header requires 'SignedHeaders' parameter."},
		"short credential":   {"AWS4-HMAC-SHA256 Credential=AKID/20250601/r/aws4_request, SignedHeaders=host, Signature=" + sig, "IncompleteSignatureException", ""},
		"bad terminator":     {"AWS4-HMAC-SHA256 Credential=AKID/20250601/r/s/aws5_request, SignedHeaders=host, Signature=" + sig, "IncompleteSignatureException", ""},
		"bad date":           {"AWS4-HMAC-SHA256 Credential=AKID/2025-06-01/r/s/aws4_request, SignedHeaders=host, Signature=" + sig, "IncompleteSignatureException", ""},
		"no key":             {"AWS4-HMAC-SHA256 Credential=/20250601/r/s/aws4_request, SignedHeaders=host, Signature=" + sig, "IncompleteSignatureException", ""},
		"host not signed":    {"AWS4-HMAC-SHA256 Credential=AKID/20250601/r/s/aws4_request, SignedHeaders=x-amz-date, Signature=" + sig, "IncompleteSignatureException", "'Host' must be a 'SignedHeader' in the AWS Authorization."},
		"upper-case header":  {"AWS4-HMAC-SHA256 Credential=AKID/20250601/r/s/aws4_request, SignedHeaders=Host, Signature=" + sig, "IncompleteSignatureException", ""},
		"empty header name":  {"AWS4-HMAC-SHA256 Credential=AKID/20250601/r/s/aws4_request, SignedHeaders=host;;x, Signature=" + sig, "IncompleteSignatureException", ""},
		"repeated parameter": {"AWS4-HMAC-SHA256 Credential=AKID/20250601/r/s/aws4_request, SignedHeaders=host, Signature=" + sig + ", Signature=" + sig, "IncompleteSignatureException", ""},
		"parameter no value": {"AWS4-HMAC-SHA256 Credential, SignedHeaders=host, Signature=" + sig, "IncompleteSignatureException", ""},
		"huge":               {"AWS4-HMAC-SHA256 Credential=" + strings.Repeat("a", 20000), "IncompleteSignatureException", ""},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := sigv4.ParseAuthorization(tc.value)
			status := 400
			if tc.code == "MissingAuthenticationTokenException" {
				status = 403
			}
			checkOutcome(t, err, tc.code, status, tc.msg, testSecret, "Signature="+sig)
		})
	}
}

// TestWireDetails covers what only a hand-made request shows: repeated
// header values, inner spaces, a signed Content-Length, Go's server moving
// Host out of the header map, an absolute-form request target.
func TestWireDetails(t *testing.T) {
	srv := newVerifyServer(t)
	v := &sigv4.Verifier{Service: "gamelift", Keys: func(string) (string, bool) { return testSecret, true }, Now: func() time.Time { return testNow }}
	r, _ := http.NewRequest("POST", srv.URL+"/", strings.NewReader(jsonBody))
	r.Header.Set("X-Amz-Target", "  GameLift.DescribeGameServer  ")
	r.Header.Set("X-Custom", "a   b    c")
	r.Header.Add("X-Multi", "one")
	r.Header.Add("X-Multi", " two ")
	signV2(t, r, []byte(jsonBody), creds{testKey, testSecret, ""}, "gamelift", testNow, false)
	if a := r.Header.Get("Authorization"); !strings.Contains(a, "content-length") || !strings.Contains(a, "x-multi") {
		t.Fatalf("the signer did not sign what this test needs: %s", a)
	}
	if _, err := srv.do(t, v, r); err != nil {
		t.Fatalf("refused: %v", err)
	}

	// A request handled in-process with an absolute-form target.
	in := httptest.NewRequest("POST", "http://127.0.0.1:9080/a%20b?x=1", strings.NewReader("{}"))
	signV2(t, in, []byte("{}"), creds{testKey, testSecret, ""}, "gamelift", testNow, false)
	if _, err := v.Verify(in, []byte("{}")); err != nil {
		t.Fatalf("absolute form refused: %v", err)
	}
}

// TestTargetMustBeSigned: a JSON request's X-Amz-Target names its
// operation, so a signature that does not cover it could be replayed as
// another operation. With the header present it must be signed, in both
// modes; without it (CBOR requests) nothing changes.
func TestTargetMustBeSigned(t *testing.T) {
	body := []byte(`{}`)
	newReq := func() *http.Request {
		r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:9080/", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/x-amz-json-1.1")
		return r
	}
	keys := func(id string) (string, bool) { return testSecret, id == testKey }
	for _, unauth := range []bool{false, true} {
		v := &sigv4.Verifier{Service: "gamelift", Keys: keys, Unauthenticated: unauth, Now: func() time.Time { return testNow }}

		// Signed without X-Amz-Target, which is then added: refused.
		r := newReq()
		signV2(t, r, body, creds{akid: testKey, secret: testSecret}, "gamelift", testNow, false)
		r.Header.Set("X-Amz-Target", "GameLift.DeleteBuild")
		_, err := v.Verify(r, body)
		var se *sigv4.Error
		if !errors.As(err, &se) || se.Code != sigv4.CodeIncompleteSignature || !strings.Contains(se.Message, "X-Amz-Target") {
			t.Errorf("unauthenticated=%v: X-Amz-Target not signed: got %v, want %s naming X-Amz-Target", unauth, err, sigv4.CodeIncompleteSignature)
		}

		// Signed with it, as the SDKs do: accepted.
		r = newReq()
		r.Header.Set("X-Amz-Target", "GameLift.ListBuilds")
		signV2(t, r, body, creds{akid: testKey, secret: testSecret}, "gamelift", testNow, false)
		if _, err := v.Verify(r, body); err != nil {
			t.Errorf("unauthenticated=%v: X-Amz-Target signed: %v", unauth, err)
		}

		// No X-Amz-Target at all (a CBOR request): accepted.
		r = newReq()
		signV2(t, r, body, creds{akid: testKey, secret: testSecret}, "gamelift", testNow, false)
		if _, err := v.Verify(r, body); err != nil {
			t.Errorf("unauthenticated=%v: no X-Amz-Target: %v", unauth, err)
		}
	}
}

// TestPrecheck: Authenticator.Precheck refuses, from the headers alone,
// what Authenticate would refuse before looking at the signature.
func TestPrecheck(t *testing.T) {
	body := []byte(`{}`)
	signed := func(akid string, at time.Time) *http.Request {
		r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:9080/", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("X-Amz-Target", "GameLift.ListBuilds")
		signV2(t, r, body, creds{akid: akid, secret: testSecret}, "gamelift", at, false)
		return r
	}
	now := func() time.Time { return testNow }
	withKeys := sigv4.NewAuthenticator(map[string]string{testKey: testSecret}, now)
	without := sigv4.NewAuthenticator(nil, now)
	unsigned, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:9080/", nil)
	for _, tc := range []struct {
		name string
		a    *sigv4.Authenticator
		r    *http.Request
		code string
	}{
		{"valid", withKeys, signed(testKey, testNow), ""},
		{"unknown key", withKeys, signed("AKIDOTHER", testNow), sigv4.CodeUnrecognizedClient},
		{"expired", withKeys, signed(testKey, testNow.Add(-time.Hour)), "InvalidSignatureException"},
		{"no Authorization", withKeys, unsigned, sigv4.CodeMissingAuthenticationToken},
		{"no keys: any key", without, signed("AKIDOTHER", testNow.Add(-time.Hour)), ""},
		{"no keys: no Authorization", without, unsigned, sigv4.CodeMissingAuthenticationToken},
	} {
		err := tc.a.Precheck(tc.r)
		var se *sigv4.Error
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.code != "" && (!errors.As(err, &se) || se.Code != tc.code):
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
}
