package sessions

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/search"
	"github.com/hoistgg/hoist/internal/store"
)

// searchIndex is this replica's in-memory index of ACTIVE game sessions for
// SearchGameSessions: per fleet, a compact view of each ACTIVE session. It is
// derived from the store, never authoritative:
//
//   - A fleet is loaded on its first search, from the store (the fleet's
//     game session records with Key ACTIVE), in one View.
//   - Every Update made through the Service's store (searchStore) notes the
//     IDs of the game session records it wrote; once it has committed, they
//     are marked dirty. A search first re-reads every dirty ID from the store
//     (one View) and applies what it finds, so it sees every write whose
//     Update returned before it began.
//
// Refreshes run one at a time (refreshMu), so a newer read is never
// overwritten by an older one. When several replicas share the store, the
// index also follows the store's change feed for the others' writes
// (searchfeed.go, docs/sessions.md).
type searchIndex struct {
	refreshMu sync.Mutex // held by sync: one refresh at a time

	mu     sync.RWMutex
	fleets map[string]*search.Table // fleet ID -> its ACTIVE sessions
	where  map[string]string        // game session ID -> fleet ID, for sessions in the index

	dirtyMu  sync.Mutex
	dirty    map[string]struct{} // game session IDs written since the last refresh
	overflow bool                // too many dirty IDs were dropped: reload every fleet
	watching atomic.Bool         // some fleet is (being) loaded: writes must be noted

	// On a shared store (several replicas), the index also follows the
	// change feed (searchfeed.go).
	feed    bool
	pos     string        // the feed position read up to ("": none yet); under refreshMu
	begun   atomic.Uint64 // refreshes begun (numbered from 1)
	covered uint64        // the number of the last refresh that completed; under refreshMu
}

// maxDirty bounds the dirty set between two searches; beyond it the index
// forgets every fleet and reloads them on their next search.
const maxDirty = 1 << 18

func newSearchIndex() *searchIndex {
	return &searchIndex{fleets: map[string]*search.Table{}, where: map[string]string{}, dirty: map[string]struct{}{}}
}

// markDirty notes game session IDs whose records a committed Update wrote.
func (x *searchIndex) markDirty(ids []string) {
	if len(ids) == 0 || !x.watching.Load() {
		return
	}
	x.dirtyMu.Lock()
	defer x.dirtyMu.Unlock()
	if x.overflow {
		return
	}
	for _, id := range ids {
		x.dirty[id] = struct{}{}
	}
	if len(x.dirty) > maxDirty {
		x.dirty, x.overflow = map[string]struct{}{}, true
	}
}

// sync brings the index up to date for a search of fleetID: it loads the
// fleet if needed and re-reads every dirty game session. On a shared store
// it also follows the change feed (syncShared).
func (x *searchIndex) sync(ctx context.Context, st store.Store, fleetID string) error {
	if x.feed {
		return x.syncShared(ctx, st, fleetID)
	}
	x.refreshMu.Lock()
	defer x.refreshMu.Unlock()
	x.watching.Store(true) // before the View: writes it misses are noted
	dirty, overflow := x.takeDirty()
	if overflow {
		x.forget()
	}
	x.mu.RLock()
	_, loaded := x.fleets[fleetID]
	x.mu.RUnlock()
	if loaded && len(dirty) == 0 {
		return nil
	}
	return x.reread(ctx, st, fleetID, loaded, dirty)
}

// takeDirty takes the dirty set, and whether it overflowed.
func (x *searchIndex) takeDirty() (map[string]struct{}, bool) {
	x.dirtyMu.Lock()
	defer x.dirtyMu.Unlock()
	dirty, overflow := x.dirty, x.overflow
	x.dirty, x.overflow = map[string]struct{}{}, false
	return dirty, overflow
}

// forget drops every fleet: each is loaded again on its next search.
func (x *searchIndex) forget() {
	x.mu.Lock()
	x.fleets, x.where = map[string]*search.Table{}, map[string]string{}
	x.mu.Unlock()
}

// reread reads, in one View, fleetID's ACTIVE sessions unless it is loaded
// ("" loads none) and every dirty ID, and applies what it read. On an error
// the dirty IDs are put back, for a later search.
func (x *searchIndex) reread(ctx context.Context, st store.Store, fleetID string, loaded bool, dirty map[string]struct{}) error {
	var fresh []*searchRecord // the fleet's ACTIVE sessions, when it is loaded now
	changed := map[string]*searchRecord{}
	err := st.View(ctx, func(tx store.Tx) error {
		fresh = nil
		clear(changed)
		if !loaded {
			var err error
			if fresh, err = listActive(ctx, tx, fleetID); err != nil {
				return err
			}
		}
		for id := range dirty {
			rec, err := tx.Get(ctx, hosting.KindGameSession, id)
			if errors.Is(err, store.ErrNotFound) {
				changed[id] = nil // gone
				continue
			}
			if err != nil {
				return err
			}
			if changed[id], err = decodeSearchRecord(rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		// Put the dirty IDs back: a later search retries them.
		x.markDirty(keys(dirty))
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !loaded {
		x.fleets[fleetID] = search.NewTable()
		for _, gs := range fresh {
			x.upsertLocked(gs)
		}
	}
	for id, gs := range changed {
		if gs == nil || gs.Session.Status != api.GameSessionStatusActive {
			x.removeLocked(id)
			continue
		}
		x.upsertLocked(gs)
	}
	return nil
}

func keys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// searchRecord is the part of a stored game session (hosting.GameSession)
// that search needs: decoding only these fields skips the large ones
// (GameSessionData, MatchmakerData).
type searchRecord struct {
	Session struct {
		GameSessionId, FleetId, Location, Name               *string
		MaximumPlayerSessionCount, CurrentPlayerSessionCount *int32
		CreationTime                                         *api.Timestamp
		GameProperties                                       []api.GameProperty
		Status                                               api.GameSessionStatus
	} `json:"session"`
}

func decodeSearchRecord(rec store.Record) (*searchRecord, error) {
	r := new(searchRecord)
	if err := store.Decode(rec, r); err != nil {
		return nil, err
	}
	return r, nil
}

// listActive reads a fleet's ACTIVE game sessions.
func listActive(ctx context.Context, tx store.Tx, fleetID string) ([]*searchRecord, error) {
	q := store.Query{Kind: hosting.KindGameSession, Parent: fleetID, HasParent: true,
		Key: string(api.GameSessionStatusActive), HasKey: true, Order: store.OrderID}
	var out []*searchRecord
	err := store.Each(ctx, tx, q, func(rec store.Record) error {
		r, err := decodeSearchRecord(rec)
		out = append(out, r)
		return err
	})
	return out, err
}

// upsertLocked puts an ACTIVE game session into its fleet's index, if that
// fleet is indexed.
func (x *searchIndex) upsertLocked(gs *searchRecord) {
	id, fleet := api.ToString(gs.Session.GameSessionId), api.ToString(gs.Session.FleetId)
	tab, ok := x.fleets[fleet]
	if !ok {
		return
	}
	v := searchView(gs)
	tab.Upsert(&v, api.ToString(gs.Session.Location))
	x.where[id] = fleet
}

// removeLocked takes a game session out of the index.
func (x *searchIndex) removeLocked(id string) {
	fleet, ok := x.where[id]
	if !ok {
		return
	}
	delete(x.where, id)
	if tab := x.fleets[fleet]; tab != nil {
		tab.Remove(id)
	}
}

// searchView is what a search sees of a game session. Game properties whose
// key contains "." cannot be searched (as in GameLift) and are left out.
func searchView(r *searchRecord) search.Session {
	gs := &r.Session
	v := search.Session{
		ID:                 api.ToString(gs.GameSessionId),
		Name:               api.ToString(gs.Name),
		HasName:            gs.Name != nil,
		MaximumSessions:    int64(api.ToInt32(gs.MaximumPlayerSessionCount)),
		PlayerSessionCount: int64(api.ToInt32(gs.CurrentPlayerSessionCount)),
	}
	if gs.CreationTime != nil {
		v.CreationTimeMillis = gs.CreationTime.Time.UnixMilli()
	}
	for _, p := range gs.GameProperties {
		if k := api.ToString(p.Key); !strings.Contains(k, ".") {
			v.Properties = append(v.Properties, search.Property{Key: k, Value: api.ToString(p.Value)})
		}
	}
	return v
}

// searchStore is the Service's view of its store: every committed Update
// marks the game session records it wrote dirty in the search index.
type searchStore struct {
	store.Store
	idx *searchIndex
}

// Update implements store.Store.
func (s searchStore) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	var ids []string
	err := s.Store.Update(ctx, func(tx store.Tx) error {
		return fn(notingTx{Tx: tx, ids: &ids})
	})
	if err == nil {
		s.idx.markDirty(ids)
	}
	return err
}

// notingTx notes the IDs of game session records written through it. A
// function run more than once (a backend's retry) notes the union, which
// only costs a re-read.
type notingTx struct {
	store.Tx
	ids *[]string
}

func (t notingTx) note(kind store.Kind, id string) {
	if kind == hosting.KindGameSession {
		*t.ids = append(*t.ids, id)
	}
}

// Insert implements store.Tx.
func (t notingTx) Insert(ctx context.Context, rec store.Record) error {
	t.note(rec.Kind, rec.ID)
	return t.Tx.Insert(ctx, rec)
}

// InsertNew implements store.NewInserter (store.InsertNew on the wrapped
// transaction).
func (t notingTx) InsertNew(ctx context.Context, rec store.Record) error {
	t.note(rec.Kind, rec.ID)
	return store.InsertNew(ctx, t.Tx, rec)
}

// Replace implements store.Replacer (store.Replace on the wrapped
// transaction).
func (t notingTx) Replace(ctx context.Context, rec store.Record) error {
	t.note(rec.Kind, rec.ID)
	return store.Replace(ctx, t.Tx, rec)
}

// GetMany implements store.ManyGetter (store.GetMany on the wrapped
// transaction).
func (t notingTx) GetMany(ctx context.Context, kind store.Kind, ids []string) ([]store.Record, error) {
	return store.GetMany(ctx, t.Tx, kind, ids)
}

// GetRefs implements store.RefsGetter (store.GetRefs on the wrapped
// transaction).
func (t notingTx) GetRefs(ctx context.Context, refs []store.Ref) ([]store.Got, error) {
	return store.GetRefs(ctx, t.Tx, refs)
}

// Put implements store.Tx.
func (t notingTx) Put(ctx context.Context, rec store.Record) error {
	t.note(rec.Kind, rec.ID)
	return t.Tx.Put(ctx, rec)
}

// Delete implements store.Tx.
func (t notingTx) Delete(ctx context.Context, kind store.Kind, id string) error {
	t.note(kind, id)
	return t.Tx.Delete(ctx, kind, id)
}

// DeleteMany implements store.ManyDeleter (store.DeleteMany on the
// wrapped transaction).
func (t notingTx) DeleteMany(ctx context.Context, kind store.Kind, ids []string) error {
	for _, id := range ids {
		t.note(kind, id)
	}
	return store.DeleteMany(ctx, t.Tx, kind, ids)
}

// Read implements store.Reader (store.Read on the wrapped store).
func (s searchStore) Read(ctx context.Context, fn func(tx store.Tx) error) error {
	return store.Read(ctx, s.Store, fn)
}

// Claim implements store.Store, noting as Update does.
func (s searchStore) Claim(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.claimIn(ctx, store.Grant{}, fn)
}

// ClaimFenced implements store.FencedClaimer (store.ClaimIn on the wrapped
// store), noting as Update does.
func (s searchStore) ClaimFenced(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error {
	return s.claimIn(ctx, g, fn)
}

// claimIn is store.ClaimIn on the wrapped store, noting the game sessions
// written.
func (s searchStore) claimIn(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error {
	var ids []string
	err := store.ClaimIn(ctx, s.Store, g, func(tx store.Tx) error {
		return fn(notingTx{Tx: tx, ids: &ids})
	})
	if err == nil {
		s.idx.markDirty(ids)
	}
	return err
}

// Unheld implements store.UnheldReader: the wrapped transaction's unheld
// reads, its writes noted.
func (t notingTx) Unheld() store.Tx {
	return notingTx{Tx: store.Unheld(t.Tx), ids: t.ids}
}
