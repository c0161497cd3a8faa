package browser

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestNew: the browser starts and opens a page on loopback.
func TestNew(t *testing.T) {
	ctx := New(t, time.Minute)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<title>hoist browser test</title><p id=p>ok</p>")
	}))
	defer ts.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL)); err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil || title != "hoist browser test" {
		t.Fatalf("title %q, %v", title, err)
	}
}
