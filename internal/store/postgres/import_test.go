package postgres

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/sqlite"
)

// fillSource writes records of three kinds into src, then deletes the
// newest, so that its next Seq is past every Seq left.
func fillSource(t *testing.T, src store.Store) {
	t.Helper()
	ctx := context.Background()
	err := src.Update(ctx, func(tx store.Tx) error {
		for i := range 12000 { // more than one COPY
			kind := store.Kind([]string{"GameServer", "Fleet", "Event"}[i%3])
			r := store.Record{Kind: kind, ID: fmt.Sprintf("r-%05d", i), Parent: "p" + fmt.Sprint(i%7),
				Key: "k\x00" + fmt.Sprint(i%3), Rank: int64(i - 6000), Data: []byte(fmt.Sprintf(`{"n":%d}`, i))}
			if i%1000 == 0 {
				r.Data = nil
			}
			if err := tx.Insert(ctx, r); err != nil {
				return err
			}
		}
		return tx.Insert(ctx, store.Record{Kind: "Gone", ID: "newest"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Update(ctx, func(tx store.Tx) error { return tx.Delete(ctx, "Gone", "newest") }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := src.AcquireLease(ctx, "loop", "replica", time.Minute); err != nil {
		t.Fatal(err)
	}
}

// TestImport copies a journal store and a SQLite store into PostgreSQL:
// every record with its Seq, verified; new records take Seqs past the
// source's; a database holding records is refused unless told to replace
// them.
func TestImport(t *testing.T) {
	sources := map[string]func(t *testing.T) store.Store{
		"journal": func(t *testing.T) store.Store {
			s, err := journal.Open(t.TempDir(), journal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"sqlite": func(t *testing.T) store.Store {
			s, err := sqlite.Open(filepath.Join(t.TempDir(), "hoist.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, open := range sources {
		t.Run(name, func(t *testing.T) {
			src := open(t)
			defer src.Close()
			fillSource(t, src)
			dst := openTest(t, Options{})
			ctx := context.Background()
			copied, err := dst.Import(ctx, src, ImportOptions{})
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if len(copied) != 3 || copied[0].Kind != "Event" || copied[0].Records != 4000 {
				t.Errorf("copied %+v, want 3 kinds of 4000 records", copied)
			}
			want, _ := src.(store.Dumper).NextSeq(ctx)
			var got store.Record
			err = dst.Update(ctx, func(tx store.Tx) error {
				if err := tx.Insert(ctx, store.Record{Kind: "New", ID: "x"}); err != nil {
					return err
				}
				got, err = tx.Get(ctx, "New", "x")
				return err
			})
			if err != nil || got.Seq < want {
				t.Errorf("a new record's Seq: %d %v, want at least the source's next, %d", got.Seq, err, want)
			}
			if _, err := dst.Import(ctx, src, ImportOptions{}); !errors.Is(err, ErrNotEmpty) {
				t.Errorf("Import into a database holding records: %v, want ErrNotEmpty", err)
			}
			if _, err := dst.Import(ctx, src, ImportOptions{Replace: true}); err != nil {
				t.Errorf("Import with Replace: %v", err)
			}
			if n := countKind(t, dst, "New"); n != 0 {
				t.Errorf("after Replace the database still holds %d records it had", n)
			}
		})
	}
}

// countKind counts the records of kind in s.
func countKind(t *testing.T, s store.Store, kind store.Kind) int {
	t.Helper()
	var n int
	err := s.View(context.Background(), func(tx store.Tx) error {
		var err error
		n, err = tx.Count(context.Background(), store.Query{Kind: kind})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
