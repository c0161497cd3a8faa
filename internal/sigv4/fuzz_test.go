package sigv4_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/sigv4"
)

const fuzzSig = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// FuzzParseAuthorization: any header value parses or is refused with an
// *Error that does not echo the signature; nothing panics.
func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{
		"",
		"AWS4-HMAC-SHA256 Credential=AKID/20250601/us-west-2/gamelift/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + fuzzSig,
		"AWS4-HMAC-SHA256 Credential=a/b/20250601/r/s/aws4_request,SignedHeaders=host,Signature=x",
		"AWS4-HMAC-SHA256 Credential=,SignedHeaders=;,Signature==",
		"AWS4-HMAC-SHA256 ,,,=,==",
		"AWS4-HMAC-SHA256 Credential=////aws4_request, SignedHeaders=host, Signature=" + fuzzSig,
		"AWS AKID:sig",
		"AWS4-HMAC-SHA256\tCredential=\xff/20250601/r/s/aws4_request, SignedHeaders=host, Signature=\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		a, err := sigv4.ParseAuthorization(v)
		if err != nil {
			var e *sigv4.Error
			if !errors.As(err, &e) || e.Code == "" || e.Status == 0 {
				t.Fatalf("err = %#v", err)
			}
			if a.Signature != "" {
				t.Fatal("refused, yet returned a signature")
			}
			if _, sig, ok := strings.Cut(v, "Signature="); ok && len(sig) >= 8 && strings.Contains(e.Message, sig) {
				t.Fatalf("message %q echoes the signature", e.Message)
			}
			return
		}
		if a.AccessKeyID == "" || len(a.Date) != 8 || a.Region == "" || a.Service == "" || len(a.SignedHeaders) == 0 {
			t.Fatalf("accepted an incomplete header: %+v", a)
		}
		_ = a.String()
	})
}

// FuzzVerify drives arbitrary headers, targets and bodies through both
// flavours, with keys and in unauthenticated mode: nothing panics, every
// refusal is an *Error, and with keys nothing is accepted unsigned.
func FuzzVerify(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AKIDHOIST/20250601/us-west-2/gamelift/aws4_request, SignedHeaders=host;x-amz-date, Signature="+fuzzSig,
		"20250601T100000Z", "/a/../b//c?x=1&y", "", "body")
	f.Add("AWS4-HMAC-SHA256 Credential=AKIDHOIST/20250601/us-west-2/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature="+fuzzSig,
		"20250601T100000Z", "/b/%C3%BC%zz?%zz=%&a=b;c", "UNSIGNED-PAYLOAD", "")
	f.Add("AWS4-HMAC-SHA256 Credential=AKIDHOIST/20250601/us-west-2/gamelift/aws4_request, SignedHeaders=host;transfer-encoding;content-length, Signature=zz",
		"20250601T100000", "*", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "\x00")
	f.Fuzz(func(t *testing.T, auth, date, target, contentSHA, body string) {
		for _, flavour := range []sigv4.Flavour{sigv4.API, sigv4.S3} {
			for _, unauth := range []bool{false, true} {
				r := &http.Request{Method: "POST", Host: "127.0.0.1:9080", RequestURI: target, Header: http.Header{},
					URL: &url.URL{Path: "/"}, ContentLength: int64(len(body))}
				if u, err := url.ParseRequestURI(target); err == nil {
					r.URL = u
				}
				r.Header.Set("Authorization", auth)
				r.Header.Set("X-Amz-Date", date)
				r.Header.Set("X-Amz-Content-Sha256", contentSHA)
				v := &sigv4.Verifier{Service: "gamelift", Flavour: flavour, Unauthenticated: unauth,
					Keys: func(id string) (string, bool) { return testSecret, id == testKey },
					Now:  func() time.Time { return testNow }}
				if flavour == sigv4.S3 {
					v.Service = "s3"
				}
				s, err := v.Verify(r, []byte(body))
				if err != nil {
					var e *sigv4.Error
					if !errors.As(err, &e) || e.Code == "" || e.Status == 0 {
						t.Fatalf("err = %#v", err)
					}
					if strings.Contains(e.Message, testSecret) {
						t.Fatal("message holds the secret")
					}
					continue
				}
				if !unauth {
					// Accepting means someone computed an HMAC with
					// testSecret; the fuzzer cannot.
					t.Fatalf("accepted %+v without a valid signature", s)
				}
			}
		}
	})
}

// FuzzVerifySignedURL drives arbitrary query strings through the
// signed-URL verifier.
func FuzzVerifySignedURL(f *testing.F) {
	q := url.Values{"ComputeId": {"h"}, "FleetId": {"f"}, "pID": {"p"}}
	sigv4.SignURLQuery(q, testKey, testSecret, "tok", testRegion, testNow)
	f.Add(q.Encode())
	f.Add("Authorization=SigV4&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=%2F%2F%2F%2Faws4_request&X-Amz-Date=x&X-Amz-Signature=")
	f.Add("Authorization=SigV4&Authorization=SigV4&FleetId=%ff")
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw)
		for _, keys := range []map[string]string{{testKey: testSecret}, nil} {
			a := sigv4.NewAuthenticator(keys, nil)
			fleet, compute, err := a.VerifySignedURL(t.Context(), q, testNow)
			if err != nil {
				var e *sigv4.Error
				if !errors.As(err, &e) || e.Code == "" {
					t.Fatalf("err = %#v", err)
				}
				if fleet != "" || compute != "" {
					t.Fatal("refused, yet returned IDs")
				}
			}
		}
	})
}
