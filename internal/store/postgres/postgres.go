package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoistgg/hoist/internal/store"
)

// Options configure Open. The zero value is usable.
type Options struct {
	// Logger receives open, migrations and close. Default: discard.
	Logger *slog.Logger
	// MaxConns is the most connections the store opens, so the most
	// Updates and Views that run at once (more wait). Default 16; a
	// pool_max_conns parameter in the connection string wins.
	MaxConns int32
	// MaxAttempts is how many times Update runs a function whose
	// transaction lost a serialization race before it returns
	// store.ErrConflict. Default 40.
	MaxAttempts int
	// ChangeRetention is how long the change feed keeps a change for its
	// readers. Default 10 minutes.
	ChangeRetention time.Duration
	// AnalyzeEvery is how often the store checks whether the statistics
	// of its table are due (analyze.go). Default 5 s; negative: never.
	AnalyzeEvery time.Duration
	// ClockShift, for tests only, is added to the database's clock where
	// the store reads it (AcquireLease, UpdateFenced), so that a test
	// makes a lease expire without waiting. Nil: none.
	ClockShift func() time.Duration

	// beforeCommit, for tests, runs between an Update's last statement
	// (UpdateFenced's check) and its COMMIT.
	beforeCommit func()
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 16
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 40
	}
	if o.ChangeRetention <= 0 {
		o.ChangeRetention = 10 * time.Minute
	}
	if o.AnalyzeEvery == 0 {
		o.AnalyzeEvery = 5 * time.Second
	}
	return o
}

// sessionDefaults are the session settings the store gives its
// connections unless the connection string sets them.
var sessionDefaults = map[string]string{
	"application_name": "hoist",
	// An acknowledged write survives a crash of the database (and, with
	// synchronous standbys, is on one of them).
	"synchronous_commit": "on",
	// A replica stopped inside a transaction (SIGSTOP, a hung host) holds
	// its locks and the change feed's horizon for at most this long.
	"idle_in_transaction_session_timeout": "30s",
}

// Store is the PostgreSQL store.Store. See the package documentation.
type Store struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	opts Options
	gate store.Gate

	watched atomic.Pointer[map[store.Kind]bool]

	stopLoops chan struct{}
	loopsDone sync.WaitGroup

	stats struct{ commits, claims, retries, conflicts, trips atomic.Int64 }

	// renewed holds, by lease name, the latest grant AcquireLease
	// returned (store.Grant): the fence's expiry (see sqlFence).
	renewed sync.Map
}

var _ store.Store = (*Store)(nil)

// Open connects to the database connStr names (a postgres:// URL or
// keyword=value pairs; what it leaves out comes from the PG* environment
// variables, as for libpq), checks the server and brings the schema up to
// date. Neither its errors nor its log carry the password (pgx leaves it
// out of its errors: TestPasswordNeverShown).
func Open(ctx context.Context, connStr string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	cfg, err := pgxpool.ParseConfig(connStr)
	if err != nil {
		return nil, fmt.Errorf("postgres: connection string: %w", err)
	}
	if !strings.Contains(connStr, "pool_max_conns") {
		cfg.MaxConns = opts.MaxConns
	}
	for k, v := range sessionDefaults {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	where := []any{"host", cfg.ConnConfig.Host, "port", cfg.ConnConfig.Port,
		"database", cfg.ConnConfig.Database, "user", cfg.ConnConfig.User}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{pool: pool, log: opts.Logger, opts: opts, stopLoops: make(chan struct{})}
	s.watched.Store(&map[store.Kind]bool{})
	version, err := s.setup(ctx)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.trimLoop()
	if opts.AnalyzeEvery > 0 {
		s.analyzeLoop()
	}
	s.log.Info("postgres: store opened", append(where, "schema_version", version)...)
	return s, nil
}

// setup checks the server and migrates; it returns the schema version.
func (s *Store) setup(ctx context.Context) (int, error) {
	var num int
	var fsync string
	err := s.pool.QueryRow(ctx, `SELECT current_setting('server_version_num')::int, current_setting('fsync')`).Scan(&num, &fsync)
	if err != nil {
		return 0, fmt.Errorf("postgres: connect: %w", err)
	}
	if num < 130000 {
		return 0, fmt.Errorf("postgres: server version %d.%d: Hoist needs PostgreSQL 13 or later", num/10000, num%10000)
	}
	if fsync != "on" {
		s.log.Warn("postgres: the server runs with fsync=" + fsync + ": a crash of its machine can lose acknowledged writes")
	}
	return migrate(ctx, s.pool, s.log)
}

// Close waits for the Updates, Views and Leases in progress, stops the
// feed's trimming and the statistics' checks and closes the pool. Later calls wait for the first to
// finish and return its result.
func (s *Store) Close() error {
	return s.gate.Close(func() error {
		close(s.stopLoops)
		s.loopsDone.Wait()
		s.pool.Close()
		s.log.Info("postgres: store closed")
		return nil
	})
}

// Failed always returns nil: the database makes writes durable, and a
// write it could not make fails by itself (nothing is acknowledged that
// the database did not commit). An unreachable database shows in the
// errors of Updates, not here.
func (s *Store) Failed() error { return nil }

// Stats are counters since Open.
type Stats struct {
	// Commits counts Updates and Claims (fenced or not) committed;
	// Claims those of them that were Claims.
	Commits, Claims int64
	// Retries counts attempts run again after a serialization failure or
	// a deadlock.
	Retries int64
	// Conflicts counts Updates that gave up with store.ErrConflict.
	Conflicts int64
	// RoundTrips counts the round trips of Views, Updates and Claims to
	// the database (each statement, or batch of statements, sent and
	// answered, the ending COMMIT or ROLLBACK included), so that a test
	// can pin what an operation costs.
	RoundTrips int64
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.stats.commits.Load(), Claims: s.stats.claims.Load(), Retries: s.stats.retries.Load(), Conflicts: s.stats.conflicts.Load(),
		RoundTrips: s.stats.trips.Load()}
}

// Watch adds kinds to those the change feed records. Each replica records
// the writes it makes: every replica must watch the same kinds.
func (s *Store) Watch(kinds ...store.Kind) {
	for {
		old := s.watched.Load()
		m := make(map[store.Kind]bool, len(*old)+len(kinds))
		for k := range *old {
			m[k] = true
		}
		for _, k := range kinds {
			m[k] = true
		}
		if s.watched.CompareAndSwap(old, &m) {
			return
		}
	}
}

func (s *Store) isWatched(kind store.Kind) bool { return (*s.watched.Load())[kind] }

// errNoSchema: the search_path names no schema that exists.
var errNoSchema = errors.New("postgres: no schema to keep Hoist's tables in: the connection's search_path names none that exists (create it, or set search_path in the connection string)")

// shift is the test clock shift in nanoseconds, as a query argument.
func (s *Store) shift() int64 {
	if s.opts.ClockShift == nil {
		return 0
	}
	return int64(s.opts.ClockShift())
}

// itoa is strconv.Itoa, for building SQL placeholders.
func itoa(n int) string { return strconv.Itoa(n) }
