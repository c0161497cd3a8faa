package postgres

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// lazyTx is a transaction on a connection that begins with its first
// statement: the statements that begin it (BEGIN, and LOCK for a serial
// Update) go in the same round trip as that statement, as one pgx batch.
// A function that runs no statement costs no round trip. Writes whose
// answer is only "done" (Put) may be deferred: they go in the batch of the
// next statement, or of COMMIT, so that an Update's writes cost no round
// trip of their own.
type lazyTx struct {
	c     *pgx.Conn
	begin []string
	begun bool
	// trips counts the round trips to the database (Stats.RoundTrips).
	trips *atomic.Int64
	// deferred are the writes not sent yet, in order.
	deferred []deferredWrite
}

// deferredWrite is a write sent with the next statement; op names it in
// an error.
type deferredWrite struct {
	op, sql string
	args    []any
}

// writeError is the error of a deferred write, reported by the statement
// whose batch carried it.
type writeError struct {
	op  string
	err error
}

func (e *writeError) Error() string { return e.op + ": " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// Defer queues a write to go with the next statement.
func (l *lazyTx) Defer(op, sql string, args ...any) {
	l.deferred = append(l.deferred, deferredWrite{op: op, sql: sql, args: args})
}

// direct reports whether a statement can go on its own: the transaction
// has begun and no write waits.
func (l *lazyTx) direct() bool { return l.begun && len(l.deferred) == 0 }

// Query runs a statement that returns rows, beginning the transaction
// and sending the deferred writes with it.
func (l *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if l.direct() {
		l.trips.Add(1)
		return l.c.Query(ctx, sql, args...)
	}
	br, err := l.send(ctx, statement{sql, args})
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, errors.Join(err, br.Close())
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// Exec runs a statement that returns no rows, beginning the transaction
// and sending the deferred writes with it.
func (l *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if l.direct() {
		l.trips.Add(1)
		return l.c.Exec(ctx, sql, args...)
	}
	br, err := l.send(ctx, statement{sql, args})
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// statement is a statement with its arguments.
type statement struct {
	sql  string
	args []any
}

// QueryEach runs statements that return rows in one round trip (with the
// statements that begin the transaction and the deferred writes) and
// passes the rows of each, in order, to each, which reads them; an error
// of each or of a statement stops it.
func (l *lazyTx) QueryEach(ctx context.Context, stmts []statement, each func(i int, rows pgx.Rows) error) error {
	br, err := l.send(ctx, stmts...)
	if err != nil {
		return err
	}
	for i := range stmts {
		rows, err := br.Query()
		if err == nil {
			err = each(i, rows)
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
		if err != nil {
			return errors.Join(err, br.Close())
		}
	}
	return br.Close()
}

// send sends the beginning statements (the first time), the deferred
// writes and stmts as a batch, and reads the results of all but stmts. A
// deferred write that failed is returned as a *writeError (the
// transaction is then aborted).
func (l *lazyTx) send(ctx context.Context, stmts ...statement) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	begin := 0
	if !l.begun {
		for _, s := range l.begin {
			b.Queue(s)
		}
		begin = len(l.begin)
	}
	for _, w := range l.deferred {
		b.Queue(w.sql, w.args...)
	}
	for _, s := range stmts {
		b.Queue(s.sql, s.args...)
	}
	writes := l.deferred
	l.begun, l.deferred = true, nil
	l.trips.Add(1)
	br := l.c.SendBatch(ctx, b)
	for range begin {
		if _, err := br.Exec(); err != nil {
			return nil, errors.Join(err, br.Close())
		}
	}
	for _, w := range writes {
		if _, err := br.Exec(); err != nil {
			return nil, errors.Join(&writeError{op: w.op, err: err}, br.Close())
		}
	}
	return br, nil
}

// end ends the transaction with sql (COMMIT or ROLLBACK) when it began or
// has deferred writes; ok reports that it had. ROLLBACK drops the deferred
// writes; COMMIT sends them with it.
func (l *lazyTx) end(ctx context.Context, sql string) (tag pgconn.CommandTag, ok bool, err error) {
	if sql != "COMMIT" {
		l.deferred = nil
	}
	switch {
	case !l.begun && len(l.deferred) == 0:
		return tag, false, nil
	case l.direct():
		l.trips.Add(1)
		tag, err = l.c.Exec(ctx, sql)
		return tag, true, err
	}
	tag, err = l.Exec(ctx, sql)
	return tag, true, err
}

// batchRows are the rows of a batch's last statement: closing them reads
// the rest of the batch.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err = r.br.Close()
		r.br = nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}
