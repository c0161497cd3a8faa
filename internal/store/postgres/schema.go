package postgres

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations is the schema history, oldest first: migrations[i] brings the
// schema from version i to version i+1. Never edit a released migration;
// append a new one.
var migrations = [][]string{
	// 1: records and their indexes, leases, the change feed.
	{
		`CREATE SEQUENCE hoist_records_seq`,
		// fillfactor 80 leaves room on each page for a new version of a
		// row, so that a Put that changes no indexed column (a heartbeat)
		// is a HOT update, writing no index entry.
		`CREATE TABLE hoist_records (
			kind   text   NOT NULL,
			id     bytea  NOT NULL,
			parent bytea  NOT NULL,
			key    bytea  NOT NULL,
			rank   bigint NOT NULL,
			seq    bigint NOT NULL DEFAULT nextval('hoist_records_seq'),
			data   bytea  NOT NULL,
			PRIMARY KEY (kind, id)
		) WITH (fillfactor = 80)`,
		`ALTER SEQUENCE hoist_records_seq OWNED BY hoist_records.seq`,
		// OrderCreated.
		`CREATE INDEX hoist_records_kind_seq ON hoist_records (kind, seq)`,
		// Parent (+ Key) filters, ordered by rank (claims, placement); seq
		// included so that a List without data can answer from the index.
		`CREATE INDEX hoist_records_kind_parent_key_rank ON hoist_records (kind, parent, key, rank, id) INCLUDE (seq)`,
		// Key filter without Parent, ordered by rank; in creation order
		// (pending placements, the event outbox).
		`CREATE INDEX hoist_records_kind_key_rank ON hoist_records (kind, key, rank, id) INCLUDE (seq)`,
		`CREATE INDEX hoist_records_kind_key_seq ON hoist_records (kind, key, seq)`,
		// Parent filter in creation order and in ID order.
		`CREATE INDEX hoist_records_kind_parent_seq ON hoist_records (kind, parent, seq)`,
		`CREATE INDEX hoist_records_kind_parent_id ON hoist_records (kind, parent, id)`,
		`CREATE TABLE hoist_leases (
			name    bytea  PRIMARY KEY,
			holder  bytea  NOT NULL,
			term    bigint NOT NULL,
			expires bigint NOT NULL
		)`,
		// The change feed: xid is the writing transaction's ID, ord orders
		// the rows of one transaction.
		`CREATE TABLE hoist_changes (
			xid  bigint      NOT NULL,
			ord  bigint      GENERATED ALWAYS AS IDENTITY,
			kind text        NOT NULL,
			id   bytea       NOT NULL,
			at   timestamptz NOT NULL DEFAULT now(),
			PRIMARY KEY (xid, ord)
		)`,
		// changes_floor: rows of transactions below it may have been
		// deleted.
		`CREATE TABLE hoist_meta (
			name  text   PRIMARY KEY,
			value bigint NOT NULL
		)`,
		`INSERT INTO hoist_meta (name, value) VALUES ('changes_floor', 0)`,
		// Contended Updates take an EXCLUSIVE lock on this empty table
		// before their snapshot (see the package documentation).
		`CREATE TABLE hoist_serial ()`,
	},
	// 2: the grants' terms, in a table of their own that renewals do not
	// write, for UpdateFenced to lock (see sqlFence). A trigger keeps it, so
	// that a replica still running the version before, which takes leases
	// over without knowing the table, keeps it too.
	{
		`CREATE TABLE hoist_lease_terms (
			name bytea  NOT NULL,
			term bigint NOT NULL,
			PRIMARY KEY (name, term)
		)`,
		`INSERT INTO hoist_lease_terms (name, term) SELECT name, term FROM hoist_leases`,
		// A new term deletes the rows of the terms before it, waiting for
		// the fenced transactions that hold them FOR SHARE.
		`CREATE FUNCTION hoist_lease_term() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
		BEGIN
			DELETE FROM hoist_lease_terms WHERE name = NEW.name AND term < NEW.term;
			INSERT INTO hoist_lease_terms (name, term) VALUES (NEW.name, NEW.term) ON CONFLICT DO NOTHING;
			RETURN NULL;
		END $$`,
		`CREATE TRIGGER hoist_lease_insert AFTER INSERT ON hoist_leases
			FOR EACH ROW EXECUTE FUNCTION hoist_lease_term()`,
		`CREATE TRIGGER hoist_lease_term AFTER UPDATE OF term ON hoist_leases
			FOR EACH ROW WHEN (OLD.term IS DISTINCT FROM NEW.term) EXECUTE FUNCTION hoist_lease_term()`,
	},
}

// migrationLock is the first key of the advisory lock migrations take; the
// second is the schema's hash, so that schemas migrate independently.
const migrationLock = 0x486f6973 // "Hois"

// migrate brings the schema up to date in one transaction holding the
// migration lock, so that replicas opening at once apply each migration
// once. It refuses a schema written by a newer Hoist, and returns the
// schema version.
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) (int, error) {
	var current int
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var schema *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return fmt.Errorf("postgres: migrate: %w", err)
		}
		if schema == nil {
			return errNoSchema
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, migrationLock); err != nil {
			return fmt.Errorf("postgres: migrate: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS hoist_schema_migrations (
			version    int         PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("postgres: migrate: create hoist_schema_migrations: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM hoist_schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("postgres: migrate: read version: %w", err)
		}
		if current > len(migrations) {
			return fmt.Errorf("postgres: database schema version %d is newer than this Hoist knows (%d): upgrade Hoist",
				current, len(migrations))
		}
		for v := current + 1; v <= len(migrations); v++ {
			for _, stmt := range migrations[v-1] {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("postgres: migrate to version %d: %w", v, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO hoist_schema_migrations (version) VALUES ($1)`, v); err != nil {
				return fmt.Errorf("postgres: migrate: record version %d: %w", v, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if current < len(migrations) {
		log.Info("postgres: migrated schema", "from", current, "to", len(migrations))
	}
	return len(migrations), nil
}
