package events

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Signature headers of a webhook request (docs/events.md).
const (
	HeaderEventID   = "X-Hoist-Event-Id"
	HeaderTimestamp = "X-Hoist-Timestamp"
	HeaderSignature = "X-Hoist-Signature"
)

// signatureVersion prefixes the signature: "v2=" (v1, which Hoist no
// longer sends, did not cover the URL).
const signatureVersion = "v2"

// Sign returns the X-Hoist-Signature value of a request POSTed to url with
// body at timestamp (Unix seconds): "v2=" and the hex HMAC-SHA256, keyed
// with secret, of the timestamp, a newline, the URL, a newline and the
// body. The URL is the one Hoist requests (from --webhooks, without
// "sns+"), so a request made for one receiver does not verify for
// another; neither the timestamp nor a URL holds a newline, so the three
// parts cannot be shifted against one another.
func Sign(secret []byte, timestamp int64, url string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(strconv.AppendInt(nil, timestamp, 10))
	m.Write([]byte{'\n'})
	m.Write([]byte(url))
	m.Write([]byte{'\n'})
	m.Write(body)
	return signatureVersion + "=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether signature is Sign(secret, timestamp, url, body),
// compared in constant time.
func Verify(secret []byte, timestamp int64, url string, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, timestamp, url, body)), []byte(signature))
}
