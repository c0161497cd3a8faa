//go:build linux

package hosting

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/chromedp/chromedp"

	"github.com/hoistgg/hoist/e2e/browser"
	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestConsoleBrowser drives the web console in a real browser (headless
// chromium) against a real Hoist with credentials and real game servers:
// the sign-in, every page showing what the API made, the live events, a
// write action refused without its CSRF token (a forged POST from the
// console's own origin) and from another origin (a page of another port
// posting a form, even with the right token), then done with it (the
// game session terminates), the log links, and the sign-out.
func TestConsoleBrowser(t *testing.T) {
	ctx := browser.New(t, 5*time.Minute)
	e := startHoist(t)
	e.dumpOnFailure(t)
	w := newConsoleWorld(t, e)
	b := &consoleBrowser{t: t, ctx: ctx, base: e.h.URL}
	b.signIn()
	b.pages(w)
	b.liveEvents(e, w)
	b.terminate(e, w)
	b.logs(w)
	b.signOut()
}

// consoleBrowser is the browser's tab on the console of one Hoist.
type consoleBrowser struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// do runs actions, failing the test on an error.
func (b *consoleBrowser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// text returns the text of the first element sel selects, waiting for it.
func (b *consoleBrowser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// location returns the tab's URL.
func (b *consoleBrowser) location() string {
	b.t.Helper()
	u, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.t.Fatal(err)
	}
	return u
}

// shot writes a screenshot of the tab as docs/images/console-<name>.png
// when -console.screenshots is given.
func (b *consoleBrowser) shot(name string) {
	b.t.Helper()
	browser.Shot(b.t, b.ctx, name)
}

// signIn opens a page, is sent to the sign-in form, signs in with the
// e2e key pair and lands on the page it asked for.
func (b *consoleBrowser) signIn() {
	b.t.Helper()
	b.do("open the fleets page", chromedp.Navigate(b.base+"/console/fleets"))
	if u := b.location(); !strings.Contains(u, "/console/signin?next=") {
		b.t.Fatalf("without a session the console sent the browser to %s, want the sign-in", u)
	}
	b.do("type the access key", chromedp.SendKeys(chromedp.CSS("#AccessKeyId"), hoisttest.AccessKeyID))
	b.shot("signin")
	b.do("sign in", chromedp.SendKeys(chromedp.CSS("#SecretAccessKey"), hoisttest.SecretAccessKey),
		chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS("#fleets")))
	if u := b.location(); u != b.base+"/console/fleets" {
		b.t.Fatalf("signed in, the browser is at %s, want the fleets page", u)
	}
}

// consolePage is a page of the console and what it must show.
type consolePage struct {
	path, sel, want, shot string
}

// pages opens every page and checks it shows the world's resources.
func (b *consoleBrowser) pages(w *consoleWorld) {
	b.t.Helper()
	q := url.QueryEscape
	for _, p := range []consolePage{
		{path: "/console/", sel: "ul.cards", want: "Live events", shot: "overview"},
		{path: "/console/fleets", sel: "#fleets", want: w.fleet},
		{path: "/console/fleet?id=" + q(w.fleet), sel: "#locations", want: "us-west-2"},
		{path: "/console/fleet?id=" + q(w.fleet), sel: "#instances", want: "ACTIVE", shot: "fleet"},
		{path: "/console/fleet?id=" + q(w.fleet), sel: "#fleet-events", want: "FLEET_STATE_ACTIVE"},
		{path: "/console/processes?fleet=" + q(w.fleet), sel: "#processes", want: "ACTIVE", shot: "processes"},
		{path: "/console/gamesessions?fleet=" + q(w.fleet), sel: "#gamesessions", want: w.gameSession},
		{path: "/console/gamesession?id=" + q(w.gameSession), sel: "#players", want: "player-1"},
		{path: "/console/queues", sel: "#queues", want: w.queue},
		{path: "/console/queue?name=" + q(w.queue), sel: "#placements", want: "FULFILLED", shot: "queue"},
		{path: "/console/matchmaking", sel: "#configurations", want: w.config},
		{path: "/console/configuration?name=" + q(w.config), sel: "#diagnosis", want: "Over the 2 searching tickets"},
		{path: "/console/configuration?name=" + q(w.config), sel: "#tickets", want: "held by close-skill", shot: "matchmaking"},
		{path: "/console/fleetiq", sel: "#groups", want: w.group},
		{path: "/console/fleetiq/group?name=" + q(w.group), sel: "#gameservers", want: "console-game-server"},
		{path: "/console/fleetiq/group?name=" + q(w.group), sel: "#group-instances", want: w.instance, shot: "fleetiq"},
		{path: "/console/hosts", sel: "#hosts", want: "(this machine)"},
		{path: "/console/replicas", sel: "#replicas", want: "(this one)", shot: "replicas"},
	} {
		b.do("open "+p.path, chromedp.Navigate(b.base+p.path))
		if got := b.text(p.sel); !strings.Contains(got, p.want) {
			b.t.Errorf("%s: %s shows %q, want it to contain %q", p.path, p.sel, got, p.want)
		}
		if p.shot != "" {
			b.shot(p.shot)
		}
	}
}

// logs follows the output link of the process that hosted the game
// session terminate forced to end (the output of a process that ended
// abnormally is kept, for its event's PreSignedLogUrl) and an instance's
// setup log link: both are served (200).
func (b *consoleBrowser) logs(w *consoleWorld) {
	b.t.Helper()
	processes := "/console/processes?fleet=" + url.QueryEscape(w.fleet)
	link := "#processes a[href^='/hoist/logs']"
	eventually(b.t, waitLong, "an ended process's output link", func() (bool, string) {
		b.do("open "+processes, chromedp.Navigate(b.base+processes))
		n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll("`+link+`").length`))
		if err != nil {
			b.t.Fatal(err)
		}
		return n > 0, b.text("#processes")
	})
	b.follow(processes, link)
	b.follow("/console/fleet?id="+url.QueryEscape(w.fleet), "#instances a[href^='/hoist/logs']")
}

// follow opens page, then the first link sel selects, which must answer
// 200.
func (b *consoleBrowser) follow(page, sel string) {
	b.t.Helper()
	b.do("open "+page, chromedp.Navigate(b.base+page))
	href, err := chromedp.Run(b.ctx, chromedp.AttributeValue(chromedp.CSS(sel), "href"))
	if err != nil || !href.Exists {
		b.t.Fatalf("%s: no link %s: %v", page, sel, err)
	}
	resp, err := chromedp.RunResponse(b.ctx, chromedp.Navigate(b.base+href.Value))
	if err != nil || resp.Status != http.StatusOK {
		b.t.Fatalf("%s: link %s: %v %v", page, href.Value, resp, err)
	}
}

// liveEvents opens the live events page, starts a placement through the
// API and waits for its event to appear in the page.
func (b *consoleBrowser) liveEvents(e *env, w *consoleWorld) {
	b.t.Helper()
	b.do("open the live events", chromedp.Navigate(b.base+"/console/events"),
		chromedp.WaitVisible(chromedp.CSS(`#live-status[data-state="open"]`)))
	e.place(b.t, w.queue, "console-placement-2", nil)
	eventually(b.t, waitShort, "the placement's event in the live list", func() (bool, string) {
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.getElementById("event-rows").innerText`))
		if err != nil {
			b.t.Fatal(err)
		}
		return strings.Contains(got, "PlacementFulfilled"), got
	})
	b.shot("events")
}

// terminate refuses to terminate the game session for a forged POST
// without the CSRF token and for a form posted from another origin, then
// terminates it from its page (FORCE_TERMINATE: its process is killed).
func (b *consoleBrowser) terminate(e *env, w *consoleWorld) {
	b.t.Helper()
	page := b.base + "/console/gamesession?id=" + url.QueryEscape(w.gameSession)
	b.do("open the game session", chromedp.Navigate(page))
	token, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("#terminate input[name=csrf]").value`))
	if err != nil || token == "" {
		b.t.Fatalf("the terminate form's CSRF token: %q %v", token, err)
	}
	for name, body := range map[string]string{
		"no token":     "{gameSession: %q}",
		"forged token": "{gameSession: %q, csrf: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'}",
	} {
		js := fmt.Sprintf(`fetch("/console/actions/terminate-game-session", {method: "POST", body: new URLSearchParams(`+body+`)}).then(r => r.status)`, w.gameSession)
		status, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](js, chromedp.EvalAwaitPromise))
		if err != nil || status != http.StatusForbidden {
			b.t.Errorf("a POST from the console's page with %s: %d %v, want 403", name, status, err)
		}
	}
	// A page of another origin (another loopback port) posting the form,
	// with the real token: the browser sends the cookie (same site), the
	// console refuses the Origin.
	evil := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(rw, `<form id="f" method="post" action="%s/console/actions/terminate-game-session">
<input name="csrf" value="%s"><input name="gameSession" value="%s"></form><script>document.getElementById("f").submit()</script>`,
			b.base, token, w.gameSession)
	}))
	defer evil.Close()
	resp, err := chromedp.RunResponse(b.ctx, chromedp.Navigate(evil.URL))
	if err != nil {
		b.t.Fatal(err)
	}
	b.do("wait for the forged form's answer", chromedp.WaitReady(chromedp.CSS("body")))
	if got := b.text("body"); !strings.Contains(got, "only from its own pages") {
		b.t.Errorf("the form posted from %s: %v, page %q; want the console's refusal", evil.URL, resp.Status, got)
	}
	if gs := e.gameSession(b.t, w.gameSession); gs.Status != types.GameSessionStatusActive {
		b.t.Fatalf("after the refused writes the game session is %s, want ACTIVE", gs.Status)
	}
	b.do("terminate from the page", chromedp.Navigate(page),
		chromedp.SetValue(chromedp.CSS("#terminate select[name=mode]"), string(types.TerminationModeForceTerminate)),
		chromedp.Click(chromedp.CSS("#terminate button")), chromedp.WaitVisible(chromedp.CSS("#done")))
	if got := b.text("#done"); !strings.Contains(got, "terminating") {
		b.t.Errorf("after terminating, the page says %q", got)
	}
	b.shot("gamesession")
	e.waitGameSession(b.t, w.gameSession, types.GameSessionStatusTerminated)
}

// signOut signs out; the console then asks for a sign-in again.
func (b *consoleBrowser) signOut() {
	b.t.Helper()
	b.do("sign out", chromedp.Navigate(b.base+"/console/"), chromedp.Click(chromedp.CSS("form.signout button")),
		chromedp.WaitVisible(chromedp.CSS("#AccessKeyId")),
		chromedp.Navigate(b.base+"/console/fleets"))
	if u := b.location(); !strings.Contains(u, "/console/signin") {
		b.t.Fatalf("signed out, the fleets page went to %s, want the sign-in", u)
	}
}
