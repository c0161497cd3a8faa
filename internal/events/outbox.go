package events

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// dropLogEvery is how often, at most, the full outbox's warning is logged
// (the drops in between are summed into the next line).
const dropLogEvery = time.Minute

// Counters are what this replica's delivery loops did since it started,
// for metrics (Service.Counters reads them).
type Counters struct {
	// Delivered counts deliveries a URL answered with 2xx.
	Delivered int64
	// Failed counts attempts that failed (retried later).
	Failed int64
	// GivenUp counts deliveries dropped after failing for Timings.GiveUp.
	GivenUp int64
	// DroppedFull counts deliveries dropped because their event was
	// deleted from a full outbox (more than Config.MaxEvents events)
	// before it was delivered.
	DroppedFull int64
	// DroppedRemoved counts deliveries dropped because their URL was no
	// longer configured.
	DroppedRemoved int64
	// Evicted counts events deleted from a full outbox before their time,
	// delivered (kept for the live stream) or not.
	Evicted int64
}

// counters are the Counters, updated at once by the loops.
type counters struct {
	delivered, failed, givenUp, droppedFull, droppedRemoved, evicted atomic.Int64
}

// settled counts one send's outcome.
func (c *counters) settled(ok, gaveUp bool) {
	switch {
	case ok:
		c.delivered.Add(1)
	case gaveUp:
		c.failed.Add(1)
		c.givenUp.Add(1)
	default:
		c.failed.Add(1)
	}
}

// Counters returns the delivery counters of this replica.
func (s *Service) Counters() Counters {
	c := &s.counters
	return Counters{Delivered: c.delivered.Load(), Failed: c.failed.Load(), GivenUp: c.givenUp.Load(),
		DroppedFull: c.droppedFull.Load(), DroppedRemoved: c.droppedRemoved.Load(), Evicted: c.evicted.Load()}
}

// dropLog rate-limits the full outbox's warning: the first drop of an
// undelivered event is logged at once, later ones summed and logged at
// most every dropLogEvery.
type dropLog struct {
	mu   sync.Mutex
	last time.Time // of the last line
	// Since it: events evicted, those of them still undelivered, and
	// their deliveries.
	events, undelivered, deliveries int64
	newest                          time.Time // publish time of the newest event evicted
}

// housekeep runs one turn of the housekeeping loop: streams of an older
// Hoist are adopted by their URL, the deliveries of URLs no longer
// configured are dropped, the outbox is bounded, and events past their
// retention are deleted.
func (s *Service) housekeep(ctx context.Context) error {
	err := errors.Join(s.adoptStreams(ctx), s.dropRemoved(ctx), s.bound(ctx), s.expire(ctx))
	s.logEvictions(eviction{})
	return err
}

// adoptStreams gives the streams an older Hoist wrote (no Parent) their
// URL's key as Parent, where their URL's loop looks for them.
func (s *Service) adoptStreams(ctx context.Context) error {
	q := store.Query{Kind: kindStream, Parent: "", HasParent: true, Limit: retentionPage}
	var n int
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		n, err = tx.Count(ctx, q)
		return err
	})
	if err != nil || n == 0 {
		return err // nothing to adopt (the usual case): no write
	}
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		old, _, err := tx.List(ctx, q)
		if err != nil {
			return err
		}
		for _, rec := range old {
			rec.Parent = streamParent(rec.ID)
			if err := tx.Put(ctx, rec); err != nil {
				return err
			}
		}
		return nil
	})
}

// dropRemoved drops the streams, with their deliveries, of URLs no longer
// configured. Stream IDs start with their URL's key, so it reads the
// first stream of each key in ID order and skips the configured ones.
func (s *Service) dropRemoved(ctx context.Context) error {
	after := ""
	for {
		var first []store.Record
		err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
			q := store.Query{Kind: kindStream, Order: store.OrderID, Limit: 1}
			if after != "" {
				q.After = store.EncodeCursor(store.OrderID, false, &store.Record{ID: after})
			}
			var err error
			first, _, err = tx.List(ctx, q)
			return err
		})
		if err != nil || len(first) == 0 {
			return err
		}
		key := streamParent(first[0].ID)
		if s.keys[key] == nil {
			if err := s.dropURL(ctx, key); err != nil {
				return err
			}
		}
		after = key + "!" // after every "<key> <order key>"
	}
}

// dropURL drops up to streamBatch streams of the URL whose key is key,
// which is no longer configured.
func (s *Service) dropURL(ctx context.Context, key string) error {
	var streams []store.Record
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		streams, _, err = tx.List(ctx, store.Query{Kind: kindStream, Parent: key, HasParent: true, Limit: streamBatch})
		return err
	})
	if err != nil || len(streams) == 0 {
		return err
	}
	var url string
	dropped := 0
	for _, rec := range streams {
		var st stream
		if err := store.Decode(rec, &st); err != nil {
			return err
		}
		url = st.URL
		n, err := s.dropStream(ctx, rec.ID, st.URL)
		dropped += n
		if err != nil {
			return err
		}
	}
	s.counters.droppedRemoved.Add(int64(dropped))
	if dropped > 0 {
		s.log.Warn("webhook: URL no longer configured; dropping its pending events", "url", url, "deliveries", dropped)
	}
	return nil
}

// eviction sums what bound deleted.
type eviction struct {
	events, undelivered, deliveries int
	newest                          time.Time
}

// bound deletes events while the outbox holds more than MaxEvents, so
// that it is bounded in size as well as in time (Retention, GiveUp): first
// the oldest of those no webhook waits for (kept only for the live
// stream's replay), then, if that is not enough, the oldest of those still
// waiting, with their deliveries.
func (s *Service) bound(ctx context.Context) error {
	var n int
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		n, err = tx.Count(ctx, store.Query{Kind: kindEvent})
		return err
	})
	for excess, key := n-s.cfg.MaxEvents, keyReleased; err == nil && excess > 0; {
		var ev eviction
		err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
			ev = eviction{}
			// In publish order (the store's insertion order): events
			// published at the same instant tie on their time.
			old, _, err := tx.List(ctx, store.Query{Kind: kindEvent, Key: key, HasKey: true,
				Order: store.OrderCreated, Limit: min(excess, retentionPage)})
			if err != nil {
				return err
			}
			for _, rec := range old {
				if err := evict(ctx, tx, rec, &ev); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			break
		}
		if ev.events == 0 {
			if key == keyPending {
				break
			}
			key = keyPending
			continue
		}
		excess -= ev.events
		s.counters.evicted.Add(int64(ev.events))
		s.counters.droppedFull.Add(int64(ev.deliveries))
		s.logEvictions(ev)
	}
	return err
}

// evict deletes event rec and its pending deliveries, adding them to ev.
func evict(ctx context.Context, tx store.Tx, rec store.Record, ev *eviction) error {
	if rec.Key == keyPending {
		dels, _, err := tx.List(ctx, store.Query{Kind: kindDelivery, Key: rec.ID, HasKey: true, Order: store.OrderRankAsc})
		if err != nil {
			return err
		}
		for _, d := range dels {
			if err := tx.Delete(ctx, kindDelivery, d.ID); err != nil {
				return err
			}
		}
		ev.undelivered++
		ev.deliveries += len(dels)
	}
	ev.events++
	if t := time.Unix(0, rec.Rank); t.After(ev.newest) {
		ev.newest = t
	}
	return deleteEvent(ctx, tx, rec.ID)
}

// deleteEvent deletes an event and its live stream record (which events
// an older Hoist published lack).
func deleteEvent(ctx context.Context, tx store.Tx, id string) error {
	if err := tx.Delete(ctx, kindLive, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return tx.Delete(ctx, kindEvent, id)
}

// logEvictions adds ev to the full outbox's warning and logs the sums
// once undelivered events were dropped: at once the first time, then at
// most every dropLogEvery. housekeep calls it with nothing, to log what is
// left.
func (s *Service) logEvictions(ev eviction) {
	d := &s.drops
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events += int64(ev.events)
	d.undelivered += int64(ev.undelivered)
	d.deliveries += int64(ev.deliveries)
	if ev.newest.After(d.newest) {
		d.newest = ev.newest
	}
	now := s.cfg.Now()
	if d.undelivered == 0 || (!d.last.IsZero() && now.Sub(d.last) < dropLogEvery) {
		return
	}
	s.log.Warn("event outbox full: dropped the oldest undelivered events", "undelivered", d.undelivered,
		"deliveries_dropped", d.deliveries, "events_deleted", d.events, "newest_deleted_published", d.newest.UTC(),
		"max_events", s.cfg.MaxEvents)
	d.last, d.events, d.undelivered, d.deliveries, d.newest = now, 0, 0, 0, time.Time{}
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
			if err := deleteEvent(ctx, tx, ev.ID); err != nil {
				return err
			}
		}
		return nil
	})
}
