package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hoistgg/hoist/internal/store"
)

// dbNow is the database's clock in Unix nanoseconds (microsecond
// resolution), shifted by the argument named shift (tests). It is the
// start of the statement: the same everywhere in one statement.
func dbNow(shift string) string {
	return `((extract(epoch FROM statement_timestamp()) * 1000000)::bigint * 1000 + ` + shift + `)`
}

// sqlLease grants a lease (see store.Store.Lease): the row is taken over
// when it is free, expired at now, or the holder's own; a renewal before
// expiry keeps the term, any other grant starts the next. Arguments:
// name, holder, expires, now.
const sqlLease = `INSERT INTO hoist_leases AS l (name, holder, term, expires) VALUES ($1, $2, 1, $3)
	ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires = excluded.expires,
	term = CASE WHEN l.holder = excluded.holder AND l.expires > $4 THEN l.term ELSE l.term + 1 END
	WHERE l.holder = excluded.holder OR l.expires <= $4
	RETURNING term, expires`

// sqlAcquire is sqlLease with now from the database's clock. Arguments:
// name, holder, ttl (nanoseconds), clock shift.
var sqlAcquire = `INSERT INTO hoist_leases AS l (name, holder, term, expires) VALUES ($1, $2, 1, ` + dbNow("$4") + ` + $3)
	ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires = excluded.expires,
	term = CASE WHEN l.holder = excluded.holder AND l.expires > ` + dbNow("$4") + ` THEN l.term ELSE l.term + 1 END
	WHERE l.holder = excluded.holder OR l.expires <= ` + dbNow("$4") + `
	RETURNING term, expires`

// sqlFence is UpdateFenced's check: is the lease still held in the term,
// unexpired? It takes a FOR SHARE lock on the term's row in
// hoist_lease_terms, which only a new term deletes (the trigger of
// migration 2), so that a replica taking the lease over waits for this
// transaction; the lease row itself is read without a lock. A lock on the
// lease row would fail a SERIALIZABLE transaction whenever the holder's own
// renewal updated that row since the transaction began, and run it again
// alone. Read in that transaction's snapshot, the lease row's expiry may
// be an older renewal's; the check takes the later of it and $5, the
// expiry of the latest renewal of this grant that this Store committed
// (0: none known). Both are expiries the database granted, never later
// than the row's current one. Arguments: name, holder, term, clock shift,
// renewed expiry.
var sqlFence = `SELECT 1 FROM hoist_lease_terms t JOIN hoist_leases l ON l.name = t.name
	WHERE t.name = $1 AND t.term = $3 AND l.holder = $2 AND l.term = $3
	AND greatest(l.expires, $5::bigint) > ` + dbNow("$4") + ` FOR SHARE OF t`

// sqlLeases lists the leases held now whose names begin with a prefix
// (the table holds a row per lease name ever used: a few hundred).
// Arguments: prefix, clock shift.
var sqlLeases = `SELECT name, holder, term, expires FROM hoist_leases
	WHERE substring(name FROM 1 FOR length($1::bytea)) = $1::bytea AND expires > ` + dbNow("$2") + ` ORDER BY name`

// maxTTL bounds a lease's ttl so that now+ttl stays within int64.
const maxTTL = 100 * 365 * 24 * time.Hour

// Lease takes or renews the lease name for holder until now+ttl, by the
// caller's clock. It is a single statement, committed on its own.
func (s *Store) Lease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	at, expires := store.LeaseTimes(now, ttl)
	term, _, err := s.lease(ctx, sqlLease, []byte(name), []byte(holder), expires, at)
	return term > 0 && ttl > 0, err
}

// AcquireLease is Lease measured by the database's clock, and returns the
// grant with its term.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Grant, bool, error) {
	ttl = max(min(ttl, maxTTL), -maxTTL)
	term, expires, err := s.lease(ctx, sqlAcquire, []byte(name), []byte(holder), int64(ttl), s.shift())
	if err != nil || term == 0 || ttl <= 0 {
		return store.Grant{}, false, err
	}
	g := store.Grant{Name: name, Holder: holder, Term: term, Expires: time.Unix(0, expires)}
	s.noteRenewal(g)
	return g, true, nil
}

// noteRenewal records g as the latest grant of its lease, unless a later
// renewal of the same term is recorded already (renewals that finish out
// of order).
func (s *Store) noteRenewal(g store.Grant) {
	for {
		old, loaded := s.renewed.LoadOrStore(g.Name, g)
		if !loaded {
			return
		}
		o := old.(store.Grant)
		if o.Holder == g.Holder && o.Term == g.Term && !o.Expires.Before(g.Expires) {
			return
		}
		if s.renewed.CompareAndSwap(g.Name, old, g) {
			return
		}
	}
}

// renewedExpiry is the expiry of the latest renewal of g this Store
// committed, in Unix nanoseconds, or 0.
func (s *Store) renewedExpiry(g *store.Grant) int64 {
	v, ok := s.renewed.Load(g.Name)
	if !ok {
		return 0
	}
	r := v.(store.Grant)
	if r.Holder != g.Holder || r.Term != g.Term {
		return 0
	}
	return r.Expires.UnixNano()
}

// lease runs a lease statement, retrying a serialization failure (a
// database whose default isolation is SERIALIZABLE), and returns the term
// granted (0: none) and the expiry.
func (s *Store) lease(ctx context.Context, sql string, args ...any) (term, expires int64, err error) {
	if err := s.gate.Begin(ctx); err != nil {
		return 0, 0, err
	}
	defer s.gate.Leave()
	for attempt := range s.opts.MaxAttempts {
		if attempt > 0 {
			if err := pause(ctx, attempt); err != nil {
				return 0, 0, err
			}
		}
		err = s.pool.QueryRow(ctx, sql, args...).Scan(&term, &expires)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return 0, 0, nil
		case err == nil:
			return term, expires, nil
		case !retryable(err):
			return 0, 0, connErr(ctx, fmt.Sprintf("lease %s", args[0]), err)
		}
	}
	return 0, 0, fmt.Errorf("%w: lease: %v", store.ErrConflict, err)
}

// UpdateFenced is Update whose transaction, after fn returned nil, checks
// as its last statement that g still holds (sqlFence), and otherwise rolls
// back with store.ErrLeaseLost.
func (s *Store) UpdateFenced(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error {
	return s.update(ctx, &g, false, fn)
}

// checkFence runs sqlFence in the transaction.
func (tx *writeTx) checkFence(ctx context.Context, g *store.Grant) error {
	if g.Term <= 0 || g.Term == math.MaxInt64 {
		return store.ErrLeaseLost
	}
	n, err := tx.exec(ctx, "lease "+g.Name, sqlFence, []byte(g.Name), []byte(g.Holder), g.Term, tx.s.shift(), tx.s.renewedExpiry(g))
	if err != nil {
		return err
	}
	if n != 1 {
		return store.ErrLeaseLost
	}
	return nil
}

// Leases returns the leases whose names begin with prefix, unexpired by
// the database's clock, in name order.
func (s *Store) Leases(ctx context.Context, prefix string) ([]store.Grant, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return nil, err
	}
	defer s.gate.Leave()
	rows, err := s.pool.Query(ctx, sqlLeases, []byte(prefix), s.shift())
	if err != nil {
		return nil, connErr(ctx, "leases", err)
	}
	defer rows.Close()
	var out []store.Grant
	for rows.Next() {
		var name, holder []byte
		var g store.Grant
		var expires int64
		if err := rows.Scan(&name, &holder, &g.Term, &expires); err != nil {
			return nil, connErr(ctx, "leases", err)
		}
		g.Name, g.Holder, g.Expires = string(name), string(holder), time.Unix(0, expires)
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, connErr(ctx, "leases", err)
	}
	return out, nil
}

// ClaimFenced is Claim whose transaction checks its fence as UpdateFenced's
// does (store.ClaimIn).
func (s *Store) ClaimFenced(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error {
	return s.update(ctx, &g, true, fn)
}
