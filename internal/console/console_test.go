package console

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLocalPath: only paths of the console are gone back to after an
// action or a sign-in (no open redirect).
func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/console":                      "/console",
		"/console/fleet?id=fleet-1":     "/console/fleet?id=fleet-1",
		"":                              "",
		"/":                             "",
		"//evil.example/console/":       "",
		"/console//evil.example":        "",
		"https://evil.example/console/": "",
		"/consolex":                     "",
		"/console/\\evil":               "",
		"/console/\r\nSet-Cookie: x=y":  "",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzLocalPath: whatever comes in, what comes out is "" or a path of the
// console that a browser cannot read as another host.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/console/", "//x", "/console//x", "/console/\\x", "/console/a?b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := localPath(s)
		if got == "" {
			return
		}
		if got != s || (got != Prefix && !strings.HasPrefix(got, Prefix+"/")) || strings.Contains(got, "//") || strings.ContainsAny(got, "\\\r\n") {
			t.Fatalf("localPath(%q) = %q", s, got)
		}
	})
}

// TestOwnOrigin: an Origin is the console's own when it names the
// request's Host over http or https, and nothing else.
func TestOwnOrigin(t *testing.T) {
	r := httptest.NewRequest("POST", "http://127.0.0.1:9080/console/actions/x", nil)
	for o, want := range map[string]bool{
		"http://127.0.0.1:9080":              true,
		"https://127.0.0.1:9080":             true,
		"HTTP://127.0.0.1:9080":              false,
		"http://127.0.0.1:9081":              false,
		"http://127.0.0.1:9080.evil.example": false,
		"http://127.0.0.1:9080/":             false,
		"null":                               false,
		"":                                   false,
		"ftp://127.0.0.1:9080":               false,
	} {
		if got := OwnOrigin(r, []string{o}); got != want {
			t.Errorf("OwnOrigin(%q) = %v, want %v", o, got, want)
		}
	}
	if OwnOrigin(r, []string{"http://127.0.0.1:9080", "http://127.0.0.1:9080"}) {
		t.Error("two Origin headers accepted")
	}
}

// FuzzOwnOrigin: an Origin accepted is exactly http(s):// and the Host.
func FuzzOwnOrigin(f *testing.F) {
	f.Add("127.0.0.1:9080", "http://127.0.0.1:9080")
	f.Add("localhost", "https://LOCALHOST")
	f.Fuzz(func(t *testing.T, host, origin string) {
		r := httptest.NewRequest("GET", "http://x/", nil)
		r.Host = host
		if !OwnOrigin(r, []string{origin}) {
			return
		}
		if !strings.EqualFold(origin, "http://"+host) && !strings.EqualFold(origin, "https://"+host) || host == "" {
			t.Fatalf("OwnOrigin accepted %q for Host %q", origin, host)
		}
	})
}
