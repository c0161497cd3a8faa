package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// lazyTx is a transaction on a connection that begins with its first
// statement: the statements that begin it (BEGIN, and LOCK for a serial
// Update) go in the same round trip as that statement, as one pgx batch.
// A function that runs no statement costs no round trip.
type lazyTx struct {
	c     *pgx.Conn
	begin []string
	begun bool
}

// Query runs a statement that returns rows, beginning the transaction
// with it when it is the first.
func (l *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if l.begun {
		return l.c.Query(ctx, sql, args...)
	}
	br, err := l.send(ctx, sql, args)
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
// with it when it is the first.
func (l *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if l.begun {
		return l.c.Exec(ctx, sql, args...)
	}
	br, err := l.send(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// send sends the beginning statements and the first one as a batch, and
// reads the beginning statements' results.
func (l *lazyTx) send(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	l.begun = true
	b := &pgx.Batch{}
	for _, s := range l.begin {
		b.Queue(s)
	}
	b.Queue(sql, args...)
	br := l.c.SendBatch(ctx, b)
	for range l.begin {
		if _, err := br.Exec(); err != nil {
			return nil, errors.Join(err, br.Close())
		}
	}
	return br, nil
}

// end ends the transaction with sql (COMMIT or ROLLBACK) when it began;
// ok reports that it had.
func (l *lazyTx) end(ctx context.Context, sql string) (tag pgconn.CommandTag, ok bool, err error) {
	if !l.begun {
		return tag, false, nil
	}
	tag, err = l.c.Exec(ctx, sql)
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
