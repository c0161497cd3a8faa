package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/pki"
	"github.com/hoistgg/hoist/internal/server"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// TestMigrateStore: hoist migrate-store copies a data directory's journal
// store into PostgreSQL and says what it verified, then the data
// directory's CA; a second run is refused
// (the database holds records) unless --replace; it refuses a data
// directory a Hoist holds, and one without a store.
func TestMigrateStore(t *testing.T) {
	url := pgtest.URL(t)
	dir := t.TempDir()
	src, err := journal.Open(filepath.Join(dir, "store"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err = src.Update(ctx, func(tx store.Tx) error {
		for i := range 300 {
			kind := store.Kind([]string{"Fleet", "GameSession"}[i%2])
			if err := tx.Insert(ctx, store.Record{Kind: kind, ID: fmt.Sprint(i), Data: []byte("{}")}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	if _, err := pki.LoadOrCreateCA(filepath.Join(dir, "pki")); err != nil {
		t.Fatal(err)
	}
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	migrate := func(vars map[string]string, args ...string) (int, string, string) {
		var out, errs bytes.Buffer
		code := migrateStore(args, env(vars), &out, &errs)
		return code, out.String(), errs.String()
	}
	// HOIST_STORE=postgres, as in the environment Hoist will run in: the
	// embedded store is found all the same.
	vars := map[string]string{"HOIST_DATABASE_URL": url, "HOIST_STORE": "postgres"}
	code, out, errs := migrate(vars, "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "copied 150 records of GameSession") || !strings.Contains(out, "verified: the database holds the 300 records of 2 kinds") ||
		!strings.Contains(out, "copied the CA of") {
		t.Fatalf("migrate-store: %d\n%s%s", code, out, errs)
	}
	dst, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := store.Checksum(ctx, dst, "Fleet")
	dst.Close()
	if err != nil || n != 150 {
		t.Errorf("the database holds %d fleets, %v", n, err)
	}
	if code, _, errs := migrate(vars, "--data-dir", dir); code != 1 || !strings.Contains(errs, "--replace") {
		t.Errorf("second run: %d %s, want a refusal naming --replace", code, errs)
	}
	if code, out, errs := migrate(vars, "--data-dir", dir, "--replace"); code != 0 || !strings.Contains(out, "verified") {
		t.Errorf("--replace: %d %s%s", code, out, errs)
	}
	_, release, err := server.OpenEmbeddedStore(dir, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errs := migrate(vars, "--data-dir", dir, "--replace"); code != 1 || !strings.Contains(errs, "in use") {
		t.Errorf("while a Hoist holds the data directory: %d %s, want a refusal", code, errs)
	}
	release()
	if code, _, errs := migrate(vars, "--data-dir", t.TempDir()); code != 1 || !strings.Contains(errs, "holds no store") {
		t.Errorf("a data directory without a store: %d %s", code, errs)
	}
}
