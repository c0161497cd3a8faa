package replicas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// JanitorLease is the janitor's lease: it runs on one replica at a time.
const JanitorLease = "replicas-janitor"

// Clearer clears, in transactions that each check gone.Still, what names
// a dead replica as the holder of a connection (Process.ConnectedTo,
// Host.ConnectedTo, an agent's connection record), so that the
// connection counts as disconnected.
type Clearer func(ctx context.Context, gone Gone) error

// Janitor removes the replicas whose registration expired. For each: it
// marks the record Gone, runs every Clearer, hands the replica's inbox to
// the holders of its targets (or drops it), then deletes the record. A
// failure leaves the record for the next pass.
type Janitor struct {
	Store store.Store
	// Holder is this replica's ID (the janitor's lease holder).
	Holder string
	// Interval between passes (default 2 s); the lease lasts TTL
	// (default DefaultTTL).
	Interval, TTL time.Duration
	Clear         []Clearer
	// Inbox adopts a dead replica's inbox (nil: no inbox to adopt).
	Inbox *Inbox
	Now   func() time.Time
	Log   *slog.Logger
}

// Run runs the janitor under its lease until ctx ends.
func (j *Janitor) Run(ctx context.Context) error {
	if j.Interval <= 0 {
		j.Interval = 2 * time.Second
	}
	if j.TTL <= 0 {
		j.TTL = DefaultTTL
	}
	return store.RunLeased(ctx, j.Store, store.Loop{Name: JanitorLease, Holder: j.Holder, Interval: j.Interval,
		TTL: j.TTL, Work: j.Pass, Log: j.log()})
}

// Pass removes every registered replica whose lease has expired.
func (j *Janitor) Pass(ctx context.Context) error {
	recs, err := List(ctx, j.Store)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range recs {
		if !r.Expires.IsZero() {
			continue // live
		}
		if err := j.remove(ctx, r); err != nil {
			errs = append(errs, fmt.Errorf("replica %s: %w", r.ID, err))
		}
	}
	return errors.Join(errs...)
}

// remove clears what names a dead replica and deletes its record.
func (j *Janitor) remove(ctx context.Context, r Record) error {
	gone, err := j.markGone(ctx, r)
	if err != nil || gone == nil {
		return err
	}
	j.log().Warn("replica gone: its registration expired; clearing its connections", "replica", r.ID,
		"addresses", r.Addresses, "started", r.Started)
	for _, c := range j.Clear {
		if err := c(ctx, *gone); err != nil {
			return err
		}
	}
	if err := j.Inbox.Adopt(ctx, r.ID); err != nil {
		return err
	}
	return j.Store.Update(ctx, func(tx store.Tx) error {
		still, err := gone.Still(ctx, tx)
		if err != nil || !still {
			return err
		}
		return tx.Delete(ctx, KindReplica, r.ID)
	})
}

// markGone marks the record Gone in its term, unless the replica
// registered again meanwhile (nil, nil).
func (j *Janitor) markGone(ctx context.Context, r Record) (*Gone, error) {
	var gone *Gone
	err := j.Store.Update(ctx, func(tx store.Tx) error {
		gone = nil
		var cur Record
		if _, err := store.GetJSON(ctx, tx, KindReplica, r.ID, &cur); err != nil {
			return ignoreNotFound(err)
		}
		if cur.Term != r.Term {
			return nil // registered again since List read it
		}
		gone = &Gone{ID: r.ID, Term: r.Term}
		if cur.Gone {
			return nil
		}
		now := time.Now
		if j.Now != nil {
			now = j.Now
		}
		cur.Gone, cur.GoneAt = true, now().UTC()
		data, err := json.Marshal(cur)
		if err != nil {
			return err
		}
		return tx.Put(ctx, store.Record{Kind: KindReplica, ID: r.ID, Data: data})
	})
	return gone, err
}

func (j *Janitor) log() *slog.Logger {
	if j.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return j.Log
}

func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
