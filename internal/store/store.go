// Package store defines Hoist's storage boundary: a transactional record store
// that every backend implements (the embedded journal store, the default, the
// embedded SQLite store, and PostgreSQL for several Hoist replicas),
// and the conformance suite (storetest) that proves a backend behaves as the
// domain packages expect.
//
// The store knows nothing of HTTP, wire protocols or GameLift semantics. Domain
// packages keep no authoritative state in memory: everything that must survive a
// restart, or be seen by another Hoist replica, goes through a Store.
//
// # Records
//
// A Record is a JSON document (Data) under a Kind and an ID, with three indexed
// columns the domain chooses freely:
//
//   - Parent: the owning resource (a game server's group, an instance's fleet).
//   - Key: a secondary lookup value (for example a claim state), matched exactly.
//   - Rank: an integer used to order records that share Kind, Parent and Key.
//
// Queries select by Kind, optionally by Parent and Key, and order by ID, by
// creation order, or by Rank. That is enough for every list operation in the
// GameLift API and for the hot paths (claims, placement) to find a candidate
// without reading a whole collection.
//
// # Transactions
//
// Update runs a function in a serializable read-write transaction. The function
// may be run more than once (a backend may retry on a serialization conflict), so
// it must have no side effects other than through its Tx. When Update returns nil
// the write is durable: it survives kill -9 of the process.
//
// # Leases and fencing
//
// AcquireLease grants a named lease to one holder at a time, for a time
// measured by the store's own clock, in numbered terms; UpdateFenced commits
// only while the holder still has the lease in the term it was granted, so
// that a holder that paused past its lease cannot commit as the holder.
//
// # Change feed
//
// Writes to the kinds given to Watch are recorded in a change feed that
// Changes reads in commit order, so that a cache of those records (another
// replica's search index) catches up without missing a write.
package store

import (
	"context"
	"errors"
	"math"
	"time"
)

// Kind names a collection of records, for example "GameServerGroup".
type Kind string

// Errors returned by backends. Domain code checks them with errors.Is.
var (
	// ErrNotFound: no record of that Kind and ID.
	ErrNotFound = errors.New("store: record not found")
	// ErrExists: Insert found a record of that Kind and ID already.
	ErrExists = errors.New("store: record already exists")
	// ErrConflict: the transaction lost a race and may be retried by the caller.
	// Backends retry internally first; callers see it only after retries run out.
	ErrConflict = errors.New("store: transaction conflict")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
	// ErrInvalidCursor: Query.After is not a cursor this backend returned for
	// a query with the same Order (the API layer answers it as a bad NextToken),
	// or a change feed position is not one this backend returned.
	ErrInvalidCursor = errors.New("store: invalid cursor")
	// ErrLeaseLost: UpdateFenced found that its lease has expired or passed to
	// another term; nothing the function wrote was kept.
	ErrLeaseLost = errors.New("store: lease lost (expired, or held in a newer term)")
	// ErrChangesLost: the change feed no longer holds the changes after that
	// position (they were trimmed, or the position is from before the store
	// was last opened): the reader must read the records afresh.
	ErrChangesLost = errors.New("store: changes after that position are no longer kept")
)

// Record is one stored document.
type Record struct {
	Kind   Kind
	ID     string
	Parent string
	Key    string
	Rank   int64
	Data   []byte
	// Seq is assigned by the store on insert: a strictly increasing number per
	// store, so that OrderCreated lists records in the order they were inserted.
	// It is preserved by Put on an existing record; a record deleted and
	// inserted again gets a new one. Ignored on input. On PostgreSQL, Seqs
	// increase in the order inserts ran, not the order their transactions
	// commit: a reader may see a Seq before a lower one commits. A reader that
	// must not miss a write follows the change feed (Changes), not Seq.
	Seq int64
}

// Order says how List orders its results.
type Order int

const (
	// OrderID orders by ID ascending (byte-wise).
	OrderID Order = iota
	// OrderCreated orders by insertion order (Seq) ascending.
	OrderCreated
	// OrderRankAsc orders by Rank ascending, then ID ascending.
	OrderRankAsc
	// OrderRankDesc orders by Rank descending, then ID ascending.
	OrderRankDesc
)

// Query selects records of one Kind.
type Query struct {
	Kind Kind
	// Parent, when HasParent is set, selects records with exactly this Parent.
	Parent    string
	HasParent bool
	// Key, when HasKey is set, selects records with exactly this Key.
	Key    string
	HasKey bool
	// RankMax, when HasRankMax is set, selects records with Rank <= RankMax.
	RankMax    int64
	HasRankMax bool
	// Order of results.
	Order Order
	// Desc reverses OrderID and OrderCreated (ignored for the Rank orders,
	// which say their direction themselves).
	Desc bool
	// Limit caps the number of records returned; 0 means no cap.
	Limit int
	// After is an opaque cursor returned as Next by a previous List with the
	// same query: results continue strictly after it.
	After string
	// SkipHeld makes a List in a Claim pass over the records another
	// transaction holds, instead of waiting for it to end (see
	// Store.Claim). Elsewhere it changes nothing.
	SkipHeld bool
	// NoData makes List return the records without their Data (nil): the
	// ID, the indexed columns and Seq only, so that a caller can learn
	// which records exist, and which of them changed (a write that
	// deletes and inserts a record gives it a new Seq), without reading
	// or copying their documents. Count ignores it.
	NoData bool
}

// Tx is a transaction. A Tx must not be used after its function returns.
type Tx interface {
	// Get returns the record of that kind and ID, or ErrNotFound.
	Get(ctx context.Context, kind Kind, id string) (Record, error)
	// Insert adds a new record, or returns ErrExists.
	Insert(ctx context.Context, rec Record) error
	// Put inserts or replaces a record (keeping its Seq when it exists).
	Put(ctx context.Context, rec Record) error
	// Delete removes a record; deleting a missing record returns ErrNotFound.
	Delete(ctx context.Context, kind Kind, id string) error
	// List returns the records selected by q, in q's order, at most q.Limit of
	// them, and a cursor for the next page ("" when there is none).
	List(ctx context.Context, q Query) (recs []Record, next string, err error)
	// Count returns how many records q selects (Limit and After are ignored).
	Count(ctx context.Context, q Query) (int, error)
}

// Store is a transactional record store.
type Store interface {
	// View runs fn in a read-only transaction that sees a consistent snapshot.
	View(ctx context.Context, fn func(tx Tx) error) error
	// Update runs fn in a serializable read-write transaction. If fn returns an
	// error nothing it wrote is kept and Update returns that error. If Update
	// returns nil, everything fn wrote is durable.
	Update(ctx context.Context, fn func(tx Tx) error) error
	// Lease acquires or renews a named lease for holder until now+ttl, and
	// reports whether holder has it. Background loops use leases so that each
	// runs once across all Hoist replicas sharing a backend. The caller's
	// clock decides: AcquireLease is the same with the store's clock, and a
	// term. Both work on the same leases.
	Lease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)
	// AcquireLease takes the lease name for holder for ttl when it is free,
	// expired, or holder's already (then it renews it), measured by the
	// store's own clock (PostgreSQL: the database's; the embedded stores:
	// their process's), and returns the grant and true; false when another
	// holder has it. Renewing before expiry keeps the term; every other grant
	// starts a new, greater one. A ttl <= 0 gives holder's lease up (false).
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (Grant, bool, error)
	// UpdateFenced is Update for work done under a lease: it commits fn's
	// writes only if, when it commits, g.Holder still has lease g.Name in
	// g.Term and the lease has not expired by the store's clock. Otherwise
	// nothing fn wrote is kept and it returns ErrLeaseLost (after fn's own
	// error, which wins). A holder that paused past its lease therefore
	// cannot commit as the holder, whoever took the lease meanwhile.
	UpdateFenced(ctx context.Context, g Grant, fn func(tx Tx) error) error
	// Leases returns the leases whose names begin with prefix that are
	// held now by the store's clock (unexpired), in name order: who
	// holds which shard of a sharded loop, and which replicas are alive
	// (store.Shards).
	Leases(ctx context.Context, prefix string) ([]Grant, error)
	// Claim is Update for records that many callers take at once (a
	// claim, the next item of a queue): in fn's transaction every record
	// a Get or List returns is held by it until it ends. A Get or List
	// meeting a record another transaction holds waits for it, except a
	// List with Query.SkipHeld, which passes over it: concurrent Claims
	// that list the same candidates that way take different ones
	// instead of contending for the first (and a Claim that finds none
	// lists again without SkipHeld before it concludes there is none).
	// On the embedded stores, whose Updates run one at a time, it is
	// Update. On PostgreSQL it runs at READ COMMITTED with row locks
	// (SELECT ... FOR UPDATE [SKIP LOCKED]) rather than SERIALIZABLE, so
	// fn must decide only from records it read through tx (Count is not
	// held) and write only those, new ones, and records whose every
	// writer holds one of those first: then no write is lost and no two
	// Claims take one record. A List in fn returns Next whenever its page
	// is full, even when no record follows (no record past the page is
	// held).
	Claim(ctx context.Context, fn func(tx Tx) error) error
	// Watch adds kinds to those whose writes the change feed records. Call
	// it before the writes that should be recorded (at start, on every
	// replica alike); writes to other kinds cost the feed nothing.
	Watch(kinds ...Kind)
	// Changes returns, in commit order, at most limit (<= 0: 1000) changes
	// committed after position after to records of the watched kinds (of
	// kinds, when given), and the position to read from next. Each change
	// carries the record as it is when Changes reads it, or Deleted; a record
	// changed several times in one page appears once. With after == "" it
	// returns no change and a position of the feed's head: every change
	// committed after that call is read after it, and so may some
	// committed shortly before (PostgreSQL's head is the oldest running
	// transaction's): a change may come more than once, and a reader
	// applies the record it carries. A reader that takes the head, then
	// reads the records in a View, then follows the feed from the head
	// misses nothing (changes between the two come again). It fails
	// with ErrChangesLost when the feed no longer holds the changes after
	// after, and with ErrInvalidCursor when after is not a position.
	Changes(ctx context.Context, after string, limit int, kinds ...Kind) ([]Change, string, error)
	// Close releases the store. Pending Updates finish first.
	Close() error
	// Failed returns why the store can no longer be trusted to make writes
	// durable (a write or fsync of its files failed), or nil while it can.
	// Hoist's health check answers 503 with it.
	Failed() error
}

// Grant is a lease as AcquireLease granted it.
type Grant struct {
	Name, Holder string
	// Term numbers the holdings of the lease: it grows each time the lease
	// is granted other than by a renewal in time (to another holder, or to
	// the same one after it expired), and stays while the holder renews.
	Term int64
	// Expires is when the lease ends unless renewed, by the store's clock.
	Expires time.Time
}

// Change is one entry of the change feed: a record of a watched kind that
// a transaction wrote.
type Change struct {
	// Record is the record as it is when Changes reads it (Kind and ID
	// only, when Deleted).
	Record Record
	// Deleted: the record no longer exists.
	Deleted bool
}

// DefaultChangesLimit is how many changes Changes returns when its limit
// is not positive.
const DefaultChangesLimit = 1000

// LeaseTimes returns now and now+ttl in Unix nanoseconds, saturated to the
// int64 range: how backends store a lease's expiry and compare it.
func LeaseTimes(now time.Time, ttl time.Duration) (at, expires int64) {
	const maxSec = math.MaxInt64/int64(time.Second) - 1
	switch s := now.Unix(); {
	case s > maxSec:
		at = math.MaxInt64
	case s < -maxSec:
		at = math.MinInt64
	default:
		at = now.UnixNano()
	}
	expires = at + int64(ttl)
	switch {
	case ttl > 0 && expires < at:
		expires = math.MaxInt64
	case ttl < 0 && expires > at:
		expires = math.MinInt64
	}
	return at, expires
}
