package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/hoistgg/hoist/internal/store"
)

// ErrNotEmpty: Import found records in the database and was not told to
// replace them.
var ErrNotEmpty = errors.New("postgres: the database already holds Hoist records")

// ImportOptions adjust Import.
type ImportOptions struct {
	// Replace deletes the records, leases and change feed the database
	// holds before copying, in the same transaction.
	Replace bool
	// Progress, when set, is told of each kind as it is copied.
	Progress func(kind store.Kind, records int)
}

// KindCopied is what Import copied of one kind, as it verified it.
type KindCopied struct {
	Kind    store.Kind
	Records int
	// Sum is store.Checksum's, equal on both sides.
	Sum [32]byte
}

// importBatch is how many records one COPY carries.
const importBatch = 5000

// Import copies every record of src into the database, with its Seq, in
// one transaction (a failed copy leaves the database as it was), sets the
// Seq sequence past every Seq src gave, and then verifies that each kind
// holds the same records on both sides (store.Checksum). It refuses a
// database holding records (ErrNotEmpty) unless opts.Replace. Leases are
// not copied. No Hoist may run on src or on the database meanwhile.
func (s *Store) Import(ctx context.Context, src store.Store, opts ImportOptions) ([]KindCopied, error) {
	dump, ok := src.(store.Dumper)
	if !ok {
		return nil, fmt.Errorf("postgres: import: a %T cannot list what it holds", src)
	}
	kinds, err := dump.Kinds(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(kinds)
	next, err := dump.NextSeq(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.gate.Begin(ctx); err != nil {
		return nil, err
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if err := prepareImport(ctx, tx, opts.Replace); err != nil {
			return err
		}
		for _, kind := range kinds {
			n, err := copyKind(ctx, tx, src, kind)
			if err != nil {
				return err
			}
			if opts.Progress != nil {
				opts.Progress(kind, n)
			}
		}
		// The next Seq is past every Seq src gave (next - 1 and below),
		// also those of records it deleted.
		_, err := tx.Exec(ctx, `SELECT setval('hoist_records_seq',
			greatest($1::bigint - 1, coalesce((SELECT max(seq) FROM hoist_records), 0), 1))`, next)
		return err
	})
	s.gate.Leave()
	if err != nil {
		return nil, fmt.Errorf("postgres: import: %w", err)
	}
	return s.verify(ctx, src, kinds)
}

// prepareImport refuses, or empties, a database that holds records.
func prepareImport(ctx context.Context, tx pgx.Tx, replace bool) error {
	var found bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM hoist_records)`).Scan(&found); err != nil {
		return err
	}
	if !found {
		return nil
	}
	if !replace {
		return ErrNotEmpty
	}
	_, err := tx.Exec(ctx, `TRUNCATE hoist_records, hoist_leases, hoist_lease_terms, hoist_changes`)
	return err
}

// copyKind copies the records of kind from src, a View per batch, in
// creation order.
func copyKind(ctx context.Context, tx pgx.Tx, src store.Store, kind store.Kind) (int, error) {
	cols := []string{"kind", "id", "parent", "key", "rank", "seq", "data"}
	q := store.Query{Kind: kind, Order: store.OrderCreated, Limit: importBatch}
	total := 0
	for {
		var recs []store.Record
		var next string
		err := src.View(ctx, func(stx store.Tx) error {
			var err error
			recs, next, err = stx.List(ctx, q)
			return err
		})
		if err != nil {
			return total, err
		}
		rows := make([][]any, len(recs))
		for i := range recs {
			r := &recs[i]
			rows[i] = []any{string(kind), []byte(r.ID), []byte(r.Parent), []byte(r.Key), r.Rank, r.Seq, dataOf(r)}
		}
		n, err := tx.CopyFrom(ctx, pgx.Identifier{"hoist_records"}, cols, pgx.CopyFromRows(rows))
		if err != nil {
			return total, fmt.Errorf("copy %s: %w", kind, err)
		}
		total += int(n)
		if next == "" {
			return total, nil
		}
		q.After = next
	}
}

// dataOf is r's Data as the data column takes it: never NULL.
func dataOf(r *store.Record) []byte {
	if r.Data == nil {
		return []byte{}
	}
	return r.Data
}

// verify compares each kind's records on both sides; the database must
// hold no other kind.
func (s *Store) verify(ctx context.Context, src store.Store, kinds []store.Kind) ([]KindCopied, error) {
	have, err := s.Kinds(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range have {
		if !slices.Contains(kinds, k) {
			return nil, fmt.Errorf("postgres: import: verify: the database holds records of %s, which the source does not", k)
		}
	}
	out := make([]KindCopied, 0, len(kinds))
	for _, kind := range kinds {
		n, sum, err := store.Checksum(ctx, src, kind)
		if err != nil {
			return nil, err
		}
		m, got, err := store.Checksum(ctx, s, kind)
		if err != nil {
			return nil, err
		}
		if m != n || got != sum {
			return nil, fmt.Errorf("postgres: import: verify: %s: the source holds %d records, the database %d, and they differ", kind, n, m)
		}
		out = append(out, KindCopied{Kind: kind, Records: n, Sum: sum})
	}
	return out, nil
}

// Kinds returns the kinds that have records (store.Dumper).
func (s *Store) Kinds(ctx context.Context) ([]store.Kind, error) {
	var kinds []store.Kind
	err := s.View(ctx, func(tx store.Tx) error {
		rows, err := tx.(*readTx).c.Query(ctx, `SELECT DISTINCT kind FROM hoist_records`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			kinds = append(kinds, store.Kind(k))
		}
		return rows.Err()
	})
	return kinds, err
}

// NextSeq returns a Seq greater than every Seq the store has given
// (store.Dumper).
func (s *Store) NextSeq(ctx context.Context) (int64, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return 0, err
	}
	defer s.gate.Leave()
	var last int64
	var called bool
	err := s.pool.QueryRow(ctx, `SELECT last_value, is_called FROM hoist_records_seq`).Scan(&last, &called)
	if !called {
		return last, err
	}
	return last + 1, err
}
