package matchmaking

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// KindTicketBytes is the record that counts the bytes of a
// configuration's active tickets: ID the configuration's name, Data a
// JSON number.
const KindTicketBytes store.Kind = "MatchmakingTicketBytes"

// MaxTicketBytes is the most a configuration's active tickets (QUEUED,
// SEARCHING, REQUIRES_ACCEPTANCE, PLACING) may hold together, counted as
// the size of each ticket's record when it started: 64 MiB. The store
// keeps every active ticket, and the matchmaker keeps the SEARCHING ones
// decoded, so this bounds what one configuration's pool costs in memory:
// 52 tickets of ten players with every field at its limit (1.3 MB each),
// about 260,000 of one player with a number attribute and two latencies
// (250 B each).
const MaxTicketBytes = 64 << 20

// The count is spread over records so that tickets started at once do
// not all write one record (on PostgreSQL, serializable transactions
// writing one record conflict, and all but one run again): a ticket
// started adds its size to one of ticketByteShards records (ID
// "<configuration>/<n>", Parent the configuration, Key "added"), the
// next in turn, so that this replica's StartMatchmaking calls at once
// write different ones; a ticket that ends adds its size to the
// configuration's "ended" record (ID "<configuration>/ended", Key
// "ended"), which only the transactions that end tickets write. The
// record an older Hoist kept (ID the configuration's name, the count
// itself) counts as added. The count is what was added less what ended.
// The "added" records are written with the configuration (createCounts).
const (
	ticketByteShards = 64
	bytesAdded       = "added"
	bytesEnded       = "ended"
)

// nextShard is the shard the next ticket started on this replica adds
// to (taken modulo ticketByteShards).
var nextShard atomic.Uint32

func init() { nextShard.Store(rand.Uint32()) } // replicas start apart

// ticketBytes returns the bytes the configuration's active tickets hold
// (0 when nothing was counted yet). It reads every record of the count:
// StartMatchmaking reads it in a View before its transaction.
func ticketBytes(ctx context.Context, tx store.Tx, config string) (int64, error) {
	n, err := countValue(ctx, tx, config)
	if err != nil {
		return 0, err
	}
	err = store.Each(ctx, tx, store.Query{Kind: KindTicketBytes, Parent: config, HasParent: true}, func(r store.Record) error {
		v, err := strconv.ParseInt(string(r.Data), 10, 64)
		if r.Key == bytesEnded {
			v = -v
		}
		n += v
		return err
	})
	return max(n, 0), err
}

// countValue reads one record of the count (0 when it does not exist).
func countValue(ctx context.Context, tx store.Tx, id string) (int64, error) {
	rec, err := tx.Get(ctx, KindTicketBytes, id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(rec.Data), 10, 64)
}

// addTicketBytes adds delta to the bytes the configuration's active
// tickets hold: a ticket started (delta > 0) to the next added record, a
// ticket ended (delta < 0) to the ended record.
func addTicketBytes(ctx context.Context, tx store.Tx, config string, delta int64) error {
	id, key := config+"/"+bytesEnded, bytesEnded
	if delta > 0 {
		id, key = nextCountID(config), bytesAdded
	}
	n, err := countValue(ctx, tx, id)
	if err != nil {
		return err
	}
	return putCount(ctx, tx, &heldCount{id: id, key: key, n: n}, config, max(delta, -delta))
}

// createCounts writes the records of the configuration's count that do not
// exist yet, each at 0: CreateMatchmakingConfiguration writes all of them,
// so that StartMatchmaking on PostgreSQL always finds the record it adds
// to and runs as a Claim. A start that does not find it (a configuration
// an earlier Hoist created) runs in an Update, which creates them all.
// Without them, the first ticketByteShards starts all ran as
// SERIALIZABLE Updates inserting neighbouring records, which conflict:
// every one run again ran alone (the store's hoist_serial lock), holding
// up every other start.
func createCounts(ctx context.Context, tx store.Tx, config string) error {
	recs, _, err := tx.List(ctx, store.Query{Kind: KindTicketBytes, Parent: config, HasParent: true, Key: bytesAdded, HasKey: true,
		NoData: true, Limit: ticketByteShards + 1})
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(recs))
	for _, r := range recs {
		have[r.ID] = true
	}
	for i := range ticketByteShards {
		id := config + "/" + strconv.Itoa(i)
		if have[id] {
			continue
		}
		if err := putCount(ctx, tx, &heldCount{id: id, key: bytesAdded}, config, 0); err != nil {
			return err
		}
	}
	return nil
}

// nextCountID is the ID of the record of the configuration's count that
// the next ticket started on this replica adds to.
func nextCountID(config string) string {
	return config + "/" + strconv.Itoa(int(nextShard.Add(1)%ticketByteShards))
}

// heldCount is a record of a configuration's count as read: its ID, Key
// and value.
type heldCount struct {
	id, key string
	n       int64
}

// putCount writes c with delta added.
func putCount(ctx context.Context, tx store.Tx, c *heldCount, config string, delta int64) error {
	return tx.Put(ctx, store.Record{Kind: KindTicketBytes, ID: c.id, Parent: config, Key: c.key, Data: strconv.AppendInt(nil, c.n+delta, 10)})
}

// errRunInUpdate is the answer of StartMatchmaking's Claim when a Claim
// cannot make it safe: the record of the count it would hold does not
// exist (yet, or the configuration is gone), or the configuration's rule
// set was not found. startIn runs it again in an Update.
var errRunInUpdate = errors.New("matchmaking: this start runs in an Update, not a Claim")

// heldFrom is the heldCount of rec, a record of a configuration's count
// that a ticket started adds to, read held.
func heldFrom(rec store.Record) (*heldCount, error) {
	n, err := strconv.ParseInt(string(rec.Data), 10, 64)
	if err != nil {
		return nil, err
	}
	return &heldCount{id: rec.ID, key: bytesAdded, n: n}, nil
}

// startIn runs a start's transaction function: on a shared store
// (PostgreSQL) first in a Claim (claimed true: READ COMMITTED, so that
// starts at once with neighbouring ticket IDs do not conflict on the
// index pages SERIALIZABLE would lock for their inserts' reads), then,
// if it answers errRunInUpdate, in an Update; elsewhere in an Update.
func (s *Service) startIn(ctx context.Context, fn func(tx store.Tx, claimed bool) error) error {
	if s.cfg.Shared {
		err := s.cfg.Store.Claim(ctx, func(tx store.Tx) error { return fn(tx, true) })
		if !errors.Is(err, errRunInUpdate) {
			return err
		}
	}
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error { return fn(tx, false) })
}

// deleteTicketBytes removes the configuration's count (it is deleted).
func deleteTicketBytes(ctx context.Context, tx store.Tx, config string) error {
	if err := tx.Delete(ctx, KindTicketBytes, config); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	recs, _, err := tx.List(ctx, store.Query{Kind: KindTicketBytes, Parent: config, HasParent: true, NoData: true})
	for _, r := range recs {
		if err == nil {
			err = tx.Delete(ctx, KindTicketBytes, r.ID)
		}
	}
	return err
}

// checkTicketBytes refuses a ticket that takes the configuration's active
// tickets past the bound (s.maxTicketBytes, MaxTicketBytes unless a test
// lowers it). before is the count without t (countsIn): read in the
// transaction that inserts t, or on a shared store in a View just before
// it (countsBefore), when tickets started at the same moment on other
// connections may each pass it. It runs after putTicket counted t, so
// that the refusal undoes both.
func (s *Service) checkTicketBytes(t *ticketRecord, before int64) error {
	n := before + t.Size
	if n <= s.maxTicketBytes {
		return nil
	}
	return api.NewInvalidRequestException("Players: matchmaking configuration %s's active tickets would hold %d bytes with this ticket of %d bytes; "+
		"at most %d bytes (%d MiB) are allowed: retry once some of its tickets have ended", t.config(), n, t.Size, s.maxTicketBytes, s.maxTicketBytes>>20)
}

// ticketCounts is what starting a ticket reads of its configuration:
// the bytes its active tickets hold and its estimated wait (estimate).
type ticketCounts struct{ bytes, est int64 }

// countsBefore returns a configuration's ticketCounts for a start on a
// shared store (Config.Shared: PostgreSQL), read in a View before the
// transaction that starts the ticket, so that the transaction reads
// neither (records the loop and the other starts write: serializable
// conflicts). A read serves this replica's starts for countsFresh
// (recentCounts), with the bytes of the tickets they started since added:
// the bound holds to within what the calls in flight at once add and what
// the other replicas started in that time. Elsewhere it returns nil, and
// the transaction reads them itself (countsIn): one replica's bound is
// exact and costs no second transaction.
func (s *Service) countsBefore(ctx context.Context, config string, now time.Time) (*ticketCounts, error) {
	if !s.cfg.Shared {
		return nil, nil
	}
	return s.counts.get(config, now, func() (c ticketCounts, err error) {
		err = s.cfg.Store.View(ctx, func(tx store.Tx) error {
			c, err = readCounts(ctx, tx, config, now)
			return err
		})
		return c, err
	})
}

// countsFresh is how long a read of a configuration's counts serves the
// starts of a replica on a shared store (recentCounts): at 600 starts a
// second, a read for about 60 of them instead of one each.
const countsFresh = 100 * time.Millisecond

// recentCounts keeps, by configuration, the latest read of its
// ticketCounts (countsBefore) and the bytes of the tickets this replica
// started since.
type recentCounts struct {
	mu sync.Mutex
	m  map[string]*countsRead
}

// countsRead is one configuration's read; mu is held while it is read
// again, so that starts at once wait for one read rather than each
// making its own. added counts the bytes of the tickets started here
// (never waiting for a read); the read serves c plus what was added since
// addedAt, its value when the read began (a ticket that committed while
// the read ran may count twice: the bound errs the safe way).
type countsRead struct {
	mu      sync.Mutex
	at      time.Time // the clock when read (zero: never)
	c       ticketCounts
	addedAt int64
	added   atomic.Int64
}

// entry returns config's countsRead, made on first use. Making one
// drops the others that are past fresh (configurations deleted, or no
// longer started here), so the map holds the configurations started in
// the last moment.
func (r *recentCounts) entry(config string, now time.Time) *countsRead {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.m[config]; ok {
		return e
	}
	if r.m == nil {
		r.m = map[string]*countsRead{}
	}
	for name, e := range r.m {
		if e.mu.TryLock() {
			if now.Sub(e.at) >= countsFresh {
				delete(r.m, name)
			}
			e.mu.Unlock()
		}
	}
	e := &countsRead{}
	r.m[config] = e
	return e
}

// get returns config's counts, from a read less than countsFresh old (by
// now) with the bytes started here since added, else from read.
func (r *recentCounts) get(config string, now time.Time, read func() (ticketCounts, error)) (*ticketCounts, error) {
	e := r.entry(config, now)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.at.IsZero() || now.Before(e.at) || now.Sub(e.at) >= countsFresh {
		addedAt := e.added.Load()
		c, err := read()
		if err != nil {
			return nil, err
		}
		e.at, e.c, e.addedAt = now, c, addedAt
	}
	c := e.c
	c.bytes += e.added.Load() - e.addedAt
	return &c, nil
}

// started adds the bytes of a ticket started here to config's read, if
// any: the starts it serves count it.
func (r *recentCounts) started(config string, size int64) {
	r.mu.Lock()
	e := r.m[config]
	r.mu.Unlock()
	if e != nil {
		e.added.Add(size)
	}
}

// countsIn returns pre (read by countsBefore), or reads the counts in tx
// when pre is nil.
func countsIn(ctx context.Context, tx store.Tx, config string, now time.Time, pre *ticketCounts) (ticketCounts, error) {
	if pre != nil {
		return *pre, nil
	}
	return readCounts(ctx, tx, config, now)
}

// readCounts reads a configuration's ticketCounts in tx.
func readCounts(ctx context.Context, tx store.Tx, config string, now time.Time) (c ticketCounts, err error) {
	if c.bytes, err = ticketBytes(ctx, tx, config); err != nil {
		return c, err
	}
	c.est, err = estimate(ctx, tx, config, now)
	return c, err
}

// sizeTicket counts a ticket being inserted: its size is that of its
// record, data as putTicket encoded it (without the size) and ID, and is
// added to the configuration's count; the returned data carries the size
// as the field "size" (ticketRecord.Size), so that the ticket's end takes
// away what its start added.
func sizeTicket(ctx context.Context, tx store.Tx, t *ticketRecord, data []byte) ([]byte, error) {
	t.Size = int64(len(data) + len(t.id()))
	var err error
	if t.count != nil { // StartMatchmaking's, read (held by its Claim)
		err = putCount(ctx, tx, t.count, t.config(), t.Size)
	} else {
		err = addTicketBytes(ctx, tx, t.config(), t.Size)
	}
	if err != nil {
		return nil, err
	}
	// data is a JSON object without "size" (Size was 0, omitted): the
	// field goes before its closing brace.
	data = append(data[:len(data)-1], `,"size":`...)
	data = strconv.AppendInt(data, t.Size, 10)
	return append(data, '}'), nil
}
