package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// newSchema creates a new schema in the database base names and returns
// a connection string that uses it (search_path) and a function that
// drops it. Each run of -store postgres starts from an empty schema.
func newSchema(ctx context.Context, base string) (string, func() error, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "hoist_load_" + hex.EncodeToString(b[:])
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

// execSQL runs one statement on a connection of its own.
func execSQL(ctx context.Context, connStr, sql string) error {
	c, err := pgx.Connect(ctx, connStr)
	if err != nil {
		return fmt.Errorf("-database-url: connect: %w", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}
