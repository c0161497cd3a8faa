package sdkconn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/hoistgg/hoist/internal/hosting"
)

// Query parameters of a connection URL (section 1 of the protocol notes).
const (
	paramProcessID     = "pID"
	paramSDKVersion    = "sdkVersion"
	paramSDKLanguage   = "sdkLanguage"
	paramComputeID     = "ComputeId"
	paramFleetID       = "FleetId"
	paramIdempotency   = "IdempotencyToken"
	paramAuthorization = "Authorization"
	// authSigV4 is the Authorization value of a signed URL.
	authSigV4 = "SigV4"
)

// Length limits of connection parameters: IDs as the SDK validates them
// (256), process IDs more generously (any string the SDK accepts).
const (
	maxProcessIDLength = 1024
	maxIDParamLength   = 256
)

// authenticate checks a connection URL and returns the connection's
// identity: the process ID from the URL, bound to the fleet and compute
// the token (or signature) was issued for; and when the credential
// expires (zero: never, or unknown without Config.Issuer).
func (s *Server) authenticate(ctx context.Context, q url.Values) (hosting.Conn, time.Time, *httpError) {
	id, herr := s.identify(ctx, q)
	if herr != nil {
		return id, time.Time{}, herr
	}
	return id, s.credentialExpiry(ctx, q), nil
}

// credentialExpiry returns when the verified credential of q stops being
// accepted: a signed URL 15 minutes after it was signed, a token when the
// Issuer says.
func (s *Server) credentialExpiry(ctx context.Context, q url.Values) time.Time {
	if s.cfg.Issuer == nil {
		return time.Time{}
	}
	auth := q.Get(paramAuthorization)
	if auth == authSigV4 {
		t, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
		if err != nil {
			return s.cfg.Now()
		}
		return t.Add(signedURLLifetime)
	}
	exp, err := s.cfg.Issuer.ComputeTokenExpiry(ctx, auth)
	if err != nil {
		s.log.Debug("sdk: token expiry unknown", "err", err)
		return time.Time{}
	}
	return exp
}

// identify checks a connection URL's parameters and credentials.
func (s *Server) identify(ctx context.Context, q url.Values) (hosting.Conn, *httpError) {
	for _, k := range []string{paramProcessID, paramComputeID, paramFleetID, paramAuthorization} {
		if len(q[k]) > 1 {
			return hosting.Conn{}, &httpError{http.StatusBadRequest, k + " is given more than once"}
		}
	}
	id := hosting.Conn{
		ConnID:      s.cfg.NewID(),
		ProcessID:   q.Get(paramProcessID),
		FleetID:     q.Get(paramFleetID),
		ComputeName: q.Get(paramComputeID),
		SDKVersion:  q.Get(paramSDKVersion),
		SDKLanguage: q.Get(paramSDKLanguage),
	}
	if herr := checkParams(id); herr != nil {
		return hosting.Conn{}, herr
	}
	fleetID, computeName, herr := s.verifyCredentials(ctx, q)
	if herr != nil {
		return hosting.Conn{}, herr
	}
	if fleetID != id.FleetID || computeName != id.ComputeName {
		return hosting.Conn{}, &httpError{http.StatusForbidden,
			"the credentials were not issued for this FleetId and ComputeId"}
	}
	if s.cfg.Processes != nil {
		err := s.cfg.Processes.VerifyProcess(ctx, fleetID, computeName, id.ProcessID)
		var se *hosting.SDKError
		switch {
		case errors.As(err, &se) && se.Status == http.StatusForbidden:
			s.log.Debug("sdk: process refused", "process", clip(id.ProcessID), "compute", computeName, "err", err)
			return hosting.Conn{}, &httpError{http.StatusForbidden,
				"the process ID was not launched by Hoist on this compute"}
		case err != nil:
			s.log.Error("sdk: checking a process ID failed", "process", clip(id.ProcessID), "err", err)
			return hosting.Conn{}, &httpError{http.StatusInternalServerError, "internal error"}
		}
	}
	return id, nil
}

func checkParams(id hosting.Conn) *httpError {
	for _, p := range []struct {
		name, value string
		max         int
	}{
		{paramProcessID, id.ProcessID, maxProcessIDLength},
		{paramFleetID, id.FleetID, maxIDParamLength},
		{paramComputeID, id.ComputeName, maxIDParamLength},
	} {
		switch {
		case p.value == "":
			return &httpError{http.StatusBadRequest, p.name + " is required"}
		case len(p.value) > p.max:
			return &httpError{http.StatusBadRequest, fmt.Sprintf("%s is longer than %d characters", p.name, p.max)}
		case !printable(p.value):
			return &httpError{http.StatusBadRequest, p.name + " holds characters that are not printable"}
		}
	}
	for name, v := range map[string]string{paramSDKVersion: id.SDKVersion, paramSDKLanguage: id.SDKLanguage} {
		if len(v) > maxIDParamLength || !printable(v) {
			return &httpError{http.StatusBadRequest, name + " is not a version or language name"}
		}
	}
	return nil
}

// verifyCredentials returns the fleet and compute the URL's token or
// signature authorizes.
func (s *Server) verifyCredentials(ctx context.Context, q url.Values) (string, string, *httpError) {
	auth := q.Get(paramAuthorization)
	switch {
	case auth == "":
		return "", "", &httpError{http.StatusForbidden, "Authorization (a compute auth token) is required"}
	case auth == authSigV4 && s.cfg.SignedURLs == nil:
		return "", "", &httpError{http.StatusForbidden,
			"SigV4-signed connections are not supported by this Hoist; use a compute auth token"}
	case auth == authSigV4:
		fleetID, computeName, err := s.cfg.SignedURLs.VerifySignedURL(ctx, q, s.cfg.Now())
		if err != nil {
			return "", "", &httpError{http.StatusForbidden, "the request signature was refused"}
		}
		return fleetID, computeName, nil
	}
	fleetID, computeName, err := s.cfg.Tokens.VerifyComputeToken(ctx, auth)
	if err != nil {
		// The verifier's error may say why; the token itself is never logged.
		s.log.Debug("sdk: auth token refused", "err", err)
		return "", "", &httpError{http.StatusForbidden, "the auth token is unknown or expired"}
	}
	return fleetID, computeName, nil
}

func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// clip shortens an untrusted value for a log line.
func clip(s string) string {
	const max = 128
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

func splitComma(v string) []string {
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

func equalFold(a, b string) bool { return strings.EqualFold(a, b) }
