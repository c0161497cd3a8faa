// Package browser starts a real browser for the end-to-end tests of the
// web console: Debian's chromium, headless, driven through the DevTools
// protocol with chromedp. A test that needs it is skipped, saying why,
// when chromium is not installed (.ci/run installs it).
package browser

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// NoScripts is an option of New: the browser runs no page's JavaScript.
var NoScripts = chromedp.Flag("blink-settings", "scriptEnabled=false")

// Path returns the chromium executable found on PATH ("" when none).
func Path() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts a headless chromium for t and returns a chromedp context of
// its first tab, canceled after timeout; the browser ends with the test.
// It is started so that it talks to nothing but what the test opens: no
// background networking, component updates, sync or first-run pages, no
// proxy, and every host name but localhost unresolvable. As root it runs
// without its sandbox (chromium refuses to start as root otherwise).
// extra options come last (NoScripts: a browser without JavaScript).
func New(t testing.TB, timeout time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := Path()
	if path == "" {
		t.Skip("chromium is not installed (Debian: apt-get install chromium; .ci/run installs it): skipping the browser test")
	}
	// chromedp's defaults (headless, no first run, no background
	// networking, sync, extensions, default apps ...), then ours.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,AutofillServerCommunication"),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1 , EXCLUDE [::1]"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium (%s): %v", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel)
	return ctx
}
