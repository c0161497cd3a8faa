package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/hoistgg/hoist/internal/console"
)

// Browser guard of the unauthenticated mode (docs/security.md).
//
// Without credentials Hoist checks no signature, so anything that can send
// it an HTTP request can run code as Hoist's user. The listeners are
// loopback only, which keeps other machines out, but not a web page the
// developer visits: through DNS rebinding (a name of the page's site
// re-pointed at 127.0.0.1) or a plain cross-site request, the developer's
// browser sends the page's requests to Hoist. guardBrowsers refuses both:
//
//   - a Host that is not a loopback name or address (localhost,
//     127.0.0.0/8, [::1], with or without a port), which is what a
//     rebound name looks like;
//   - a request a browser marks as coming from a web page of another
//     origin: any Origin header, or Sec-Fetch-Site other than same-origin
//     or none (the console's pages are Hoist's only ones: see below).
//
// The one route meant for browsers, the signed log URLs of
// GetGameSessionLogUrl (GET /hoist/logs), may be opened from another site
// (a link in a dashboard): its signature protects it. Its Host must still
// be a loopback one.
//
// The console's pages (/console) are Hoist's own: a form of theirs
// carries an Origin naming Hoist itself (scheme and Host), which the
// console's routes accept; any other Origin is refused there too.
//
// With credentials the guard is off: every route but /hoist/health and the
// log URLs needs a signature or token made with a secret a web page does
// not have, and the Host is among the signed headers.
func guardBrowsers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			refuse(w, "Hoist runs without credentials and answers only requests addressed to a loopback name "+
				"or address (localhost, 127.0.0.0/8, [::1]); this one is addressed to "+quoteClip(r.Host)+
				". Use http://127.0.0.1:<port>, or configure credentials (--credentials-file) to serve other names.")
			return
		}
		if browserRoute(r) {
			next.ServeHTTP(w, r)
			return
		}
		if o, ok := r.Header["Origin"]; ok && !(consoleRoute(r) && console.OwnOrigin(r, o)) {
			refuse(w, "Hoist runs without credentials and refuses requests from web pages (this one carries an Origin header).")
			return
		}
		switch site := r.Header.Get("Sec-Fetch-Site"); site {
		case "", "same-origin", "none":
		default:
			refuse(w, "Hoist runs without credentials and refuses requests from web pages (Sec-Fetch-Site: "+quoteClip(site)+").")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// browserRoute reports whether r is for a route meant to be opened in a
// browser: a signed log URL.
func browserRoute(r *http.Request) bool {
	return r.URL.Path == "/hoist/logs" && (r.Method == http.MethodGet || r.Method == http.MethodHead)
}

// loopbackHost reports whether host (a Host header: name or address, with
// an optional port) names the loopback interface.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(host, "localhost") || strings.EqualFold(host, "localhost.") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return false
	}
	return ip.Unmap().IsLoopback()
}

func refuse(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write([]byte(msg + "\n"))
}
