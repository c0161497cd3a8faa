package store

import "context"

// FencedClaimer is implemented by the stores whose Claim differs from
// Update (PostgreSQL): ClaimFenced is Claim whose commit is fenced by g
// as UpdateFenced's is. ClaimIn uses it.
type FencedClaimer interface {
	ClaimFenced(ctx context.Context, g Grant, fn func(tx Tx) error) error
}

// ClaimIn runs fn in a Claim of st fenced by g (a plain Claim when g has
// no term: work not done under a lease), as UpdateIn does for Updates.
// On a store without FencedClaimer (the embedded stores, whose Claim is
// Update) it is UpdateFenced.
func ClaimIn(ctx context.Context, st Store, g Grant, fn func(tx Tx) error) error {
	if g.Term == 0 {
		return st.Claim(ctx, fn)
	}
	if fc, ok := st.(FencedClaimer); ok {
		return fc.ClaimFenced(ctx, g, fn)
	}
	return st.UpdateFenced(ctx, g, fn)
}

// UnheldReader is implemented by the Tx of a Claim whose reads hold what
// they return (PostgreSQL: SELECT ... FOR UPDATE). Unheld returns the
// same transaction reading without holding: its Gets and Lists lock
// nothing, its writes are the transaction's.
type UnheldReader interface {
	Unheld() Tx
}

// Unheld returns tx reading without holding what it reads (tx itself
// where reads hold nothing: an Update's, a View's, the embedded stores').
// A Claim reads so the records that many Claims read and none of them
// writes (a fleet, its compute): held, they would make those Claims run
// one at a time. What fn decides from such a read is not protected by
// the Claim: the record may change before fn commits (store.Store.Claim).
func Unheld(tx Tx) Tx {
	if u, ok := tx.(UnheldReader); ok {
		return u.Unheld()
	}
	return tx
}

// Reader is implemented by a store whose View costs round trips of its
// own to begin and end its snapshot (PostgreSQL: BEGIN goes with the
// first statement, ROLLBACK is one more): Read runs fn without them.
type Reader interface {
	Read(ctx context.Context, fn func(tx Tx) error) error
}

// Read runs fn in a read-only transaction whose reads need not share a
// snapshot: each sees what was committed when it ran, which may be later
// than what the read before it saw. For a function that reads one record
// or one list (a Describe, a token's check), or whose reads need not
// agree: on a Reader each statement runs on its own, so that one read
// costs one round trip where a View costs two. Elsewhere it is st.View.
func Read(ctx context.Context, st Store, fn func(tx Tx) error) error {
	if r, ok := st.(Reader); ok {
		return r.Read(ctx, fn)
	}
	return st.View(ctx, fn)
}
