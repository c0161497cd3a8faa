package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/server"
)

// webhookReceiver is an httptest endpoint that is down (503) until told
// otherwise, verifies each request's signature, and hands on what it took;
// with sns, it takes SNS's HTTP(S) notification and hands on its Message.
type webhookReceiver struct {
	mu     sync.Mutex
	down   bool
	secret []byte
	sns    bool
	downs  chan struct{} // one per request answered 503
	got    chan events.Envelope
	srv    *httptest.Server
	t      *testing.T
}

func newWebhookReceiver(t *testing.T, sns bool) *webhookReceiver {
	r := &webhookReceiver{got: make(chan events.Envelope, 100), downs: make(chan struct{}, 1000), down: true, sns: sns, t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.down || r.secret == nil {
			select {
			case r.downs <- struct{}{}:
			default:
			}
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		ts, _ := strconv.ParseInt(req.Header.Get(events.HeaderTimestamp), 10, 64)
		if !events.Verify(r.secret, ts, r.url(), body, req.Header.Get(events.HeaderSignature)) {
			r.t.Errorf("webhook request with a bad signature: %s", req.Header.Get(events.HeaderSignature))
		}
		if r.sns {
			body = r.snsMessage(req.Header, body)
		}
		var env events.Envelope
		if err := json.Unmarshal(body, &env); err != nil {
			r.t.Errorf("webhook body %q: %v", body, err)
		}
		r.got <- env
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// url is the receiver's URL in --webhooks (without sns+).
func (r *webhookReceiver) url() string { return r.srv.URL + "/hook" }

// snsMessage checks an SNS HTTP(S) notification as SNS documents it (its
// headers; its JSON fields, and no others) and returns its Message.
func (r *webhookReceiver) snsMessage(h http.Header, body []byte) []byte {
	var n struct {
		Type, MessageId, TopicArn, Message, Timestamp               string
		SignatureVersion, Signature, SigningCertURL, UnsubscribeURL string
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&n); err != nil {
		r.t.Errorf("not an SNS notification: %v: %s", err, body)
	}
	if n.Type != "Notification" || h.Get("x-amz-sns-message-type") != "Notification" || n.MessageId != h.Get("x-amz-sns-message-id") ||
		n.TopicArn != h.Get("x-amz-sns-topic-arn") || !strings.HasPrefix(h.Get("x-amz-sns-subscription-arn"), n.TopicArn+":") {
		r.t.Errorf("SNS notification %+v with headers %v", n, h)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", n.Timestamp); err != nil {
		r.t.Errorf("SNS Timestamp %q: %v", n.Timestamp, err)
	}
	var env events.Envelope
	if err := json.Unmarshal([]byte(n.Message), &env); err != nil || env.ID != n.MessageId {
		r.t.Errorf("SNS Message %q (%v) is not the event %s", n.Message, err, n.MessageId)
	}
	return []byte(n.Message)
}

func (r *webhookReceiver) set(down bool, secret []byte) {
	r.mu.Lock()
	r.down, r.secret = down, secret
	r.mu.Unlock()
}

// next returns the next envelope the receiver took, failing after a
// minute.
func (r *webhookReceiver) next(t *testing.T) events.Envelope {
	t.Helper()
	select {
	case env := <-r.got:
		return env
	case <-time.After(time.Minute):
		t.Fatal("no webhook delivery within a minute")
		return events.Envelope{}
	}
}

func sendEvent(t *testing.T, h *hoisttest.Hoist, topic, resource, msg string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"Topic": topic, "Resource": resource, "Message": msg})
	req, _ := http.NewRequest(http.MethodPost, h.URL+"/hoist/admin/SendTestEvent", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	signRequest(t, req, body, hoisttest.AccessKeyID, hoisttest.SecretAccessKey)
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ EventId string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("SendTestEvent: %d %v", resp.StatusCode, err)
	}
	return out.EventId
}

// TestEventsReachWebhooksAndTheStream: events published in a real Hoist
// reach a webhook receiver that is down for a while, in order and
// signed with the secret in the data directory and the receiver's URL,
// also across a restart of Hoist; a receiver configured with sns+ gets the
// same events in SNS's notification envelope; and the live stream (signed
// GET /hoist/events, counted in /metrics' hoist_event_streams) shows them.
func TestEventsReachWebhooksAndTheStream(t *testing.T) {
	const topic = "arn:aws:sns:us-west-2:123456789012:placement-events"
	const queue = "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/events-e2e"
	rcv, snsRcv := newWebhookReceiver(t, false), newWebhookReceiver(t, true)
	dir := t.TempDir()
	opts := hoisttest.Options{DataDir: dir, Args: []string{"--webhooks", topic + "=" + rcv.url() + "," + topic + "=sns+" + snsRcv.url(),
		"--timings", "events.deliver=100ms,events.backoff=100ms"}}
	h := hoisttest.Start(t, opts)
	secret, err := os.ReadFile(filepath.Join(dir, server.WebhookSecretFile))
	if err != nil {
		t.Fatal(err)
	}
	secret = bytes.TrimSpace(secret)

	req, _ := http.NewRequest(http.MethodGet, h.URL+"/hoist/events?resource=events-e2e", nil)
	signRequest(t, req, nil, hoisttest.AccessKeyID, hoisttest.SecretAccessKey)
	stream, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %d", stream.StatusCode)
	}
	if m, err := hoisttest.Scrape(h.URL, ""); err != nil {
		t.Fatal(err)
	} else if n, _ := m.Value("hoist_event_streams", nil); n != 1 {
		t.Errorf("hoist_event_streams = %v with the stream open, want 1", n)
	}

	var want []string
	for i := range 3 {
		want = append(want, sendEvent(t, h, topic, queue, "event "+strconv.Itoa(i)))
	}
	sendEvent(t, h, "", "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/other", "not ours")

	// The stream shows ours (filtered by the queue's name) at once.
	sc := bufio.NewScanner(stream.Body)
	for i := 0; i < len(want); {
		if !sc.Scan() {
			t.Fatalf("stream ended: %v", sc.Err())
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var env events.Envelope
		if err := json.Unmarshal([]byte(data), &env); err != nil || env.ID != want[i] || env.Source != "aws.gamelift" ||
			env.Region != hoisttest.Region || env.Account != hoisttest.Account || env.Resources[0] != queue {
			t.Fatalf("stream event %d: %s (%v), want id %s", i, data, err, want[i])
		}
		i++
	}

	// The receiver is down for a few attempts, then gets all three in order.
	for i := range 3 {
		select {
		case <-rcv.downs:
		case <-time.After(time.Minute):
			t.Fatalf("only %d attempts at a down receiver in a minute", i)
		}
	}
	for _, r := range []*webhookReceiver{rcv, snsRcv} {
		r.set(false, secret)
		for i, id := range want {
			if env := r.next(t); env.ID != id || env.DetailType != "Hoist Test Event" {
				t.Fatalf("delivery %d (sns %v): %+v, want %s", i, r.sns, env, id)
			}
		}
	}

	// An event pending while Hoist stops is delivered after it restarts.
	rcv.set(true, secret)
	snsRcv.set(true, secret)
	late := sendEvent(t, h, topic, queue, "across a restart")
	h.Stop()
	rcv.set(false, secret)
	snsRcv.set(false, secret)
	hoisttest.Start(t, opts) // the same data directory: the pending delivery resumes
	for _, r := range []*webhookReceiver{rcv, snsRcv} {
		if env := r.next(t); env.ID != late {
			t.Fatalf("after the restart (sns %v): %+v, want %s", r.sns, env, late)
		}
	}
}
