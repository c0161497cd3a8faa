package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/store"
)

// openStream opens the signed event stream; query and lastID may be "".
func openStream(t *testing.T, base, query, lastID string, sign bool) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/hoist/events"+query, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	if sign {
		sum := sha256.Sum256(nil)
		creds := awsv2.Credentials{AccessKeyID: testKey, SecretAccessKey: testSecret}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "gamelift", "us-west-2", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseEvent is one event read from a stream.
type sseEvent struct {
	ID       string
	Envelope map[string]any
}

// readEvents reads n events from an SSE body.
func readEvents(t *testing.T, sc *bufio.Scanner, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	for len(out) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.ID = line[4:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &cur.Envelope); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
		case line == "" && cur.Envelope != nil:
			out = append(out, cur)
			cur = sseEvent{}
		}
	}
	if len(out) < n {
		t.Fatalf("stream ended after %d events: %v", len(out), sc.Err())
	}
	return out
}

func sendTestEvent(t *testing.T, base, resource, msg string) string {
	t.Helper()
	status, out := adminCall(t, base, "SendTestEvent", `{"Resource":"`+resource+`","Message":"`+msg+`"}`, true)
	if status != http.StatusOK || out["EventId"] == "" {
		t.Fatalf("SendTestEvent: %d %v", status, out)
	}
	return out["EventId"]
}

func TestEventStream(t *testing.T) {
	srv, ts := start(t, nil)
	const q1 = "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q1"
	const q2 = "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q2"

	if resp := openStream(t, ts.URL, "", "", false); resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusForbidden {
		t.Fatalf("unsigned stream: %d", resp.StatusCode)
	}
	first := sendTestEvent(t, ts.URL, q1, "before")

	// A new subscriber starts at the next event; filtered by name.
	live := openStream(t, ts.URL, "?resource=q1", "", true)
	if live.StatusCode != http.StatusOK || live.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", live.StatusCode, live.Header.Get("Content-Type"))
	}
	sendTestEvent(t, ts.URL, q2, "other queue")
	second := sendTestEvent(t, ts.URL, q1, "after")
	got := readEvents(t, bufio.NewScanner(live.Body), 1)
	if got[0].Envelope["id"] != second || got[0].Envelope["source"] != "aws.gamelift" ||
		got[0].Envelope["detail-type"] != "Hoist Test Event" {
		t.Fatalf("live event %v, want %s", got[0], second)
	}

	// Last-Event-ID 0 replays everything kept, in order.
	replay := readEvents(t, bufio.NewScanner(openStream(t, ts.URL, "", "0", true).Body), 3)
	var ids []string
	for _, e := range replay {
		ids = append(ids, e.Envelope["id"].(string))
	}
	if ids[0] != first || ids[2] != second {
		t.Fatalf("replay %v", ids)
	}
	// ...and from an id on, what came after it.
	after := readEvents(t, bufio.NewScanner(openStream(t, ts.URL, "?resource="+q1, replay[0].ID, true).Body), 1)
	if after[0].Envelope["id"] != second {
		t.Fatalf("after %s: %v", replay[0].ID, after)
	}
	if resp := openStream(t, ts.URL, "", "x", true); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad Last-Event-ID: %d", resp.StatusCode)
	}

	// The webhook secret is in the data directory, owner-only.
	fi, err := os.Stat(filepath.Join(srv.cfg.DataDir, WebhookSecretFile))
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 65 {
		t.Fatalf("webhook secret file: %v %v", fi, err)
	}
}

// A subscriber that does not read is dropped once a write has waited for
// the write timeout: Hoist holds no more than the page being written.
func TestSlowSubscriberIsDropped(t *testing.T) {
	srv, ts := start(t, nil)
	ended := make(chan struct{}, 4)
	srv.sseTimeout = 200 * time.Millisecond
	srv.onStreamEnd = func() { ended <- struct{}{} }
	detail, _ := json.Marshal(map[string]string{"type": "TestEvent", "message": strings.Repeat("x", 32<<10)})
	ctx := context.Background()
	err := srv.store.Update(ctx, func(tx store.Tx) error {
		for range 600 { // about 20 MB: more than the loopback socket buffers hold
			if err := srv.events.Publish(ctx, tx, events.Event{DetailType: "Hoist Test Event",
				Resources: []string{"arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q"}, Detail: detail}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/hoist/events?lastEventId=0", nil)
	sum := sha256.Sum256(nil)
	creds := awsv2.Credentials{AccessKeyID: testKey, SecretAccessKey: testSecret}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "gamelift", "us-west-2", time.Now()); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	// The subscriber reads nothing.
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("a subscriber that reads nothing was not dropped")
	}
}

// Without credentials the stream needs no signature, and the browser
// guard refuses it to web pages of other origins.
func TestEventStreamUnauthenticated(t *testing.T) {
	_, ts := startWith(t, nil, nil)
	resp := openStream(t, ts.URL, "", "0", false)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("unsigned stream without credentials: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/hoist/events", nil)
	req.Header.Set("Origin", "https://attacker.example")
	page, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if page.StatusCode != http.StatusForbidden {
		t.Fatalf("stream from another origin: %d, want 403", page.StatusCode)
	}
}
