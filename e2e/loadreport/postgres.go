package loadreport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// NewSchema creates a new schema, <prefix>_<random>, in the database base
// names (a connection string; the PG* variables fill in what it leaves
// out) and returns a connection string that uses it (search_path) and a
// function that drops it: each run of a load tool on PostgreSQL starts
// from an empty schema.
func NewSchema(ctx context.Context, base, prefix string) (string, func() error, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := prefix + "_" + hex.EncodeToString(b[:])
	if err := execSQL(ctx, base, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, err
	}
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return execSQL(ctx, base, "DROP SCHEMA "+schema+" CASCADE")
	}
	return pgtest.WithParam(base, "search_path", schema), drop, nil
}

// execSQL runs one statement on a connection of its own. The connection
// string is parsed as Hoist parses it (pgxpool's), so that it may carry
// pool parameters for Hoist (pool_max_conns) that a single connection
// would send to the server as settings.
func execSQL(ctx context.Context, connStr, sql string) error {
	cfg, err := pgxpool.ParseConfig(connStr)
	if err != nil {
		return fmt.Errorf("-database-url: %w", err)
	}
	c, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return fmt.Errorf("-database-url: connect: %w", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}
