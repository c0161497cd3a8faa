package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
)

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A receiver that never answers does not delay another URL's events: in a
// synctest bubble (the requests go to a fake transport, never to the
// network), the events of the URL that answers arrive as they are
// published while the other's first request waits for its timeout.
func TestHangingReceiverDelaysNoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const hang, fast = "http://127.0.0.1:1/hang", "http://127.0.0.1:2/fast"
		var mu sync.Mutex
		var arrived []time.Time // when fast took each event
		client := &http.Client{Timeout: DefaultRequestTimeout, Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.String() == hang {
				<-req.Context().Done()
				return nil, req.Context().Err()
			}
			mu.Lock()
			arrived = append(arrived, time.Now())
			mu.Unlock()
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}}, nil
		})}
		st, err := journal.Open(t.TempDir(), journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		svc := New(Config{Store: st, Region: "us-west-2", Account: "123456789012", Secret: secret, Client: client,
			Webhooks: map[string][]Webhook{topic: {{URL: hang}, {URL: fast}}}, ReplicaID: "r1"})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- svc.Run(ctx) }()
		publish := func(n int) {
			err := st.Update(ctx, func(tx store.Tx) error {
				return svc.Publish(ctx, tx, Event{DetailType: "x", Resources: []string{"r"}, Topic: topic,
					Detail: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		took := func(n int) time.Duration { // how long fast took to get its n-th event
			t.Helper()
			start := time.Now()
			for {
				synctest.Wait()
				mu.Lock()
				got := len(arrived)
				mu.Unlock()
				if got >= n {
					return time.Since(start)
				}
				if time.Since(start) > 2*DefaultRequestTimeout {
					t.Fatalf("fast got %d events in %s", got, time.Since(start))
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		for n := 1; n <= 3; n++ {
			publish(n)
			// The publish kicks the URL's loop; if its transaction had not
			// committed when the loop looked, the next tick takes it.
			if d := took(n); d > DefaultInterval {
				t.Fatalf("event %d reached the answering URL after %s, while the other hung", n, d)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// The outbox's bound deletes the events no webhook waits for first, then
// the oldest undelivered ones; it counts them and the deliveries it drops,
// and logs the drops at most once a minute (summed); the receiver, once
// back, gets the newest events in order.
// (On both embedded stores.)
func TestOutboxEvictsOldestFirst(t *testing.T) {
	for _, useSQLite := range []bool{false, true} {
		t.Run(map[bool]string{false: "journal", true: "sqlite"}[useSQLite], func(t *testing.T) {
			testOutboxEvictsOldestFirst(t, useSQLite)
		})
	}
}

// testOutboxEvictsOldestFirst is TestOutboxEvictsOldestFirst on one store.
func testOutboxEvictsOldestFirst(t *testing.T, useSQLite bool) {
	rcv := newReceiver(t)
	var logBuf bytes.Buffer
	h := newHarnessWith(t, map[string][]string{topic: {rcv.srv.URL}}, func(h *harness) {
		h.maxEvents, h.logger, h.sqlite = 10, slog.New(slog.NewTextHandler(&logBuf, nil)), useSQLite
	})
	warnings := func() int { return strings.Count(logBuf.String(), "event outbox full") }
	rcv.setDown(true)
	// 11 events to the receiver that is down, alternating between two
	// resources, then 4 of no topic (no delivery pending).
	for i := range 11 {
		h.publish(fmt.Sprint("r", i%2), i)
	}
	for i := range 4 {
		err := h.st.Update(context.Background(), func(tx store.Tx) error {
			return h.svc.Publish(context.Background(), tx, Event{DetailType: "x", Resources: []string{fmt.Sprint("s", i)}})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	h.deliver()
	if n, p := h.count(kindEvent), h.count(kindDelivery); n != 10 || p != 10 {
		t.Fatalf("%d events, %d deliveries kept; want 10 and 10 (events 1 to 10)", n, p)
	}
	if c := h.svc.Counters(); c.Evicted != 5 || c.DroppedFull != 1 || c.Failed != 2 {
		t.Fatalf("counters %+v, want 5 evicted, 1 delivery dropped, 2 failed", c)
	}
	if warnings() != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", warnings(), logBuf.String())
	}
	// More within the minute: counted, not logged until it has passed.
	for i := 11; i < 16; i++ {
		h.publish(fmt.Sprint("r", i%2), i)
	}
	h.deliver()
	if c := h.svc.Counters(); c.Evicted != 10 || c.DroppedFull != 6 {
		t.Fatalf("counters %+v, want 10 evicted, 6 dropped", c)
	}
	if warnings() != 1 {
		t.Fatalf("%d warnings within a minute, want 1", warnings())
	}
	h.clock.Advance(dropLogEvery)
	rcv.setDown(false)
	h.deliver()
	lines := strings.Split(strings.TrimSpace(logBuf.String()), "\n")
	if warnings() != 2 || !strings.Contains(lines[len(lines)-1], "undelivered=5 deliveries_dropped=5 events_deleted=5 ") {
		t.Fatalf("after a minute: want a second warning summing the 5 evictions:\n%s", logBuf.String())
	}
	if got := rcv.received(); fmt.Sprint(got["r0"], got["r1"]) != "[6 8 10 12 14] [7 9 11 13 15]" {
		t.Fatalf("received %v, want the newest 10 in order", got)
	}
	if items, _ := h.replayAll(); len(items) != 10 {
		t.Errorf("%d events on the stream, want the 10 kept", len(items))
	}
	if n := h.count(kindDelivery) + h.count(kindStream); n != 0 {
		t.Errorf("%d delivery records left", n)
	}
}

// capture is a webhook endpoint that keeps each request and answers 200.
type capture struct {
	mu   sync.Mutex
	reqs []captured
	srv  *httptest.Server
}

// captured is one request a capture took.
type captured struct {
	header http.Header
	body   []byte
}

// newCapture starts a capture on loopback, closed when the test ends.
func newCapture(t *testing.T) *capture {
	c := &capture{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, captured{req.Header.Clone(), body})
		c.mu.Unlock()
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// only returns the one request c took, failing unless it took one.
func (c *capture) only(t *testing.T) captured {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(c.reqs))
	}
	return c.reqs[0]
}

// verifies reports whether r verifies as a request to url.
func (r captured) verifies(url string) bool {
	ts, _ := strconv.ParseInt(r.header.Get(HeaderTimestamp), 10, 64)
	return Verify(secret, ts, url, r.body, r.header.Get(HeaderSignature))
}

// A delivery to one URL does not verify as a delivery to another, even of
// the same topic with the same body: receiver A cannot replay it to B.
func TestSignatureCoversTheURL(t *testing.T) {
	a, b := newCapture(t), newCapture(t)
	h := newHarness(t, map[string][]string{topic: {a.srv.URL, b.srv.URL}})
	h.publish("r", 0)
	h.deliver()
	ra, rb := a.only(t), b.only(t)
	if !bytes.Equal(ra.body, rb.body) {
		t.Fatal("the two receivers got different bodies")
	}
	if !ra.verifies(a.srv.URL) || !rb.verifies(b.srv.URL) {
		t.Fatal("a delivery does not verify for its own URL")
	}
	if ra.verifies(b.srv.URL) || rb.verifies(a.srv.URL) {
		t.Error("a delivery to one URL verifies as a delivery to the other")
	}
	if sig := ra.header.Get(HeaderSignature); !strings.HasPrefix(sig, "v2=") {
		t.Errorf("signature %q, want v2=...", sig)
	}
}

// snsHTTPNotification is the body of an SNS HTTP(S) notification as SNS
// documents it ("HTTP/HTTPS notification JSON format"), to decode a
// Hoist request strictly.
type snsHTTPNotification struct {
	Type             string
	MessageId        string
	TopicArn         string
	Subject          *string
	Message          string
	Timestamp        string
	SignatureVersion string
	Signature        string
	SigningCertURL   string
	UnsubscribeURL   string
}

// A URL given with "sns+" gets SNS's HTTP(S) notification: SNS's headers,
// its JSON fields and nothing else, the event's envelope as the Message
// string, the event's id as MessageId, the topic;
// Hoist's signature over the raw body in its headers. A plain URL of the
// same topic still gets the event itself.
func TestSNSEnvelope(t *testing.T) {
	sns, plain := newCapture(t), newCapture(t)
	h := newHarnessWith(t, map[string][]string{topic: {sns.srv.URL, plain.srv.URL}}, func(h *harness) {
		h.sns = map[string]bool{sns.srv.URL: true}
		h.clock.Advance(1234 * time.Millisecond)
	})
	h.svc.cfg.NewID = func() string { return "0b7d5f7e-8d5a-4c1e-9f65-2f9a6c0d1e23" }
	const queue = "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q1"
	h.publish(queue, 7)
	h.deliver()
	r, p := sns.only(t), plain.only(t)

	for k, want := range map[string]string{"X-Amz-Sns-Message-Type": "Notification",
		"X-Amz-Sns-Message-Id": "0b7d5f7e-8d5a-4c1e-9f65-2f9a6c0d1e23", "X-Amz-Sns-Topic-Arn": topic,
		"Content-Type": "text/plain; charset=UTF-8"} {
		if got := r.header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if sub := r.header.Get("X-Amz-Sns-Subscription-Arn"); !strings.HasPrefix(sub, topic+":") || len(sub) != len(topic)+37 {
		t.Errorf("subscription ARN %q, want the topic ARN, ':' and a UUID", sub)
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	var n snsHTTPNotification
	if err := dec.Decode(&n); err != nil {
		t.Fatalf("not SNS's notification JSON: %v\n%s", err, r.body)
	}
	if n.Type != "Notification" || n.MessageId != "0b7d5f7e-8d5a-4c1e-9f65-2f9a6c0d1e23" || n.TopicArn != topic ||
		n.Subject != nil || n.SignatureVersion != SNSSignatureVersion {
		t.Errorf("notification %+v", n)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", n.Timestamp); err != nil || n.Timestamp != "2026-11-25T10:00:01.000Z" {
		t.Errorf("Timestamp %q (%v), want the event's time in SNS's form", n.Timestamp, err)
	}
	// The Message is the event, byte for byte what a plain webhook gets.
	if n.Message != string(p.body) {
		t.Errorf("Message\n%s\nwant the event\n%s", n.Message, p.body)
	}
	var env Envelope
	if err := json.Unmarshal([]byte(n.Message), &env); err != nil || env.ID != n.MessageId || env.Resources[0] != queue {
		t.Errorf("Message is not the event's envelope: %v %+v", err, env)
	}
	if !r.verifies(sns.srv.URL) || !p.verifies(plain.srv.URL) {
		t.Error("requests do not verify")
	}
	if p.header.Get("X-Amz-Sns-Message-Type") != "" || p.header.Get("Content-Type") != "application/json" {
		t.Errorf("the plain webhook got SNS's headers: %v", p.header)
	}
}

// A stream record of an older Hoist (no Parent) is adopted by its URL's
// loop and delivered.
func TestStreamOfAnOlderHoistIsDelivered(t *testing.T) {
	rcv := newReceiver(t)
	h := newHarness(t, map[string][]string{topic: {rcv.srv.URL}})
	h.publish("r", 0)
	sid := streamID(rcv.srv.URL, "r")
	err := h.st.Update(context.Background(), func(tx store.Tx) error {
		rec, err := tx.Get(context.Background(), kindStream, sid)
		if err != nil {
			return err
		}
		rec.Parent = ""
		return tx.Put(context.Background(), rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	h.deliver() // the housekeeping adopts it
	h.deliver()
	if got := rcv.received(); fmt.Sprint(got["r"]) != "[0]" {
		t.Fatalf("got %v", got)
	}
}

// The drops of removed URLs are counted; the configured URL's deliveries
// are kept (on both embedded stores: the removed URLs are found by their
// keys in stream IDs).
func TestRemovedWebhookIsCounted(t *testing.T) {
	for _, useSQLite := range []bool{false, true} {
		t.Run(map[bool]string{false: "journal", true: "sqlite"}[useSQLite], func(t *testing.T) {
			rcv := newReceiver(t)
			rcv.setDown(true)
			gone := []string{"http://127.0.0.1:1/gone", "http://127.0.0.1:1/gone-too", "http://127.0.0.1:1/and-this"}
			h := newHarnessOn(t, map[string][]string{topic: append([]string{rcv.srv.URL}, gone...)}, useSQLite)
			for i := range 3 {
				h.publish(fmt.Sprint("r", i), i)
			}
			h.hooks = map[string][]string{topic: {rcv.srv.URL}}
			_ = h.st.Close()
			h.open()
			h.deliver()
			if c := h.svc.Counters(); c.DroppedRemoved != 9 {
				t.Fatalf("counters %+v, want 9 removed", c)
			}
			if n, s := h.count(kindDelivery), h.count(kindStream); n != 3 || s != 3 {
				t.Fatalf("%d deliveries, %d streams left, want the 3 of the configured URL", n, s)
			}
		})
	}
}

// TestAcknowledgedDeliveryRecordedWhenStopped: a delivery the receiver
// acknowledged just as its loop is asked to stop (Hoist stopping) is
// recorded all the same, so that it is not sent again after a restart.
func TestAcknowledgedDeliveryRecordedWhenStopped(t *testing.T) {
	c := newCapture(t)
	h := newHarness(t, map[string][]string{topic: {c.srv.URL}})
	h.publish("r", 0)
	ctx, stop := context.WithCancel(context.Background())
	h.svc.afterSend = stop
	if err := h.svc.Deliver(ctx); err != nil && !errors.Is(err, context.Canceled) { // stopped: what came after may end so
		t.Fatal(err)
	}
	h.svc.afterSend = nil
	if n := h.count(kindDelivery); n != 0 {
		t.Fatalf("%d deliveries pending after the receiver acknowledged the one, want 0", n)
	}
	h.deliver() // as after a restart
	c.only(t)
}
