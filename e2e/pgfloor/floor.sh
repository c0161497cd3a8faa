#!/usr/bin/env bash
# floor.sh: what one PostgreSQL on this machine can commit at most, in the
# shapes Hoist's requests could have at best, driven by PostgreSQL's own
# C client (pgbench) so that the client costs as little as it can. See
# docs/performance.md, "Claims on PostgreSQL".
#
#   bash e2e/pgfloor/floor.sh [CONNECTION-STRING]   # default: the PG* environment variables
#   FLOOR_INDEXES=claims bash e2e/pgfloor/floor.sh  # only the indexes a claim reads
#
# It creates a schema of its own (dropped at the end) holding a
# hoist_records table as Hoist's schema has it, with 10,000 rows, and runs
# each shape for 15 s with 32 connections (the claim load's count):
#   one-statement: an UPDATE committed on its own (one round trip);
#   read-then-write: BEGIN and a SELECT ... FOR UPDATE in one round trip,
#     the UPDATE and COMMIT in a second (what the store's Claim does at the
#     least: read, decide in Go, write).
# The updates rewrite a row without changing an indexed column (HOT), the
# cheapest write there is; a claim's writes change indexed columns.
# A third shape, claim-cycle-in-sql, is the best a claim cycle could do if
# FleetIQ's rules ran inside PostgreSQL: each of the cycle's three requests
# one statement committed on its own, writing what the cycle must write
# (100 instances of 100 game servers, in a second schema of the same
# form):
#   claim: the busiest instance not locked that has an available game
#     server, with its oldest available game server (a LATERAL join, both
#     FOR UPDATE SKIP LOCKED, as Hoist reads them); the game server's Key
#     to claimed and the instance's Rank down by one (both indexed);
#   utilized: the game server's Key to utilized;
#   available: the game server's Key back to available and its instance's
#     Rank up by one.
# It reports cycles a second (a cycle is three transactions).
set -euo pipefail
pgbench=$(command -v pgbench || ls -d /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | sort -V | tail -n 1)
[ -x "$pgbench" ] || { echo "floor.sh: pgbench not found (Debian: postgresql)" >&2; exit 1; }
db=${1:-}
secs=${FLOOR_SECONDS:-15}
conns=${FLOOR_CONNECTIONS:-32}
# FLOOR_INDEXES=claims keeps only the primary key and the one index the
# claim cycle reads (a table of FleetIQ's own): what fewer index writes
# would give. Default: every index of Hoist's hoist_records.
other_indexes='CREATE INDEX ON hoist_records (kind, seq);
CREATE INDEX ON hoist_records (kind, key, rank, id) INCLUDE (seq);
CREATE INDEX ON hoist_records (kind, key, seq);
CREATE INDEX ON hoist_records (kind, parent, seq);
CREATE INDEX ON hoist_records (kind, parent, id);'
[ "${FLOOR_INDEXES:-}" = claims ] && other_indexes=
schema=hoist_floor_$$
dir=$(mktemp -d)
sql() { if [ -n "$db" ]; then psql -qX -v ON_ERROR_STOP=1 -d "$db" "$@"; else psql -qX -v ON_ERROR_STOP=1 "$@"; fi; }
cleanup() { sql -c "DROP SCHEMA IF EXISTS $schema, ${schema}_cycle CASCADE" >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
sql <<SQL
CREATE SCHEMA $schema;
SET search_path = $schema;
CREATE TABLE hoist_records (kind text NOT NULL, id bytea NOT NULL, parent bytea NOT NULL, key bytea NOT NULL,
  rank bigint NOT NULL, seq bigserial, data bytea NOT NULL, PRIMARY KEY (kind, id)) WITH (fillfactor = 80);
CREATE INDEX ON hoist_records (kind, parent, key, rank, id) INCLUDE (seq);
$other_indexes
INSERT INTO hoist_records (kind, id, parent, key, rank, data)
  SELECT 'GameServer', convert_to('g' || i, 'UTF8'), convert_to('i' || (i % 100), 'UTF8'), 'AVAILABLE', 0,
         convert_to(repeat('x', 400), 'UTF8')
  FROM generate_series(1, 10000) i;
VACUUM ANALYZE hoist_records;
CREATE SCHEMA ${schema}_cycle;
SET search_path = ${schema}_cycle;
CREATE TABLE hoist_records (LIKE $schema.hoist_records INCLUDING ALL) WITH (fillfactor = 80);
INSERT INTO hoist_records (kind, id, parent, key, rank, data)
  SELECT 'Instance', convert_to('i' || i, 'UTF8'), 'group', 'A', -1, convert_to(repeat('x', 200), 'UTF8')
  FROM generate_series(1, 100) i;
INSERT INTO hoist_records (kind, id, parent, key, rank, data)
  SELECT 'GameServer', convert_to('g' || i, 'UTF8'), convert_to('i' || (i % 100 + 1), 'UTF8'), 'A', i,
         convert_to(repeat('x', 400), 'UTF8')
  FROM generate_series(1, 10000) i;
VACUUM ANALYZE hoist_records;
SQL
cat > "$dir/one-statement.sql" <<'SQL'
\set i random(1, 10000)
UPDATE hoist_records SET data = data WHERE kind = 'GameServer' AND id = convert_to('g' || :i, 'UTF8');
SQL
cat > "$dir/read-then-write.sql" <<'SQL'
\set i random(1, 10000)
\startpipeline
BEGIN;
SELECT data FROM hoist_records WHERE kind = 'GameServer' AND id = convert_to('g' || :i, 'UTF8') FOR UPDATE;
\endpipeline
\startpipeline
UPDATE hoist_records SET data = data WHERE kind = 'GameServer' AND id = convert_to('g' || :i, 'UTF8');
COMMIT;
\endpipeline
SQL
cat > "$dir/claim-cycle-in-sql.sql" <<'SQL'
WITH pick AS (
  SELECT i.id AS instance, g.id AS server
  FROM (SELECT id FROM hoist_records WHERE kind = 'Instance' AND parent = 'group' AND key = 'A'
        ORDER BY rank, id OFFSET 0 FOR UPDATE SKIP LOCKED) i
  CROSS JOIN LATERAL (SELECT id FROM hoist_records WHERE kind = 'GameServer' AND parent = i.id AND key = 'A'
        ORDER BY rank, id LIMIT 1 FOR UPDATE SKIP LOCKED) g
  LIMIT 1),
server AS (UPDATE hoist_records r SET key = 'C', data = r.data FROM pick
  WHERE r.kind = 'GameServer' AND r.id = pick.server RETURNING r.id),
instance AS (UPDATE hoist_records r SET rank = r.rank - 1, data = r.data FROM pick
  WHERE r.kind = 'Instance' AND r.id = pick.instance RETURNING r.id)
SELECT convert_from(server.id, 'UTF8') AS server FROM server, instance \gset
UPDATE hoist_records SET key = 'U', data = data WHERE kind = 'GameServer' AND id = convert_to(:server, 'UTF8');
WITH server AS (UPDATE hoist_records SET key = 'A', data = data
  WHERE kind = 'GameServer' AND id = convert_to(:server, 'UTF8') RETURNING parent)
UPDATE hoist_records r SET rank = r.rank + 1, data = r.data FROM server WHERE r.kind = 'Instance' AND r.id = server.parent;
SQL
echo "pgbench: $conns connections, ${secs}s each, indexes: ${FLOOR_INDEXES:-all}, load average $(cut -d' ' -f1 /proc/loadavg) at start"
for shape in one-statement read-then-write claim-cycle-in-sql; do
	path=$schema
	[ "$shape" = claim-cycle-in-sql ] && path=${schema}_cycle
	out=$(PGOPTIONS="-c search_path=$path" "$pgbench" -n -M prepared -c "$conns" -j 2 -T "$secs" -f "$dir/$shape.sql" ${db:+"$db"} 2>&1) ||
		{ echo "$out" >&2; exit 1; }
	tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
	if [ "$shape" = claim-cycle-in-sql ]; then
		printf '%-18s %8.0f cycles/s (three transactions each)\n' "$shape" "$tps"
	else
		printf '%-18s %8.0f transactions/s\n' "$shape" "$tps"
	fi
done
