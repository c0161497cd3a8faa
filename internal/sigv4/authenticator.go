package sigv4

import (
	"context"
	"maps"
	"net/http"
	"time"
)

// Service names requests are signed for.
const (
	ServiceGameLift = "gamelift"
	ServiceS3       = "s3"
)

// Authenticator authenticates GameLift API requests (its Authenticate has
// the signature of protocol.Authenticator), the SigV4-signed connection
// URLs of the Server SDK (its VerifySignedURL has the signature of
// sdkconn.SignedURLVerifier) and S3 requests signed with Hoist's own keys
// (its VerifyS3 has the signature of builds.OperatorVerifier), all against
// one map of access keys.
type Authenticator struct {
	keys map[string]string
	now  func() time.Time
	api  Verifier
	s3   Verifier
}

// NewAuthenticator returns an Authenticator checking signatures made with
// keys (access key ID -> secret access key; the map is copied). With no
// keys it runs in unauthenticated mode: requests must still carry a
// well-formed SigV4 Authorization header for service gamelift, but no key,
// signature or clock is checked. now is the clock (nil: time.Now).
func NewAuthenticator(keys map[string]string, now func() time.Time) *Authenticator {
	if now == nil {
		now = time.Now
	}
	a := &Authenticator{keys: maps.Clone(keys), now: now}
	a.api = Verifier{
		Service:         ServiceGameLift,
		Flavour:         API,
		Keys:            a.lookup,
		Unauthenticated: len(a.keys) == 0,
		Now:             now,
	}
	a.s3 = a.api
	a.s3.Service, a.s3.Flavour = ServiceS3, S3
	return a
}

// Unauthenticated reports whether a runs in unauthenticated mode.
func (a *Authenticator) Unauthenticated() bool { return len(a.keys) == 0 }

func (a *Authenticator) lookup(accessKeyID string) (string, bool) {
	s, ok := a.keys[accessKeyID]
	return s, ok
}

// Authenticate verifies r's SigV4 signature (service gamelift) over body,
// the whole request body, and returns r's context carrying the caller's
// access key ID (see AccessKeyID). Errors are *Error with the codes of the
// AWS JSON and CBOR services.
func (a *Authenticator) Authenticate(r *http.Request, body []byte) (context.Context, error) {
	s, err := a.api.Verify(r, body)
	if err != nil {
		return nil, err
	}
	return WithAccessKeyID(r.Context(), s.AccessKeyID), nil
}

// VerifyS3 verifies r's SigV4 signature for service s3 (S3's canonical
// request: the path as sent, the payload hash from x-amz-content-sha256)
// with one of the access keys. In unauthenticated mode any well-formed
// signature passes. Errors are *Error with S3's codes.
func (a *Authenticator) VerifyS3(r *http.Request) error {
	_, err := a.s3.Verify(r, nil)
	return err
}

// Precheck checks what of r's signature can be checked without its body:
// the Authorization header's form, X-Amz-Date and the scope, and with
// keys the clock and that the access key is known. Callers run it before
// they read a body, so that a client without a usable signature cannot
// make Hoist read (and hold) a body at all. Authenticate checks all of it
// again, and the signature. Errors are *Error, as Authenticate's.
func (a *Authenticator) Precheck(r *http.Request) error {
	s, err := a.api.parse(r)
	if err != nil {
		return err
	}
	if a.api.Unauthenticated {
		return nil
	}
	if err := a.api.checkTime(s); err != nil {
		return err
	}
	if _, ok := a.lookup(s.AccessKeyID); !ok {
		return newError(a.api.Flavour, KindUnknownKey, "")
	}
	return nil
}

type accessKeyIDKey struct{}

// WithAccessKeyID returns ctx carrying an authenticated access key ID.
func WithAccessKeyID(ctx context.Context, accessKeyID string) context.Context {
	return context.WithValue(ctx, accessKeyIDKey{}, accessKeyID)
}

// AccessKeyID returns the access key ID the request whose operation runs
// with ctx was signed with ("" when ctx carries none).
func AccessKeyID(ctx context.Context) string {
	id, _ := ctx.Value(accessKeyIDKey{}).(string)
	return id
}
