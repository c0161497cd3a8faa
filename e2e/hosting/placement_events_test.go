//go:build linux

package hosting

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestPlacementEvents runs queue placement events end to end: a queue whose
// NotificationTarget is an SNS topic that --webhooks maps to a loopback
// receiver, placements through aws-sdk-go-v2 onto a fleet of real game
// server processes, and the events they make, signed as docs/events.md
// says, on the webhook (also after the receiver was down for a while, in
// order; a deleted queue's PlacementFailed) and on the live stream filtered
// by the queue.
func TestPlacementEvents(t *testing.T) {
	const topic = "arn:aws:sns:us-west-2:123456789012:placement-events"
	rcv := newPlacementReceiver(t)
	e := startHoistWith(t, []string{"--webhooks", topic + "=" + rcv.srv.URL + "/hook"},
		"placement.interval=100ms", "events.deliver=100ms", "events.backoff=100ms")
	e.dumpOnFailure(t)
	// The secret docs/events.md tells the operator to give to receivers.
	secret, err := os.ReadFile(filepath.Join(e.h.DataDir, "webhook-secret"))
	if err != nil {
		t.Fatal(err)
	}
	rcv.setSecret(bytes.TrimSpace(secret))
	stream := openEventStream(t, e, "ev-queue")

	buildID := e.uploadGameServer(t, "placement-events")
	fleet := aws.ToString(e.createFleet(t, fleetSpec{name: "ev-fleet", build: buildID, params: "-accept-players"}).FleetAttributes.FleetId)
	e.waitFleet(t, fleet, types.FleetStatusActive)
	e.waitIdleProcesses(t, fleet, 1)
	fleetARN := fleetARNOf(t, e, fleet)
	q := e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String("ev-queue"), TimeoutInSeconds: aws.Int32(60),
		NotificationTarget: aws.String(topic), CustomEventData: aws.String("ev-e2e"), Destinations: dests(fleetARN)})
	queueARN := aws.ToString(q.GameSessionQueueArn)
	// A queue without a NotificationTarget: its events reach no webhook, and
	// the stream filtered by ev-queue does not show them.
	e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String("ev-other"), Destinations: dests(fleetARN)})

	// PlacementFulfilled, with where the game is and the placed players.
	e.place(t, "ev-queue", "ev-fulfilled", nil, types.DesiredPlayerSession{PlayerId: aws.String("alice")})
	got := e.waitPlacement(t, "ev-fulfilled", types.GameSessionPlacementStateFulfilled)
	ev := rcv.next(t)
	d := ev.check(t, queueARN, "PlacementFulfilled", "ev-fulfilled")
	if d.GameSessionArn != aws.ToString(got.GameSessionArn) || d.IPAddress != aws.ToString(got.IpAddress) ||
		d.DNSName != aws.ToString(got.DnsName) || d.Port != strconv.Itoa(int(aws.ToInt32(got.Port))) ||
		d.GameSessionRegion != hoisttest.Region || len(d.PlacedPlayerSessions) != 1 ||
		d.PlacedPlayerSessions[0].PlayerID != "alice" ||
		d.PlacedPlayerSessions[0].PlayerSessionID != aws.ToString(got.PlacedPlayerSessions[0].PlayerSessionId) {
		t.Fatalf("PlacementFulfilled detail %+v, placement %+v", d, got)
	}
	var webhook []string // the event IDs the receiver took, in order
	webhook = append(webhook, ev.ID)

	// The only process is busy now: a stopped placement is
	// PlacementCancelled, one that waits longer than the queue's (updated)
	// timeout is PlacementTimedOut; neither says where a game is.
	if _, err := e.gl.UpdateGameSessionQueue(e.ctx, &gl.UpdateGameSessionQueueInput{Name: aws.String("ev-queue"),
		TimeoutInSeconds: aws.Int32(2)}); err != nil {
		t.Fatalf("UpdateGameSessionQueue: %v", err)
	}
	e.place(t, "ev-queue", "ev-stopped", nil)
	e.stopPlacement(t, "ev-stopped")
	e.place(t, "ev-queue", "ev-timed-out", nil)
	e.waitPlacement(t, "ev-timed-out", types.GameSessionPlacementStateTimedOut)
	for _, want := range []struct{ typ, id string }{{"PlacementCancelled", "ev-stopped"}, {"PlacementTimedOut", "ev-timed-out"}} {
		ev := rcv.next(t)
		if d := ev.check(t, queueARN, want.typ, want.id); d.GameSessionArn != "" || d.Port != "" || d.IPAddress != "" ||
			len(d.PlacedPlayerSessions) != 0 {
			t.Errorf("%s detail says where a game is: %+v", want.typ, d)
		}
		webhook = append(webhook, ev.ID)
	}

	// The receiver is down while three more placements are stopped (and
	// one of the other queue); once it answers again it gets them, in order.
	rcv.setDown(true)
	e.place(t, "ev-queue", "ev-down-1", nil)
	e.stopPlacement(t, "ev-down-1")
	e.place(t, "ev-other", "ev-other-1", nil)
	e.stopPlacement(t, "ev-other-1")
	e.place(t, "ev-queue", "ev-down-2", nil)
	e.stopPlacement(t, "ev-down-2")
	e.place(t, "ev-queue", "ev-down-3", nil)
	e.stopPlacement(t, "ev-down-3")
	for i := range 3 {
		select {
		case <-rcv.downs:
		case <-time.After(waitShort):
			t.Fatalf("only %d attempts at the down receiver in %s", i, waitShort)
		}
	}
	rcv.setDown(false)
	for _, id := range []string{"ev-down-1", "ev-down-2", "ev-down-3"} {
		ev := rcv.next(t)
		ev.check(t, queueARN, "PlacementCancelled", id)
		webhook = append(webhook, ev.ID)
	}

	// The stream filtered by the queue's name shows the same events, in
	// the same order, and none of ev-other's.
	for i, id := range webhook {
		ev := stream.next(t)
		if ev.ID != id {
			t.Fatalf("stream event %d: %s (%s of %v), want %s", i, ev.ID, ev.DetailType, ev.Resources, id)
		}
		ev.check(t, queueARN, ev.Detail.Type, ev.Detail.PlacementID)
	}

	// Deleting a queue fails its pending placement: PlacementFailed, to the
	// topic of the queue that is gone.
	doomed := e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String("ev-doomed"),
		NotificationTarget: aws.String(topic), CustomEventData: aws.String("ev-e2e"), Destinations: dests(fleetARN)})
	e.place(t, "ev-doomed", "ev-failed", nil)
	if _, err := e.gl.DeleteGameSessionQueue(e.ctx, &gl.DeleteGameSessionQueueInput{Name: aws.String("ev-doomed")}); err != nil {
		t.Fatalf("DeleteGameSessionQueue: %v", err)
	}
	rcv.next(t).check(t, aws.ToString(doomed.GameSessionQueueArn), "PlacementFailed", "ev-failed")
}

// placementEvent is a queue placement event as received (docs/events.md's
// envelope).
type placementEvent struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     placementDetail `json:"detail"`
}

type placementDetail struct {
	Type                 string `json:"type"`
	PlacementID          string `json:"placementId"`
	Port                 string `json:"port"`
	GameSessionArn       string `json:"gameSessionArn"`
	IPAddress            string `json:"ipAddress"`
	DNSName              string `json:"dnsName"`
	StartTime            string `json:"startTime"`
	EndTime              string `json:"endTime"`
	GameSessionRegion    string `json:"gameSessionRegion"`
	CustomEventData      string `json:"customEventData"`
	PlacedPlayerSessions []struct {
		PlayerID        string `json:"playerId"`
		PlayerSessionID string `json:"playerSessionId"`
	} `json:"placedPlayerSessions"`
}

// check fails t unless ev is a queue placement event of queue ARN with
// detail type typ about placement id, and returns its detail.
func (ev placementEvent) check(t *testing.T, queue, typ, id string) placementDetail {
	t.Helper()
	d := ev.Detail
	if ev.Version != "0" || ev.ID == "" || ev.DetailType != "GameLift Queue Placement Event" || ev.Source != "aws.gamelift" ||
		ev.Account != hoisttest.Account || ev.Region != hoisttest.Region || len(ev.Resources) != 1 || ev.Resources[0] != queue {
		t.Fatalf("%s event envelope: %+v", typ, ev)
	}
	if _, err := time.Parse(time.RFC3339, ev.Time); err != nil {
		t.Errorf("%s event time %q: %v", typ, ev.Time, err)
	}
	if d.Type != typ || d.PlacementID != id || d.StartTime == "" || d.EndTime == "" || d.CustomEventData != "ev-e2e" {
		t.Fatalf("event detail %+v, want %s of %s", d, typ, id)
	}
	return d
}

// placementReceiver is a webhook endpoint on loopback that checks each
// request's signature with the documented scheme (written out here, not
// Hoist's own code) and hands on the events; while down it answers 503.
type placementReceiver struct {
	mu     sync.Mutex
	down   bool
	secret []byte
	seen   map[string]bool
	downs  chan struct{} // one per request answered 503
	got    chan placementEvent
	srv    *httptest.Server
}

func newPlacementReceiver(t *testing.T) *placementReceiver {
	r := &placementReceiver{seen: map[string]bool{}, downs: make(chan struct{}, 1000), got: make(chan placementEvent, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
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
		if req.Method != http.MethodPost || req.URL.Path != "/hook" || req.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook request %s %s (%s)", req.Method, req.URL.Path, req.Header.Get("Content-Type"))
		}
		if !verifySignature(r.secret, r.srv.URL+"/hook", req.Header, body, time.Now()) {
			t.Errorf("webhook request with a bad signature: %v %s", req.Header, body)
		}
		var ev placementEvent
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("webhook body %q: %v", body, err)
			return
		}
		if id := req.Header.Get("X-Hoist-Event-Id"); id != ev.ID {
			t.Errorf("X-Hoist-Event-Id %q of event %q", id, ev.ID)
		}
		if !r.seen[ev.ID] { // at least once: a receiver deduplicates by id
			r.seen[ev.ID] = true
			r.got <- ev
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// verifySignature is docs/events.md's receiver check: v2= and the hex
// HMAC-SHA256 of the timestamp, a newline, the receiver's URL as
// --webhooks names it, a newline and the body, with the timestamp within
// 5 minutes of now.
func verifySignature(secret []byte, url string, h http.Header, body []byte, now time.Time) bool {
	ts := h.Get("X-Hoist-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "\n" + url + "\n"))
	m.Write(body)
	want := "v2=" + hex.EncodeToString(m.Sum(nil))
	return hmac.Equal([]byte(want), []byte(h.Get("X-Hoist-Signature")))
}

func (r *placementReceiver) setSecret(secret []byte) {
	r.mu.Lock()
	r.secret = secret
	r.mu.Unlock()
}

func (r *placementReceiver) setDown(down bool) {
	r.mu.Lock()
	r.down = down
	r.mu.Unlock()
}

// next returns the next new event the receiver took.
func (r *placementReceiver) next(t *testing.T) placementEvent {
	t.Helper()
	select {
	case ev := <-r.got:
		return ev
	case <-time.After(waitShort):
		t.Fatalf("no webhook delivery within %s", waitShort)
		return placementEvent{}
	}
}

// eventStream is a GET /hoist/events subscription read in the background.
type eventStream struct {
	got  chan placementEvent
	done chan error
}

// openEventStream subscribes to the live stream filtered by resource
// (replaying from the first event kept), signed as the admin routes are.
func openEventStream(t *testing.T, e *env, resource string) *eventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.h.URL+"/hoist/events?resource="+resource+"&lastEventId=0", nil)
	empty := sha256.Sum256(nil)
	if err := v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: hoisttest.AccessKeyID, SecretAccessKey: hoisttest.SecretAccessKey},
		req, hex.EncodeToString(empty[:]), "gamelift", hoisttest.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		t.Fatalf("event stream: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	s := &eventStream{got: make(chan placementEvent, 100), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev placementEvent
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				s.done <- fmt.Errorf("stream data %q: %v", data, err)
				return
			}
			s.got <- ev
		}
		s.done <- fmt.Errorf("stream ended: %v", sc.Err())
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return s
}

// next returns the stream's next event.
func (s *eventStream) next(t *testing.T) placementEvent {
	t.Helper()
	select {
	case ev := <-s.got:
		return ev
	case err := <-s.done:
		t.Fatal(err)
	case <-time.After(waitShort):
		t.Fatalf("no stream event within %s", waitShort)
	}
	return placementEvent{}
}

func (e *env) stopPlacement(t *testing.T, id string) {
	t.Helper()
	out, err := e.gl.StopGameSessionPlacement(e.ctx, &gl.StopGameSessionPlacementInput{PlacementId: aws.String(id)})
	if err != nil || out.GameSessionPlacement.Status != types.GameSessionPlacementStateCancelled {
		t.Fatalf("StopGameSessionPlacement %s: %+v, %v", id, out, err)
	}
}
