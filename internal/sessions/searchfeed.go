package sessions

import (
	"context"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// The search index on a shared store (Config.Shared: several replicas on
// one PostgreSQL). Another replica's writes never pass through this
// replica's searchStore, so the index also follows the store's change
// feed of game session records, which every replica writes to in the
// transaction of each write and which is read in commit order:
//
//   - The feed position is taken before any fleet is loaded, so a load
//     (a View after it) and the changes after it together miss nothing.
//   - Before each search, the index reads the feed from its position to
//     the end (each change carries the record as it is when read) and
//     applies it, then re-reads this replica's own dirty IDs and loads
//     the fleet if needed, as on one replica. Own writes are therefore
//     seen at once (the feed can lag: PostgreSQL's stops at the oldest
//     transaction still running), and another replica's once the feed
//     has them.
//   - Reads are applied in the order they were read, under refreshMu, so
//     a newer state is never overwritten by an older one.
//   - A search that arrives while a refresh runs waits for the next one,
//     and skips it if one that began after it arrived has completed: it
//     has seen everything the search must.
//   - A position the feed no longer holds (store.ErrChangesLost: this
//     replica fell behind the feed's retention) makes the index forget
//     every fleet and start again from the feed's head; each fleet is
//     loaded again from the store on its next search.
//   - Between searches, followShared reads the feed every
//     Timings.SearchFollow, so that a search finds little to read.

// feedPage is how many changes one read of the feed asks for.
const feedPage = 1000

// maxFeedPages bounds the pages one refresh reads: a refresh that still
// finds changes after them leaves the rest for the next one (writes that
// keep coming must not hold a search forever).
const maxFeedPages = 64

// syncShared is sync on a shared store.
func (x *searchIndex) syncShared(ctx context.Context, st store.Store, fleetID string) error {
	arrived := x.begun.Load()
	x.refreshMu.Lock()
	defer x.refreshMu.Unlock()
	x.mu.RLock()
	_, loaded := x.fleets[fleetID]
	x.mu.RUnlock()
	if loaded && x.covered > arrived {
		return nil // a refresh that began after this search arrived has completed
	}
	return x.refreshShared(ctx, st, fleetID)
}

// refreshShared reads the change feed and this replica's dirty IDs, and
// loads fleetID ("": none) if it is not loaded. The caller holds
// refreshMu.
func (x *searchIndex) refreshShared(ctx context.Context, st store.Store, fleetID string) error {
	n := x.begun.Add(1)
	x.watching.Store(true) // before any read: writes after it are noted
	dirty, overflow := x.takeDirty()
	if overflow {
		x.forget()
	}
	if err := x.follow(ctx, st); err != nil {
		x.markDirty(keys(dirty))
		return err
	}
	x.mu.RLock()
	_, loaded := x.fleets[fleetID]
	x.mu.RUnlock()
	if fleetID == "" {
		loaded = true
	}
	if !loaded || len(dirty) > 0 {
		if err := x.reread(ctx, st, fleetID, loaded, dirty); err != nil {
			return err
		}
	}
	x.covered = n
	return nil
}

// follow reads the change feed from the index's position until a read
// finds no change (or maxFeedPages were read), applying each page. A lost
// position starts the index afresh. The caller holds refreshMu.
func (x *searchIndex) follow(ctx context.Context, st store.Store) error {
	if x.pos == "" {
		if err := x.restart(ctx, st); err != nil {
			return err
		}
	}
	for range maxFeedPages {
		chs, next, err := st.Changes(ctx, x.pos, feedPage, hosting.KindGameSession)
		if errors.Is(err, store.ErrChangesLost) || errors.Is(err, store.ErrInvalidCursor) {
			return x.restart(ctx, st)
		}
		if err != nil {
			return err
		}
		if err := x.applyChanges(chs); err != nil {
			return err
		}
		x.pos = next
		if len(chs) == 0 {
			return nil
		}
	}
	return nil
}

// restart forgets every fleet and takes the feed's head as the position:
// fleets loaded after it miss nothing.
func (x *searchIndex) restart(ctx context.Context, st store.Store) error {
	_, head, err := st.Changes(ctx, "", 0, hosting.KindGameSession)
	if err != nil {
		return err
	}
	x.forget()
	x.pos = head
	return nil
}

// applyChanges applies one page of the feed: sessions of fleets not in
// the index are skipped without decoding; an ACTIVE session is upserted,
// any other (or a deleted one) removed.
func (x *searchIndex) applyChanges(chs []store.Change) error {
	var remove []string
	var upsert []store.Record
	x.mu.RLock()
	for _, c := range chs {
		_, indexed := x.where[c.Record.ID]
		_, fleet := x.fleets[c.Record.Parent]
		switch {
		case c.Deleted || c.Record.Key != string(api.GameSessionStatusActive):
			if indexed {
				remove = append(remove, c.Record.ID)
			}
		case fleet || indexed:
			upsert = append(upsert, c.Record)
		}
	}
	x.mu.RUnlock()
	decoded := make([]*searchRecord, len(upsert))
	for i, rec := range upsert { // outside the lock searches take
		var err error
		if decoded[i], err = decodeSearchRecord(rec); err != nil {
			return err
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range remove {
		x.removeLocked(id)
	}
	for i, gs := range decoded {
		if gs.Session.Status != api.GameSessionStatusActive {
			x.removeLocked(upsert[i].ID)
			continue
		}
		x.upsertLocked(gs)
	}
	return nil
}

// followSearch starts, on a shared store, the search index's reading of
// the change feed between searches, until ctx ends; the function it
// returns waits for it to end.
func (s *Service) followSearch(ctx context.Context) (wait func()) {
	if !s.search.feed {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.search.followShared(ctx, s.cfg.Store, s.t.SearchFollow, func(err error) {
			s.log.Warn("search index: reading the change feed", "err", err)
		})
	}()
	return func() { <-done }
}

// followShared reads the change feed every interval while some fleet is
// indexed, until ctx ends (Run runs it on a shared store).
func (x *searchIndex) followShared(ctx context.Context, st store.Store, interval time.Duration, warn func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !x.watching.Load() {
			continue // no search yet: nothing to keep current
		}
		x.refreshMu.Lock()
		err := x.refreshShared(ctx, st, "")
		x.refreshMu.Unlock()
		if err != nil && ctx.Err() == nil {
			warn(err)
		}
	}
}
