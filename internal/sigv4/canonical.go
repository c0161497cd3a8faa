package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"hash"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// appendCanonicalRequest appends the SigV4 canonical request of r whose
// canonical URI is uri and canonical query string query to b:
//
//	METHOD \n URI \n QUERY \n name:value\n... \n signed;headers \n payload-hash
func appendCanonicalRequest(b []byte, r *http.Request, uri, query string, signed []string, payloadHash string) []byte {
	b = append(b, r.Method...)
	b = append(b, '\n')
	b = append(b, uri...)
	b = append(b, '\n')
	b = append(b, query...)
	b = append(b, '\n')
	for _, name := range signed {
		b = append(b, name...)
		b = append(b, ':')
		b = appendCanonicalHeaderValue(b, r, name)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	for i, name := range signed {
		if i > 0 {
			b = append(b, ';')
		}
		b = append(b, name...)
	}
	b = append(b, '\n')
	return append(b, payloadHash...)
}

// canonicalURIs returns the canonical URIs a client may have signed for
// r's path, the likeliest first. S3: the path exactly as sent. API: the
// path normalised and encoded a second time (botocore, and what AWS
// specifies), then, if normalising changed it, the path encoded a second
// time without normalising (the Go SDKs).
func canonicalURIs(f Flavour, r *http.Request) []string {
	p := wirePath(r)
	if f == S3 {
		return []string{p}
	}
	n := normalizePath(p)
	if n == p {
		return []string{uriEncode(n, false)}
	}
	return []string{uriEncode(n, false), uriEncode(p, false)}
}

// wirePath is the path of r's request target as the client sent it (still
// percent-encoded); "/" when empty.
func wirePath(r *http.Request) string {
	p, _, _ := strings.Cut(r.RequestURI, "?")
	if !strings.HasPrefix(p, "/") {
		// Absolute form (a proxy request), "*", or a request built
		// in-process with no RequestURI.
		p = ""
		if u, err := url.Parse(r.RequestURI); err == nil && u.IsAbs() {
			p = u.EscapedPath()
		}
		if p == "" && r.URL != nil {
			p = r.URL.EscapedPath()
		}
	}
	if p == "" {
		return "/"
	}
	return p
}

// normalizePath removes "." and ".." segments and empty segments from a
// path, keeping its leading slash, and its trailing slash unless nothing
// is left.
func normalizePath(p string) string {
	var out []string
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
		}
	}
	s := "/" + strings.Join(out, "/")
	if len(out) > 0 && strings.HasSuffix(p, "/") {
		s += "/"
	}
	return s
}

// canonicalQueries returns the canonical query strings a client may have
// signed for a raw query: each name and value decoded and URI-encoded
// again, the pairs sorted by encoded name, then value, as SigV4 specifies;
// then, if it differs, the same pairs sorted by decoded name and value, as
// aws-sdk-go v1 (and aws-sdk-go-v2 before 2025) sorts them. The orders
// differ only for names or values with reserved or non-ASCII characters.
func canonicalQueries(raw string) []string {
	if raw == "" {
		return []string{""}
	}
	type pair struct{ k, v, rawK, rawV string }
	var pairs []pair
	for seg := range strings.SplitSeq(raw, "&") {
		if seg == "" {
			continue
		}
		k, v, _ := strings.Cut(seg, "=")
		k, v = queryUnescape(k), queryUnescape(v)
		pairs = append(pairs, pair{uriEncode(k, true), uriEncode(v, true), k, v})
	}
	join := func() string {
		var b strings.Builder
		for i, p := range pairs {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString(p.k)
			b.WriteByte('=')
			b.WriteString(p.v)
		}
		return b.String()
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if c := strings.Compare(a.k, b.k); c != 0 {
			return c
		}
		return strings.Compare(a.v, b.v)
	})
	encodedOrder := join()
	slices.SortStableFunc(pairs, func(a, b pair) int {
		if c := strings.Compare(a.rawK, b.rawK); c != 0 {
			return c
		}
		return strings.Compare(a.rawV, b.rawV)
	})
	if decodedOrder := join(); decodedOrder != encodedOrder {
		return []string{encodedOrder, decodedOrder}
	}
	return []string{encodedOrder}
}

// queryUnescape decodes a query component ("+" is a space); a component
// that is not valid percent-encoding is taken as it is.
func queryUnescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// appendCanonicalHeaderValue appends a signed header's values, each
// trimmed with inner runs of spaces collapsed, joined by commas. Go's
// server moves Host and Transfer-Encoding out of the header map; they are
// read from the request.
func appendCanonicalHeaderValue(b []byte, r *http.Request, name string) []byte {
	switch name {
	case "host":
		return appendTrimAll(b, r.Host)
	case "content-length":
		if len(headerValues(r.Header, name)) == 0 && r.ContentLength >= 0 {
			return strconv.AppendInt(b, r.ContentLength, 10)
		}
	case "transfer-encoding":
		if len(r.TransferEncoding) > 0 {
			return append(b, strings.Join(r.TransferEncoding, ",")...)
		}
	}
	for i, v := range headerValues(r.Header, name) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTrimAll(b, v)
	}
	return b
}

// canonicalKeys are the canonical forms of the header names clients
// usually sign, so that looking them up allocates nothing.
var canonicalKeys = map[string]string{
	"content-type":          "Content-Type",
	"x-amz-date":            "X-Amz-Date",
	"x-amz-target":          "X-Amz-Target",
	"x-amz-content-sha256":  "X-Amz-Content-Sha256",
	"x-amz-security-token":  "X-Amz-Security-Token",
	"x-amz-user-agent":      "X-Amz-User-Agent",
	"amz-sdk-invocation-id": "Amz-Sdk-Invocation-Id",
	"amz-sdk-request":       "Amz-Sdk-Request",
	"content-length":        "Content-Length",
	"content-md5":           "Content-Md5",
	"user-agent":            "User-Agent",
	"smithy-protocol":       "Smithy-Protocol",
	"accept":                "Accept",
}

// headerValues is h.Values(name) for a lower-case name.
func headerValues(h http.Header, name string) []string {
	if k, ok := canonicalKeys[name]; ok {
		return h[k]
	}
	return h.Values(name)
}

// appendTrimAll appends s trimmed of surrounding white space, with inner
// runs of spaces collapsed to one, as SigV4's Trimall.
func appendTrimAll(b []byte, s string) []byte {
	s = strings.Trim(s, " \t")
	if !strings.Contains(s, "  ") {
		return append(b, s...)
	}
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		b = append(b, c)
	}
	return b
}

// uriEncode percent-encodes every byte but the unreserved characters (and
// "/" unless encodeSlash), with upper-case hex, as SigV4 requires.
func uriEncode(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) && (s[i] != '/' || encodeSlash) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || (c == '/' && !encodeSlash) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
	}
	return string(b)
}

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// stringToSign is the SigV4 string to sign of a canonical request's hash.
func stringToSign(amzDate, scope, hashHex string) string {
	return Algorithm + "\n" + amzDate + "\n" + scope + "\n" + hashHex
}

// appendStringToSign appends the string to sign of a canonical request
// whose SHA-256 is creqHash, for a credential scope of a.
func appendStringToSign(b []byte, amzDate string, a *Authorization, creqHash *[sha256.Size]byte) []byte {
	b = append(b, Algorithm+"\n"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	b = append(b, a.Date...)
	b = append(b, '/')
	b = append(b, a.Region...)
	b = append(b, '/')
	b = append(b, a.Service...)
	b = append(b, "/"+terminator+"\n"...)
	return hex.AppendEncode(b, creqHash[:])
}

// signingKey derives the key of a day, region and service from a secret.
func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, terminator)
}

// A derivedKey is a signing key with a pool of HMACs keyed with it.
type derivedKey struct {
	macs sync.Pool
}

type keyScope struct{ secret, date, region, service string }

// keyCache keeps the signing keys derived lately: deriving one takes four
// HMACs, and a client signs with the same secret, day, region and service
// all day. It is emptied when it reaches maxCachedKeys.
var keyCache struct {
	sync.Mutex
	m map[keyScope]*derivedKey
}

const maxCachedKeys = 1024

// cachedKey returns the signing key of a day, region and service.
func cachedKey(secret, date, region, service string) *derivedKey {
	ks := keyScope{secret, date, region, service}
	keyCache.Lock()
	dk := keyCache.m[ks]
	keyCache.Unlock()
	if dk != nil {
		return dk
	}
	key := signingKey(secret, date, region, service)
	dk = &derivedKey{}
	dk.macs.New = func() any { return hmac.New(sha256.New, key) }
	keyCache.Lock()
	if keyCache.m == nil || len(keyCache.m) >= maxCachedKeys {
		keyCache.m = make(map[keyScope]*derivedKey)
	}
	keyCache.m[ks] = dk
	keyCache.Unlock()
	return dk
}

// sign writes the hex signature of toSign to dst.
func (k *derivedKey) sign(dst *[2 * sha256.Size]byte, toSign []byte) {
	m := k.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(toSign)
	var sum [sha256.Size]byte
	hex.Encode(dst[:], m.Sum(sum[:0]))
	k.macs.Put(m)
}

// signature returns the hex signature of toSign with key.
func signature(key []byte, toSign string) string {
	return hex.EncodeToString(hmacSHA256(key, toSign))
}

func hmacSHA256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// signatureMatches compares a computed hex signature with the one sent, in
// constant time.
func signatureMatches(want, got string) bool {
	return hmac.Equal([]byte(want), []byte(got))
}

// hexSignatureMatches compares a computed hex signature with the one sent,
// in constant time (the length, public, may end it early).
func hexSignatureMatches(want *[2 * sha256.Size]byte, got string) bool {
	if len(got) != len(want) {
		return false
	}
	var diff byte
	for i := range want {
		diff |= want[i] ^ got[i]
	}
	return subtle.ConstantTimeByteEq(diff, 0) == 1
}
