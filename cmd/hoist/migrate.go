package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/server"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres"
)

const migrateUsage = `usage: hoist migrate-store [flags]

Copies the embedded store of a data directory (journal or SQLite) into a
PostgreSQL database, for hoist serve --store postgres: every record, with its
creation order, in one transaction, then verifies each kind on both sides,
then the data directory's CA (pki/), which replicas on PostgreSQL share.
Stop the Hoist using the data directory first (its lock is taken); the data
directory is left as it was. A database that already holds Hoist records is
refused unless --replace is given.

flags:
`

// migrateStore runs hoist migrate-store.
func migrateStore(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hoist migrate-store", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, migrateUsage); fs.PrintDefaults() }
	env := func(name, def string) string {
		if v, ok := lookupEnv(name); ok {
			return v
		}
		return def
	}
	dataDir := fs.String("data-dir", env("HOIST_DATA_DIR", config.DefaultDataDir), "the data directory whose store is copied ($HOIST_DATA_DIR)")
	choice := env("HOIST_STORE", "")
	if choice == config.StorePostgres {
		choice = "" // the store being moved to
	}
	kind := fs.String("store", choice, "journal or sqlite; empty: the one hoist serve would open ($HOIST_STORE, unless postgres)")
	var url string
	fs.Func("database-url", "the database's connection string; the PG* variables fill in what it leaves out ($HOIST_DATABASE_URL)", func(s string) error { url = s; return nil })
	url = env("HOIST_DATABASE_URL", "")
	replace := fs.Bool("replace", false, "delete the records the database holds before copying")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || *dataDir == "" {
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := copyStore(ctx, *dataDir, *kind, url, *replace, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "hoist migrate-store:", err)
		return 1
	}
	return 0
}

// copyStore opens both stores and imports one into the other.
func copyStore(ctx context.Context, dataDir, kind, url string, replace bool, stdout, stderr io.Writer) error {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	src, release, err := server.OpenEmbeddedStore(abs, kind, log)
	if err != nil {
		return err
	}
	defer release()
	dst, err := postgres.Open(ctx, url, postgres.Options{Logger: log})
	if err != nil {
		return err
	}
	defer dst.Close()
	progress := func(k store.Kind, n int) { fmt.Fprintf(stdout, "copied %d records of %s\n", n, k) }
	copied, err := dst.Import(ctx, src, postgres.ImportOptions{Replace: replace, Progress: progress})
	if errors.Is(err, postgres.ErrNotEmpty) {
		return fmt.Errorf("%w: give --replace to delete them first", err)
	}
	if err != nil {
		return err
	}
	carried, err := server.CopyCAToStore(ctx, dst, abs, time.Now())
	if err != nil {
		return err
	}
	if carried {
		fmt.Fprintf(stdout, "copied the CA of %s (pki/): every replica on the database uses it, so hosts and clients keep trusting it\n", abs)
	}
	total := 0
	for _, c := range copied {
		total += c.Records
	}
	fmt.Fprintf(stdout, "verified: the database holds the %d records of %d kinds of %s; start Hoist with --store postgres\n",
		total, len(copied), abs)
	return nil
}
