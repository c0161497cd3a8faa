package builds

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// peerHeader is a peer build request's headers for id, signed with key,
// expiring at exp.
func peerHeader(key []byte, id string, exp time.Time) http.Header {
	e := strconv.FormatInt(exp.Unix(), 10)
	h := http.Header{}
	h.Set(peerExpiresHeader, e)
	h.Set(peerSignatureHeader, hex.EncodeToString(peerMAC(key, "request", id, e)))
	return h
}

// TestCheckPeerRequest: a replica's build request is accepted with the
// cluster key's signature over its build ID and expiry, within a minute;
// another key, another build, an expired request, one expiring too far
// ahead or a damaged header is refused.
func TestCheckPeerRequest(t *testing.T) {
	key, other := []byte("0123456789abcdef0123456789abcdef"), []byte("another key, another cluster....")
	now := time.Unix(1_800_000_000, 0)
	if err := checkPeerRequest(key, "build-1", peerHeader(key, "build-1", now.Add(30*time.Second)), now); err != nil {
		t.Fatalf("a good request: %v", err)
	}
	bad := map[string]http.Header{
		"another key":    peerHeader(other, "build-1", now.Add(30*time.Second)),
		"another build":  peerHeader(key, "build-2", now.Add(30*time.Second)),
		"expired":        peerHeader(key, "build-1", now.Add(-time.Second)),
		"too far ahead":  peerHeader(key, "build-1", now.Add(time.Hour)),
		"no signature":   {peerExpiresHeader: {"1800000030"}},
		"not hex":        {peerExpiresHeader: {"1800000030"}, peerSignatureHeader: {"zz"}},
		"expiry not int": {peerExpiresHeader: {"soon"}, peerSignatureHeader: {"00"}},
	}
	for name, h := range bad {
		if err := checkPeerRequest(key, "build-1", h, now); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := checkPeerRequest(key, "", peerHeader(key, "", now.Add(time.Second)), now); err == nil {
		t.Error("no build ID: accepted")
	}
}

// FuzzCheckPeerRequest: any headers and build ID either pass only with
// the key's signature or are refused, without panicking.
func FuzzCheckPeerRequest(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	good := peerHeader(key, "build-1", now.Add(time.Second))
	f.Add("build-1", good.Get(peerExpiresHeader), good.Get(peerSignatureHeader))
	f.Add("", "-1", "")
	f.Fuzz(func(t *testing.T, id, exp, sig string) {
		h := http.Header{}
		h.Set(peerExpiresHeader, exp)
		h.Set(peerSignatureHeader, sig)
		if checkPeerRequest(key, id, h, now) == nil {
			want := hex.EncodeToString(peerMAC(key, "request", id, exp))
			if d, _ := hex.DecodeString(sig); hex.EncodeToString(d) != want {
				t.Fatalf("accepted a request not signed with the key: %q %q %q", id, exp, sig)
			}
		}
	})
}
