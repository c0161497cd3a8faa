package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/filelock"
)

// ErrLocked is returned by Open when another process (or another Store in
// this process) has the database open.
var ErrLocked = filelock.ErrLocked

// Options configure Open. The zero value is usable.
type Options struct {
	// Logger receives migrations, open/close and write failures. Default: discard.
	Logger *slog.Logger
	// MaxBatch caps how many Updates one commit carries. Default 256.
	MaxBatch int
	// ReadConns is the number of read connections, so the number of Views
	// that run at once (more wait). Default 4.
	ReadConns int
	// BusyTimeout is how long a connection waits for a lock that another
	// connection holds (a checkpoint, an outside sqlite3 shell). Default 5s.
	BusyTimeout time.Duration
	// Now is the store's clock, which AcquireLease and UpdateFenced
	// measure leases by. Default time.Now.
	Now func() time.Time
	// ChangeLogSize is how many changes the change feed keeps in memory
	// for its readers. Default store.DefaultChangeLogSize.
	ChangeLogSize int
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.ReadConns <= 0 {
		o.ReadConns = 4
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Store is the embedded SQLite store.Store. See the package documentation.
type Store struct {
	path    string
	log     *slog.Logger
	lock    *os.File
	wdb     *sql.DB // holds the one write connection
	w       *writer
	rdb     *sql.DB    // the read connections
	readers chan *conn // idle read connections
	now     func() time.Time

	gate store.Gate // Updates, Views and Leases in progress
}

var _ store.Store = (*Store)(nil)

// Failed returns the error of the first COMMIT that failed since Open (the
// write or fsync of the WAL: what the disk holds is then in doubt), or nil.
// SQLite goes on taking writes after one; Hoist's health check reports it
// until a restart.
func (s *Store) Failed() error {
	if p := s.w.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Open opens (creating it if needed) the database file at path, takes the
// lock file path+".lock", and brings the schema up to date. A second Open of
// the same path, from any process, fails with ErrLocked until Close.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	opts = opts.withDefaults()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o750); err != nil {
		return nil, fmt.Errorf("sqlite: data directory: %w", err)
	}
	lock, err := filelock.Lock(abs + ".lock")
	if err != nil {
		return nil, err
	}
	s := &Store{path: abs, log: opts.Logger, lock: lock, now: opts.Now}
	if err := s.open(opts); err != nil {
		_ = s.release()
		return nil, err
	}
	go s.w.run()
	s.log.Info("sqlite: store opened", "path", abs, "schema_version", len(migrations))
	return s, nil
}

// open opens the write connection, migrates, and opens the read connections.
func (s *Store) open(opts Options) error {
	ctx := context.Background()
	busy := busyPragma(opts.BusyTimeout)
	var err error
	if s.wdb, err = openDB(dsn(s.path, busy, "journal_mode(WAL)", "synchronous(FULL)", "cache_size(-32768)"), 1); err != nil {
		return err
	}
	wc, err := s.wdb.Conn(ctx)
	if err != nil {
		return dbErr("open", err)
	}
	wconn, err := newConn(wc)
	if err != nil {
		_ = wc.Close()
		return dbErr("open", err)
	}
	s.w = &writer{conn: wconn, reqs: make(chan *request, 1024), fnDone: make(chan error),
		exited: make(chan struct{}), maxBatch: opts.MaxBatch, log: s.log,
		feed: store.NewChangeLog(opts.ChangeLogSize)}
	if err := checkDurability(ctx, wc); err != nil {
		return err
	}
	if err := migrate(ctx, wc, s.log); err != nil {
		return err
	}
	seq, err := loadSeq(ctx, wc)
	if err != nil {
		return err
	}
	s.w.nextSeq, s.w.savedSeq = seq+1, seq
	if s.rdb, err = openDB(dsn(s.path, busy, "query_only(1)"), opts.ReadConns); err != nil {
		return err
	}
	s.readers = make(chan *conn, opts.ReadConns)
	for range opts.ReadConns {
		rc, err := s.rdb.Conn(ctx)
		if err != nil {
			return dbErr("open read connection", err)
		}
		c, err := newConn(rc)
		if err != nil {
			_ = rc.Close()
			return dbErr("open read connection", err)
		}
		s.readers <- c
	}
	return nil
}

// checkDurability verifies that the write connection got WAL mode and
// synchronous=FULL (a file system without shared memory refuses WAL).
func checkDurability(ctx context.Context, c *sql.Conn) error {
	var mode string
	var sync int
	if err := c.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return dbErr("read journal_mode", err)
	}
	if err := c.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		return dbErr("read synchronous", err)
	}
	if mode != "wal" || sync != 2 {
		return fmt.Errorf("sqlite: journal_mode=%s synchronous=%d, want wal and 2 (FULL)", mode, sync)
	}
	return nil
}

// release closes connections and the lock file; the writer goroutine must
// not be running.
func (s *Store) release() error {
	var errs []error
	if s.readers != nil {
	drain:
		for {
			select {
			case c := <-s.readers:
				errs = append(errs, c.close())
			default:
				break drain
			}
		}
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.conn.close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	errs = append(errs, s.lock.Close())
	return errors.Join(errs...)
}

// Close waits for the Updates, Views and Leases in progress, stops the
// writer and closes the database, which checkpoints the WAL into it. Later
// calls wait for the first to finish and return its result.
func (s *Store) Close() error {
	return s.gate.Close(func() error {
		close(s.w.reqs)
		<-s.w.exited
		err := s.release()
		s.log.Info("sqlite: store closed", "path", s.path, "err", err)
		return err
	})
}

// Update queues fn for the writer and, when its turn comes, runs it in the
// calling goroutine inside the writer's transaction. See the package doc for
// the group commit. fn must not call Update or Lease (it would wait for
// itself).
func (s *Store) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := s.gate.Begin(ctx); err != nil {
		return err
	}
	defer s.gate.Leave()
	req := &request{msgs: make(chan message, 1)}
	select {
	case s.w.reqs <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	for {
		var m message
		select {
		case m = <-req.msgs:
		case <-ctx.Done():
			if req.state.CompareAndSwap(reqPending, reqCanceled) {
				return ctx.Err()
			}
			m = <-req.msgs // the writer took it first: its outcome decides
		}
		if m.tx == nil {
			return m.err
		}
		if err := s.w.call(ctx, m.tx, fn); err != nil {
			return err
		}
	}
}

// View runs fn on a read connection in a read transaction: it sees the
// snapshot of the database at its first read, whatever commits meanwhile.
// fn must not call View itself: nested Views can take every read connection
// and wait for one forever.
func (s *Store) View(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := s.gate.Begin(ctx); err != nil {
		return err
	}
	defer s.gate.Leave()
	return s.view(ctx, func(tx *readTx) error { return fn(tx) })
}

// view runs fn in a read transaction on a read connection.
func (s *Store) view(ctx context.Context, fn func(tx *readTx) error) error {
	var c *conn
	select {
	case c = <-s.readers:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { s.readers <- c }()
	if _, err := c.exec(context.Background(), stmtBegin); err != nil {
		return dbErr("begin view", err)
	}
	tx := &readTx{c: c}
	defer func() {
		tx.done.Store(true)
		if _, err := c.exec(context.Background(), stmtRollback); err != nil {
			s.log.Error("sqlite: end of view", "err", err)
		}
	}()
	return fn(tx)
}

// Lease takes or renews the lease name for holder until now+ttl when it is
// free, expired (its expiry is not after now) or already holder's. It is a
// durable write like an Update. A ttl <= 0 gives a holder's lease up.
func (s *Store) Lease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	at, expires := store.LeaseTimes(now, ttl)
	var term int64
	err := s.Update(ctx, func(tx store.Tx) error {
		var err error
		term, err = tx.(*writeTx).lease(ctx, name, holder, at, expires)
		return err
	})
	return term > 0 && ttl > 0, err
}

// AcquireLease is Lease measured by the store's clock (Options.Now, read
// in the Update's turn), and returns the grant with its term.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Grant, bool, error) {
	var g store.Grant
	err := s.Update(ctx, func(tx store.Tx) error {
		at, expires := store.LeaseTimes(s.now(), ttl)
		term, err := tx.(*writeTx).lease(ctx, name, holder, at, expires)
		g = store.Grant{Name: name, Holder: holder, Term: term, Expires: time.Unix(0, expires)}
		return err
	})
	if err != nil || g.Term == 0 || ttl <= 0 {
		return store.Grant{}, false, err
	}
	return g, true, nil
}

// UpdateFenced is Update that, once fn has returned nil, checks in the
// same turn (so before any later write of the batch) that g still holds
// by the store's clock.
func (s *Store) UpdateFenced(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error {
	return s.Update(ctx, func(tx store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		now, _ := store.LeaseTimes(s.now(), 0)
		held, err := tx.(*writeTx).leaseHeld(ctx, g.Name, g.Holder, g.Term, now)
		if err == nil && !held {
			err = store.ErrLeaseLost
		}
		return err
	})
}

// Leases returns the leases whose names begin with prefix, unexpired by
// the store's clock, in name order (read on a read connection).
func (s *Store) Leases(ctx context.Context, prefix string) ([]store.Grant, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return nil, err
	}
	defer s.gate.Leave()
	now, _ := store.LeaseTimes(s.now(), 0)
	var out []store.Grant
	err := s.view(ctx, func(tx *readTx) error {
		rows, err := tx.c.query(stmtKey{fixed: stmtLeases}, []any{now})
		if err != nil {
			return dbErr("leases", err)
		}
		defer rows.Close()
		var v [4]driver.Value
		for {
			switch err := rows.Next(v[:]); {
			case err == io.EOF:
				return nil
			case err != nil:
				return dbErr("leases", err)
			}
			if name := text(v[0]); strings.HasPrefix(name, prefix) {
				out = append(out, store.Grant{Name: name, Holder: text(v[1]), Term: integer(v[2]), Expires: time.Unix(0, integer(v[3]))})
			}
		}
	})
	return out, err
}

// Claim is Update: the writer runs Updates one at a time, so a List never
// meets a record another transaction holds.
func (s *Store) Claim(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.Update(ctx, fn)
}

// Watch adds kinds to those the change feed records.
func (s *Store) Watch(kinds ...store.Kind) { s.w.feed.Watch(kinds...) }

// Changes reads the change feed (see store.Store): positions are numbered
// in the order the writer ran the functions, which is their commit order,
// and readers see those of committed batches only. The feed is kept in
// memory: a position from before the store was opened fails with
// store.ErrChangesLost, as does one older than the last
// Options.ChangeLogSize changes. The records are read as a View would.
func (s *Store) Changes(ctx context.Context, after string, limit int, kinds ...store.Kind) ([]store.Change, string, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return nil, "", err
	}
	defer s.gate.Leave()
	refs, next, err := s.w.feed.Read(after, limit, kinds)
	if err != nil || len(refs) == 0 {
		return nil, next, err
	}
	out := make([]store.Change, len(refs))
	err = s.view(ctx, func(tx *readTx) error {
		for i, ref := range refs {
			rec, err := getRecord(ctx, tx.c, ref.Kind, ref.ID)
			switch {
			case errors.Is(err, store.ErrNotFound):
				out[i] = store.Change{Record: store.Record{Kind: ref.Kind, ID: ref.ID}, Deleted: true}
			case err != nil:
				return err
			default:
				out[i] = store.Change{Record: rec}
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// Kinds returns the kinds that have records (store.Dumper).
func (s *Store) Kinds(ctx context.Context) ([]store.Kind, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return nil, err
	}
	defer s.gate.Leave()
	var kinds []store.Kind
	err := s.view(ctx, func(tx *readTx) error {
		rows, err := tx.c.c.QueryContext(ctx, `SELECT DISTINCT kind FROM records`)
		if err != nil {
			return dbErr("kinds", err)
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return dbErr("kinds", err)
			}
			kinds = append(kinds, store.Kind(k))
		}
		return rows.Err()
	})
	return kinds, err
}

// NextSeq returns a Seq greater than every Seq the store has given, as
// of the last commit (store.Dumper).
func (s *Store) NextSeq(ctx context.Context) (int64, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return 0, err
	}
	defer s.gate.Leave()
	var seq int64
	err := s.view(ctx, func(tx *readTx) error {
		var err error
		seq, err = loadSeq(ctx, tx.c.c)
		return err
	})
	return seq + 1, err
}

// Stats are counters of the writer since Open.
type Stats struct {
	// Batches is the number of write transactions committed.
	Batches int64
	// Updates is the number of Updates (and Leases) committed; Updates/Batches
	// is the mean group commit size.
	Updates int64
	// Aborted counts batches rolled back because a statement failed; their
	// other Updates were run again in a new batch.
	Aborted int64
}

// Stats returns the writer's counters.
func (s *Store) Stats() Stats {
	return Stats{
		Batches: s.w.stats.batches.Load(),
		Updates: s.w.stats.updates.Load(),
		Aborted: s.w.stats.aborted.Load(),
	}
}

// readTx is the store.Tx of a View.
type readTx struct {
	c    *conn
	done atomic.Bool
}

var _ store.Tx = (*readTx)(nil)

var errReadOnly = errors.New("sqlite: write in a read-only transaction (View)")

func (tx *readTx) check(ctx context.Context) error {
	if tx.done.Load() {
		return errTxDone
	}
	return ctx.Err()
}

func (tx *readTx) Get(ctx context.Context, kind store.Kind, id string) (store.Record, error) {
	if err := tx.check(ctx); err != nil {
		return store.Record{}, err
	}
	return getRecord(ctx, tx.c, kind, id)
}

func (tx *readTx) List(ctx context.Context, q store.Query) ([]store.Record, string, error) {
	if err := tx.check(ctx); err != nil {
		return nil, "", err
	}
	return listRecords(ctx, tx.c, q)
}

func (tx *readTx) Count(ctx context.Context, q store.Query) (int, error) {
	if err := tx.check(ctx); err != nil {
		return 0, err
	}
	return countRecords(ctx, tx.c, q)
}

func (tx *readTx) Insert(context.Context, store.Record) error       { return errReadOnly }
func (tx *readTx) Put(context.Context, store.Record) error          { return errReadOnly }
func (tx *readTx) Delete(context.Context, store.Kind, string) error { return errReadOnly }
