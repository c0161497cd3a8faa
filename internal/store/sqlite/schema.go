package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"
)

// migrations is the schema history, oldest first: migrations[i] brings the
// schema from version i to version i+1. Never edit a released migration;
// append a new one.
var migrations = [][]string{
	// 1: records, their indexes, leases, and the Seq high-water mark.
	{
		// seq is the rowid: inserts append to the table's b-tree, and a
		// record keeps its rowid (so its Seq) when Put replaces it.
		`CREATE TABLE records (
			seq    INTEGER PRIMARY KEY,
			kind   TEXT    NOT NULL,
			id     TEXT    NOT NULL,
			parent TEXT    NOT NULL,
			key    TEXT    NOT NULL,
			rank   INTEGER NOT NULL,
			data   BLOB    NOT NULL
		) STRICT`,
		// Get, Put, Delete, OrderID.
		`CREATE UNIQUE INDEX records_kind_id ON records (kind, id)`,
		// OrderCreated.
		`CREATE INDEX records_kind_seq ON records (kind, seq)`,
		// Parent (+ Key) filters, ordered by rank (claims, placement).
		`CREATE INDEX records_kind_parent_key_rank ON records (kind, parent, key, rank, id)`,
		// Key filter without Parent, ordered by rank.
		`CREATE INDEX records_kind_key_rank ON records (kind, key, rank, id)`,
		// Parent filter in creation order (a fleet's sessions, a group's servers)
		// and in ID order.
		`CREATE INDEX records_kind_parent_seq ON records (kind, parent, seq)`,
		`CREATE INDEX records_kind_parent_id ON records (kind, parent, id)`,
		`CREATE TABLE leases (
			name    TEXT    PRIMARY KEY,
			holder  TEXT    NOT NULL,
			expires INTEGER NOT NULL
		) STRICT`,
		// seq: the highest Seq ever assigned, so that Seq never goes back
		// even when the newest records are deleted.
		`CREATE TABLE meta (
			name  TEXT    PRIMARY KEY,
			value INTEGER NOT NULL
		) STRICT`,
		`INSERT INTO meta (name, value) VALUES ('seq', 0)`,
	},
	// 2: lease terms. A lease held before counts as held in term 1.
	{
		`ALTER TABLE leases ADD COLUMN term INTEGER NOT NULL DEFAULT 1`,
	},
}

// migrate brings the schema up to date in one transaction on the write
// connection. It refuses a database written by a newer Hoist.
func migrate(ctx context.Context, c *sql.Conn, log *slog.Logger) (err error) {
	if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return dbErr("migrate: begin", err)
	}
	defer func() {
		if err != nil {
			_, _ = c.ExecContext(context.Background(), `ROLLBACK`)
		}
	}()
	if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at TEXT    NOT NULL
	) STRICT`); err != nil {
		return dbErr("migrate: create schema_migrations", err)
	}
	var current int
	if err := c.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return dbErr("migrate: read version", err)
	}
	if current > len(migrations) {
		return fmt.Errorf("sqlite: database schema version %d is newer than this Hoist knows (%d): upgrade Hoist",
			current, len(migrations))
	}
	for v := current + 1; v <= len(migrations); v++ {
		for _, stmt := range migrations[v-1] {
			if _, err := c.ExecContext(ctx, stmt); err != nil {
				return dbErr(fmt.Sprintf("migrate to version %d", v), err)
			}
		}
		_, err := c.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
			v, time.Now().UTC().Format(time.RFC3339))
		if err != nil {
			return dbErr("migrate: record version", err)
		}
	}
	if _, err := c.ExecContext(ctx, `COMMIT`); err != nil {
		return dbErr("migrate: commit", err)
	}
	if current < len(migrations) {
		log.Info("sqlite: migrated schema", "from", current, "to", len(migrations))
	}
	return nil
}

// loadSeq returns the highest Seq ever assigned.
func loadSeq(ctx context.Context, c *sql.Conn) (int64, error) {
	var seq int64
	err := c.QueryRowContext(ctx, `SELECT max(
		(SELECT value FROM meta WHERE name = 'seq'),
		(SELECT coalesce(max(seq), 0) FROM records))`).Scan(&seq)
	if err != nil {
		return 0, dbErr("load seq", err)
	}
	return seq, nil
}
