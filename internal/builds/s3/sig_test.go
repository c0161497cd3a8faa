package s3

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

func TestVerifySigV4(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	creds := aws.Credentials{AccessKeyID: "ASIATEST", SecretAccessKey: "secret", SessionToken: "tok"}
	sign := func(method, target, service string, at time.Time, mod func(*http.Request)) *http.Request {
		r := httptest.NewRequest(method, target, nil)
		r.Header.Set("x-amz-content-sha256", unsignedPayload)
		r.Header.Set("x-amz-checksum-crc32", "AAAAAA==")
		if mod != nil {
			mod(r)
		}
		signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
		if err := signer.SignHTTP(context.Background(), creds, r, unsignedPayload, service, "eu-west-1", at); err != nil {
			t.Fatal(err)
		}
		return r
	}
	const key = "http://127.0.0.1:9080/hoist-builds-us-west-2/builds/build-1.zip"
	tests := map[string]struct {
		req    func() *http.Request
		secret string
		code   string
	}{
		"valid": {req: func() *http.Request { return sign("PUT", key, "s3", now, nil) }},
		"query and odd key": {req: func() *http.Request {
			return sign("PUT", "http://127.0.0.1:9080/b/a%20b/%C3%BC+x%2Bz.zip?uploadId=a%2Fb&partNumber=2&x-id=UploadPart", "s3", now, nil)
		}},
		"valueless query": {req: func() *http.Request { return sign("POST", key+"?uploads", "s3", now, nil) }},
		"unsigned header changed": {req: func() *http.Request {
			r := sign("PUT", key, "s3", now, nil)
			r.Header.Set("User-Agent", "other")
			return r
		}},
		"wrong secret": {req: func() *http.Request { return sign("PUT", key, "s3", now, nil) }, secret: "other", code: "SignatureDoesNotMatch"},
		"path changed": {req: func() *http.Request {
			r := sign("PUT", key, "s3", now, nil)
			r.URL.Path += "x"
			r.RequestURI += "x"
			return r
		}, code: "SignatureDoesNotMatch"},
		"query added": {req: func() *http.Request {
			r := sign("PUT", key, "s3", now, nil)
			r.URL.RawQuery = "uploads"
			r.RequestURI += "?uploads"
			return r
		}, code: "SignatureDoesNotMatch"},
		"signed header changed": {req: func() *http.Request {
			r := sign("PUT", key, "s3", now, nil)
			r.Header.Set("x-amz-checksum-crc32", "BBBBBB==")
			return r
		}, code: "SignatureDoesNotMatch"},
		"payload hash changed": {req: func() *http.Request {
			r := sign("PUT", key, "s3", now, nil)
			r.Header.Set("x-amz-content-sha256", streamingUnsignedTrailer)
			return r
		}, code: "SignatureDoesNotMatch"},
		"host changed": {req: func() *http.Request {
			r := sign("PUT", key, "s3", now, nil)
			r.Host = "127.0.0.1:9081"
			return r
		}, code: "SignatureDoesNotMatch"},
		"skewed late":   {req: func() *http.Request { return sign("PUT", key, "s3", now.Add(-16*time.Minute), nil) }, code: "RequestTimeTooSkewed"},
		"skewed early":  {req: func() *http.Request { return sign("PUT", key, "s3", now.Add(16*time.Minute), nil) }, code: "RequestTimeTooSkewed"},
		"other service": {req: func() *http.Request { return sign("PUT", key, "gamelift", now, nil) }, code: "AuthorizationHeaderMalformed"},
		"not signed":    {req: func() *http.Request { return httptest.NewRequest("PUT", key, nil) }, code: "AccessDenied"},
		"sigv2": {req: func() *http.Request {
			r := httptest.NewRequest("PUT", key, nil)
			r.Header.Set("Authorization", "AWS ASIATEST:abc")
			return r
		}, code: "AuthorizationHeaderMalformed"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			secret := tc.secret
			if secret == "" {
				secret = creds.SecretAccessKey
			}
			err := VerifySigV4(tc.req(), secret, now)
			var se *Error
			if tc.code == "" && err != nil || tc.code != "" && (!errors.As(err, &se) || se.Code != tc.code) {
				t.Fatalf("err = %v, want %q", err, tc.code)
			}
		})
	}
}
