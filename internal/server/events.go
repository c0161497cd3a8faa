package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/sigv4"
	"github.com/hoistgg/hoist/internal/store"
)

// The live event stream: GET /hoist/events[?resource=<ARN or name>]
// answers Server-Sent Events (docs/events.md). It follows the store's
// change feed of published events (events.Reader), in commit order, so it
// sees those of every replica, each once; each subscriber holds at
// most one page of events, and one that does not take a write within
// sseWriteTimeout (Server.sseTimeout in tests) is dropped.
const (
	ssePage         = 256
	ssePoll         = 250 * time.Millisecond
	sseKeepAlive    = 15 * time.Second
	sseWriteTimeout = 10 * time.Second
)

// WebhookSecretFile is the file in the data directory holding the secret
// webhook requests are signed with (hex), for the operator to give to
// receivers.
const WebhookSecretFile = "webhook-secret"

// webhooks converts --webhooks to the events package's form.
func webhooks(in map[string][]config.Webhook) map[string][]events.Webhook {
	out := make(map[string][]events.Webhook, len(in))
	for topic, hooks := range in {
		for _, w := range hooks {
			out[topic] = append(out[topic], events.Webhook{URL: w.URL, SNS: w.SNS})
		}
	}
	return out
}

// webhookSecret returns the secret webhook requests are signed with
// (hex; kept in the store, so every replica signs alike), and writes it
// where the operator finds it.
func (s *Server) webhookSecret(ctx context.Context) ([]byte, error) {
	key, err := sharedKey(ctx, s.store, "webhooks", s.wallNow)
	if err != nil {
		return nil, err
	}
	secret := []byte(fmt.Sprintf("%x", key))
	if err := writeSecretFile(filepath.Join(s.cfg.DataDir, WebhookSecretFile), secret); err != nil {
		return nil, dataDirError(s.cfg.DataDir, err)
	}
	return secret, nil
}

// writeSecretFile writes secret to path, readable by its owner only,
// unless the file already holds it.
func writeSecretFile(path string, secret []byte) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(secret)+"\n" {
		return os.Chmod(path, 0o600)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(append([]byte(nil), secret...), '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// EndStreams ends the live event streams being served (they would hold
// an http.Server's Shutdown until its deadline): register it with
// RegisterOnShutdown. Close calls it too.
func (s *Server) EndStreams() {
	s.streamsOnce.Do(func() { close(s.streamsDone) })
}

func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeAdminError(w, "MethodNotAllowedException", "the event stream is a GET request", http.StatusMethodNotAllowed)
		return
	}
	// Without credentials no signature is asked for (the stream only
	// reads; the browser guard keeps web pages out), so plain curl works.
	ctx := r.Context()
	if !s.auth.Unauthenticated() {
		var err error
		if ctx, err = s.auth.Authenticate(r, nil); err != nil {
			s.writeAdminErr(w, err)
			return
		}
	}
	s.streamEvents(w, r.WithContext(ctx), sigv4.AccessKeyID(ctx))
}

// streamEvents serves the live event stream to a caller already let in
// (the signed request of serveEvents, or the console's operator),
// counted against the streams of access key key ("": none).
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, key string) {
	ctx := r.Context()
	reader, err := s.streamStart(ctx, r)
	if err != nil {
		s.writeAdminErr(w, err)
		return
	}
	end, lerr := s.openStream(key)
	if lerr != nil {
		w.Header().Set("Connection", "close") // its file, too, goes back
		s.writeAdminErr(w, lerr)
		return
	}
	defer end()
	resource := r.URL.Query().Get("resource")
	if s.onStreamEnd != nil {
		defer s.onStreamEnd()
	}
	timeout := sseWriteTimeout
	if s.sseTimeout > 0 {
		timeout = s.sseTimeout
	}
	rc := &sseWriter{rc: http.NewResponseController(w), timeout: timeout}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if !sseWrite(rc, func() { fmt.Fprint(w, ": hoist events\nretry: 1000\n\n") }) {
		return
	}
	keepAlive := time.NewTicker(sseKeepAlive)
	defer keepAlive.Stop()
	for {
		changed := s.events.Changed()
		items, err := reader.Next(ctx, ssePage)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("event stream: read", "err", err)
			}
			return
		}
		if len(items) > 0 {
			ok := sseWrite(rc, func() {
				for _, it := range items {
					if it.Matches(resource) {
						fmt.Fprintf(w, "id: %s\ndata: %s\n\n", it.Cursor, it.Body)
					}
				}
			})
			if !ok {
				return
			}
			if len(items) == ssePage {
				continue
			}
		}
		poll := time.NewTimer(ssePoll)
		select {
		case <-ctx.Done():
			poll.Stop()
			return
		case <-s.streamsDone:
			poll.Stop()
			return
		case <-changed:
		case <-poll.C:
		case <-keepAlive.C:
			if !sseWrite(rc, func() { fmt.Fprint(w, ": keep-alive\n\n") }) {
				poll.Stop()
				return
			}
		}
		poll.Stop()
	}
}

// openStream takes a place for a live event stream of the access key
// ("" without credentials): one of the streams' places (in all and the
// key's) and one of the long-lived connections'. It returns what gives
// them back, or the refusal.
func (s *Server) openStream(key string) (func(), *limitError) {
	if err := s.streams.take(key); err != nil {
		return nil, err
	}
	if !s.conns.TryTake() {
		s.streams.give(key)
		return nil, &limitError{code: "ThrottlingException", status: http.StatusServiceUnavailable,
			msg: "Hoist has as many long-lived connections open as it allows (--max-long-connections); retry later"}
	}
	return func() {
		s.conns.Give()
		s.streams.give(key)
	}, nil
}

// sseWriter is a stream's response with its write timeout.
type sseWriter struct {
	rc      *http.ResponseController
	timeout time.Duration
}

// sseWrite runs write under a write deadline and flushes; false: the
// subscriber is gone or too slow, and is dropped.
func sseWrite(w *sseWriter, write func()) bool {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	write()
	return w.rc.Flush() == nil
}

// streamStart returns the stream's reader: Last-Event-ID (the header, or
// the lastEventId parameter) continues after that id, or replays the
// events still kept after it when it is a number ("0": all); without one
// the stream starts with the next event.
func (s *Server) streamStart(ctx context.Context, r *http.Request) (*events.Reader, error) {
	id := r.Header.Get("Last-Event-ID")
	if id == "" {
		id = r.URL.Query().Get("lastEventId")
	}
	reader, err := s.events.NewReader(ctx, id)
	if errors.Is(err, events.ErrBadCursor) {
		return nil, api.NewInvalidRequestException("Last-Event-ID %s is not an id this stream sent", quoteClip(id))
	}
	return reader, err
}

// SendTestEventInput publishes a test event (detail-type "Hoist Test
// Event"), for checking a webhook receiver or the event stream.
type SendTestEventInput struct {
	// Topic is the SNS topic ARN whose webhooks receive it ("": none).
	Topic string
	// Resource is the ARN the event is about (its resources and order key).
	Resource string
	// Message goes in the detail.
	Message string
}

// SendTestEventOutput names the event published.
type SendTestEventOutput struct{ EventId string }

func (s *Server) sendTestEvent(ctx context.Context, in SendTestEventInput) (SendTestEventOutput, error) {
	if in.Resource == "" {
		return SendTestEventOutput{}, api.NewInvalidRequestException("Resource is required")
	}
	detail, _ := json.Marshal(map[string]string{"type": "TestEvent", "message": in.Message})
	e := events.Event{ID: ids.UUID(), DetailType: "Hoist Test Event", Resources: []string{in.Resource},
		Time: s.now(), Detail: detail, Topic: in.Topic, OrderKey: in.Resource}
	err := s.store.Update(ctx, func(tx store.Tx) error { return s.events.Publish(ctx, tx, e) })
	return SendTestEventOutput{EventId: e.ID}, err
}
