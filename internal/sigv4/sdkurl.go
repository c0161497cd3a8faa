package sigv4

import (
	"context"
	"net/url"
	"strings"
	"time"
)

// Query parameters of a Server SDK 5 connection URL signed with SigV4.
const (
	ParamAuthorization = "Authorization"
	ParamAlgorithm     = "X-Amz-Algorithm"
	ParamCredential    = "X-Amz-Credential"
	ParamDate          = "X-Amz-Date"
	ParamSecurityToken = "X-Amz-Security-Token"
	ParamSignature     = "X-Amz-Signature"
	ParamComputeID     = "ComputeId"
	ParamFleetID       = "FleetId"
	ParamProcessID     = "pID"

	// AuthorizationSigV4 is the Authorization parameter of a signed URL.
	AuthorizationSigV4 = "SigV4"
)

// signedURLParams are the parameters a signed connection URL's signature
// covers, in their canonical (sorted) order.
var signedURLParams = [...]string{ParamComputeID, ParamFleetID, ParamProcessID}

// VerifySignedURL checks the SigV4 signature of a Server SDK connection
// URL and returns the FleetId and ComputeId it was signed for. The SDK
// signs, for service gamelift:
//
//	AWS4-HMAC-SHA256 \n X-Amz-Date \n <date>/<region>/gamelift/aws4_request \n
//	hex(sha256("ComputeId=<c>&FleetId=<f>&pID=<p>"))
//
// each name and value query-escaped (a space as "+"). The signature must
// be made with a known key, X-Amz-Date must be within MaxSkew of now, and
// each parameter involved must appear once. X-Amz-Security-Token is not
// covered by the signature and not checked. In unauthenticated mode a
// well-formed signed URL is accepted without checking the key, the
// signature or the clock. Errors are *Error of the API flavour.
func (a *Authenticator) VerifySignedURL(_ context.Context, query url.Values, now time.Time) (fleetID, computeName string, err error) {
	sig, scope, akid, amzDate, perr := parseSignedURL(query)
	if perr != nil {
		return "", "", perr
	}
	fleetID, computeName = query.Get(ParamFleetID), query.Get(ParamComputeID)
	if a.Unauthenticated() {
		return fleetID, computeName, nil
	}
	t, _ := time.Parse(TimeFormat, amzDate) // checked by parseSignedURL
	if err := checkSkew(API, t, now); err != nil {
		return "", "", err
	}
	secret, ok := a.lookup(akid)
	if !ok {
		return "", "", newError(API, KindUnknownKey, "")
	}
	want := signature(signingKey(secret, scope.Date, scope.Region, scope.Service),
		stringToSign(amzDate, scope.Scope(), sha256Hex([]byte(signedURLCanonical(query)))))
	if !signatureMatches(want, sig) {
		return "", "", newError(API, KindSignature, "")
	}
	return fleetID, computeName, nil
}

// parseSignedURL checks the form of a signed connection URL's query and
// returns its signature, credential scope, access key ID and X-Amz-Date.
func parseSignedURL(q url.Values) (sig string, scope Authorization, akid, amzDate string, err *Error) {
	for _, p := range []string{ParamAuthorization, ParamAlgorithm, ParamCredential, ParamDate, ParamSignature,
		ParamSecurityToken, ParamComputeID, ParamFleetID, ParamProcessID} {
		if len(q[p]) > 1 {
			return "", scope, "", "", errorf(API, KindMalformed, "The query parameter %s appears more than once.", p)
		}
	}
	if v := q.Get(ParamAuthorization); v != AuthorizationSigV4 {
		return "", scope, "", "", errorf(API, KindMalformed, "A signed URL's Authorization parameter must be %s.", AuthorizationSigV4)
	}
	var missing []string
	for _, p := range []string{ParamAlgorithm, ParamCredential, ParamDate, ParamSignature} {
		if q.Get(p) == "" {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return "", scope, "", "", errorf(API, KindMalformed, "The signed URL lacks %s.", strings.Join(missing, ", "))
	}
	if q.Get(ParamAlgorithm) != Algorithm {
		return "", scope, "", "", errorf(API, KindMalformed, "Hoist accepts only %s signatures.", Algorithm)
	}
	var a Authorization
	if perr := parseCredential(API, q.Get(ParamCredential), &a); perr != nil {
		return "", scope, "", "", perr
	}
	amzDate = q.Get(ParamDate)
	if _, terr := time.Parse(TimeFormat, amzDate); terr != nil || len(amzDate) != len(TimeFormat) {
		return "", scope, "", "", errorf(API, KindMalformed, "X-Amz-Date must be in ISO 8601 basic format (yyyymmddThhmmssZ); got %q.", clip(amzDate))
	}
	if a.Date != amzDate[:len(DateFormat)] {
		return "", scope, "", "", errorf(API, KindScope, "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: %q != %q, from %q.", a.Date, amzDate[:len(DateFormat)], amzDate)
	}
	if a.Service != ServiceGameLift {
		return "", scope, "", "", errorf(API, KindScope, "Credential should be scoped to correct service: '%s'.", ServiceGameLift)
	}
	return q.Get(ParamSignature), Authorization{Date: a.Date, Region: a.Region, Service: a.Service}, a.AccessKeyID, amzDate, nil
}

// signedURLCanonical is the string whose hash a signed connection URL
// signs: ComputeId, FleetId and pID, sorted, each name and value
// query-escaped, joined by "&".
func signedURLCanonical(q url.Values) string {
	var b strings.Builder
	for i, p := range signedURLParams {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(p))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(q.Get(p)))
	}
	return b.String()
}

// SignURLQuery adds to query (which holds ComputeId, FleetId and pID) the
// parameters that sign it for a Server SDK connection as the official SDKs
// do: Authorization=SigV4, X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date,
// X-Amz-Signature and, when sessionToken is set, X-Amz-Security-Token. For
// test clients and tools; Hoist itself only verifies.
func SignURLQuery(query url.Values, accessKeyID, secret, sessionToken, region string, t time.Time) {
	t = t.UTC()
	date, amzDate := t.Format(DateFormat), t.Format(TimeFormat)
	scope := Authorization{Date: date, Region: region, Service: ServiceGameLift}.Scope()
	sig := signature(signingKey(secret, date, region, ServiceGameLift),
		stringToSign(amzDate, scope, sha256Hex([]byte(signedURLCanonical(query)))))
	query.Set(ParamAuthorization, AuthorizationSigV4)
	query.Set(ParamAlgorithm, Algorithm)
	query.Set(ParamCredential, accessKeyID+"/"+scope)
	query.Set(ParamDate, amzDate)
	query.Set(ParamSignature, sig)
	if sessionToken != "" {
		query.Set(ParamSecurityToken, sessionToken)
	} else {
		query.Del(ParamSecurityToken)
	}
}
