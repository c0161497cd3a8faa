package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/sysinfo"
)

// TestEventOutboxBound: events to a receiver that keeps failing stay
// within --event-outbox in a real Hoist: the oldest are deleted (one
// warning in Hoist's log, however many), and once the receiver is back it
// gets the newest ones, in order, ending with the last. /metrics counts
// the deliveries waiting, dropped and delivered.
//
// With HOIST_WEBHOOK_EVENTS=<n> it measures instead: n events to a
// receiver that answers 503, with the default bound, and Hoist's resident
// memory before and after (docs/security.md, "Event webhooks"):
//
//	HOIST_WEBHOOK_EVENTS=80000 go test -count=1 -run TestEventOutboxBound -v ./e2e/api/
func TestEventOutboxBound(t *testing.T) {
	const topic = "arn:aws:sns:us-west-2:123456789012:outbox"
	const queue = "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/outbox"
	n, _ := strconv.Atoi(os.Getenv("HOIST_WEBHOOK_EVENTS"))
	measure := n > 0
	const bound = 500
	if !measure {
		n = 2000
	}
	var up atomic.Bool
	var mu sync.Mutex
	var got []int // the message numbers received, in order
	last := make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var env struct{ Detail struct{ Message string } }
		_ = json.Unmarshal(body, &env)
		i, err := strconv.Atoi(env.Detail.Message)
		if err != nil {
			t.Errorf("webhook body %s", body)
		}
		mu.Lock()
		got = append(got, i)
		mu.Unlock()
		if i == n-1 {
			close(last)
		}
	}))
	defer rcv.Close()
	args := []string{"--webhooks", topic + "=" + rcv.URL + "/hook", "--timings", "events.deliver=100ms,events.backoff=100ms"}
	if !measure {
		args = append(args, "--event-outbox", strconv.Itoa(bound))
	}
	h := hoisttest.Start(t, hoisttest.Options{Args: args})
	rssBefore, _ := sysinfo.Memory(h.PID())

	start := time.Now()
	sendEvents(t, h, topic, queue, n, map[bool]int{false: 1, true: 16}[measure])
	sent := time.Since(start)
	if measure {
		rss, _ := sysinfo.Memory(h.PID())
		t.Logf("%d events to a failing receiver in %s: resident %d MiB before, %d MiB after (+%d MiB), peak %d MiB",
			n, sent.Round(time.Millisecond), rssBefore>>10, rss>>10, (rss-rssBefore)>>10, sysinfo.PeakRSS(h.PID())>>10)
		return
	}

	// /metrics: every delivery is waiting or was dropped from the full
	// outbox (one webhook: as many deliveries as events), none delivered.
	waitWebhookMetrics(t, h, "the receiver down", func(w webhookMetrics) bool {
		return w.evicted > 0 && w.droppedFull == w.evicted && w.backlog+w.droppedFull == float64(n) &&
			w.failed > 0 && w.delivered == 0
	})
	up.Store(true)
	select {
	case <-last:
	case <-time.After(time.Minute):
		t.Fatal("the last event did not arrive within a minute")
	}
	waitWebhookMetrics(t, h, "the receiver back", func(w webhookMetrics) bool {
		mu.Lock()
		defer mu.Unlock()
		return w.backlog == 0 && w.delivered == float64(len(got)) && w.delivered+w.droppedFull == float64(n)
	})
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("received out of order: %d after %d", got[i], got[i-1])
		}
	}
	// Sending took about 'sent'; Hoist bounds the outbox every 100 ms, so
	// at most a tenth of a second's events more than the bound are left.
	slack := int(float64(n)*float64(100*time.Millisecond)/float64(sent)) + 1
	t.Logf("%d events sent in %s with the receiver down; %d received once it was back", n, sent.Round(time.Millisecond), len(got))
	if len(got) > bound+slack {
		t.Errorf("the receiver got %d events once back, want at most %d + %d", len(got), bound, slack)
	}
	if c := strings.Count(h.Log(), "event outbox full"); c != 1 {
		t.Errorf("Hoist logged %d outbox warnings, want 1 (rate-limited):\n%s", c, h.LogTail(20))
	}
}

// sendEvents publishes test events "0" ... "n-1" about resource to topic,
// from parallel senders (one sender publishes them in order).
func sendEvents(t *testing.T, h *hoisttest.Hoist, topic, resource string, n, parallel int) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, parallel)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := trySendEvent(t, h, topic, resource, strconv.Itoa(i)); err != nil {
					errs <- fmt.Errorf("event %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// trySendEvent is sendEvent returning its error.
func trySendEvent(t *testing.T, h *hoisttest.Hoist, topic, resource, msg string) error {
	body, _ := json.Marshal(map[string]string{"Topic": topic, "Resource": resource, "Message": msg})
	req, _ := http.NewRequest(http.MethodPost, h.URL+"/hoist/admin/SendTestEvent", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	signRequest(t, req, body, hoisttest.AccessKeyID, hoisttest.SecretAccessKey)
	resp, err := rawClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("SendTestEvent: %d %s", resp.StatusCode, b)
	}
	return nil
}

// webhookMetrics are the webhook figures of one scrape of /metrics.
type webhookMetrics struct {
	backlog, delivered, failed, droppedFull, evicted float64
}

// waitWebhookMetrics scrapes h's /metrics until ok holds of its webhook
// figures, failing the test after 30 s (polling: the backlog gauge is
// reused for up to a second).
func waitWebhookMetrics(t *testing.T, h *hoisttest.Hoist, what string, ok func(webhookMetrics) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := hoisttest.Scrape(h.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		result := func(r string) float64 {
			v, _ := m.Value("hoist_webhook_deliveries_total", map[string]string{"result": r})
			return v
		}
		var w webhookMetrics
		w.backlog, _ = m.Value("hoist_webhook_backlog", nil)
		w.evicted, _ = m.Value("hoist_events_evicted_total", nil)
		w.delivered, w.failed, w.droppedFull = result("delivered"), result("failed"), result("dropped_full")
		if ok(w) {
			t.Logf("webhook metrics, %s: %+v", what, w)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook metrics, %s: %+v", what, w)
		}
		time.Sleep(50 * time.Millisecond) // polling the scrape
	}
}
