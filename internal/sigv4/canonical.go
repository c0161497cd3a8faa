package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// canonicalRequest builds the SigV4 canonical request of r whose canonical
// URI is uri and canonical query string query:
//
//	METHOD \n URI \n QUERY \n name:value\n... \n signed;headers \n payload-hash
func canonicalRequest(r *http.Request, uri, query string, signed []string, payloadHash string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(uri)
	b.WriteByte('\n')
	b.WriteString(query)
	b.WriteByte('\n')
	for _, name := range signed {
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(canonicalHeaderValue(r, name))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signed, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String()
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

// canonicalHeaderValue returns a signed header's values, each trimmed
// with inner runs of spaces collapsed, joined by commas. Go's server moves
// Host and Transfer-Encoding out of the header map; they are read from the
// request.
func canonicalHeaderValue(r *http.Request, name string) string {
	switch name {
	case "host":
		return trimAll(r.Host)
	case "content-length":
		if len(r.Header.Values("Content-Length")) == 0 && r.ContentLength >= 0 {
			return strconv.FormatInt(r.ContentLength, 10)
		}
	case "transfer-encoding":
		if len(r.TransferEncoding) > 0 {
			return strings.Join(r.TransferEncoding, ",")
		}
	}
	vals := r.Header.Values(name)
	switch len(vals) {
	case 0:
		return ""
	case 1:
		return trimAll(vals[0])
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = trimAll(v)
	}
	return strings.Join(out, ",")
}

// trimAll trims surrounding white space and collapses inner runs of spaces
// to one, as SigV4's Trimall.
func trimAll(s string) string {
	s = strings.Trim(s, " \t")
	if !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
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
		b.WriteByte(c)
	}
	return b.String()
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

// signingKey derives the key of a day, region and service from a secret.
func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, terminator)
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
