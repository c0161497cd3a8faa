// Package sqlite is Hoist's embedded store.Store: one SQLite database file,
// opened with Open, that needs no server and no C toolchain.
//
// # Record model
//
// Records live in one table, records(seq, kind, id, parent, key, rank, data).
// seq is the rowid (INTEGER PRIMARY KEY): a record keeps it when Put replaces
// the record, and a new record takes the next value of a counter that the
// writer keeps in memory and saves in table meta with each commit, so Seq
// never goes back, even after the newest records were deleted. Indexes:
// (kind, id) unique for Get/Put/Delete and OrderID; (kind, seq) for
// OrderCreated; (kind, parent, key, rank, id) and (kind, key, rank, id) for
// the claim and placement paths; (kind, parent, seq) and (kind, parent, id)
// for a parent's records in creation or ID order. TestQueryPlans pins which
// index each common query uses. A Put that changes only Data is a plain
// UPDATE of data, which touches no index; other Puts are an upsert. A Put of
// a record the same Update function read or wrote is an UPDATE by rowid of
// just the columns that change (so of just the indexes holding them). Leases
// are rows of table leases(name, holder, expires), taken over by a
// conditional upsert when expired or renewed by their holder.
//
// The schema is versioned: migrations is an ordered list in code, and Open
// applies the missing ones in one transaction, recording each in
// schema_migrations. A database from a newer Hoist is refused.
//
// List pages by keyset: the opaque cursor (base64url) holds the order and
// direction it was issued for and the position of the page's last record
// (its Seq; its Rank and ID; or its ID), and the next page selects rows
// strictly after it. Records inserted or deleted between pages therefore
// never make a page repeat or skip another record.
//
// # Group commit
//
// With synchronous=FULL every commit waits for an fsync of the WAL, which
// costs from tens of microseconds to milliseconds. One transaction per Update
// would cap Hoist at one Update per fsync. Instead all Updates go through one
// writer goroutine that owns the one write connection:
//
//	Update ─┐                       ┌─ BEGIN IMMEDIATE
//	Update ─┼─> queue ─> writer ────┼─ for each request: SAVEPOINT, run fn, RELEASE
//	Update ─┘   (up to MaxBatch)    │   (fn failed: ROLLBACK TO, only its writes)
//	                                └─ COMMIT (one fsync), then acknowledge all
//
// The writer takes every queued request (up to Options.MaxBatch) into one
// transaction. Each request's function runs inside its own savepoint, so a
// function that returns an error undoes only its own writes; its Update
// returns at once with that error. Functions run one at a time, each seeing
// every earlier write of the batch, so Updates are serializable without
// retries. After the COMMIT returns, every successful request of the batch
// is acknowledged. While one batch commits, the next queues up, so batches
// grow with load and the fsync cost is shared.
//
// A function runs in its caller's goroutine: the writer hands the caller its
// turn and waits for it to finish. Panics and runtime.Goexit (t.Fatal) in a
// function therefore happen where they belong, and the writer rolls back that
// function's savepoint. A function must be short and must not call Update or
// Lease (it would wait for itself); nothing else can write while it runs.
//
// Statements on the write connection never see the caller's context: SQLite
// answers a canceled context by interrupting the statement, and an
// interrupted write rolls back the whole transaction, so the batch. Tx
// methods check the context before they run instead, and an Update whose
// context ends while it waits in the queue is dropped. If a statement fails
// (disk full, I/O error), the batch is rolled back whole, the failing Update
// gets the error, and the batch's other Updates run again in a new batch
// (store.Store allows a function to run more than once).
//
// Views use a pool of Options.ReadConns connections opened with
// query_only; a View's transaction sees the WAL snapshot taken at its first
// read. Readers never block the writer, nor the writer them. Every
// connection prepares each statement once and keeps it (the List and Count
// statements are keyed by the query's shape: filters, order, cursor, limit).
//
// # Durability
//
// The database is in WAL mode with synchronous=FULL: when Update returns nil
// its batch's COMMIT has returned, and the WAL has been fsynced. The write
// survives kill -9 of Hoist and, as far as the disk honours fsync, power loss
// (SQLite's own guarantee). The crash test re-executes the test binary,
// kills it with SIGKILL while it writes, and checks every acknowledged write.
//
// # Locking
//
// Open takes an exclusive lock (flock on Unix, LockFileEx on Windows) on
// path+".lock" and writes its process ID into the file. A second Open of the
// same database, from another Hoist or from the same process, fails with
// ErrLocked naming the holder. The kernel drops the lock when the process
// dies, so a crash never leaves a stale lock. SQLite's own locks still
// protect against other tools (a sqlite3 shell may read the file).
//
// # Why modernc.org/sqlite
//
// It is SQLite translated to pure Go: no cgo, so `go build`, `go run
// ./cmd/hoist` and cross-compiling need no C toolchain, and it is a maintained
// translation of the real SQLite (same file format, WAL, savepoints, upserts).
// It is slower than the C build, which the group commit more than makes up for
// (the fsync, not the SQL, dominates a commit).
package sqlite
