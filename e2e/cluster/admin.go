package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/events"
)

// httpClient talks to the replicas (loopback, no proxy).
var httpClient = &http.Client{Transport: &http.Transport{Proxy: nil}}

// sign signs req (body: its body) with the e2e credentials, as Hoist's
// admin routes and event stream ask.
func sign(req *http.Request, body []byte) error {
	sum := sha256.Sum256(body)
	return v4.NewSigner().SignHTTP(req.Context(), awsv2.Credentials{AccessKeyID: hoisttest.AccessKeyID,
		SecretAccessKey: hoisttest.SecretAccessKey}, req, hex.EncodeToString(sum[:]), "gamelift", hoisttest.Region, time.Now())
}

// Admin calls the admin action (POST /hoist/admin/<action>, signed) on
// the replica with in as its JSON body and decodes the answer into out
// (nil: ignored).
func (r *Replica) Admin(ctx context.Context, action string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL()+"/hoist/admin/"+action, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := sign(req, body); err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("replica %s: %s: %d %s", r.Name, action, resp.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// SendTestEvent publishes a test event about resource through the replica
// (to the webhooks of topic, "" none) and returns its id.
func (r *Replica) SendTestEvent(ctx context.Context, resource, topic, message string) (string, error) {
	var out struct{ EventId string }
	err := r.Admin(ctx, "SendTestEvent", map[string]string{"Resource": resource, "Topic": topic, "Message": message}, &out)
	return out.EventId, err
}

// Event is one event read from a live stream.
type Event struct {
	// ID is the SSE id (the stream's position after the event).
	ID       string
	Envelope events.Envelope
}

// Stream is a live event stream (GET /hoist/events) of one replica.
type Stream struct {
	resp   *http.Response
	events chan Event // closed when the stream ends, after err is set
	err    error
}

// Stream opens the replica's live event stream (query, e.g.
// "resource=my-queue", and lastEventID may be ""), signed. It is closed
// when ctx ends.
func (r *Replica) Stream(ctx context.Context, query, lastEventID string) (*Stream, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL()+"/hoist/events?"+query, nil)
	if err != nil {
		return nil, err
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	if err := sign(req, nil); err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("replica %s: event stream: %d", r.Name, resp.StatusCode)
	}
	s := &Stream{resp: resp, events: make(chan Event, 256)}
	go s.read()
	return s, nil
}

// read parses the stream's events into s.events until it ends.
func (s *Stream) read() {
	defer s.resp.Body.Close()
	sc := bufio.NewScanner(s.resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var cur Event
	var data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.ID = line[4:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		case line == "" && data != "":
			if err := json.Unmarshal([]byte(data), &cur.Envelope); err != nil {
				s.err = fmt.Errorf("event stream: data %q: %w", data, err)
				close(s.events)
				return
			}
			s.events <- cur
			cur, data = Event{}, ""
		}
	}
	s.err = fmt.Errorf("event stream ended: %v", sc.Err())
	close(s.events)
}

// Next returns the next event, or an error when the stream ended or none
// came within wait.
func (s *Stream) Next(wait time.Duration) (Event, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case ev, ok := <-s.events:
		if !ok {
			return Event{}, s.err
		}
		return ev, nil
	case <-t.C:
		return Event{}, fmt.Errorf("no event within %s", wait)
	}
}
