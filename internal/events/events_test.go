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
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/sqlite"
)

const topic = "arn:aws:sns:us-west-2:123456789012:placements"

var secret = []byte("test-secret")

// receiver is a webhook endpoint that can be down.
type receiver struct {
	mu   sync.Mutex
	down bool
	got  []Envelope
	hits int
	bad  []string // signature failures
	srv  *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.hits++
		if r.down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		ts, _ := strconv.ParseInt(req.Header.Get(HeaderTimestamp), 10, 64)
		if !Verify(secret, ts, r.srv.URL, body, req.Header.Get(HeaderSignature)) {
			r.bad = append(r.bad, req.Header.Get(HeaderEventID))
		}
		var env Envelope
		if err := json.Unmarshal(body, &env); err != nil {
			r.bad = append(r.bad, "undecodable")
		}
		if env.ID != req.Header.Get(HeaderEventID) {
			r.bad = append(r.bad, "event id header "+req.Header.Get(HeaderEventID))
		}
		r.got = append(r.got, env)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) setDown(v bool) { r.mu.Lock(); r.down = v; r.mu.Unlock() }

// ids returns the detail "n" of each received event, per resource.
func (r *receiver) received() map[string][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]int{}
	for _, e := range r.got {
		var d struct{ N int }
		_ = json.Unmarshal(e.Detail, &d)
		out[e.Resources[0]] = append(out[e.Resources[0]], d.N)
	}
	return out
}

type harness struct {
	t     testing.TB
	dir   string
	st    store.Store
	clock *clocktest.Clock
	svc   *Service
	hooks map[string][]string
	// sns: the URLs that get SNS's envelope.
	sns map[string]bool
	// maxEvents is Config.MaxEvents; logger Config.Logger.
	maxEvents int
	logger    *slog.Logger
	// sqlite: the SQLite store instead of the journal store.
	sqlite bool
}

func newHarness(t testing.TB, hooks map[string][]string) *harness {
	return newHarnessOn(t, hooks, false)
}

func newHarnessOn(t testing.TB, hooks map[string][]string, useSQLite bool) *harness {
	return newHarnessWith(t, hooks, func(h *harness) { h.sqlite = useSQLite })
}

// newHarnessWith is newHarness with configure applied before the store
// and the Service are opened.
func newHarnessWith(t testing.TB, hooks map[string][]string, configure func(*harness)) *harness {
	h := &harness{t: t, dir: filepath.Join(t.TempDir(), "store"), hooks: hooks,
		clock: clocktest.New(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))}
	configure(h)
	h.open()
	t.Cleanup(func() { _ = h.st.Close() })
	return h
}

func (h *harness) open() {
	var st store.Store
	var err error
	if h.sqlite {
		st, err = sqlite.Open(h.dir+".db", sqlite.Options{})
	} else {
		st, err = journal.Open(h.dir, journal.Options{})
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.st = st
	hooks := map[string][]Webhook{}
	for topic, urls := range h.hooks {
		for _, u := range urls {
			hooks[topic] = append(hooks[topic], Webhook{URL: u, SNS: h.sns[u]})
		}
	}
	h.svc = New(Config{Store: st, Region: "us-west-2", Account: "123456789012", Webhooks: hooks,
		Secret: secret, Now: h.clock.Now, MaxEvents: h.maxEvents, Logger: h.logger})
}

// publish publishes event n of resource res in its own transaction.
func (h *harness) publish(res string, n int) {
	h.t.Helper()
	if err := h.tryPublish(res, n); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) tryPublish(res string, n int) error {
	return h.st.Update(context.Background(), func(tx store.Tx) error {
		return h.svc.Publish(context.Background(), tx, Event{DetailType: DetailTypeQueuePlacement,
			Resources: []string{res}, Detail: json.RawMessage(fmt.Sprintf(`{"type":"PlacementFulfilled","n":%d}`, n)),
			Topic: topic})
	})
}

// replayAll reads every kept event, as a live stream with Last-Event-ID 0
// does before it follows new ones.
func (h *harness) replayAll() ([]Item, error) {
	r, err := h.svc.NewReader(context.Background(), "0")
	if err != nil {
		return nil, err
	}
	var all []Item
	for {
		items, err := r.Next(context.Background(), 100)
		if err != nil || len(items) == 0 {
			return all, err
		}
		all = append(all, items...)
	}
}

func (h *harness) deliver() {
	h.t.Helper()
	if err := h.svc.Deliver(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) count(kind store.Kind) int {
	var n int
	_ = h.st.View(context.Background(), func(tx store.Tx) error {
		var err error
		n, err = tx.Count(context.Background(), store.Query{Kind: kind})
		return err
	})
	return n
}

func TestPublishWritesTheEnvelope(t *testing.T) {
	h := newHarness(t, nil)
	h.svc.cfg.NewID = func() string { return "11111111-2222-3333-4444-555555555555" }
	h.publish("arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q1", 7)
	items, err := h.replayAll()
	if err != nil || len(items) != 1 {
		t.Fatalf("replay = %v, %v", items, err)
	}
	var got map[string]any
	if err := json.Unmarshal(items[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"version": "0", "id": "11111111-2222-3333-4444-555555555555",
		"detail-type": "GameLift Queue Placement Event", "source": "aws.gamelift", "account": "123456789012",
		"time": "2026-11-25T10:00:00Z", "region": "us-west-2",
		"resources": []any{"arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q1"},
		"detail":    map[string]any{"type": "PlacementFulfilled", "n": float64(7)}}
	if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
		t.Errorf("envelope\n got %s\nwant %s", g, w)
	}
	if !items[0].Matches("q1") || !items[0].Matches("arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q1") || items[0].Matches("q2") {
		t.Error("Matches by name or ARN is wrong")
	}
}

func TestPublishIsPartOfTheTransaction(t *testing.T) {
	h := newHarness(t, map[string][]string{topic: {"http://127.0.0.1:1/"}})
	boom := errors.New("boom")
	err := h.st.Update(context.Background(), func(tx store.Tx) error {
		if err := h.svc.Publish(context.Background(), tx, Event{DetailType: "x", Topic: topic, Resources: []string{"r"}}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	for _, k := range []store.Kind{kindEvent, kindDelivery, kindStream, kindOrder} {
		if n := h.count(k); n != 0 {
			t.Errorf("%s: %d records after a rolled back change", k, n)
		}
	}
}

// A receiver down for a while gets every event once it is back, in order
// per resource, after retries spaced by a doubling backoff; a down
// receiver holds back no other webhook.
func TestDeliveryRetriesInOrder(t *testing.T) {
	rcv, other := newReceiver(t), newReceiver(t)
	h := newHarness(t, map[string][]string{topic: {rcv.srv.URL, other.srv.URL}})
	const a, b = "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/a", "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/b"
	rcv.setDown(true)
	for i := range 5 {
		h.publish(a, i)
		h.publish(b, i)
	}
	h.deliver()
	if got := other.received(); fmt.Sprint(got[a], got[b]) != "[0 1 2 3 4] [0 1 2 3 4]" {
		t.Fatalf("the receiver that is up got %v", got)
	}
	if rcv.hits != 2 { // the head of each resource, once
		t.Fatalf("down receiver hit %d times, want 2", rcv.hits)
	}
	// Backoff: 1s, 2s, 4s. Nothing is tried before it is due.
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		h.clock.Advance(wait - time.Millisecond)
		h.deliver()
		if rcv.hits != 2+2*i {
			t.Fatalf("retry %d came early: %d hits", i+1, rcv.hits)
		}
		h.clock.Advance(time.Millisecond)
		h.deliver()
		if rcv.hits != 4+2*i {
			t.Fatalf("retry %d: %d hits, want %d", i+1, rcv.hits, 4+2*i)
		}
	}
	rcv.setDown(false)
	h.publish(a, 5) // behind the pending ones
	h.clock.Advance(8 * time.Second)
	h.deliver()
	if got := rcv.received(); fmt.Sprint(got[a], got[b]) != "[0 1 2 3 4 5] [0 1 2 3 4]" {
		t.Fatalf("after recovery got %v", got)
	}
	if len(rcv.bad) != 0 || len(other.bad) != 0 {
		t.Fatalf("bad signatures or ids: %v %v", rcv.bad, other.bad)
	}
	if n := h.count(kindDelivery) + h.count(kindStream); n != 0 {
		t.Errorf("%d delivery records left", n)
	}
}

func TestBackoffIsCapped(t *testing.T) {
	s := New(Config{Timings: Timings{Backoff: time.Second, MaxBackoff: 10 * time.Second}})
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, s.backoff(n))
	}
	if fmt.Sprint(got) != "[1s 2s 4s 8s 10s 10s]" {
		t.Errorf("backoff = %v", got)
	}
}

// Pending deliveries survive a restart: the store holds them (on both
// embedded stores).
func TestDeliveryIsDurableAcrossARestart(t *testing.T) {
	for _, useSQLite := range []bool{false, true} {
		t.Run(map[bool]string{false: "journal", true: "sqlite"}[useSQLite], func(t *testing.T) {
			testDurableAcrossARestart(t, useSQLite)
		})
	}
}

func testDurableAcrossARestart(t *testing.T, useSQLite bool) {
	rcv := newReceiver(t)
	h := newHarnessOn(t, map[string][]string{topic: {rcv.srv.URL}}, useSQLite)
	rcv.setDown(true)
	h.publish("res", 0)
	h.publish("res", 1)
	h.deliver()
	if err := h.st.Close(); err != nil {
		t.Fatal(err)
	}
	h.open()
	rcv.setDown(false)
	h.clock.Advance(time.Second)
	h.deliver()
	if got := rcv.received(); fmt.Sprint(got["res"]) != "[0 1]" {
		t.Fatalf("after a restart got %v", got)
	}
	h.publish("res", 2) // the order key's sequence went on
	h.deliver()
	if got := rcv.received(); fmt.Sprint(got["res"]) != "[0 1 2]" {
		t.Fatalf("got %v", got)
	}
}

// Delivered events are deleted after the retention; an event still to
// deliver is kept; one that failed for GiveUp is dropped.
func TestRetentionAndGiveUp(t *testing.T) {
	rcv := newReceiver(t)
	h := newHarness(t, map[string][]string{topic: {rcv.srv.URL}})
	h.svc.t.Retention, h.svc.t.GiveUp = time.Hour, 3*time.Hour
	h.publish("up", 0)
	h.deliver()
	rcv.setDown(true)
	h.publish("down", 0)
	h.deliver()
	h.clock.Advance(time.Hour)
	h.deliver()
	if n := h.count(kindEvent); n != 1 {
		t.Fatalf("%d events kept after the retention, want the undelivered one", n)
	}
	for range 20 {
		h.clock.Advance(10 * time.Minute)
		h.deliver()
	}
	if n := h.count(kindDelivery); n != 0 {
		t.Fatalf("%d deliveries kept after giving up", n)
	}
	h.clock.Advance(time.Hour)
	h.deliver()
	if n := h.count(kindEvent) + h.count(kindStream); n != 0 {
		t.Fatalf("%d records kept", n)
	}
}

// A webhook URL removed from the configuration loses its pending events.
func TestRemovedWebhookIsDropped(t *testing.T) {
	h := newHarness(t, map[string][]string{topic: {"http://127.0.0.1:1/"}})
	h.publish("r", 0)
	h.hooks = nil
	_ = h.st.Close()
	h.open()
	h.deliver()
	if n := h.count(kindDelivery) + h.count(kindStream); n != 0 {
		t.Fatalf("%d records kept", n)
	}
}

func TestSignature(t *testing.T) {
	// A fixed vector (Python's hmac module computes the same).
	const url = "https://a.example/hook"
	got := Sign([]byte("secret"), 1764064800, url, []byte(`{"id":"x"}`))
	if got != "v2=b95f1c81628cc28ed45640bcbb676f42bf893b918c92511da0e800e67666041a" {
		t.Fatalf("Sign = %q", got)
	}
	if !Verify([]byte("secret"), 1764064800, url, []byte(`{"id":"x"}`), got) {
		t.Error("Verify refuses Sign's signature")
	}
	for name, c := range map[string]struct {
		key  string
		ts   int64
		url  string
		body string
	}{"key": {"Secret", 1764064800, url, `{"id":"x"}`}, "time": {"secret", 1764064801, url, `{"id":"x"}`},
		"url":  {"secret", 1764064800, "https://b.example/hook", `{"id":"x"}`},
		"body": {"secret", 1764064800, url, `{"id":"y"}`},
		// The parts cannot be shifted across the separators.
		"shifted": {"secret", 1764064800, url + "\n{", `"id":"x"}`}} {
		if Verify([]byte(c.key), c.ts, c.url, []byte(c.body), got) {
			t.Errorf("Verify accepts another %s", name)
		}
	}
}

// Many older events still pending do not hold back the expiry of a
// delivered one (expiry reads only released events).
func TestPendingEventsDoNotBlockExpiry(t *testing.T) {
	rcv := newReceiver(t)
	rcv.setDown(true)
	h := newHarness(t, map[string][]string{topic: {rcv.srv.URL}})
	for i := range retentionPage + 10 {
		h.publish("pending", i)
	}
	h.clock.Advance(time.Second)
	err := h.st.Update(context.Background(), func(tx store.Tx) error {
		return h.svc.Publish(context.Background(), tx, Event{DetailType: "x", Resources: []string{"no-topic"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(DefaultRetention)
	h.deliver()
	if n := h.count(kindEvent); n != retentionPage+10 {
		t.Fatalf("%d events kept, want only the %d pending ones", n, retentionPage+10)
	}
}

// A URL configured twice for a topic gets each event once (and Publish
// does not fail on the second delivery record).
func TestDuplicateWebhookURL(t *testing.T) {
	rcv := newReceiver(t)
	h := newHarness(t, map[string][]string{topic: {rcv.srv.URL, rcv.srv.URL}})
	h.publish("r", 0)
	h.deliver()
	if got := rcv.received(); fmt.Sprint(got["r"]) != "[0]" {
		t.Fatalf("got %v", got)
	}
}

// One turn delivers a resource's whole backlog (within its time budget),
// not a fixed handful per turn.
func TestOneTurnDeliversABacklog(t *testing.T) {
	rcv := newReceiver(t)
	h := newHarness(t, map[string][]string{topic: {rcv.srv.URL}})
	for i := range 100 {
		h.publish("r", i)
	}
	h.deliver()
	if got := rcv.received(); len(got["r"]) != 100 || got["r"][99] != 99 {
		t.Fatalf("one turn delivered %d events", len(got["r"]))
	}
}

// Publishers racing on one resource: every event is delivered once, and
// each publisher's events arrive in the order it published them.
func TestConcurrentPublishersKeepOrder(t *testing.T) {
	rcv := newReceiver(t)
	h := newHarness(t, map[string][]string{topic: {rcv.srv.URL}})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				if err := h.tryPublish("r", g*1000+i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	h.deliver()
	got := rcv.received()["r"]
	if len(got) != 200 {
		t.Fatalf("delivered %d of 200", len(got))
	}
	next := map[int]int{}
	for _, n := range got {
		g, i := n/1000, n%1000
		if i != next[g] {
			t.Fatalf("publisher %d: event %d arrived when %d was due (%v)", g, i, next[g], got)
		}
		next[g]++
	}
}

// A delivery whose event is gone is dropped, not retried forever, and
// the events behind it go on.
func TestOrphanDeliveryIsDropped(t *testing.T) {
	rcv := newReceiver(t)
	h := newHarness(t, map[string][]string{topic: {rcv.srv.URL}})
	h.svc.cfg.NewID = func() string { return "gone" }
	h.publish("r", 0)
	h.svc.cfg.NewID = func() string { return "kept" }
	h.publish("r", 1)
	err := h.st.Update(context.Background(), func(tx store.Tx) error { return tx.Delete(context.Background(), kindEvent, "gone") })
	if err != nil {
		t.Fatal(err)
	}
	h.deliver()
	if got := rcv.received(); fmt.Sprint(got["r"]) != "[1]" {
		t.Fatalf("got %v", got)
	}
}

// An event record holds the envelope as delivered and nothing else (the
// topic, order key and sequence are the record's columns and the
// deliveries'); a record an older Hoist wrote, with them wrapped around
// the envelope, is still streamed and delivered.
func TestEventRecordIsTheEnvelope(t *testing.T) {
	rcv := newReceiver(t)
	h := newHarness(t, map[string][]string{topic: {rcv.srv.URL}})
	h.publish("arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q1", 1)
	var recs []store.Record
	_ = h.st.View(context.Background(), func(tx store.Tx) error {
		var err error
		recs, _, err = tx.List(context.Background(), store.Query{Kind: kindEvent})
		return err
	})
	if len(recs) != 1 || !bytes.HasPrefix(recs[0].Data, []byte(`{"version":"0",`)) {
		t.Fatalf("event records %+v, want one holding the envelope", recs)
	}
	// An older Hoist's record of event 2, with its delivery.
	old := recs[0]
	body := bytes.Replace(old.Data, []byte(`"n":1`), []byte(`"n":2`), 1)
	body = bytes.Replace(body, []byte(old.ID), []byte("old-event"), 1)
	wrapped, _ := json.Marshal(map[string]any{"Body": json.RawMessage(body), "Topic": topic, "OrderKey": old.Parent, "Seq": 1})
	err := h.st.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.Insert(context.Background(), store.Record{Kind: kindEvent, ID: "old-event", Parent: old.Parent,
			Key: keyPending, Rank: old.Rank, Data: wrapped}); err != nil {
			return err
		}
		return h.svc.addDelivery(context.Background(), tx, rcv.srv.URL, topic, old.Parent, "old-event", 1)
	})
	if err != nil {
		t.Fatal(err)
	}
	items, err := h.replayAll()
	if err != nil || len(items) != 2 || !bytes.Equal(items[1].Body, body) || !bytes.Equal(items[0].Body, old.Data) {
		t.Fatalf("replay = %v, %v; want the two envelopes", items, err)
	}
	h.deliver()
	h.deliver()
	if got := fmt.Sprint(rcv.received()[old.Parent]); got != "[1 2]" {
		t.Errorf("delivered %s, want events 1 and 2 of q1", got)
	}
}
