package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoistgg/hoist/internal/store"
)

// serialAfter is the number of attempts after which an Update's
// transaction takes the hoist_serial lock EXCLUSIVE (see beginUpdate).
const serialAfter = 1

// Backoff between attempts: a random pause below min(backoffCap,
// backoffBase << attempt) ("full jitter").
const (
	backoffBase = 500 * time.Microsecond
	backoffCap  = 50 * time.Millisecond
)

var (
	errTxDone   = errors.New("postgres: transaction used after its function returned")
	errReadOnly = errors.New("postgres: write in a read-only transaction (View)")
)

// Update runs fn in a SERIALIZABLE transaction, running it again when the
// transaction loses a serialization race (see the package documentation).
func (s *Store) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.update(ctx, nil, false, fn)
}

// Claim runs fn in a READ COMMITTED transaction whose reads lock the rows
// they return (Get: FOR UPDATE; List: FOR UPDATE SKIP LOCKED), running it
// again after a deadlock (see store.Store.Claim).
func (s *Store) Claim(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.update(ctx, nil, true, fn)
}

// update runs fn in attempts until one commits, fails for another reason
// than a serialization failure or a deadlock, or MaxAttempts ran. A
// non-nil fence is checked before COMMIT (UpdateFenced); claim runs the
// attempts as Claim transactions.
func (s *Store) update(ctx context.Context, fence *store.Grant, claim bool, fn func(tx store.Tx) error) error {
	if err := s.gate.Begin(ctx); err != nil {
		return err
	}
	defer s.gate.Leave()
	var last error
	for attempt := range s.opts.MaxAttempts {
		if attempt > 0 {
			s.stats.retries.Add(1)
			if err := pause(ctx, attempt); err != nil {
				return err
			}
		}
		err, again := s.attempt(ctx, fence, fn, claim, attempt >= serialAfter)
		if !again {
			if err == nil {
				s.stats.commits.Add(1)
				if claim {
					s.stats.claims.Add(1)
				}
			}
			return err
		}
		last = err
	}
	s.stats.conflicts.Add(1)
	return fmt.Errorf("%w: %d attempts lost a serialization race, the last with: %v", store.ErrConflict, s.opts.MaxAttempts, last)
}

// pause waits before attempt, or until ctx ends.
func pause(ctx context.Context, attempt int) error {
	d := min(backoffCap, backoffBase<<min(attempt, 16))
	t := time.NewTimer(rand.N(d) + time.Microsecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// attempt runs fn once in a transaction. again reports that it lost a
// serialization race or a deadlock and may be run again; then nothing it
// wrote was kept.
func (s *Store) attempt(ctx context.Context, fence *store.Grant, fn func(tx store.Tx) error, claim, serial bool) (err error, again bool) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return connErr(ctx, "connect", err), false
	}
	tx := &writeTx{s: s, c: &lazyTx{c: pc.Conn(), begin: beginStatements(claim, serial), trips: &s.stats.trips}, claim: claim}
	committed := false
	defer func() {
		tx.done.Store(true)
		if !committed {
			tx.rollback() // also when fn panicked or ended its goroutine
		}
		releaseAfterRollback(pc, &s.stats.trips)
	}()
	if err := ctx.Err(); err != nil {
		return err, false
	}
	if err := fn(tx); err != nil {
		return err, tx.conflict
	}
	if tx.err != nil { // fn went on after a failed statement
		return tx.err, tx.conflict
	}
	if fence != nil {
		if err := tx.checkFence(ctx, fence); err != nil {
			return err, tx.conflict
		}
	}
	if s.opts.beforeCommit != nil {
		s.opts.beforeCommit()
	}
	if err := tx.commit(ctx); err != nil {
		return err, tx.conflict
	}
	committed = true
	return nil, false
}

// The statements that begin transactions, sent with their first statement.
// Every Update takes the lock on hoist_serial in ROW SHARE mode, which
// only EXCLUSIVE (and ACCESS EXCLUSIVE) conflicts with; an Update run
// again takes it EXCLUSIVE, and so runs alone. PostgreSQL queues a new
// ROW SHARE request behind a waiting EXCLUSIVE one, so the serial Update
// waits only for the Updates already running. LOCK takes no snapshot:
// the first statement after it does, once the lock is granted.
// A Claim takes the same lock: an Update run alone does not meet one.
var (
	beginUpdate      = []string{"BEGIN ISOLATION LEVEL SERIALIZABLE", "LOCK TABLE hoist_serial IN ROW SHARE MODE"}
	beginSerial      = []string{"BEGIN ISOLATION LEVEL SERIALIZABLE", "LOCK TABLE hoist_serial IN EXCLUSIVE MODE"}
	beginClaim       = []string{"BEGIN ISOLATION LEVEL READ COMMITTED", "LOCK TABLE hoist_serial IN ROW SHARE MODE"}
	beginClaimSerial = []string{"BEGIN ISOLATION LEVEL READ COMMITTED", "LOCK TABLE hoist_serial IN EXCLUSIVE MODE"}
	beginView        = []string{"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"}
)

// beginStatements returns the statements that begin an Update's (or a
// Claim's) transaction, run alone when serial.
func beginStatements(claim, serial bool) []string {
	switch {
	case claim && serial:
		return beginClaimSerial
	case claim:
		return beginClaim
	case serial:
		return beginSerial
	}
	return beginUpdate
}

// View runs fn in a REPEATABLE READ READ ONLY transaction: one snapshot
// for the whole function.
func (s *Store) View(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := s.gate.Begin(ctx); err != nil {
		return err
	}
	defer s.gate.Leave()
	return s.view(ctx, func(tx *readTx) error { return fn(tx) })
}

// Read implements store.Reader: fn's statements run on their own, each
// in the implicit transaction of its round trip (several sent at once,
// as GetRefs does, share one), without BEGIN or ROLLBACK.
func (s *Store) Read(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := s.gate.Begin(ctx); err != nil {
		return err
	}
	defer s.gate.Leave()
	return s.read(ctx, nil, func(tx *readTx) error { return fn(tx) })
}

func (s *Store) view(ctx context.Context, fn func(tx *readTx) error) error {
	return s.read(ctx, beginView, fn)
}

// read runs fn on a connection whose first statement goes with begin.
func (s *Store) read(ctx context.Context, begin []string, fn func(tx *readTx) error) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return connErr(ctx, "connect", err)
	}
	tx := &readTx{c: &lazyTx{c: pc.Conn(), begin: begin, trips: &s.stats.trips}}
	defer func() {
		tx.done.Store(true)
		releaseAfterRollback(pc, &s.stats.trips)
	}()
	return fn(tx)
}

// releaseAfterRollback ends the connection's transaction, if any, and
// gives it back to the pool (which closes a connection left in a
// transaction).
func releaseAfterRollback(pc *pgxpool.Conn, trips *atomic.Int64) {
	if pc.Conn().PgConn().TxStatus() != 'I' && !pc.Conn().IsClosed() {
		trips.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = pc.Conn().Exec(ctx, "ROLLBACK")
		cancel()
	}
	pc.Release()
}

// retryable reports a serialization failure, a deadlock, or the server
// ending a session that sat idle inside its transaction past
// idle_in_transaction_session_timeout (a paused replica): the transaction
// was rolled back and may be run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01" || pe.Code == "25P03")
}

// isUniqueViolation reports a unique_violation: only InsertNew's
// statement meets one (Insert and Put resolve conflicts on the key).
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// connErr returns ctx's error when ctx ended (the statement was
// interrupted for it), else err described by op.
func connErr(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// writeTx is the store.Tx of an Update attempt.
type writeTx struct {
	s    *Store
	c    *lazyTx
	done atomic.Bool
	// err is the first statement error: the transaction is aborted, and
	// every later call fails with it. conflict says it was a
	// serialization failure or a deadlock.
	err      error
	conflict bool
	// claim: a Claim's transaction, whose reads lock what they return.
	claim bool
}

var _ store.Tx = (*writeTx)(nil)

func (tx *writeTx) check(ctx context.Context) error {
	if tx.done.Load() {
		return errTxDone
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return tx.err
}

// fail records a statement's error: the transaction is aborted. The
// error of a deferred write sent with the statement is reported as that
// write's.
func (tx *writeTx) fail(ctx context.Context, op string, err error) error {
	if we := (*writeError)(nil); errors.As(err, &we) {
		op, err = we.op, we.err
	}
	if retryable(err) {
		tx.conflict = true
	}
	if isUniqueViolation(err) { // an InsertNew's ID existed
		err = fmt.Errorf("%w (%w)", store.ErrExists, err)
	}
	err = connErr(ctx, op, err)
	if tx.err == nil {
		tx.err = err
	}
	return err
}

func (tx *writeTx) Get(ctx context.Context, kind store.Kind, id string) (store.Record, error) {
	if err := tx.check(ctx); err != nil {
		return store.Record{}, err
	}
	sql := sqlGet
	if tx.claim {
		sql = sqlGetForUpdate
	}
	rec, err := getRecord(ctx, tx.c, sql, kind, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return rec, tx.fail(ctx, "get "+string(kind)+"/"+id, err)
	}
	return rec, err
}

// GetMany implements store.ManyGetter: in a Claim it holds what it
// returns, as Get does.
func (tx *writeTx) GetMany(ctx context.Context, kind store.Kind, ids []string) ([]store.Record, error) {
	if err := tx.check(ctx); err != nil {
		return nil, err
	}
	sql := sqlGetMany
	if tx.claim {
		sql = sqlGetManyForUpdate
	}
	recs, err := getMany(ctx, tx.c, sql, kind, ids)
	if err != nil {
		return nil, tx.fail(ctx, "get many "+string(kind), err)
	}
	return recs, nil
}

// GetRefs implements store.RefsGetter: in a Claim it holds what it
// returns of the refs not Unheld, as Get does.
func (tx *writeTx) GetRefs(ctx context.Context, refs []store.Ref) ([]store.Got, error) {
	return tx.getRefs(ctx, refs, func(r store.Ref) bool { return tx.claim && !r.Unheld })
}

func (tx *writeTx) getRefs(ctx context.Context, refs []store.Ref, held func(store.Ref) bool) ([]store.Got, error) {
	if err := tx.check(ctx); err != nil {
		return nil, err
	}
	got, err := getRefs(ctx, tx.c, refs, held)
	if err != nil {
		return nil, tx.fail(ctx, "get refs", err)
	}
	return got, nil
}

func (tx *writeTx) List(ctx context.Context, q store.Query) ([]store.Record, string, error) {
	if err := tx.check(ctx); err != nil {
		return nil, "", err
	}
	recs, next, err := listRecords(ctx, tx.c, q, tx.claim)
	if err != nil && !errors.Is(err, store.ErrInvalidCursor) {
		return nil, "", tx.fail(ctx, "list "+string(q.Kind), err)
	}
	return recs, next, err
}

// FirstWithChild implements store.ChildFinder: in a Claim it holds what
// it reads, as List does.
func (tx *writeTx) FirstWithChild(ctx context.Context, q, child store.Query, idFrom int) (store.Record, store.Record, bool, error) {
	return tx.firstWithChild(ctx, q, child, idFrom, tx.claim)
}

func (tx *writeTx) firstWithChild(ctx context.Context, q, child store.Query, idFrom int, lock bool) (store.Record, store.Record, bool, error) {
	if err := tx.check(ctx); err != nil {
		return store.Record{}, store.Record{}, false, err
	}
	p, c, found, err := firstWithChild(ctx, tx.c, q, child, idFrom, lock)
	if err != nil {
		return store.Record{}, store.Record{}, false, tx.fail(ctx, "first "+string(q.Kind)+" with a "+string(child.Kind), err)
	}
	return p, c, found, nil
}

// Unheld returns the transaction reading without locking what it reads
// (store.Unheld): a Claim's Gets and Lists as an Update's, its writes
// tx's. Outside a Claim it is tx.
func (tx *writeTx) Unheld() store.Tx {
	if !tx.claim {
		return tx
	}
	return unheldTx{tx}
}

// unheldTx is a Claim's transaction reading without row locks.
type unheldTx struct{ *writeTx }

func (u unheldTx) Get(ctx context.Context, kind store.Kind, id string) (store.Record, error) {
	if err := u.check(ctx); err != nil {
		return store.Record{}, err
	}
	rec, err := getRecord(ctx, u.c, sqlGet, kind, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return rec, u.fail(ctx, "get "+string(kind)+"/"+id, err)
	}
	return rec, err
}

func (u unheldTx) GetMany(ctx context.Context, kind store.Kind, ids []string) ([]store.Record, error) {
	if err := u.check(ctx); err != nil {
		return nil, err
	}
	recs, err := getMany(ctx, u.c, sqlGetMany, kind, ids)
	if err != nil {
		return nil, u.fail(ctx, "get many "+string(kind), err)
	}
	return recs, nil
}

func (u unheldTx) GetRefs(ctx context.Context, refs []store.Ref) ([]store.Got, error) {
	return u.getRefs(ctx, refs, func(store.Ref) bool { return false })
}

func (u unheldTx) List(ctx context.Context, q store.Query) ([]store.Record, string, error) {
	if err := u.check(ctx); err != nil {
		return nil, "", err
	}
	recs, next, err := listRecords(ctx, u.c, q, false)
	if err != nil && !errors.Is(err, store.ErrInvalidCursor) {
		return nil, "", u.fail(ctx, "list "+string(q.Kind), err)
	}
	return recs, next, err
}

func (u unheldTx) FirstWithChild(ctx context.Context, q, child store.Query, idFrom int) (store.Record, store.Record, bool, error) {
	return u.firstWithChild(ctx, q, child, idFrom, false)
}

func (tx *writeTx) Count(ctx context.Context, q store.Query) (int, error) {
	if err := tx.check(ctx); err != nil {
		return 0, err
	}
	n, err := countRecords(ctx, tx.c, q)
	if err != nil {
		return 0, tx.fail(ctx, "count "+string(q.Kind), err)
	}
	return n, nil
}

// exec runs a write and returns how many rows it changed.
func (tx *writeTx) exec(ctx context.Context, op, sql string, args ...any) (int64, error) {
	if err := tx.check(ctx); err != nil {
		return 0, err
	}
	tag, err := tx.c.Exec(ctx, sql, args...)
	if err != nil {
		return 0, tx.fail(ctx, op, err)
	}
	return tag.RowsAffected(), nil
}

// recordArgs are the arguments of sqlInsert and sqlPut.
func recordArgs(r *store.Record) []any {
	data := r.Data
	if data == nil {
		data = []byte{}
	}
	return []any{string(r.Kind), []byte(r.ID), []byte(r.Parent), []byte(r.Key), r.Rank, data}
}

func (tx *writeTx) Insert(ctx context.Context, rec store.Record) error {
	sql := sqlInsert
	if tx.s.isWatched(rec.Kind) {
		sql = sqlInsertWatched
	}
	n, err := tx.exec(ctx, "insert "+string(rec.Kind)+"/"+rec.ID, sql, recordArgs(&rec)...)
	if err == nil && n == 0 {
		return store.ErrExists
	}
	return err
}

// Put is deferred: it goes to the database with the transaction's next
// statement or its COMMIT (a failure shows there), so that writes cost no
// round trip of their own.
func (tx *writeTx) Put(ctx context.Context, rec store.Record) error {
	return tx.deferWrite(ctx, "put", sqlPut, sqlPutWatched, rec)
}

// InsertNew implements store.NewInserter: deferred as Put is; an ID that
// exists fails the transaction's next statement or its COMMIT with an
// error wrapping store.ErrExists (fail).
func (tx *writeTx) InsertNew(ctx context.Context, rec store.Record) error {
	return tx.deferWrite(ctx, "insert", sqlInsertNew, sqlInsertNewWatched, rec)
}

// Replace implements store.Replacer: deferred as Put is, with a new Seq.
func (tx *writeTx) Replace(ctx context.Context, rec store.Record) error {
	return tx.deferWrite(ctx, "replace", sqlReplace, sqlReplaceWatched, rec)
}

// deferWrite queues rec's write with sql (watched, for a kind the change
// feed records) to go with the transaction's next statement or COMMIT.
func (tx *writeTx) deferWrite(ctx context.Context, op, sql, watched string, rec store.Record) error {
	if err := tx.check(ctx); err != nil {
		return err
	}
	if tx.s.isWatched(rec.Kind) {
		sql = watched
	}
	rec.Data = bytes.Clone(rec.Data) // the caller may reuse its buffer once the call returns
	tx.c.Defer(op+" "+string(rec.Kind)+"/"+rec.ID, sql, recordArgs(&rec)...)
	return nil
}

func (tx *writeTx) Delete(ctx context.Context, kind store.Kind, id string) error {
	sql := sqlDelete
	if tx.s.isWatched(kind) {
		sql = sqlDeleteWatched
	}
	n, err := tx.exec(ctx, "delete "+string(kind)+"/"+id, sql, string(kind), []byte(id))
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

// DeleteMany implements store.ManyDeleter: one DELETE of the IDs,
// deferred as a Put is.
func (tx *writeTx) DeleteMany(ctx context.Context, kind store.Kind, ids []string) error {
	if err := tx.check(ctx); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	sql := sqlDeleteMany
	if tx.s.isWatched(kind) {
		sql = sqlDeleteManyWatched
	}
	arg := make([][]byte, len(ids))
	for i, id := range ids {
		arg[i] = []byte(id)
	}
	tx.c.Defer("delete many "+string(kind), sql, string(kind), arg)
	return nil
}

// commit commits the transaction, whatever ctx does meanwhile: once
// COMMIT is sent, only its answer says whether the writes are kept. A
// transaction that ran no statement has nothing to commit.
func (tx *writeTx) commit(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	tag, begun, err := tx.c.end(ctx, "COMMIT")
	switch {
	case !begun && err == nil:
		return nil
	case err != nil && (retryable(err) || isServerError(err)):
		return tx.fail(ctx, "commit", err)
	case err != nil:
		return fmt.Errorf("postgres: commit (the outcome is unknown: the connection failed): %w", err)
	case tag.String() != "COMMIT": // the transaction had failed
		return tx.fail(ctx, "commit", errors.New("the transaction was rolled back"))
	}
	return nil
}

// isServerError reports an error the server answered (so a definite
// outcome), as opposed to a broken connection.
func isServerError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// rollback ends a transaction that will not commit.
func (tx *writeTx) rollback() {
	if tx.c.c.IsClosed() || tx.c.c.PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, _ = tx.c.end(ctx, "ROLLBACK")
}

// readTx is the store.Tx of a View.
type readTx struct {
	c    *lazyTx
	done atomic.Bool
}

var _ store.Tx = (*readTx)(nil)

func (tx *readTx) check(ctx context.Context) error {
	if tx.done.Load() {
		return errTxDone
	}
	return ctx.Err()
}

func (tx *readTx) Get(ctx context.Context, kind store.Kind, id string) (store.Record, error) {
	if err := tx.check(ctx); err != nil {
		return store.Record{}, err
	}
	rec, err := getRecord(ctx, tx.c, sqlGet, kind, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return rec, connErr(ctx, "get "+string(kind)+"/"+id, err)
	}
	return rec, err
}

func (tx *readTx) List(ctx context.Context, q store.Query) ([]store.Record, string, error) {
	if err := tx.check(ctx); err != nil {
		return nil, "", err
	}
	recs, next, err := listRecords(ctx, tx.c, q, false)
	if err != nil && !errors.Is(err, store.ErrInvalidCursor) {
		return nil, "", connErr(ctx, "list "+string(q.Kind), err)
	}
	return recs, next, err
}

func (tx *readTx) GetRefs(ctx context.Context, refs []store.Ref) ([]store.Got, error) {
	if err := tx.check(ctx); err != nil {
		return nil, err
	}
	got, err := getRefs(ctx, tx.c, refs, func(store.Ref) bool { return false })
	if err != nil {
		return nil, connErr(ctx, "get refs", err)
	}
	return got, nil
}

func (tx *readTx) GetMany(ctx context.Context, kind store.Kind, ids []string) ([]store.Record, error) {
	if err := tx.check(ctx); err != nil {
		return nil, err
	}
	recs, err := getMany(ctx, tx.c, sqlGetMany, kind, ids)
	if err != nil {
		return nil, connErr(ctx, "get many "+string(kind), err)
	}
	return recs, nil
}

func (tx *readTx) Count(ctx context.Context, q store.Query) (int, error) {
	if err := tx.check(ctx); err != nil {
		return 0, err
	}
	n, err := countRecords(ctx, tx.c, q)
	if err != nil {
		return 0, connErr(ctx, "count "+string(q.Kind), err)
	}
	return n, nil
}

func (tx *readTx) Insert(context.Context, store.Record) error       { return errReadOnly }
func (tx *readTx) InsertNew(context.Context, store.Record) error    { return errReadOnly }
func (tx *readTx) Replace(context.Context, store.Record) error      { return errReadOnly }
func (tx *readTx) Put(context.Context, store.Record) error          { return errReadOnly }
func (tx *readTx) Delete(context.Context, store.Kind, string) error { return errReadOnly }
func (tx *readTx) DeleteMany(context.Context, store.Kind, []string) error {
	return errReadOnly
}

// FirstWithChild implements store.ChildFinder.
func (tx *readTx) FirstWithChild(ctx context.Context, q, child store.Query, idFrom int) (store.Record, store.Record, bool, error) {
	if err := tx.check(ctx); err != nil {
		return store.Record{}, store.Record{}, false, err
	}
	p, c, found, err := firstWithChild(ctx, tx.c, q, child, idFrom, false)
	if err != nil {
		return store.Record{}, store.Record{}, false, connErr(ctx, "first "+string(q.Kind)+" with a "+string(child.Kind), err)
	}
	return p, c, found, nil
}
