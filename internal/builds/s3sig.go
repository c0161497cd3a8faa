package builds

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// This file verifies SigV4 header signatures of S3 requests. It is the
// S3 flavour only (the canonical URI is the path as sent, never
// normalised; the payload hash is the x-amz-content-sha256 header), kept
// here until internal/sigv4 serves S3.

// maxClockSkew is how far X-Amz-Date may be from Hoist's clock.
const maxClockSkew = 15 * time.Minute

// sigV4Header is a parsed SigV4 Authorization header.
type sigV4Header struct {
	accessKeyID, date, region, service string
	signedHeaders                      []string
	signature                          string
}

func errSignature() *s3Error {
	return s3Errorf(http.StatusForbidden, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
}

func errMalformedAuth(format string, a ...any) *s3Error {
	return s3Errorf(http.StatusBadRequest, "AuthorizationHeaderMalformed", format, a...)
}

// parseAuthorization reads "AWS4-HMAC-SHA256 Credential=AKID/DATE/REGION/
// SERVICE/aws4_request, SignedHeaders=a;b, Signature=hex".
func parseAuthorization(v string) (*sigV4Header, error) {
	rest, ok := strings.CutPrefix(v, "AWS4-HMAC-SHA256 ")
	if !ok {
		return nil, errMalformedAuth("Hoist accepts only AWS4-HMAC-SHA256 signatures.")
	}
	h := &sigV4Header{}
	for _, part := range strings.Split(rest, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f := strings.Split(val, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return nil, errMalformedAuth("The Credential is not AKID/date/region/service/aws4_request.")
			}
			h.accessKeyID, h.date, h.region, h.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			h.signedHeaders = strings.Split(val, ";")
		case "Signature":
			h.signature = val
		}
	}
	if h.accessKeyID == "" || len(h.signedHeaders) == 0 || h.signature == "" {
		return nil, errMalformedAuth("The Authorization header lacks Credential, SignedHeaders or Signature.")
	}
	return h, nil
}

// verifySigV4 checks r's Authorization header signature with secret, and
// that X-Amz-Date is within maxClockSkew of now.
func verifySigV4(r *http.Request, secret string, now time.Time) error {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return errAccessDenied("Hoist's S3 endpoint takes requests signed in the Authorization header only (no presigned URLs).")
	}
	h, err := parseAuthorization(auth)
	if err != nil {
		return err
	}
	if h.service != "s3" {
		return errMalformedAuth("The credential scope names service %q; uploads are signed for s3.", h.service)
	}
	amzDate := r.Header.Get("X-Amz-Date")
	t, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || !strings.HasPrefix(amzDate, h.date) {
		return errMalformedAuth("X-Amz-Date is missing, malformed, or not the credential scope's date.")
	}
	if d := now.Sub(t); d > maxClockSkew || d < -maxClockSkew {
		return s3Errorf(http.StatusForbidden, "RequestTimeTooSkewed", "The difference between the request time and the server's time is too large.")
	}
	if !containsHeader(h.signedHeaders, "host") {
		return errMalformedAuth("SignedHeaders must include host.")
	}
	scope := h.date + "/" + h.region + "/" + h.service + "/aws4_request"
	creq := canonicalRequest(r, h.signedHeaders)
	sum := sha256.Sum256([]byte(creq))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	key := signingKey(secret, h.date, h.region, h.service)
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(h.signature)) {
		return errSignature()
	}
	return nil
}

func containsHeader(list []string, name string) bool {
	for _, h := range list {
		if h == name {
			return true
		}
	}
	return false
}

func hmacSHA256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, "aws4_request")
}

// canonicalRequest builds S3's SigV4 canonical request.
func canonicalRequest(r *http.Request, signed []string) string {
	var b strings.Builder
	b.WriteString(r.Method + "\n")
	b.WriteString(canonicalURI(r) + "\n")
	b.WriteString(canonicalQuery(r.URL.RawQuery) + "\n")
	for _, name := range signed {
		b.WriteString(name + ":" + canonicalHeaderValue(r, name) + "\n")
	}
	b.WriteString("\n" + strings.Join(signed, ";") + "\n")
	b.WriteString(r.Header.Get("x-amz-content-sha256"))
	return b.String()
}

// canonicalURI is the path exactly as the client sent it: S3 clients sign
// the path they send, encoded once and never normalised.
func canonicalURI(r *http.Request) string {
	p, _, _ := strings.Cut(r.RequestURI, "?")
	if u, err := url.Parse(p); err == nil && u.IsAbs() {
		p = u.EscapedPath()
	}
	if p == "" {
		p = r.URL.EscapedPath()
	}
	return p
}

// canonicalHeaderValue returns a signed header's values, trimmed, inner
// runs of spaces collapsed, joined by commas.
func canonicalHeaderValue(r *http.Request, name string) string {
	switch name {
	case "host":
		return r.Host
	case "content-length":
		if r.Header.Get("Content-Length") == "" && r.ContentLength >= 0 {
			return strconv.FormatInt(r.ContentLength, 10)
		}
	case "transfer-encoding":
		if len(r.TransferEncoding) > 0 {
			return strings.Join(r.TransferEncoding, ",")
		}
	}
	vals := r.Header.Values(name)
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(out, ",")
}

// canonicalQuery sorts the query's parameters by name, then value, each
// URI-encoded.
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return raw
	}
	var pairs [][2]string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, [2]string{uriEncode(k, true), uriEncode(v, true)})
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i][0] != pairs[j][0] {
			return pairs[i][0] < pairs[j][0]
		}
		return pairs[i][1] < pairs[j][1]
	})
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p[0] + "=" + p[1]
	}
	return strings.Join(out, "&")
}

// uriEncode percent-encodes every byte but the unreserved characters (and
// "/" unless encodeSlash), upper-case hex, as SigV4 requires.
func uriEncode(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}
