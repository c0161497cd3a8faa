package builds

import (
	"errors"
	"net/http"

	"github.com/hoistgg/hoist/internal/builds/s3"
)

// authResult is an authenticated S3 request.
type authResult struct {
	accessKeyID string
	// cred is set when the request was signed with upload credentials;
	// nil for Hoist's API credentials (the operator).
	cred *credRecord
	// payloadHash is the x-amz-content-sha256 value the signature covers.
	payloadHash string
}

// authenticate verifies r's SigV4 signature (service s3) with the upload
// credentials Hoist issued, checking their session token and expiry, or,
// for any other key, with Config.Operators (Hoist's API credentials).
func (s *Service) authenticate(r *http.Request) (*authResult, error) {
	akid := s3.AccessKeyID(r)
	if akid == "" {
		return nil, s3.ErrAccessDenied("Anonymous and presigned requests are not accepted; sign the Authorization header with the upload credentials from CreateBuild or RequestUploadCredentials.")
	}
	a := &authResult{accessKeyID: akid, payloadHash: r.Header.Get("x-amz-content-sha256")}
	token := r.Header.Get("X-Amz-Security-Token")
	c, secret, err := s.lookupCredentials(r.Context(), akid, token)
	var ce *credentialError
	switch {
	case err == nil:
		a.cred = &c
	case errors.As(err, &ce):
		return nil, s3.Errorf(http.StatusForbidden, ce.Code, "%s", ce.Message)
	case !errors.Is(err, errUnknownKey):
		return nil, err
	default:
		if err := s.verifyOperator(r); err != nil {
			return nil, err
		}
		return a, nil
	}
	if err := s3.VerifySigV4(r, secret, s.cfg.Now()); err != nil {
		return nil, err
	}
	return a, nil
}

// verifyOperator checks a request signed with a key that is not an upload
// credential with Config.Operators.
func (s *Service) verifyOperator(r *http.Request) error {
	if s.cfg.Operators == nil {
		return s3.Errorf(http.StatusForbidden, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
	}
	return s3.FromSigV4(s.cfg.Operators.VerifyS3(r))
}
