// Package store defines Hoist's storage boundary: a transactional record store
// that every backend implements (the embedded journal store, the default, and the
// embedded SQLite store now; PostgreSQL later),
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
	// a query with the same Order (the API layer answers it as a bad NextToken).
	ErrInvalidCursor = errors.New("store: invalid cursor")
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
	// It is preserved by Put on an existing record. Ignored on input.
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
	// runs once across all Hoist replicas sharing a backend.
	Lease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)
	// Close releases the store. Pending Updates finish first.
	Close() error
	// Failed returns why the store can no longer be trusted to make writes
	// durable (a write or fsync of its files failed), or nil while it can.
	// Hoist's health check answers 503 with it.
	Failed() error
}

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
