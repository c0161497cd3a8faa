package server

import (
	"time"

	"github.com/hoistgg/hoist/internal/sigv4"
)

// newAuthenticator returns the SigV4 authenticator of the API, the admin
// endpoint and signed SDK URLs: with creds empty it runs unauthenticated
// (well-formed signatures required, not checked; loopback only).
func newAuthenticator(creds map[string]string, now func() time.Time) *sigv4.Authenticator {
	return sigv4.NewAuthenticator(creds, now)
}
