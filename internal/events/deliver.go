package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// leaseName is the store lease the housekeeping loop runs under; the
// delivery loop of a webhook URL runs under leaseName + "/" + its key.
const leaseName = "events-delivery"

// Delivery batches: streams a URL's loop handles per turn, how long one
// stream is sent to per turn (then the turn ends and the next one goes on
// with it), streams of one URL sent to at once, and records the
// housekeeping deletes per transaction.
const (
	streamBatch   = 64
	streamBudget  = time.Second
	parallel      = 8
	retentionPage = 256
)

// Run runs, until ctx ends, one delivery loop per webhook URL and the
// housekeeping loop, each every Timings.Interval while this replica holds
// its lease (a URL's loop also soon after a Publish to it on this
// replica). Each URL has its own loop, lease and concurrency, so a
// receiver that hangs delays only its own events; with several replicas
// the URLs' leases spread over them.
func (s *Service) Run(ctx context.Context) error {
	// A lease outlasts a turn that waits on a slow receiver (a request
	// may take RequestTimeout, after a stream's budget), so that another
	// replica does not take over mid-turn and send the same events.
	ttl := max(5*s.t.Interval, 3*s.t.RequestTimeout)
	loop := func(name string, kick <-chan struct{}, work func(context.Context) error, log *slog.Logger) store.Loop {
		return store.Loop{Name: name, Holder: s.cfg.ReplicaID, Interval: s.t.Interval, TTL: ttl, Kick: kick,
			Now: s.cfg.Now, Work: work, Log: log}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		hk := loop(leaseName, nil, s.housekeep, s.log.With("loop", "events housekeeping"))
		hk.TTL = 5 * s.t.Interval // it sends nothing: a dead replica's passes on within 6 s
		_ = store.RunLeased(ctx, s.cfg.Store, hk)
	})
	for _, w := range s.webhooks {
		s.log.Info("webhook", "url", w.URL, "sns", w.SNS, "topics", s.topicsOf(w.URL))
		wg.Go(func() {
			work := func(ctx context.Context) error { return s.deliverURL(ctx, w) }
			_ = store.RunLeased(ctx, s.cfg.Store, loop(leaseName+"/"+w.key, w.kick, work,
				s.log.With("loop", "webhook delivery", "url", w.URL)))
		})
	}
	wg.Wait()
	return nil
}

// topicsOf lists the topics url is configured for.
func (s *Service) topicsOf(url string) []string {
	var out []string
	for topic, urls := range s.topics {
		if slices.Contains(urls, url) {
			out = append(out, topic)
		}
	}
	slices.Sort(out)
	return out
}

// Deliver runs one turn of every URL's delivery loop, at once, then one of
// the housekeeping. Tests call it with a fake clock (Run runs the loops).
func (s *Service) Deliver(ctx context.Context) error {
	errs := make([]error, len(s.webhooks)+1)
	var wg sync.WaitGroup
	for i, w := range s.webhooks {
		wg.Go(func() { errs[i] = s.deliverURL(ctx, w) })
	}
	wg.Wait()
	errs[len(s.webhooks)] = s.housekeep(ctx)
	return errors.Join(errs...)
}

// deliverURL runs one turn of w's loop: each due stream of w gets its
// pending events in order until one fails (which backs the stream off),
// up to parallel streams at once.
func (s *Service) deliverURL(ctx context.Context, w *webhook) error {
	var due []store.Record
	now := s.cfg.Now()
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		due, _, err = tx.List(ctx, store.Query{Kind: kindStream, Parent: w.key, HasParent: true, Key: keyDue, HasKey: true,
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
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := s.deliverStream(ctx, w, rec.ID); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// head is a stream's next delivery and its event.
type head struct {
	st    stream
	del   store.Record
	body  []byte
	topic string
	empty bool
	// orphan: the delivery's event is gone; the delivery is dropped.
	orphan bool
}

// deliverStream sends a stream's pending events in order, for up to
// streamBudget, stopping at the first failure.
func (s *Service) deliverStream(ctx context.Context, w *webhook, sid string) error {
	start := s.cfg.Now()
	for s.cfg.Now().Sub(start) < streamBudget {
		h, err := s.readHead(ctx, sid)
		if err != nil || h == nil {
			return err
		}
		if h.empty || h.st.URL != w.URL {
			_, err := s.dropStream(ctx, sid, h.st.URL)
			return err
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
		if h.topic == "" {
			h.topic = w.topic
		}
		ts := s.cfg.Now().Unix()
		sendErr := s.send(ctx, w, h, ts)
		if sendErr == nil && s.afterSend != nil {
			s.afterSend()
		}
		if ctx.Err() != nil && sendErr != nil {
			return nil // stopped before the receiver answered: still pending
		}
		// A delivery the receiver acknowledged is recorded even when ctx
		// ended meanwhile (Hoist stopping), so that it is not sent again
		// after a restart.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		err = s.settle(sctx, sid, h, sendErr)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil || sendErr != nil {
			return err
		}
	}
	return nil
}

// settleTimeout bounds the recording of a delivery's outcome, which the
// loop's stop does not cut short.
const settleTimeout = 5 * time.Second

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
		h.topic = d.Topic
		return nil
	})
	return h, err
}

// send POSTs the event to w, in w's format, signed; a 2xx answer is
// success.
func (s *Service) send(ctx context.Context, w *webhook, h *head, ts int64) error {
	body, contentType := h.body, "application/json"
	var note SNSNotification
	if w.SNS {
		var err error
		if body, note, err = snsBody(h.body, h.topic); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	if w.SNS {
		setSNSHeaders(req.Header, note, w.URL)
	}
	req.Header.Set("User-Agent", "Hoist-Events/1")
	req.Header.Set(HeaderEventID, h.del.Key)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(s.cfg.Secret, ts, w.URL, body))
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
	var gaveUp bool
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		gaveUp = false
		var st stream
		if _, err := store.GetJSON(ctx, tx, kindStream, sid, &st); err != nil {
			return ignoreNotFound(err)
		}
		rec := store.Record{Kind: kindStream, ID: sid, Parent: streamParent(sid), Key: keyDue, Rank: now.UnixNano()}
		if sendErr == nil || (!st.FirstFail.IsZero() && now.Sub(st.FirstFail) >= s.t.GiveUp) {
			if err := deleteDelivery(ctx, tx, h.del); err != nil {
				return ignoreNotFound(err)
			}
			gaveUp = sendErr != nil
			if gaveUp {
				s.log.Warn("webhook: giving up on an event", "event", h.del.Key, "url", st.URL,
					"attempts", st.Attempts+1, "err", sendErr.Error())
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
	if err == nil {
		s.counters.settled(sendErr == nil, gaveUp)
	}
	return err
}

// backoff is the wait after the n-th failure in a row (n >= 1).
func (s *Service) backoff(n int) time.Duration {
	d := s.t.Backoff
	for i := 1; i < n && d < s.t.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, s.t.MaxBackoff)
}

// dropStream deletes a stream with nothing pending, or, with its
// deliveries (dropPage a turn), one whose URL is no longer configured. It
// returns how many deliveries it deleted.
func (s *Service) dropStream(ctx context.Context, sid, url string) (int, error) {
	configured := s.urls[url] != nil
	var n int
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		n = 0
		dels, _, err := tx.List(ctx, store.Query{Kind: kindDelivery, Parent: sid, HasParent: true, Limit: retentionPage})
		if err != nil {
			return err
		}
		if len(dels) > 0 && configured {
			return nil // a Publish added one meanwhile
		}
		for _, d := range dels {
			if err := deleteDelivery(ctx, tx, d); err != nil {
				return err
			}
			n++
		}
		if len(dels) == retentionPage {
			return nil // more next turn
		}
		return ignoreNotFound(tx.Delete(ctx, kindStream, sid))
	})
	return n, err
}

// streamParent is the Parent of stream sid: its URL's key.
func streamParent(sid string) string {
	key, _, _ := strings.Cut(sid, " ")
	return key
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

// ignoreNotFound is err, or nil when it is store.ErrNotFound.
func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
