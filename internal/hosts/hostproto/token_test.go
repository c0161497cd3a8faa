package hostproto

import (
	"net/http"
	"strings"
	"testing"
)

func TestEnrolmentTokenRoundTrip(t *testing.T) {
	tok := NewEnrolmentToken([]byte("a CA certificate"))
	got, err := ParseEnrolmentToken(" " + tok.String() + "\n")
	if err != nil || got != tok {
		t.Fatalf("ParseEnrolmentToken(%q) = %+v, %v; want %+v", tok.String(), got, err, tok)
	}
	if tok.CAPin != CAPin([]byte("a CA certificate")) {
		t.Fatal("the token's pin is not the CA's")
	}
	bad := []string{"", tok.ID, tok.ID + "." + tok.Secret, strings.ToUpper(tok.String()),
		tok.String() + ".x", tok.ID + "." + tok.Secret[1:] + "." + tok.CAPin, "g" + tok.String()[1:]}
	for _, s := range bad {
		if _, err := ParseEnrolmentToken(s); err == nil {
			t.Errorf("ParseEnrolmentToken(%q) accepted", s)
		}
	}
}

func TestCredentialHeader(t *testing.T) {
	h := http.Header{}
	secret := NewHostSecret()
	SetCredential(h, "host-1", secret)
	id, s, err := Credential(h)
	if err != nil || id != "host-1" || s != secret {
		t.Fatalf("Credential = %q, %q, %v", id, s, err)
	}
	for _, v := range []string{"", "Bearer x", "HoistHost host-1", "HoistHost host-1 short",
		"HoistHost  " + secret, "HoistHost a/b " + secret, "HoistHost " + strings.Repeat("h", 65) + " " + secret} {
		h.Set("Authorization", v)
		if _, _, err := Credential(h); err == nil {
			t.Errorf("Credential(%q) accepted", v)
		}
	}
}

func FuzzParseEnrolmentToken(f *testing.F) {
	f.Add(NewEnrolmentToken([]byte("ca")).String())
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseEnrolmentToken(s)
		if err != nil {
			return
		}
		again, err := ParseEnrolmentToken(tok.String())
		if err != nil || again != tok {
			t.Fatalf("%q parsed to %+v, which does not round-trip", s, tok)
		}
	})
}

func FuzzCredential(f *testing.F) {
	f.Add("HoistHost host-1 " + strings.Repeat("a", 64))
	f.Add("HoistHost x y")
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"Authorization": []string{v}}
		id, secret, err := Credential(h)
		if err != nil {
			return
		}
		h2 := http.Header{}
		SetCredential(h2, id, secret)
		if id2, s2, err := Credential(h2); err != nil || id2 != id || s2 != secret {
			t.Fatalf("%q read as %q %q, which does not round-trip", v, id, secret)
		}
	})
}
