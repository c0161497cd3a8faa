package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	"github.com/hoistgg/hoist/internal/store"
)

// Request states. A request is claimed by the writer (pending -> running) or
// given up by its caller whose context ended (pending -> canceled), whichever
// comes first; running and canceled are final.
const (
	reqPending int32 = iota
	reqRunning
	reqCanceled
)

// request is one Update waiting for, or taking, its turn on the writer.
type request struct {
	state atomic.Int32
	// msgs carries the caller's turn (tx != nil: run the function now) or the
	// final outcome (tx == nil). It is buffered so the writer never waits for
	// the caller to receive.
	msgs chan message
}

type message struct {
	tx  *writeTx
	err error
}

// claim reports whether the writer may run r: it was pending (and is now
// running), or it is running already and is being run again after its batch
// was rolled back.
func (r *request) claim() bool {
	return r.state.CompareAndSwap(reqPending, reqRunning) || r.state.Load() == reqRunning
}

// errFnAborted tells the writer that an Update function did not return (it
// panicked or called runtime.Goexit) so its writes must be rolled back.
var errFnAborted = errors.New("sqlite: update function did not return")

// writer owns the one write connection. Its goroutine (run) takes the queued
// Update requests in batches, opens one transaction per batch, gives each
// request's caller a turn inside its own savepoint, and commits the batch
// once. Fields other than reqs, fnDone and exited are touched only by the
// writer goroutine and by the caller whose turn it is; the channel handoffs
// order those accesses.
type writer struct {
	conn     *conn
	reqs     chan *request
	fnDone   chan error // the turn's caller reports its function's result
	exited   chan struct{}
	maxBatch int
	log      *slog.Logger

	nextSeq  int64 // next Seq to assign
	savedSeq int64 // highest Seq stored in meta
	// poison is the first statement error of the open transaction. SQLite may
	// roll back a whole transaction on some errors (disk full, I/O), so after
	// one the batch is never committed.
	poison  error
	waiting []*request // requests whose function succeeded in the open transaction
	stats   counters
	// feed is the change feed: writes append to it in their turn, a
	// function or batch rolled back takes its entries back, and a commit
	// publishes them.
	feed *store.ChangeLog
	// failed is the first failed COMMIT (the write or fsync of the WAL), for
	// Store.Failed.
	failed atomic.Pointer[error]
}

type counters struct {
	batches, updates, aborted atomic.Int64
}

// run is the writer goroutine. It returns when reqs is closed and drained.
func (w *writer) run() {
	defer close(w.exited)
	batch := make([]*request, 0, w.maxBatch)
	for {
		if len(batch) == 0 {
			req, ok := <-w.reqs
			if !ok {
				return
			}
			batch = append(batch, req)
		}
		batch = w.fill(batch)
		rerun := w.runBatch(batch)
		batch = append(batch[:0], rerun...)
	}
}

// fill adds queued requests to batch without waiting, up to maxBatch.
func (w *writer) fill(batch []*request) []*request {
	for len(batch) < w.maxBatch {
		select {
		case req, ok := <-w.reqs:
			if !ok {
				return batch
			}
			batch = append(batch, req)
		default:
			return batch
		}
	}
	return batch
}

// runBatch runs batch in one transaction. It returns the requests to run
// again in a new transaction when the batch had to be rolled back.
func (w *writer) runBatch(batch []*request) []*request {
	ctx := context.Background()
	if _, err := w.conn.exec(ctx, stmtBeginImmediate); err != nil {
		err = dbErr("begin", err)
		w.log.Error("sqlite: cannot start a write transaction", "err", err)
		w.rollback() // in case the connection was left inside a transaction
		for _, r := range batch {
			if r.claim() {
				r.msgs <- message{err: err}
			}
		}
		return nil
	}
	w.poison = nil
	w.waiting = w.waiting[:0]
	mark := w.feed.Mark()
	for i, req := range batch {
		if !req.claim() {
			continue // its caller gave up
		}
		if err := w.turn(req); err != nil {
			w.feed.Truncate(mark)
			return w.abort(err, batch[i+1:])
		}
	}
	err := w.commit()
	if err != nil {
		w.feed.Truncate(mark)
	} else {
		w.feed.Publish(w.feed.Mark() - 1)
	}
	for _, r := range w.waiting {
		r.msgs <- message{err: err}
	}
	if err == nil && len(w.waiting) > 0 {
		w.stats.batches.Add(1)
		w.stats.updates.Add(int64(len(w.waiting)))
	}
	return nil
}

// turn runs req's function inside a savepoint, keeping or rolling back what
// it wrote. An error means the transaction is no longer usable; req has then
// been told its outcome if it was waiting for one.
func (w *writer) turn(req *request) error {
	ctx := context.Background()
	if _, err := w.conn.exec(ctx, stmtSavepoint); err != nil {
		err = dbErr("savepoint", err)
		req.msgs <- message{err: err}
		return err
	}
	mark := w.feed.Mark()
	req.msgs <- message{tx: &writeTx{w: w}}
	fnErr := <-w.fnDone
	if w.poison != nil {
		if fnErr == nil {
			req.msgs <- message{err: w.poison}
		}
		return w.poison
	}
	if fnErr != nil { // the caller has returned fnErr: undo its writes only
		w.feed.Truncate(mark)
		if _, err := w.conn.exec(ctx, stmtRollbackTo); err != nil {
			return dbErr("rollback to savepoint", err)
		}
		if _, err := w.conn.exec(ctx, stmtRelease); err != nil {
			return dbErr("release savepoint", err)
		}
		return nil
	}
	if _, err := w.conn.exec(ctx, stmtRelease); err != nil {
		err = dbErr("release savepoint", err)
		req.msgs <- message{err: err}
		return err
	}
	w.waiting = append(w.waiting, req)
	return nil
}

// abort rolls back the open transaction after cause. The requests whose
// functions had succeeded in it, and those not run yet (tail), are returned
// to run again: Update functions may be run more than once.
func (w *writer) abort(cause error, tail []*request) []*request {
	if _, err := w.conn.exec(context.Background(), stmtRollback); err != nil {
		w.log.Debug("sqlite: rollback after a failed statement", "err", err)
	}
	w.stats.aborted.Add(1)
	rerun := make([]*request, 0, len(w.waiting)+len(tail))
	rerun = append(rerun, w.waiting...)
	rerun = append(rerun, tail...)
	w.waiting = w.waiting[:0]
	w.log.Warn("sqlite: write batch rolled back after a statement failed", "err", cause, "rerun", len(rerun))
	return rerun
}

// commit makes the batch durable (one COMMIT, one WAL fsync) or, when no
// function in it succeeded, rolls it back.
func (w *writer) commit() error {
	ctx := context.Background()
	if len(w.waiting) == 0 {
		if _, err := w.conn.exec(ctx, stmtRollback); err != nil {
			w.log.Error("sqlite: rollback of an empty batch", "err", err)
		}
		return nil
	}
	last := w.nextSeq - 1
	if last > w.savedSeq {
		if _, err := w.conn.exec(ctx, stmtSaveSeq, last); err != nil {
			w.rollback()
			return dbErr("save seq", err)
		}
	}
	if _, err := w.conn.exec(ctx, stmtCommit); err != nil {
		w.rollback()
		err = dbErr("commit", err)
		w.log.Error("sqlite: commit failed", "err", err, "updates", len(w.waiting))
		w.failed.CompareAndSwap(nil, &err)
		return err
	}
	w.savedSeq = max(w.savedSeq, last)
	return nil
}

func (w *writer) rollback() {
	if _, err := w.conn.exec(context.Background(), stmtRollback); err != nil {
		w.log.Debug("sqlite: rollback", "err", err)
	}
}

// call runs fn in the caller's goroutine during its turn and reports the
// result to the writer, also when fn panics or exits the goroutine.
func (w *writer) call(ctx context.Context, tx *writeTx, fn func(store.Tx) error) (err error) {
	returned := false
	defer func() {
		tx.done.Store(true)
		if !returned {
			w.fnDone <- errFnAborted
			return
		}
		w.fnDone <- err
	}()
	if err = ctx.Err(); err == nil {
		err = fn(tx)
	}
	returned = true
	return err
}

// writeTx is the store.Tx of one Update turn. Its statements run on the
// writer connection with context.Background: a canceled context would make
// SQLite interrupt the statement, and an interrupted write rolls back the
// whole transaction, that is the whole batch. The caller's context is checked
// before every call instead.
type writeTx struct {
	w    *writer
	done atomic.Bool
	// known holds the indexed columns and Seq (the rowid) of records this
	// turn read or wrote, so that Put can update just the columns that
	// change, found by rowid. Only this turn writes on the connection, so
	// the entries stay true until the function returns.
	known map[recordID]indexed
}

type recordID struct {
	kind store.Kind
	id   string
}

type indexed struct {
	parent, key string
	rank, seq   int64
}

// maxKnownPerList bounds how many records of one List are remembered.
const maxKnownPerList = 64

func (tx *writeTx) remember(rec *store.Record) {
	if tx.known == nil {
		tx.known = make(map[recordID]indexed, 8)
	}
	tx.known[recordID{rec.Kind, rec.ID}] = indexed{parent: rec.Parent, key: rec.Key, rank: rec.Rank, seq: rec.Seq}
}

func (tx *writeTx) forget(kind store.Kind, id string) {
	delete(tx.known, recordID{kind, id})
}

var _ store.Tx = (*writeTx)(nil)

var errTxDone = errors.New("sqlite: transaction used after its function returned")

func (tx *writeTx) check(ctx context.Context) error {
	if tx.done.Load() {
		return errTxDone
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return tx.w.poison
}

// fail records a statement error: the batch will not be committed.
func (tx *writeTx) fail(err error) error {
	var de *dbError
	if errors.As(err, &de) && tx.w.poison == nil {
		tx.w.poison = err
	}
	return err
}

func (tx *writeTx) Get(ctx context.Context, kind store.Kind, id string) (store.Record, error) {
	if err := tx.check(ctx); err != nil {
		return store.Record{}, err
	}
	rec, err := getRecord(ctx, tx.w.conn, kind, id)
	if err == nil {
		tx.remember(&rec)
	}
	return rec, tx.fail(err)
}

func (tx *writeTx) List(ctx context.Context, q store.Query) ([]store.Record, string, error) {
	if err := tx.check(ctx); err != nil {
		return nil, "", err
	}
	recs, next, err := listRecords(ctx, tx.w.conn, q)
	if err == nil && len(recs) <= maxKnownPerList {
		for i := range recs {
			tx.remember(&recs[i])
		}
	}
	return recs, next, tx.fail(err)
}

func (tx *writeTx) Count(ctx context.Context, q store.Query) (int, error) {
	if err := tx.check(ctx); err != nil {
		return 0, err
	}
	n, err := countRecords(ctx, tx.w.conn, q)
	return n, tx.fail(err)
}

func (tx *writeTx) Insert(ctx context.Context, rec store.Record) error {
	seq := tx.w.nextSeq
	n, err := tx.write(ctx, stmtInsert, rec)
	if err == nil && n == 0 {
		return store.ErrExists
	}
	if err == nil {
		rec.Seq = seq
		tx.remember(&rec)
		tx.changed(rec.Kind, rec.ID)
	}
	return err
}

// changed records a write to kind/id in the change feed when it is watched.
func (tx *writeTx) changed(kind store.Kind, id string) {
	if tx.w.feed.Watched(kind) {
		tx.w.feed.Append(kind, id)
	}
}

func (tx *writeTx) Put(ctx context.Context, rec store.Record) error {
	err := tx.put(ctx, rec)
	if err == nil {
		tx.changed(rec.Kind, rec.ID)
	}
	return err
}

func (tx *writeTx) put(ctx context.Context, rec store.Record) error {
	if err := tx.check(ctx); err != nil {
		return err
	}
	if k, ok := tx.known[recordID{rec.Kind, rec.ID}]; ok {
		done, err := tx.putKnown(rec, k)
		if done || err != nil {
			return err
		}
	}
	tx.forget(rec.Kind, rec.ID) // its Seq is unknown after an upsert
	n, err := tx.w.conn.exec(context.Background(), stmtPutData,
		blob(rec.Data), string(rec.Kind), rec.ID, rec.Parent, rec.Key, rec.Rank)
	if err != nil {
		return tx.fail(dbErr("put "+string(rec.Kind)+"/"+rec.ID, err))
	}
	if n == 1 {
		return nil
	}
	_, err = tx.write(ctx, stmtPut, rec)
	return err
}

// putKnown replaces a record this turn read or wrote, whose indexed
// columns and Seq were k, setting only what changes. It reports false when
// no row had that Seq (it cannot happen while k is true; Put falls back to
// its general statements).
func (tx *writeTx) putKnown(rec store.Record, k indexed) (bool, error) {
	var n int64
	var err error
	c, kind := tx.w.conn, string(rec.Kind)
	switch {
	case rec.Parent == k.parent && rec.Key == k.key && rec.Rank == k.rank:
		n, err = c.exec(context.Background(), stmtSetData, blob(rec.Data), k.seq, kind, rec.ID)
	case rec.Parent == k.parent:
		n, err = c.exec(context.Background(), stmtSetKeyRank, rec.Key, rec.Rank, blob(rec.Data), k.seq, kind, rec.ID)
	default:
		n, err = c.exec(context.Background(), stmtSetIndexed, rec.Parent, rec.Key, rec.Rank, blob(rec.Data), k.seq, kind, rec.ID)
	}
	if err != nil {
		return false, tx.fail(dbErr("put "+kind+"/"+rec.ID, err))
	}
	if n != 1 {
		return false, nil
	}
	rec.Seq = k.seq
	tx.remember(&rec)
	return true, nil
}

// write runs stmtInsert or stmtPut with the next Seq and reports the number of
// rows changed. Seq values are never reused; a Put that replaces a record or
// an Insert that finds one leaves a gap, which is allowed.
func (tx *writeTx) write(ctx context.Context, f fixedStmt, rec store.Record) (int64, error) {
	if err := tx.check(ctx); err != nil {
		return 0, err
	}
	w := tx.w
	n, err := w.conn.exec(context.Background(), f,
		string(rec.Kind), rec.ID, rec.Parent, rec.Key, rec.Rank, w.nextSeq, blob(rec.Data))
	if err != nil {
		return 0, tx.fail(dbErr("write "+string(rec.Kind)+"/"+rec.ID, err))
	}
	w.nextSeq++
	return n, nil
}

func (tx *writeTx) Delete(ctx context.Context, kind store.Kind, id string) error {
	if err := tx.check(ctx); err != nil {
		return err
	}
	tx.forget(kind, id)
	n, err := tx.w.conn.exec(context.Background(), stmtDelete, string(kind), id)
	if err != nil {
		return tx.fail(dbErr("delete "+string(kind)+"/"+id, err))
	}
	if n == 0 {
		return store.ErrNotFound
	}
	tx.changed(kind, id)
	return nil
}

// lease takes or renews a lease row (see stmtLease) and returns its term,
// or 0 when another holder has it.
func (tx *writeTx) lease(ctx context.Context, name, holder string, now, expires int64) (int64, error) {
	if err := tx.check(ctx); err != nil {
		return 0, err
	}
	return tx.queryInt("lease "+name, stmtLease, name, holder, expires, now)
}

// leaseHeld reports whether holder has the lease name in term, unexpired
// at now.
func (tx *writeTx) leaseHeld(ctx context.Context, name, holder string, term, now int64) (bool, error) {
	if err := tx.check(ctx); err != nil {
		return false, err
	}
	n, err := tx.queryInt("lease "+name, stmtLeaseHeld, name, holder, term, now)
	return n == 1, err
}

// queryInt runs a fixed statement that returns at most one integer (0
// when it returns no row).
func (tx *writeTx) queryInt(op string, f fixedStmt, args ...any) (int64, error) {
	rows, err := tx.w.conn.query(stmtKey{fixed: f}, args)
	if err != nil {
		return 0, tx.fail(dbErr(op, err))
	}
	defer rows.Close()
	var v [1]driver.Value
	switch err := rows.Next(v[:]); {
	case err == io.EOF:
		return 0, nil
	case err != nil:
		return 0, tx.fail(dbErr(op, err))
	}
	return integer(v[0]), nil
}

// blob is data as SQLite must bind it: never NULL.
func blob(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}

// dbError marks an error that SQLite returned (as opposed to a store error
// such as ErrNotFound or a bad query).
type dbError struct {
	op  string
	err error
}

func dbErr(op string, err error) error { return &dbError{op: op, err: err} }

func (e *dbError) Error() string { return fmt.Sprintf("sqlite: %s: %v", e.op, e.err) }
func (e *dbError) Unwrap() error { return e.err }
