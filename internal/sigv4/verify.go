package sigv4

import (
	"crypto/sha256"
	"net/http"
	"sync"
	"time"
)

// MaxSkew is how far X-Amz-Date may be from the verifier's clock, either
// way.
const MaxSkew = 15 * time.Minute

// Payload hash values of x-amz-content-sha256 other than a hex digest
// (S3 flavour).
const (
	UnsignedPayload                 = "UNSIGNED-PAYLOAD"
	StreamingUnsignedPayloadTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	StreamingSignedPayloadPrefix    = "STREAMING-AWS4-"
)

// Header names.
const (
	HeaderAuthorization = "Authorization"
	HeaderDate          = "X-Amz-Date"
	HeaderSecurityToken = "X-Amz-Security-Token"
	HeaderContentSHA256 = "X-Amz-Content-Sha256"
	HeaderTarget        = "X-Amz-Target"
)

// Verifier verifies SigV4 signatures in the Authorization header. The zero
// value is not usable: Service must be set. A Verifier is safe for
// concurrent use once configured.
type Verifier struct {
	// Service is the service name the credential scope must name
	// ("gamelift", "s3").
	Service string
	// Flavour selects the canonical request rules and error codes.
	Flavour Flavour
	// Keys returns the secret access key of an access key ID, ok false
	// when the key is unknown. Nil: every key is unknown.
	Keys func(accessKeyID string) (secret string, ok bool)
	// Unauthenticated accepts any well-formed signature: the header, the
	// scope and X-Amz-Date are checked, the key, the signature and the
	// clock are not.
	Unauthenticated bool
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Signed is a request whose signature was accepted.
type Signed struct {
	Authorization
	// Time is X-Amz-Date.
	Time time.Time
	// SecurityToken is X-Amz-Security-Token, "" when absent.
	SecurityToken string
	// PayloadHash is the payload hash the signature covers.
	PayloadHash string

	amzDate string // X-Amz-Date as sent
}

// Verify checks r's signature with the secret Keys returns for its access
// key. body is the whole request body in the API flavour (its hash is the
// payload hash; an x-amz-content-sha256 header must agree with it); the S3
// flavour ignores it and takes the payload hash from x-amz-content-sha256.
// Errors are *Error.
func (v *Verifier) Verify(r *http.Request, body []byte) (*Signed, error) {
	s, err := v.parse(r)
	if err != nil {
		return nil, err
	}
	if v.Unauthenticated {
		if v.Flavour != S3 {
			s.PayloadHash = sha256Hex(body)
		}
		return s, nil
	}
	if err := v.checkTime(s); err != nil {
		return nil, err
	}
	var secret string
	ok := false
	if v.Keys != nil {
		secret, ok = v.Keys(s.AccessKeyID)
	}
	if !ok {
		return nil, newError(v.Flavour, KindUnknownKey, "")
	}
	if err := v.checkSignature(r, body, s, secret); err != nil {
		return nil, err
	}
	return s, nil
}

// VerifySecret checks r's signature with secret, for callers that find the
// secret themselves (S3 upload credentials carry a session token the
// caller checks too). Unauthenticated and Keys are not consulted. Errors
// are *Error.
func (v *Verifier) VerifySecret(r *http.Request, body []byte, secret string) (*Signed, error) {
	s, err := v.parse(r)
	if err != nil {
		return nil, err
	}
	if err := v.checkTime(s); err != nil {
		return nil, err
	}
	if err := v.checkSignature(r, body, s, secret); err != nil {
		return nil, err
	}
	return s, nil
}

// Parse checks that r carries a well-formed signature for the Verifier's
// service (the Authorization header, X-Amz-Date and the credential scope)
// without checking the key, the signature or the clock.
func (v *Verifier) Parse(r *http.Request) (*Signed, error) {
	s, err := v.parse(r)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (v *Verifier) parse(r *http.Request) (*Signed, *Error) {
	f := v.Flavour
	auth := r.Header.Values(HeaderAuthorization)
	if len(auth) == 0 || len(auth) == 1 && auth[0] == "" {
		return nil, newError(f, KindMissing, "")
	}
	if len(auth) > 1 {
		return nil, newError(f, KindMalformed, "The request carries more than one Authorization header.")
	}
	a, err := parseAuthorization(f, auth[0])
	if err != nil {
		return nil, err
	}
	s := &Signed{Authorization: a, SecurityToken: r.Header.Get(HeaderSecurityToken)}
	amzDate := r.Header.Get(HeaderDate)
	if amzDate == "" {
		return nil, newError(f, KindMalformed, "Authorization header requires existence of a 'X-Amz-Date' header.")
	}
	t, ok := parseAmzDate(amzDate)
	if !ok {
		return nil, errorf(f, KindMalformed, "X-Amz-Date must be in ISO 8601 basic format (yyyymmddThhmmssZ); got %q.", clip(amzDate))
	}
	s.Time, s.amzDate = t, amzDate
	if a.Date != amzDate[:len(DateFormat)] {
		return nil, errorf(f, KindScope, "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: %q != %q, from %q.", a.Date, amzDate[:len(DateFormat)], amzDate)
	}
	if a.Service != v.Service {
		if f == S3 {
			return nil, errorf(f, KindScope, "The credential scope names service %q; this endpoint expects %q.", clip(a.Service), v.Service)
		}
		return nil, errorf(f, KindScope, "Credential should be scoped to correct service: '%s'.", v.Service)
	}
	if f == S3 {
		s.PayloadHash = r.Header.Get(HeaderContentSHA256)
	} else if _, ok := r.Header[HeaderTarget]; ok && !contains(a.SignedHeaders, "x-amz-target") {
		// The operation a JSON request runs is named by X-Amz-Target: a
		// signature that does not cover it could be replayed as another
		// operation. The AWS SDKs always sign it.
		return nil, newError(f, KindMalformed, "'X-Amz-Target' must be a 'SignedHeader' in the AWS Authorization when the request carries it.")
	}
	return s, nil
}

// checkTime refuses an X-Amz-Date more than MaxSkew from the clock.
func (v *Verifier) checkTime(s *Signed) *Error {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	return checkSkew(v.Flavour, s.Time, now())
}

func checkSkew(f Flavour, t, now time.Time) *Error {
	now = now.UTC()
	switch {
	case t.Before(now.Add(-MaxSkew)):
		return errorf(f, KindExpired, "Signature expired: %s is now earlier than %s (%s - 15 min.)",
			t.Format(TimeFormat), now.Add(-MaxSkew).Format(TimeFormat), now.Format(TimeFormat))
	case t.After(now.Add(MaxSkew)):
		return errorf(f, KindExpired, "Signature not yet current: %s is still later than %s (%s + 15 min.)",
			t.Format(TimeFormat), now.Add(MaxSkew).Format(TimeFormat), now.Format(TimeFormat))
	}
	return nil
}

// checkSignature computes r's signature with secret and compares it with
// the one sent.
func (v *Verifier) checkSignature(r *http.Request, body []byte, s *Signed, secret string) *Error {
	f := v.Flavour
	if f != S3 {
		s.PayloadHash = sha256Hex(body)
		if h := r.Header.Values(HeaderContentSHA256); len(h) > 0 && (len(h) > 1 || h[0] != s.PayloadHash) {
			return newError(f, KindSignature, msgPayloadMismatch)
		}
	}
	key := cachedKey(secret, s.Date, s.Region, s.Service)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	match := false
	queries := canonicalQueries(r.URL.RawQuery)
	for _, uri := range canonicalURIs(f, r) {
		for _, query := range queries {
			b := appendCanonicalRequest((*bp)[:0], r, uri, query, s.SignedHeaders, s.PayloadHash)
			creqHash := sha256.Sum256(b)
			b = appendStringToSign(b[:0], s.amzDate, &s.Authorization, &creqHash)
			var want [2 * sha256.Size]byte
			key.sign(&want, b)
			*bp = b
			// Every candidate is computed and compared, so the time
			// taken does not depend on which matched.
			if hexSignatureMatches(&want, s.Signature) {
				match = true
			}
		}
	}
	if !match {
		return newError(f, KindSignature, "")
	}
	return nil
}

// bufPool holds the buffers canonical requests and strings to sign are
// built in.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// parseAmzDate parses an X-Amz-Date (TimeFormat, UTC). It is time.Parse
// with that layout and an exact length, without the layout interpretation
// on every request; FuzzParseAmzDate compares the two.
func parseAmzDate(v string) (time.Time, bool) {
	if len(v) != len(TimeFormat) || v[8] != 'T' || v[15] != 'Z' {
		return time.Time{}, false
	}
	var n [14]int
	for i, j := 0, 0; i < 15; i++ {
		if i == 8 {
			continue
		}
		c := v[i]
		if c < '0' || c > '9' {
			return time.Time{}, false
		}
		n[j] = int(c - '0')
		j++
	}
	year := n[0]*1000 + n[1]*100 + n[2]*10 + n[3]
	month, day := n[4]*10+n[5], n[6]*10+n[7]
	hour, minute, sec := n[8]*10+n[9], n[10]*10+n[11], n[12]*10+n[13]
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	if month < 1 || month > 12 || hour > 23 || minute > 59 || sec > 59 || t.Day() != day {
		// Out of range (time.Date would normalize it): let time.Parse judge.
		pt, err := time.Parse(TimeFormat, v)
		return pt, err == nil
	}
	return t, true
}
