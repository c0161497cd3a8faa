// Package peersign signs and checks requests between the replicas of a
// cluster (a build's files, a game session's logs) with the cluster key
// every replica reads from the store: an HMAC-SHA256 over what is asked
// and an expiry at most TTL ahead, compared in constant time.
package peersign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Headers of a signed request between replicas.
const (
	ExpiresHeader   = "X-Hoist-Expires"
	SignatureHeader = "X-Hoist-Signature"
	// TTL bounds how far ahead a request's expiry may lie.
	TTL = time.Minute
)

// MAC is the HMAC-SHA256 under key of parts, each followed by a zero byte
// (so no two part lists sign alike).
func MAC(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// Sign sets h's expiry (now + TTL) and its signature over subject (what
// the request asks for: each route names its subjects so that none can
// be taken for another route's).
func Sign(h http.Header, key []byte, subject string, now time.Time) {
	exp := strconv.FormatInt(now.Add(TTL).Unix(), 10)
	h.Set(ExpiresHeader, exp)
	h.Set(SignatureHeader, hex.EncodeToString(MAC(key, "request", subject, exp)))
}

// Check checks a signed request's expiry and its signature over subject.
func Check(key []byte, subject string, h http.Header, now time.Time) error {
	exp := h.Get(ExpiresHeader)
	expires, err := strconv.ParseInt(exp, 10, 64)
	sig, serr := hex.DecodeString(h.Get(SignatureHeader))
	switch {
	case len(key) == 0:
		return errors.New("no cluster key")
	case err != nil || serr != nil:
		return errors.New("a replica's request carries " + ExpiresHeader + " and " + SignatureHeader)
	case !hmac.Equal(sig, MAC(key, "request", subject, exp)):
		return errors.New("the signature does not match this request")
	case now.Unix() > expires || expires > now.Add(TTL).Unix():
		return errors.New("this request has expired")
	}
	return nil
}
