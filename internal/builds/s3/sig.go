package s3

import (
	"errors"
	"net/http"
	"time"

	"github.com/hoistgg/hoist/internal/sigv4"
)

// VerifySigV4 checks the SigV4 signature (S3 flavour, service s3) in r's
// Authorization header with secret, and that X-Amz-Date is within
// sigv4.MaxSkew of now. A refusal is an *Error with S3's code
// (AccessDenied, AuthorizationHeaderMalformed, SignatureDoesNotMatch,
// RequestTimeTooSkewed).
func VerifySigV4(r *http.Request, secret string, now time.Time) error {
	v := sigv4.Verifier{Service: "s3", Flavour: sigv4.S3, Now: func() time.Time { return now }}
	if _, err := v.VerifySecret(r, nil, secret); err != nil {
		return FromSigV4(err)
	}
	return nil
}

// FromSigV4 returns a *sigv4.Error (made with the S3 flavour) as the S3
// error it stands for; other errors (and nil) are returned as they are.
func FromSigV4(err error) error {
	var se *sigv4.Error
	if errors.As(err, &se) {
		return &Error{Status: se.Status, Code: se.Code, Message: se.Message}
	}
	return err
}
