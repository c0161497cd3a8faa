package config

import (
	"strings"
	"testing"
)

// FuzzParseCredentialsFile: any file content is parsed or refused, never a
// panic, and every accepted pair is non-empty.
func FuzzParseCredentialsFile(f *testing.F) {
	f.Add("[default]\naws_access_key_id = AKID\naws_secret_access_key = s3cret\n")
	f.Add("[a]\naws_access_key_id=A\n[b]\naws_secret_access_key=B\n")
	f.Add("# comment\n; other\n[x]\nfoo=bar\n")
	f.Fuzz(func(t *testing.T, s string) {
		creds := map[string]string{}
		if err := parseCredentialsFile(strings.NewReader(s), "f", creds); err != nil {
			return
		}
		for id, secret := range creds {
			if id == "" || secret == "" {
				t.Fatalf("accepted an empty key or secret: %q:%q", id, secret)
			}
		}
	})
}

// FuzzParseTimings: every accepted timer is known and positive.
func FuzzParseTimings(f *testing.F) {
	f.Add("sessions.reservation=2s,fleets.reconcile=100ms")
	f.Add("x=1s")
	f.Add("sessions.sweep=-1s")
	f.Add(",,=,")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseTimings(s)
		if err != nil {
			return
		}
		for k, d := range m {
			if _, ok := TimingNames[k]; !ok || d <= 0 {
				t.Fatalf("accepted %s=%v", k, d)
			}
		}
	})
}

// FuzzLoadCredentialsInline: the HOIST_CREDENTIALS form.
func FuzzLoadCredentialsInline(f *testing.F) {
	f.Add("AKID:SECRET,AKID2:SECRET2")
	f.Add(":x")
	f.Fuzz(func(t *testing.T, s string) {
		creds, err := LoadCredentials("", s)
		if err != nil {
			return
		}
		for id, secret := range creds {
			if id == "" || secret == "" {
				t.Fatalf("accepted an empty key or secret from %q", s)
			}
		}
	})
}
