//go:build linux

package hosts

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hoistgg/hoist/e2e/browser"
	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestConsoleDrainUndrainHost drives the web console's hosts page in a
// real browser (headless chromium) against a Hoist with credentials and
// one pool host on loopback: signed in, the operator drains the host
// (DRAINING, as `hoist admin list-hosts` shows), the undrain action is
// refused without its CSRF token, with a forged one and from a page of
// another origin holding the real one, and the page's Undrain button
// makes the host ACTIVE again (`hoist admin undrain-host`'s action).
func TestConsoleDrainUndrainHost(t *testing.T) {
	ctx := browser.New(t, 3*time.Minute)
	e := startHoist(t, "127.0.0.1")
	a := e.startAgent(t, agentSpec{pool: "console", location: "us-west-2", addr: "127.0.0.2", instances: "c5.large=1",
		command: exec.CommandContext})
	b := &hostsPage{t: t, ctx: ctx, base: e.h.URL, host: a.hostID}
	b.signIn()

	b.press("drain-host", "Drain")
	if got := b.text("#done"); !strings.Contains(got, "is DRAINING") {
		t.Errorf("after Drain the page says %q", got)
	}
	if h := e.hosts(t)[a.hostID]; h.Status != "DRAINING" {
		t.Fatalf("after Drain the host is %s, want DRAINING", h.Status)
	}

	b.do("open the hosts page", chromedp.Navigate(b.base+"/console/hosts"), chromedp.WaitVisible(chromedp.CSS("#hosts")))
	browser.Shot(t, ctx, "hosts")
	b.refusedWrites()
	if h := e.hosts(t)[a.hostID]; h.Status != "DRAINING" {
		t.Fatalf("after the refused undrains the host is %s, want DRAINING", h.Status)
	}

	b.press("undrain-host", "Undrain")
	if got := b.text("#done"); !strings.Contains(got, "is ACTIVE") {
		t.Errorf("after Undrain the page says %q", got)
	}
	if h := e.hosts(t)[a.hostID]; h.Status != "ACTIVE" {
		t.Fatalf("after Undrain the host is %s, want ACTIVE", h.Status)
	}
	if n := b.count(b.form("drain-host")); n != 1 {
		t.Errorf("the undrained host's row has %d Drain buttons, want 1", n)
	}
}

// hostsPage is a browser tab on the console's hosts page, acting on one
// host.
type hostsPage struct {
	t    *testing.T
	ctx  context.Context
	base string
	host string
}

// do runs actions, failing the test on an error.
func (b *hostsPage) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// text returns the text of the first element sel selects.
func (b *hostsPage) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// count returns how many elements sel selects now (no wait).
func (b *hostsPage) count(sel string) int {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		b.t.Fatal(err)
	}
	return n
}

// form is the selector of the host's form of action on the hosts page.
func (b *hostsPage) form(action string) string {
	return fmt.Sprintf(`#hosts form[action="/console/actions/%s"]:has(input[name=host][value=%q])`, action, b.host)
}

// signIn opens the hosts page, signs in with the e2e key pair there and
// lands back on it.
func (b *hostsPage) signIn() {
	b.t.Helper()
	b.do("sign in", chromedp.Navigate(b.base+"/console/hosts"),
		chromedp.SendKeys(chromedp.CSS("#AccessKeyId"), hoisttest.AccessKeyID),
		chromedp.SendKeys(chromedp.CSS("#SecretAccessKey"), hoisttest.SecretAccessKey),
		chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS("#hosts")))
}

// press opens the hosts page and presses the host's button of action,
// which must be there, then waits for the page saying what was done.
func (b *hostsPage) press(action, label string) {
	b.t.Helper()
	b.do("open the hosts page", chromedp.Navigate(b.base+"/console/hosts"), chromedp.WaitVisible(chromedp.CSS("#hosts")))
	if n := b.count(b.form(action) + " button"); n != 1 {
		b.t.Fatalf("the hosts page has %d %s buttons for host %s, want 1:\n%s", n, label, b.host, b.text("#hosts"))
	}
	b.do("press "+label, chromedp.Click(chromedp.CSS(b.form(action)+" button")), chromedp.WaitVisible(chromedp.CSS("#done")))
}

// refusedWrites posts the undrain action from the console's own page
// without a CSRF token and with a forged one, and from a page of another
// origin (another loopback port: the browser sends the cookie, same site)
// with the real one: each is refused (403).
func (b *hostsPage) refusedWrites() {
	b.t.Helper()
	b.do("open the hosts page", chromedp.Navigate(b.base+"/console/hosts"), chromedp.WaitVisible(chromedp.CSS("#hosts")))
	if b.count(b.form("undrain-host")) != 1 {
		b.t.Fatalf("the hosts page has no Undrain form for the DRAINING host %s:\n%s", b.host, b.text("#hosts"))
	}
	token, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](
		fmt.Sprintf("document.querySelector(%q).value", b.form("undrain-host")+" input[name=csrf]")))
	if err != nil || token == "" {
		b.t.Fatalf("the Undrain form's CSRF token: %q %v", token, err)
	}
	for name, csrf := range map[string]string{"no token": "", "forged token": strings.Repeat("A", 43)} {
		js := fmt.Sprintf(`fetch("/console/actions/undrain-host", {method: "POST", body: new URLSearchParams({host: %q, csrf: %q})}).then(r => r.status)`,
			b.host, csrf)
		status, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](js, chromedp.EvalAwaitPromise))
		if err != nil || status != http.StatusForbidden {
			b.t.Errorf("undrain-host from the console's page with %s: %d %v, want 403", name, status, err)
		}
	}
	evil := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(rw, `<form id="f" method="post" action="%s/console/actions/undrain-host">
<input name="csrf" value="%s"><input name="host" value="%s"></form><script>document.getElementById("f").submit()</script>`,
			b.base, token, b.host)
	}))
	defer evil.Close()
	b.do("open the other origin's page", chromedp.Navigate(evil.URL))
	eventually(b.t, waitShort, "the console's refusal of the other origin's form", func() (bool, string) {
		got := b.text("body")
		return strings.Contains(got, "only from its own pages"), got
	})
}

// TestConsoleWithoutJavaScript: in a chromium that runs no JavaScript,
// the console still works but for its live event list: the operator signs
// in, every page renders, and a write action (drain, then undrain a pool
// host) is a plain form; the live events page says it needs JavaScript.
func TestConsoleWithoutJavaScript(t *testing.T) {
	ctx := browser.New(t, 3*time.Minute, browser.NoScripts)
	e := startHoist(t, "127.0.0.1")
	a := e.startAgent(t, agentSpec{pool: "noscript", location: "us-west-2", addr: "127.0.0.2", instances: "c5.large=1",
		command: exec.CommandContext})
	b := &hostsPage{t: t, ctx: ctx, base: e.h.URL, host: a.hostID}
	b.signIn()
	for path, heading := range map[string]string{"/console/": "Overview", "/console/fleets": "Fleets",
		"/console/gamesessions": "Game sessions", "/console/queues": "Game session queues", "/console/matchmaking": "Matchmaking",
		"/console/fleetiq": "FleetIQ", "/console/hosts": "Hosts", "/console/replicas": "Replicas", "/console/events": "Live events"} {
		b.do("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS("h1")))
		if got := b.text("h1"); !strings.Contains(got, heading) {
			t.Errorf("%s: heading %q, want %q", path, got, heading)
		}
	}
	b.do("open the live events", chromedp.Navigate(b.base+"/console/events"))
	// The console's script would replace this note as it opens the stream.
	if got := b.text("#live-status"); !strings.Contains(got, "needs JavaScript") {
		t.Errorf("the live events page without JavaScript says %q, want that it needs JavaScript", got)
	}
	b.press("drain-host", "Drain")
	if h := e.hosts(t)[a.hostID]; h.Status != "DRAINING" {
		t.Fatalf("after Drain the host is %s, want DRAINING", h.Status)
	}
	b.press("undrain-host", "Undrain")
	if h := e.hosts(t)[a.hostID]; h.Status != "ACTIVE" {
		t.Fatalf("after Undrain the host is %s, want ACTIVE", h.Status)
	}
}
