package peersign

import (
	"encoding/hex"
	"net/http"
	"testing"
	"time"
)

// TestSignCheck: a request Sign signed passes Check for its subject under
// its key within TTL, and for no other subject, key or time.
func TestSignCheck(t *testing.T) {
	key, other := []byte("0123456789abcdef0123456789abcdef"), []byte("another key, another cluster....")
	now := time.Unix(1_800_000_000, 0)
	h := http.Header{}
	Sign(h, key, "logs:gs-1", now)
	if err := Check(key, "logs:gs-1", h, now.Add(30*time.Second)); err != nil {
		t.Fatalf("a good request: %v", err)
	}
	for name, err := range map[string]error{
		"another subject": Check(key, "logs:gs-2", h, now),
		"another key":     Check(other, "logs:gs-1", h, now),
		"expired":         Check(key, "logs:gs-1", h, now.Add(TTL+time.Second)),
		"too far ahead":   Check(key, "logs:gs-1", h, now.Add(-time.Hour)),
		"no key":          Check(nil, "logs:gs-1", h, now),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzCheck: any headers pass only with the key's signature over the
// subject, without panicking.
func FuzzCheck(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	good := http.Header{}
	Sign(good, key, "s", now)
	f.Add("s", good.Get(ExpiresHeader), good.Get(SignatureHeader))
	f.Add("", "-1", "")
	f.Fuzz(func(t *testing.T, subject, exp, sig string) {
		h := http.Header{}
		h.Set(ExpiresHeader, exp)
		h.Set(SignatureHeader, sig)
		if Check(key, subject, h, now) == nil {
			want := hex.EncodeToString(MAC(key, "request", subject, exp))
			if d, _ := hex.DecodeString(sig); hex.EncodeToString(d) != want {
				t.Fatalf("accepted a request not signed with the key: %q %q %q", subject, exp, sig)
			}
		}
	})
}
