package browser

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// screenshots makes the console's browser tests write the screenshots of
// docs/console.md into docs/images (docs/console.md says how).
var screenshots = flag.Bool("console.screenshots", false,
	"the console's browser tests: write the console's screenshots into docs/images")

// MaxScreenshot bounds the size of one screenshot in docs/images.
const MaxScreenshot = 150 << 10

// Shot writes a screenshot of the tab of ctx as
// docs/images/console-<name>.png when -console.screenshots is given, and
// fails t if it is larger than MaxScreenshot.
func Shot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	if !*screenshots {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if len(png) > MaxScreenshot {
		t.Errorf("screenshot %s is %d bytes, more than %d", name, len(png), MaxScreenshot)
	}
	path := filepath.Join(hoisttest.RepoRoot(), "docs", "images", "console-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
