package sigv4_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sdkconn/sdkconntest"
	"github.com/hoistgg/hoist/internal/sigv4"
)

var _ sdkconn.SignedURLVerifier = (*sigv4.Authenticator)(nil)

// sdkSignParams returns the query parameters the Go server SDK adds to a
// connection URL when it signs with credentials instead of an auth token,
// written here from the SDK's algorithm (independently of the package):
// the canonical string is ComputeId, FleetId and pID sorted by name, each
// name and value url.QueryEscape'd, joined by "&"; the string to sign is
// the algorithm, the date-time, the scope and that string's SHA-256 hex.
func sdkSignParams(computeID, fleetID, pid, akid, secret, token, region string, at time.Time) map[string]string {
	signed := map[string]string{"ComputeId": computeID, "FleetId": fleetID, "pID": pid}
	names := make([]string, 0, len(signed))
	for k := range signed {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = url.QueryEscape(k) + "=" + url.QueryEscape(signed[k])
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "&")))
	date, dateTime := at.UTC().Format("20060102"), at.UTC().Format("20060102T150405Z")
	scope := date + "/" + region + "/gamelift/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + dateTime + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	mac := func(key []byte, s string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	key := mac(mac(mac(mac([]byte("AWS4"+secret), date), region), "gamelift"), "aws4_request")
	out := map[string]string{
		"Authorization":    "SigV4",
		"X-Amz-Algorithm":  "AWS4-HMAC-SHA256",
		"X-Amz-Credential": akid + "/" + scope,
		"X-Amz-Date":       dateTime,
		"X-Amz-Signature":  hex.EncodeToString(mac(key, toSign)),
	}
	if token != "" {
		out["X-Amz-Security-Token"] = token
	}
	return out
}

// sdkURL builds a connection URL as the Go server SDK does (its own
// parameters, then the signing ones, encoded by url.Values.Encode) and
// returns the query the server parses from it.
func sdkURL(t *testing.T, computeID, fleetID, pid string, sig map[string]string) url.Values {
	t.Helper()
	params := url.Values{}
	params.Add("pID", pid)
	params.Add("sdkVersion", "5.6.0")
	params.Add("sdkLanguage", "Go")
	params.Add("ComputeId", computeID)
	params.Add("FleetId", fleetID)
	params.Add("IdempotencyToken", "8d3c1f0e-0000-4000-8000-000000000000")
	for k, v := range sig {
		params.Add(k, v)
	}
	u, err := url.Parse("ws://127.0.0.1:9080/sdk")
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = params.Encode()
	parsed, err := url.Parse(u.String())
	if err != nil {
		t.Fatal(err)
	}
	return parsed.Query()
}

func TestVerifySignedURL(t *testing.T) {
	const (
		fleet   = "fleet-1a2b3c4d-0000-4000-8000-000000000000"
		compute = "my-host-1"
		pid     = "proc-1"
	)
	keys := map[string]string{testKey: testSecret}
	good := func() map[string]string {
		return sdkSignParams(compute, fleet, pid, testKey, testSecret, "", testRegion, testNow)
	}
	edit := func(m map[string]string, k, v string) map[string]string {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := map[string]struct {
		query  url.Values
		unauth bool
		code   string
		msg    string
	}{
		"good":                    {query: sdkURL(t, compute, fleet, pid, good())},
		"session token":           {query: sdkURL(t, compute, fleet, pid, sdkSignParams(compute, fleet, pid, testKey, testSecret, "tok/+=", testRegion, testNow))},
		"values needing escaping": {query: sdkURL(t, "host a/b+c", "fleet.1", "ü proc~", sdkSignParams("host a/b+c", "fleet.1", "ü proc~", testKey, testSecret, "", testRegion, testNow))},
		"14 minutes old":          {query: sdkURL(t, compute, fleet, pid, sdkSignParams(compute, fleet, pid, testKey, testSecret, "", testRegion, testNow.Add(-14*time.Minute)))},
		"wrong secret": {query: sdkURL(t, compute, fleet, pid, sdkSignParams(compute, fleet, pid, testKey, "wrong", "", testRegion, testNow)),
			code: "InvalidSignatureException", msg: msgSignature},
		"unknown key": {query: sdkURL(t, compute, fleet, pid, sdkSignParams(compute, fleet, pid, "AKIDOTHER", testSecret, "", testRegion, testNow)),
			code: "UnrecognizedClientException"},
		"other FleetId":   {query: sdkURL(t, compute, "fleet-other", pid, good()), code: "InvalidSignatureException"},
		"other ComputeId": {query: sdkURL(t, "other-host", fleet, pid, good()), code: "InvalidSignatureException"},
		"other pID":       {query: sdkURL(t, compute, fleet, "proc-2", good()), code: "InvalidSignatureException"},
		"expired": {query: sdkURL(t, compute, fleet, pid, sdkSignParams(compute, fleet, pid, testKey, testSecret, "", testRegion, testNow.Add(-16*time.Minute))),
			code: "InvalidSignatureException", msg: "Signature expired: 20250601T094400Z is now earlier than 20250601T094500Z (20250601T100000Z - 15 min.)"},
		"future": {query: sdkURL(t, compute, fleet, pid, sdkSignParams(compute, fleet, pid, testKey, testSecret, "", testRegion, testNow.Add(20*time.Minute))),
			code: "InvalidSignatureException", msg: "Signature not yet current: 20250601T102000Z is still later than 20250601T101500Z (20250601T100000Z + 15 min.)"},
		"date changed":       {query: sdkURL(t, compute, fleet, pid, edit(good(), "X-Amz-Date", "20250601T100500Z")), code: "InvalidSignatureException"},
		"scope date differs": {query: sdkURL(t, compute, fleet, pid, edit(good(), "X-Amz-Date", "20250602T100000Z")), code: "InvalidSignatureException"},
		"other service": {query: sdkURL(t, compute, fleet, pid, edit(good(), "X-Amz-Credential", testKey+"/20250601/us-west-2/s3/aws4_request")),
			code: "InvalidSignatureException", msg: "Credential should be scoped to correct service: 'gamelift'."},
		"no signature":  {query: sdkURL(t, compute, fleet, pid, edit(good(), "X-Amz-Signature", "")), code: "IncompleteSignatureException", msg: "The signed URL lacks X-Amz-Signature."},
		"no date":       {query: sdkURL(t, compute, fleet, pid, edit(good(), "X-Amz-Date", "")), code: "IncompleteSignatureException"},
		"bad date":      {query: sdkURL(t, compute, fleet, pid, edit(good(), "X-Amz-Date", "2025-06-01T10:00:00Z")), code: "IncompleteSignatureException"},
		"no credential": {query: sdkURL(t, compute, fleet, pid, edit(good(), "X-Amz-Credential", "")), code: "IncompleteSignatureException"},
		"bad credential": {query: sdkURL(t, compute, fleet, pid, edit(good(), "X-Amz-Credential", testKey+"/20250601/gamelift/aws4_request")),
			code: "IncompleteSignatureException"},
		"other algorithm": {query: sdkURL(t, compute, fleet, pid, edit(good(), "X-Amz-Algorithm", "AWS4-ECDSA-P256-SHA256")), code: "IncompleteSignatureException"},
		"not SigV4":       {query: sdkURL(t, compute, fleet, pid, edit(good(), "Authorization", "token")), code: "IncompleteSignatureException"},
		"FleetId twice": {query: func() url.Values {
			q := sdkURL(t, compute, fleet, pid, good())
			q.Add("FleetId", "fleet-other")
			return q
		}(), code: "IncompleteSignatureException"},

		"unauthenticated: wrong secret": {unauth: true, query: sdkURL(t, compute, fleet, pid, sdkSignParams(compute, fleet, pid, "any", "thing", "", testRegion, testNow))},
		"unauthenticated: old":          {unauth: true, query: sdkURL(t, compute, fleet, pid, sdkSignParams(compute, fleet, pid, "any", "thing", "", testRegion, testNow.Add(-48*time.Hour)))},
		"unauthenticated: no signature": {unauth: true, query: sdkURL(t, compute, fleet, pid, edit(good(), "X-Amz-Signature", "")), code: "IncompleteSignatureException"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			k := keys
			if tc.unauth {
				k = nil
			}
			a := sigv4.NewAuthenticator(k, func() time.Time { panic("VerifySignedURL must use the now it is given") })
			gotFleet, gotCompute, err := a.VerifySignedURL(context.Background(), tc.query, testNow)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if gotFleet != tc.query.Get("FleetId") || gotCompute != tc.query.Get("ComputeId") {
					t.Fatalf("got %q, %q; want %q, %q", gotFleet, gotCompute, tc.query.Get("FleetId"), tc.query.Get("ComputeId"))
				}
				return
			}
			var e *sigv4.Error
			if !errors.As(err, &e) || e.Code != tc.code {
				t.Fatalf("err = %v, want %s", err, tc.code)
			}
			if tc.msg != "" && e.Message != tc.msg {
				t.Errorf("message = %q\nwant      %q", e.Message, tc.msg)
			}
			if sig := tc.query.Get("X-Amz-Signature"); sig != "" && strings.Contains(e.Error(), sig) || strings.Contains(e.Error(), testSecret) {
				t.Errorf("message %q holds a secret or signature", e.Error())
			}
			if gotFleet != "" || gotCompute != "" {
				t.Errorf("refused, yet returned %q, %q", gotFleet, gotCompute)
			}
		})
	}
}

// TestSignURLQuery checks the package's signer against the SDK's algorithm.
func TestSignURLQuery(t *testing.T) {
	for _, token := range []string{"", "tok"} {
		q := url.Values{"ComputeId": {"host a/b"}, "FleetId": {"fleet-1"}, "pID": {"p+1"}, "sdkVersion": {"5.6.0"}}
		sigv4.SignURLQuery(q, testKey, testSecret, token, testRegion, testNow)
		want := sdkSignParams("host a/b", "fleet-1", "p+1", testKey, testSecret, token, testRegion, testNow)
		for k, v := range want {
			if q.Get(k) != v {
				t.Errorf("%s = %q, want %q", k, q.Get(k), v)
			}
		}
		if _, ok := q["X-Amz-Security-Token"]; ok != (token != "") {
			t.Errorf("token %q: X-Amz-Security-Token present = %v", token, ok)
		}
	}
}

// TestSignedURLThroughSDKEndpoint connects to the SDK endpoint (sdkconn on
// loopback) with a URL signed as the Go server SDK signs it.
func TestSignedURLThroughSDKEndpoint(t *testing.T) {
	auth := sigv4.NewAuthenticator(map[string]string{testKey: testSecret}, nil)
	api := &sdkconntest.API{}
	e := sdkconntest.Start(t, sdkconn.Config{API: api, SignedURLs: auth, Now: func() time.Time { return testNow }}, nil)
	query := func(secret string) url.Values {
		q := sdkclient.Query("proc-1", "host-1", "fleet-1", "")
		q.Del("Authorization")
		for k, v := range sdkSignParams("host-1", "fleet-1", "proc-1", testKey, secret, "", testRegion, testNow) {
			q.Set(k, v)
		}
		return q
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	_, err := sdkclient.Dial(ctx, e.URL, query("wrong"), sdkclient.Options{})
	var he *sdkclient.HandshakeError
	if !errors.As(err, &he) || he.StatusCode != 403 {
		t.Fatalf("wrong secret: err = %v, want a 403 handshake", err)
	}
	c, err := sdkclient.Dial(ctx, e.URL, query(testSecret), sdkclient.Options{})
	if err != nil {
		t.Fatalf("signed connection refused: %v", err)
	}
	defer c.Drop()
	call := api.WaitMethod(t, 30*time.Second, "Connected", "proc-1", 1)
	if call.Conn.FleetID != "fleet-1" || call.Conn.ComputeName != "host-1" {
		t.Fatalf("Connected with %+v, want fleet-1/host-1", call.Conn)
	}
}
