package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clock"
	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/store"
)

// kindClock holds the manual clock's time, one record (clockRecordID), in
// the store: every replica sharing the store follows the same clock, and
// a restart keeps it.
const (
	kindClock     store.Kind = "HoistClock"
	clockRecordID string     = "manual"
)

// clockFollow is how often a replica on a shared store reads the manual
// clock's time, to follow another replica's advance.
const clockFollow = 200 * time.Millisecond

// Bounds of an advance: one moves the clock by at most maxClockAdvance,
// and the clock stays before clockEnd (times are kept as Unix nanoseconds
// in places, which end in 2262).
const maxClockAdvance = 10 * 365 * 24 * time.Hour

var clockEnd = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

// clockRecord is the stored time of the manual clock.
type clockRecord struct{ Time time.Time }

// sharedClock is a manual clock kept in the store: Advance writes the new
// time and moves this replica's clock; follow moves it to what another
// replica wrote.
type sharedClock struct {
	m   *clock.Manual
	st  store.Store
	log *slog.Logger
}

// openSharedClock reads the manual clock's time from the store, starting
// it at the real time when the store has none.
func openSharedClock(ctx context.Context, st store.Store, log *slog.Logger) (*sharedClock, error) {
	var t time.Time
	read := func(tx store.Tx) error {
		var err error
		if t, err = readClock(ctx, tx); !errors.Is(err, store.ErrNotFound) {
			return err
		}
		t = time.Now().UTC().Truncate(time.Millisecond)
		return putClock(ctx, tx, t, true)
	}
	err := st.Update(ctx, read)
	if errors.Is(err, store.ErrExists) {
		err = st.Update(ctx, read) // another replica started it meanwhile
	}
	if err != nil {
		return nil, fmt.Errorf("reading the manual clock: %w", err)
	}
	log.Warn("the clock is manual (--clock manual): game time stands still until hoist admin clock advance moves it", "time", t)
	return &sharedClock{m: clock.NewManual(t), st: st, log: log}, nil
}

func readClock(ctx context.Context, tx store.Tx) (time.Time, error) {
	rec, err := tx.Get(ctx, kindClock, clockRecordID)
	if err != nil {
		return time.Time{}, err
	}
	var c clockRecord
	if err := json.Unmarshal(rec.Data, &c); err != nil || c.Time.IsZero() {
		return time.Time{}, fmt.Errorf("the stored manual clock is damaged")
	}
	return c.Time, nil
}

func putClock(ctx context.Context, tx store.Tx, t time.Time, insert bool) error {
	data, err := json.Marshal(clockRecord{Time: t})
	if err != nil {
		return err
	}
	rec := store.Record{Kind: kindClock, ID: clockRecordID, Data: data}
	if insert {
		return tx.Insert(ctx, rec)
	}
	return tx.Put(ctx, rec)
}

// Advance moves the shared clock forward by d: the store's time first,
// then this replica's clock (the others follow within clockFollow).
func (c *sharedClock) Advance(ctx context.Context, d time.Duration) (time.Time, error) {
	var t time.Time
	err := c.st.Update(ctx, func(tx store.Tx) error {
		cur, err := readClock(ctx, tx)
		if err != nil {
			return err
		}
		if t = cur.Add(d); !t.Before(clockEnd) {
			return api.NewInvalidRequestException("By: the clock would pass %s (it reads %s)", clockEnd.Format(time.RFC3339), cur.Format(time.RFC3339Nano))
		}
		return putClock(ctx, tx, t, false)
	})
	if err != nil {
		return time.Time{}, err
	}
	c.m.AdvanceTo(t)
	c.log.Info("clock advanced", "by", d, "time", t)
	return c.m.Now(), nil
}

// follow moves this replica's clock to the stored time every clockFollow
// until ctx ends: on a shared store, another replica may have advanced it.
func (c *sharedClock) follow(ctx context.Context) error {
	tick := time.NewTicker(clockFollow)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		var t time.Time
		err := c.st.View(ctx, func(tx store.Tx) error {
			var err error
			t, err = readClock(ctx, tx)
			return err
		})
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("reading the manual clock", "err", err)
			}
			continue
		}
		if c.m.AdvanceTo(t) {
			c.log.Info("clock advanced by another replica", "time", t)
		}
	}
}

// setupClock makes the server's clocks: the game clock (s.now, and
// s.clock for the loops' tickers) is the manual one with --clock manual,
// else Options.Now or the real time; s.wallNow, for what must follow real
// time (signatures, connections, process health), is Options.Now or the
// real time.
func (s *Server) setupClock(opts Options) error {
	s.wallNow = opts.Now
	if s.wallNow == nil {
		s.wallNow = time.Now
	}
	s.now = s.wallNow
	if s.cfg.Clock != config.ClockManual {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := openSharedClock(ctx, s.store, s.log.With("component", "clock"))
	if err != nil {
		return err
	}
	s.manual, s.clock, s.now = c, c.m, c.m.Now
	return nil
}

// runClock follows the shared clock on a shared store (PostgreSQL) until
// ctx ends; an embedded store has one replica, whose clock is the store's.
func (s *Server) runClock(ctx context.Context) error {
	if s.manual == nil || s.cfg.Store != config.StorePostgres {
		<-ctx.Done()
		return nil
	}
	return s.manual.follow(ctx)
}

// AdvanceClockInput moves a manual clock forward.
type AdvanceClockInput struct {
	// By is a Go duration ("90s", "1h30m"), positive.
	By string
}

// ClockOutput describes Hoist's clock: Clock is "real" or "manual", Time
// its time now.
type ClockOutput struct {
	Clock string
	Time  time.Time
}

// clockAdmin serves the admin actions of the clock; known is false for
// any other action.
func (s *Server) clockAdmin(ctx context.Context, action string, body []byte) (out any, known bool, err error) {
	switch action {
	case "DescribeClock":
		if err = decodeAdmin(body, &struct{}{}); err != nil {
			return nil, true, err
		}
		return s.describeClock(), true, nil
	case "AdvanceClock":
		var in AdvanceClockInput
		if err = decodeAdmin(body, &in); err != nil {
			return nil, true, err
		}
		out, err = s.advanceClock(ctx, in)
		return out, true, err
	}
	return nil, false, nil
}

// clockActions names the admin actions of the clock.
const clockActions = "DescribeClock, AdvanceClock"

func (s *Server) describeClock() ClockOutput {
	name := config.ClockReal
	if s.manual != nil {
		name = config.ClockManual
	}
	return ClockOutput{Clock: name, Time: s.now().UTC()}
}

func (s *Server) advanceClock(ctx context.Context, in AdvanceClockInput) (ClockOutput, error) {
	if s.manual == nil {
		return ClockOutput{}, api.NewInvalidRequestException("the clock is real: only a manual clock can be advanced (start Hoist with --clock manual, $HOIST_CLOCK=manual)")
	}
	d, err := time.ParseDuration(in.By)
	if err != nil || d <= 0 || d > maxClockAdvance {
		return ClockOutput{}, api.NewInvalidRequestException("By: %s is not a positive duration of at most %s (e.g. 90s, 1h30m)", quoteClip(in.By), maxClockAdvance)
	}
	t, err := s.manual.Advance(ctx, d)
	if err != nil {
		return ClockOutput{}, err
	}
	return ClockOutput{Clock: config.ClockManual, Time: t.UTC()}, nil
}
