// Package postgres is the store.Store that several Hoist replicas share: a
// PostgreSQL database (13 or later) reached through a pgx connection pool,
// with hand-written SQL.
//
// # Schema
//
// Every table is in the first schema of the connection's search_path and
// named hoist_*. hoist_records(kind, id, parent, key, rank, seq, data) holds
// the records: id, parent and key are bytea, so that any Go string is
// stored as it is and compared byte-wise, as the other stores compare them;
// seq comes from the sequence hoist_records_seq on insert only (Put's
// upsert leaves it). The indexes are the SQLite store's, plus (kind, key,
// seq) for a Key's records in creation order. hoist_leases(name, holder,
// term, expires) holds the leases, hoist_lease_terms their terms, hoist_changes the change feed,
// hoist_meta the feed's trim floor, hoist_serial nothing (see Retries). The
// schema is versioned: Open applies the migrations in code that the
// database lacks, in one transaction, under a transaction-scoped advisory
// lock (keyed by the schema), so that replicas starting at once migrate
// once; a schema from a newer Hoist is refused.
//
// # Isolation and retries
//
// Update runs its function in a SERIALIZABLE transaction and commits; a
// serialization failure (SQLSTATE 40001) or a deadlock (40P01), from any
// statement or from COMMIT, rolls it back and runs the function again
// after a jittered, growing pause, as does the end of a session that sat
// idle in its transaction too long (25P03: rolled back). Every Update takes
// the empty table hoist_serial's lock in ROW SHARE mode, a run after a
// conflict in EXCLUSIVE mode: it waits for the Updates already running,
// keeps new ones waiting behind it, and runs alone; LOCK TABLE takes no
// snapshot, so the transaction's snapshot is taken once the lock is
// granted, and it cannot lose another race to an Update. Update returns
// store.ErrConflict only after Options.MaxAttempts attempts. The BEGIN
// (and LOCK) of a transaction go in one round trip with its first
// statement. View runs in a REPEATABLE READ READ ONLY transaction: one
// snapshot, no locks, never blocking an Update. COMMIT runs without the
// caller's context, so that an Update never reports failure for a write
// that committed; only a connection lost during COMMIT leaves the outcome
// unknown (the error says so).
//
// # Seq
//
// Seq values come from a sequence, so they are unique and increase in the
// order inserts ran, but transactions commit in another order: a reader
// may see a record with Seq 11 before the one with Seq 10 commits. Every
// use of Seq that compares it for equality (a record's version: a fresh
// Seq means it was deleted and inserted again) or orders a listing holds;
// a reader that remembers the highest Seq it saw and asks only for
// greater ones can miss a record committed later. Readers that must not
// miss a write follow the change feed instead.
//
// # Leases
//
// A lease is a row taken over by a conditional upsert (free, expired, or
// the holder's own) in one statement. AcquireLease measures expiry by the
// database's clock (statement_timestamp()), never a replica's. Its term
// grows on every grant but a renewal in time; a trigger keeps a row per
// (name, term) in hoist_lease_terms, deleting the older terms' rows when a
// new term is granted. UpdateFenced checks, as the last statement before
// COMMIT, that the grant's lease row still has its holder and term and has
// not expired, and takes a FOR SHARE row lock on the term's row: a replica
// taking the lease over waits for that COMMIT (its trigger's DELETE), so no
// fenced write commits after the lease passed on, and a takeover committed
// since the transaction's snapshot fails it. The lease row, which every
// renewal rewrites, is read without a lock, so the holder renewing its
// lease never fails its own fenced transaction; the expiry checked is the
// later of the row's in the transaction's snapshot and the latest renewal
// of the grant this Store committed, so a transaction outliving its
// snapshot's expiry while its holder renews still commits. A replica paused inside
// its transaction holds that lock only until PostgreSQL ends its session
// (idle_in_transaction_session_timeout, 30s unless the connection string
// sets it).
//
// # Change feed
//
// A write to a watched kind also inserts, in the same statement, a row
// (xid, ord, kind, id) into hoist_changes, xid being the writing
// transaction's ID and ord a sequence. Transaction IDs are not given in
// commit order either, but every transaction whose ID is below the oldest
// one still running (pg_snapshot_xmin of the current snapshot) has ended:
// Changes reads the rows below that horizon, in (xid, ord) order, after
// the reader's position, so no row can appear behind a position once it
// was read. Each row carries the record as it is now (a LEFT JOIN). The
// horizon stops at the oldest write transaction running in the whole
// cluster, so the feed is as late as the longest such transaction. A
// background goroutine deletes rows older than Options.ChangeRetention
// and raises hoist_meta's floor; a position below it fails with
// store.ErrChangesLost.
package postgres
