// Package ids makes the random identifiers Hoist hands out: version 4
// UUIDs (the form of GameLift's resource IDs after their prefix, and of
// AWS request IDs).
package ids

import (
	"crypto/rand"
	"encoding/hex"
)

// UUID returns a random (version 4) UUID in its canonical form.
func UUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	hex.Encode(s[9:13], b[4:6])
	hex.Encode(s[14:18], b[6:8])
	hex.Encode(s[19:23], b[8:10])
	hex.Encode(s[24:], b[10:])
	s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
	return string(s[:])
}
