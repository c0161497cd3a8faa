package sigv4

import (
	"strings"
	"time"
)

// Algorithm is the only signing algorithm Hoist accepts.
const Algorithm = "AWS4-HMAC-SHA256"

// Formats of X-Amz-Date and of the credential scope's date.
const (
	TimeFormat = "20060102T150405Z"
	DateFormat = "20060102"
)

// terminator ends every credential scope.
const terminator = "aws4_request"

// maxAuthorizationLength bounds the Authorization header parsed (real ones
// are a few hundred bytes; S3 requests that sign many headers stay far
// below this).
const maxAuthorizationLength = 16 << 10

// Authorization is a parsed SigV4 Authorization header:
//
//	AWS4-HMAC-SHA256 Credential=AKID/20250601/us-west-2/gamelift/aws4_request,
//	SignedHeaders=host;x-amz-date, Signature=<64 hex digits>
type Authorization struct {
	AccessKeyID string
	// Date (yyyymmdd), Region and Service are the credential scope.
	Date, Region, Service string
	// SignedHeaders are the lower-case header names the signature covers,
	// in the order given.
	SignedHeaders []string
	// Signature is the hex signature as sent.
	Signature string
}

// Scope returns the credential scope: date/region/service/aws4_request.
func (a Authorization) Scope() string {
	return a.Date + "/" + a.Region + "/" + a.Service + "/" + terminator
}

// String returns the header without its signature, fit for a log line.
func (a Authorization) String() string {
	return Algorithm + " Credential=" + a.AccessKeyID + "/" + a.Scope() +
		", SignedHeaders=" + strings.Join(a.SignedHeaders, ";") + ", Signature=<redacted>"
}

// ParseAuthorization parses a SigV4 Authorization header value. Its
// errors are *Error values of the API flavour (IncompleteSignatureException
// naming what is missing or malformed; MissingAuthenticationTokenException
// for an empty value).
func ParseAuthorization(v string) (Authorization, error) {
	a, err := parseAuthorization(API, v)
	if err != nil {
		return Authorization{}, err
	}
	return a, nil
}

func parseAuthorization(f Flavour, v string) (Authorization, *Error) {
	var a Authorization
	v = strings.TrimSpace(v)
	if v == "" {
		return a, newError(f, KindMissing, "")
	}
	if len(v) > maxAuthorizationLength {
		return a, errorf(f, KindMalformed, "The Authorization header is longer than %d bytes.", maxAuthorizationLength)
	}
	rest, ok := strings.CutPrefix(v, Algorithm)
	if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
		return a, newError(f, KindMalformed, "Hoist accepts only AWS4-HMAC-SHA256 signatures in the Authorization header.")
	}
	var cred, signed, sig string
	var seenCred, seenSigned, seenSig bool
	for part := range strings.SplitSeq(rest, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, val, hasEq := strings.Cut(part, "=")
		if !hasEq {
			return a, newError(f, KindMalformed, "Each Authorization header parameter must be name=value, separated by commas.")
		}
		var seen *bool
		switch strings.TrimSpace(k) {
		case "Credential":
			cred, seen = val, &seenCred
		case "SignedHeaders":
			signed, seen = val, &seenSigned
		case "Signature":
			sig, seen = val, &seenSig
		default:
			continue // unknown parameters are ignored
		}
		if *seen {
			return a, errorf(f, KindMalformed, "The Authorization header repeats the %s parameter.", strings.TrimSpace(k))
		}
		*seen = true
	}
	var missing []string
	for _, p := range []struct {
		name  string
		value string
	}{{"Credential", cred}, {"Signature", sig}, {"SignedHeaders", signed}} {
		if p.value == "" {
			missing = append(missing, "Authorization header requires '"+p.name+"' parameter.")
		}
	}
	if len(missing) > 0 {
		return a, newError(f, KindMalformed, strings.Join(missing, " "))
	}

	if err := parseCredential(f, cred, &a); err != nil {
		return a, err
	}
	for h := range strings.SplitSeq(signed, ";") {
		if !validHeaderName(h) {
			return a, errorf(f, KindMalformed, "SignedHeaders must be lower-case header names separated by semicolons; %q is not one.", clip(h))
		}
		a.SignedHeaders = append(a.SignedHeaders, h)
	}
	if !contains(a.SignedHeaders, "host") {
		return a, newError(f, KindMalformed, "'Host' must be a 'SignedHeader' in the AWS Authorization.")
	}
	a.Signature = sig
	return a, nil
}

// credentialForm is the message for a Credential that does not parse.
const credentialForm = "The Credential parameter must be <access key ID>/<yyyymmdd>/<region>/<service>/aws4_request."

// parseCredential parses AKID/date/region/service/aws4_request into a. The
// four scope parts are the last four, so an access key ID holding "/"
// still parses.
func parseCredential(f Flavour, cred string, a *Authorization) *Error {
	// <access key ID>/<date>/<region>/<service>/aws4_request, where the
	// access key ID may itself hold slashes: cut four fields off the end.
	var fields [4]string // date, region, service, terminator
	rest := cred
	for i := 3; i >= 0; i-- {
		j := strings.LastIndexByte(rest, '/')
		if j < 0 {
			return newError(f, KindMalformed, credentialForm)
		}
		fields[i], rest = rest[j+1:], rest[:j]
	}
	if fields[3] != terminator || fields[2] == "" || fields[1] == "" {
		return newError(f, KindMalformed, credentialForm)
	}
	a.AccessKeyID = rest
	a.Date, a.Region, a.Service = fields[0], fields[1], fields[2]
	if a.AccessKeyID == "" {
		return newError(f, KindMalformed, "The Credential parameter lacks the access key ID.")
	}
	if !validScopeDate(a.Date) {
		return errorf(f, KindMalformed, "The Credential parameter's date %q is not yyyymmdd.", clip(a.Date))
	}
	return nil
}

// validScopeDate reports whether s is a date in DateFormat (yyyymmdd), as
// time.Parse(DateFormat, s) with len(s) == 8 would, without its cost.
func validScopeDate(s string) bool {
	if len(s) != len(DateFormat) {
		return false
	}
	n := 0
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		n = n*10 + int(s[i]-'0')
	}
	year, month, day := n/10000, n/100%100, n%100
	if month < 1 || month > 12 || day < 1 {
		return false
	}
	// The last day of month: day 0 of the next one.
	return day <= time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// validHeaderName reports whether s is a non-empty lower-case HTTP token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
