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

// FuzzParseTimings: every accepted timer is positive, and String reads
// back as the same Timings.
func FuzzParseTimings(f *testing.F) {
	f.Add("sessions.reservation=2s,fleets.reconcile=100ms")
	f.Add("x=1s")
	f.Add("sessions.sweep=-1s")
	f.Add(",,=,")
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := ParseTimings(s)
		if err != nil {
			return
		}
		for _, tg := range timings {
			if d := *tg.field(&tm); d < 0 {
				t.Fatalf("accepted %s=%v", tg.Name, d)
			}
		}
		again, err := ParseTimings(tm.String())
		if err != nil || again != tm {
			t.Fatalf("%q: String %q reads back as %+v, %v", s, tm.String(), again, err)
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

// FuzzWebhooks: every accepted entry maps a topic ARN to an http(s) URL
// with a host, each URL has one format wherever it appears, and String
// reads back as the same map.
func FuzzWebhooks(f *testing.F) {
	f.Add("arn:aws:sns:us-west-2:1:t=http://127.0.0.1:8/a?x=1,arn:aws:sns:us-west-2:1:t=https://h/b")
	f.Add("arn:aws:sns:us-west-2:1:t=sns+https://h/b,arn:aws:sns:us-west-2:1:u=SNS+http://127.0.0.1/")
	f.Add("arn:x=sns+sns+http://h/")
	f.Add("arn:x=sns+http://h/,arn:y=http://h/")
	f.Add("arn:x=ftp://h/")
	f.Add("arn:x=http://u@h/")
	f.Add(",,=,")
	f.Fuzz(func(t *testing.T, s string) {
		var v webhooksValue
		if err := v.Set(s); err != nil {
			return
		}
		sns := map[string]bool{}
		for topic, hooks := range v {
			if !strings.HasPrefix(topic, "arn:") || len(hooks) == 0 {
				t.Fatalf("accepted topic %q with %v", topic, hooks)
			}
			for _, w := range hooks {
				if !strings.HasPrefix(w.URL, "http://") && !strings.HasPrefix(w.URL, "https://") {
					t.Fatalf("accepted URL %q", w.URL)
				}
				if was, ok := sns[w.URL]; ok && was != w.SNS {
					t.Fatalf("%q: URL %s accepted with two formats", s, w.URL)
				}
				sns[w.URL] = w.SNS
			}
		}
		var again webhooksValue
		if err := again.Set(v.String()); err != nil || again.String() != v.String() {
			t.Fatalf("%q: String %q reads back as %q, %v", s, v.String(), again.String(), err)
		}
	})
}

// FuzzPlacementCosts: every accepted price is a non-negative number, and
// String reads back as the same prices.
func FuzzPlacementCosts(f *testing.F) {
	f.Add("c5.large=0.085,c5.large/SPOT=0.03")
	f.Add("x=-1")
	f.Add("=,,a=NaN,b=Inf")
	f.Fuzz(func(t *testing.T, s string) {
		var v costsValue
		if err := v.Set(s); err != nil {
			return
		}
		for k, p := range v {
			if k == "" || p < 0 || p != p {
				t.Fatalf("accepted %q=%v", k, p)
			}
		}
		var back costsValue
		if err := back.Set(v.String()); err != nil || len(back) != len(v) {
			t.Fatalf("%q reads back as %v (%v)", v.String(), back, err)
		}
		for k, p := range v {
			if back[k] != p {
				t.Fatalf("%s: %v reads back as %v", k, p, back[k])
			}
		}
	})
}

// FuzzHostNetworks: every accepted network is masked and narrower than
// every address, and String reads back as the same networks.
func FuzzHostNetworks(f *testing.F) {
	f.Add("198.18.0.0/15,10.1.0.0/16")
	f.Add("198.18.0.7/15, ,fd00::/8")
	f.Add("0.0.0.0/0")
	f.Add("10.0.0.1")
	f.Fuzz(func(t *testing.T, s string) {
		var v networksValue
		if err := v.Set(s); err != nil {
			return
		}
		for _, p := range v {
			if p != p.Masked() || p.Bits() == 0 {
				t.Fatalf("accepted %s", p)
			}
		}
		var back networksValue
		if err := back.Set(v.String()); err != nil || back.String() != v.String() {
			t.Fatalf("%q reads back as %q (%v)", v.String(), back.String(), err)
		}
	})
}
