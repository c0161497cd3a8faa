package events

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// leaseName is the store lease the delivery loop runs under.
const leaseName = "events-delivery"

// Delivery batches: streams handled per turn, how long one stream is sent
// to per turn (then the turn ends and the next one goes on with it),
// streams sent to at once, and expired events deleted per turn.
const (
	streamBatch   = 64
	streamBudget  = time.Second
	parallel      = 8
	retentionPage = 256
)

// Signature headers of a webhook request (docs/events.md).
const (
	HeaderEventID   = "X-Hoist-Event-Id"
	HeaderTimestamp = "X-Hoist-Timestamp"
	HeaderSignature = "X-Hoist-Signature"
)

// Sign returns the X-Hoist-Signature value of a request with body sent at
// timestamp (Unix seconds): "v1=" and the hex HMAC-SHA256, keyed with
// secret, of the timestamp, a '.', and the body.
func Sign(secret []byte, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(strconv.FormatInt(timestamp, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether signature is Sign(secret, timestamp, body),
// compared in constant time.
func Verify(secret []byte, timestamp int64, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, timestamp, body)), []byte(signature))
}

// Run runs the delivery loop every Timings.Interval (and soon after a
// Publish on this replica) while this replica holds its lease, until ctx
// ends.
func (s *Service) Run(ctx context.Context) error {
	// The lease outlasts a turn that waits on slow receivers (a request
	// may take RequestTimeout, after a stream's budget), so that another
	// replica does not take over mid-turn and send the same events.
	ttl := max(5*s.t.Interval, 3*s.t.RequestTimeout)
	return store.RunLeased(ctx, s.cfg.Store, store.Loop{Name: leaseName, Holder: s.cfg.ReplicaID,
		Interval: s.t.Interval, TTL: ttl, Kick: s.kick, Now: s.cfg.Now, Work: s.Deliver,
		Log: s.log.With("loop", "events delivery")})
}

// Deliver runs one turn: every due stream gets its pending events in
// order until one fails (which backs the stream off), then events past
// their retention are deleted. Run calls it; tests call it with a fake
// clock.
func (s *Service) Deliver(ctx context.Context) error {
	var due []store.Record
	now := s.cfg.Now()
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		due, _, err = tx.List(ctx, store.Query{Kind: kindStream, Key: keyDue, HasKey: true,
			RankMax: now.UnixNano(), HasRankMax: true, Order: store.OrderRankAsc, Limit: streamBatch})
		return err
	})
	if err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, parallel)
		mu   sync.Mutex
		errs []error
	)
	for _, rec := range due {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.deliverStream(ctx, rec.ID); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	errs = append(errs, s.expire(ctx))
	return errors.Join(errs...)
}

// head is a stream's next delivery and its event.
type head struct {
	st    stream
	del   store.Record
	body  []byte
	empty bool
	// orphan: the delivery's event is gone; the delivery is dropped.
	orphan bool
}

// deliverStream sends a stream's pending events in order, for up to
// streamBudget, stopping at the first failure.
func (s *Service) deliverStream(ctx context.Context, sid string) error {
	start := s.cfg.Now()
	for s.cfg.Now().Sub(start) < streamBudget {
		h, err := s.readHead(ctx, sid)
		if err != nil || h == nil {
			return err
		}
		if h.empty || !s.urls[h.st.URL] {
			return s.dropStream(ctx, sid, h)
		}
		if h.orphan {
			s.log.Warn("webhook: a delivery's event is missing; dropping it", "delivery", h.del.ID)
			if err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
				return ignoreNotFound(deleteDelivery(ctx, tx, h.del))
			}); err != nil {
				return err
			}
			continue
		}
		ts := s.cfg.Now().Unix()
		sendErr := s.send(ctx, h.st.URL, h, ts)
		if ctx.Err() != nil {
			return nil
		}
		if err := s.settle(ctx, sid, h, sendErr); err != nil || sendErr != nil {
			return err
		}
	}
	return nil
}

// readHead reads the stream and its first pending delivery (nil: the
// stream is gone or not due any more).
func (s *Service) readHead(ctx context.Context, sid string) (*head, error) {
	var h *head
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		h = nil
		var st stream
		rec, err := store.GetJSON(ctx, tx, kindStream, sid, &st)
		if errors.Is(err, store.ErrNotFound) || (err == nil && rec.Rank > s.cfg.Now().UnixNano()) {
			return nil
		}
		if err != nil {
			return err
		}
		h = &head{st: st}
		dels, _, err := tx.List(ctx, store.Query{Kind: kindDelivery, Parent: sid, HasParent: true,
			Order: store.OrderRankAsc, Limit: 1})
		if err != nil {
			return err
		}
		if len(dels) == 0 {
			h.empty = true
			return nil
		}
		h.del = dels[0]
		var d delivery
		if err := store.Decode(h.del, &d); err != nil {
			return err
		}
		ev, err := tx.Get(ctx, kindEvent, d.EventID)
		if errors.Is(err, store.ErrNotFound) {
			h.orphan = true // cannot happen (events outlive their deliveries); never block the stream on it
			return nil
		}
		if err != nil {
			return fmt.Errorf("delivery %s: %w", h.del.ID, err)
		}
		if h.body, err = eventBody(ev.Data); err != nil {
			return fmt.Errorf("event %s: %w", d.EventID, err)
		}
		return nil
	})
	return h, err
}

// send POSTs the event, signed, to url; a 2xx answer is success.
func (s *Service) send(ctx context.Context, url string, h *head, ts int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(h.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Hoist-Events/1")
	req.Header.Set(HeaderEventID, h.del.Key)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(s.cfg.Secret, ts, h.body))
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// settle records a send's outcome: success deletes the delivery; failure
// backs the stream off (Backoff doubling up to MaxBackoff), and drops the
// delivery once the stream has failed for GiveUp.
func (s *Service) settle(ctx context.Context, sid string, h *head, sendErr error) error {
	now := s.cfg.Now()
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var st stream
		if _, err := store.GetJSON(ctx, tx, kindStream, sid, &st); err != nil {
			return ignoreNotFound(err)
		}
		rec := store.Record{Kind: kindStream, ID: sid, Key: keyDue, Rank: now.UnixNano()}
		if sendErr == nil || (!st.FirstFail.IsZero() && now.Sub(st.FirstFail) >= s.t.GiveUp) {
			if sendErr != nil {
				s.log.Warn("webhook: giving up on an event", "event", h.del.Key, "url", st.URL,
					"attempts", st.Attempts+1, "err", sendErr.Error())
			}
			if err := deleteDelivery(ctx, tx, h.del); err != nil {
				return ignoreNotFound(err)
			}
			st.Attempts, st.FirstFail, st.LastError = 0, time.Time{}, ""
			return store.PutJSON(ctx, tx, rec, st)
		}
		if st.FirstFail.IsZero() {
			st.FirstFail = now
		}
		st.Attempts++
		st.LastError = sendErr.Error()
		rec.Rank = now.Add(s.backoff(st.Attempts)).UnixNano()
		s.log.Info("webhook: delivery failed; will retry", "event", h.del.Key, "url", st.URL,
			"attempts", st.Attempts, "retry_at", time.Unix(0, rec.Rank).UTC(), "err", st.LastError)
		return store.PutJSON(ctx, tx, rec, st)
	})
}

// backoff is the wait after the n-th failure in a row (n >= 1).
func (s *Service) backoff(n int) time.Duration {
	d := s.t.Backoff
	for i := 1; i < n && d < s.t.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, s.t.MaxBackoff)
}

// dropStream deletes a stream with nothing pending, or whose URL is no
// longer configured (with its deliveries).
func (s *Service) dropStream(ctx context.Context, sid string, h *head) error {
	if !h.empty {
		s.log.Warn("webhook: URL no longer configured; dropping its pending events", "url", h.st.URL)
	}
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		dels, _, err := tx.List(ctx, store.Query{Kind: kindDelivery, Parent: sid, HasParent: true, Limit: 256})
		if err != nil {
			return err
		}
		if len(dels) > 0 && s.urls[h.st.URL] {
			return nil // a Publish added one meanwhile
		}
		for _, d := range dels {
			if err := deleteDelivery(ctx, tx, d); err != nil {
				return err
			}
		}
		if len(dels) == 256 {
			return nil // more next turn
		}
		return ignoreNotFound(tx.Delete(ctx, kindStream, sid))
	})
}

// deleteDelivery deletes a delivery and, when it was its event's last,
// releases the event to expire.
func deleteDelivery(ctx context.Context, tx store.Tx, del store.Record) error {
	if err := tx.Delete(ctx, kindDelivery, del.ID); err != nil {
		return err
	}
	n, err := tx.Count(ctx, store.Query{Kind: kindDelivery, Key: del.Key, HasKey: true})
	if err != nil || n > 0 {
		return err
	}
	ev, err := tx.Get(ctx, kindEvent, del.Key)
	if err != nil {
		return ignoreNotFound(err)
	}
	ev.Key = keyReleased
	return tx.Put(ctx, ev)
}

// expire deletes events published more than Retention ago that have no
// delivery pending.
func (s *Service) expire(ctx context.Context) error {
	cutoff := s.cfg.Now().Add(-s.t.Retention).UnixNano()
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		old, _, err := tx.List(ctx, store.Query{Kind: kindEvent, Key: keyReleased, HasKey: true,
			Order: store.OrderRankAsc, RankMax: cutoff, HasRankMax: true, Limit: retentionPage})
		if err != nil {
			return err
		}
		for _, ev := range old {
			if err := tx.Delete(ctx, kindEvent, ev.ID); err != nil {
				return err
			}
		}
		return nil
	})
}

func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
