package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/filelock"
)

// ErrLocked is returned by Open when another process (or another Store in
// this process) has the directory open.
var ErrLocked = filelock.ErrLocked

// Options configure Open. The zero value is usable.
type Options struct {
	// Logger receives recovery, snapshots and write failures. Default: discard.
	Logger *slog.Logger
	// SnapshotBytes: when the journal file being written grows past this
	// size, the store writes a snapshot of its state and starts a new file;
	// the snapshot replaces the older files. Default 64 MiB.
	SnapshotBytes int64
	// BufferedWrites makes the journal write through the page cache and
	// fdatasync after each batch even where it could use O_DIRECT|O_DSYNC
	// (Linux, on most file systems). The bytes written are the same.
	BufferedWrites bool
	// Now is the store's clock, which AcquireLease and UpdateFenced
	// measure leases by. Default time.Now.
	Now func() time.Time
	// ChangeLogSize is how many changes the change feed keeps in memory
	// for its readers. Default store.DefaultChangeLogSize.
	ChangeLogSize int

	// fs is the file system (tests); default osFS.
	fs vfs
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SnapshotBytes <= 0 {
		o.SnapshotBytes = 64 << 20
	}
	if o.fs == nil {
		o.fs = osFS{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// lease is the holder of a named lease, when it expires (Unix
// nanoseconds) and the term the holder has it in.
type lease struct {
	holder  string
	expires int64
	term    int64
}

// snapshot is the state as of one point of the journal. Its tables are never
// written again (the working state copies a node before writing it), so
// Views read it without locks.
type snapshot struct {
	tables  map[store.Kind]*table
	leases  map[string]lease
	nextSeq int64
	feedPos int64 // the change feed's last position in this state
}

// batch is the set of entries one write and fsync of the journal carries.
type batch struct {
	done chan struct{} // closed when the batch is durable, or failed
	err  error         // set before done is closed
}

func newBatch() *batch { return &batch{done: make(chan struct{})} }

// Store is the journal store.Store. See the package documentation.
type Store struct {
	dir  string
	opts Options
	log  *slog.Logger
	fs   vfs
	lock io.Closer

	// turn is held by the Update whose function runs and by the syncer
	// while it takes the entries to write.
	turn turnLock

	// Guarded by turn.
	tables      map[store.Kind]*table // the working state: every applied Update
	dirty       map[store.Kind]bool   // tables written since the last cut
	leases      map[string]lease
	leasesDirty bool
	nextSeq     int64
	buf         []byte                // entries not yet taken by the syncer
	open        *batch                // the batch the entries in buf will be part of
	last        *batch                // the batch of the newest entry, nil before the first
	cutSnap     *snapshot             // the state as of the end of the last batch taken
	failed      error                 // a journal write failed: the store takes no more writes
	failure     atomic.Pointer[error] // failed, for Failed

	durable atomic.Pointer[snapshot] // what Views read: the state as of the last durable batch
	feed    *store.ChangeLog         // positions published as their batches become durable

	// Handing batches to the syncer. The holder of the turn takes the
	// waiting entries (and cuts the snapshot they lead to) when the syncer
	// is idle, so that the syncer does not queue for the turn behind the
	// Updates; the syncer takes them itself only when no Update is there
	// to do it.
	mu      sync.Mutex
	idle    bool      // the syncer waits for a job
	pending bool      // buf holds entries no job has taken
	inTurn  int       // Updates waiting for or holding the turn
	spare   []byte    // a written batch's buffer, for reuse
	jobs    chan *job // to the syncer; nil: take the entries yourself

	// Owned by the syncer goroutine.
	out      appender       // the journal file being written
	frame    []byte         // the batch being written, framed
	gen      uint64         // its generation
	snapping sync.WaitGroup // a snapshot being written
	snapBusy atomic.Bool
	direct   atomic.Bool // out.direct, for DirectWrites

	gate   store.Gate    // Updates, Views and Leases in progress
	stop   chan struct{} // closed by Close once the gate is empty
	exited chan struct{} // closed when the syncer has flushed and stopped

	stats struct{ batches, updates atomic.Int64 }
}

var _ store.Store = (*Store)(nil)

// Open opens (creating it if needed) the journal store in directory dir:
// it takes the lock file, loads the newest snapshot and replays the journal
// files after it. A second Open of the same directory, from any process,
// fails with ErrLocked until Close.
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("journal: empty directory")
	}
	opts = opts.withDefaults()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := opts.fs.MkdirAll(abs); err != nil {
		return nil, fmt.Errorf("journal: directory: %w", err)
	}
	lock, err := opts.fs.Lock(filepath.Join(abs, "LOCK"))
	if err != nil {
		return nil, err
	}
	s := &Store{
		dir: abs, opts: opts, log: opts.Logger, fs: opts.fs, lock: lock,
		tables: map[store.Kind]*table{}, dirty: map[store.Kind]bool{}, leases: map[string]lease{},
		nextSeq: 1, open: newBatch(), feed: store.NewChangeLog(opts.ChangeLogSize),
		idle: true, jobs: make(chan *job, 1), stop: make(chan struct{}), exited: make(chan struct{}),
	}
	start := time.Now()
	if err := s.recover(); err != nil {
		_ = s.out.close()
		_ = lock.Close()
		return nil, err
	}
	for kind, t := range s.tables {
		s.tables[kind] = t.compacted() // see compacted
	}
	s.cutSnap = &snapshot{tables: map[store.Kind]*table{}, leases: map[string]lease{}}
	for kind := range s.tables {
		s.dirty[kind] = true // replayed: the first cut must take every table
	}
	s.leasesDirty = true
	s.durable.Store(s.cut())
	s.direct.Store(s.out.direct)
	go s.run()
	s.log.Info("journal: store opened", "dir", abs, "generation", s.gen, "kinds", len(s.tables),
		"direct_writes", s.out.direct,
		"took", time.Since(start).Round(time.Millisecond))
	return s, nil
}

// Close waits for the Updates, Views and Leases in progress, writes what is
// left and closes the journal. Later calls wait for the first to finish and
// return its result.
func (s *Store) Close() error {
	return s.gate.Close(func() error {
		close(s.stop)
		<-s.exited
		s.snapping.Wait()
		var errs []error
		if s.failed != nil {
			errs = append(errs, s.failed)
		}
		errs = append(errs, s.out.close(), s.lock.Close())
		err := errors.Join(errs...)
		s.log.Info("journal: store closed", "dir", s.dir, "err", err)
		return err
	})
}

// Update runs fn in the calling goroutine while it holds the store's turn,
// on the working state; fn's writes are applied in place and encoded as one
// journal entry. If fn fails (or panics) its writes are undone. Update
// returns once the entry is durable: written and fsynced by the syncer,
// which carries every entry appended while the previous fsync ran in one
// write (group commit). fn must not call Update or Lease (it would wait for
// itself).
func (s *Store) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := s.gate.Begin(ctx); err != nil {
		return err
	}
	defer s.gate.Leave()
	return s.update(ctx, func(tx *writeTx) error { return fn(tx) })
}

func (s *Store) update(ctx context.Context, fn func(tx *writeTx) error) error {
	s.mu.Lock()
	s.inTurn++
	s.mu.Unlock()
	if err := s.turn.lock(ctx); err != nil {
		s.leaveWithoutTurn()
		return err
	}
	if s.failed != nil {
		err := s.failed
		s.release(false)
		return err
	}
	if err := ctx.Err(); err != nil {
		s.release(false)
		return err
	}
	var start int
	s.buf, start = beginEntry(s.buf)
	tx := &writeTx{reader: reader{tables: s.tables}, s: s}
	returned := false
	defer func() {
		if !returned {
			// fn panicked (the panic goes on up) or ended its goroutine
			// (runtime.Goexit, as t.FailNow does): undo its writes and give
			// the turn back.
			tx.done = true
			tx.rollback()
			s.buf = s.buf[:start]
			s.release(false)
		}
	}()
	err := fn(tx)
	returned = true
	tx.done = true
	if err != nil || tx.ops == 0 {
		if err != nil {
			tx.rollback()
		}
		s.buf = s.buf[:start]
		seen := s.last
		s.release(false)
		// fn decided on what it read, which may be writes not durable yet:
		// answer only once they are, so that no one acts on a state that a
		// crash could take back.
		if seen != nil {
			<-seen.done
			if seen.err != nil {
				return seen.err
			}
		}
		return err
	}
	s.buf = finishEntry(s.buf, start)
	b := s.open
	s.last = b
	s.release(true)
	<-b.done
	return b.err
}

// release gives the turn back; appended says the holder appended an entry.
// When the syncer is idle and entries wait, the holder hands them over.
func (s *Store) release(appended bool) {
	s.mu.Lock()
	s.inTurn--
	if appended {
		s.pending = true
		s.stats.updates.Add(1)
	}
	var j *job
	if s.idle && s.pending {
		s.idle = false
		j = s.take()
	}
	s.mu.Unlock()
	s.turn.unlock()
	if j != nil {
		s.jobs <- j
	}
}

// leaveWithoutTurn is release for an Update that gave up waiting for the
// turn: if the syncer went idle counting on it, the syncer is woken.
func (s *Store) leaveWithoutTurn() {
	s.mu.Lock()
	s.inTurn--
	wake := s.idle && s.pending && s.inTurn == 0
	if wake {
		s.idle = false
	}
	s.mu.Unlock()
	if wake {
		s.jobs <- nil
	}
}

// keptBuffer is the largest buffer a batch leaves for the next one to
// reuse (its entries, its frame, the direct writes' aligned copy): a batch
// larger than that, rare, allocates its own, and the memory goes back to
// the heap once it is written.
const keptBuffer = 4 << 20

// job is a batch taken for the syncer: its entries, the state they lead
// to, and the batch to complete.
type job struct {
	b      *batch
	data   []byte
	snap   *snapshot
	failed error
}

// take takes the waiting entries as a job. The caller holds the turn and mu.
func (s *Store) take() *job {
	j := &job{b: s.open, data: s.buf, snap: s.cut(), failed: s.failed}
	s.buf, s.spare, s.open, s.pending = s.spare[:0], nil, newBatch(), false
	return j
}

// View runs fn on the state as of the last durable batch: a snapshot that
// writes made meanwhile do not change. It never waits for an Update.
func (s *Store) View(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := s.gate.Begin(ctx); err != nil {
		return err
	}
	defer s.gate.Leave()
	tx := &readTx{reader{tables: s.durable.Load().tables}}
	defer func() { tx.done = true }()
	return fn(tx)
}

// Lease takes or renews the lease name for holder until now+ttl when it is
// free, expired (its expiry is not after now) or already holder's. It is a
// durable write like an Update. A ttl <= 0 gives a holder's lease up.
func (s *Store) Lease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return false, err
	}
	defer s.gate.Leave()
	at, expires := store.LeaseTimes(now, ttl)
	var got bool
	err := s.update(ctx, func(tx *writeTx) error {
		_, got = tx.lease(name, holder, at, expires)
		return nil
	})
	return got && ttl > 0, err
}

// AcquireLease is Lease measured by the store's clock (Options.Now), and
// returns the grant with its term.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Grant, bool, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return store.Grant{}, false, err
	}
	defer s.gate.Leave()
	var l lease
	var got bool
	err := s.update(ctx, func(tx *writeTx) error {
		at, expires := store.LeaseTimes(s.opts.Now(), ttl)
		l, got = tx.lease(name, holder, at, expires)
		return nil
	})
	if err != nil || !got || ttl <= 0 {
		return store.Grant{}, false, err
	}
	return store.Grant{Name: name, Holder: holder, Term: l.term, Expires: time.Unix(0, l.expires)}, true, nil
}

// UpdateFenced is Update that, once fn has returned nil and before its
// writes are appended, checks in the same turn that g still holds by the
// store's clock; no other write can come in between.
func (s *Store) UpdateFenced(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error {
	if err := s.gate.Begin(ctx); err != nil {
		return err
	}
	defer s.gate.Leave()
	return s.update(ctx, func(tx *writeTx) error {
		if err := fn(tx); err != nil {
			return err
		}
		now, _ := store.LeaseTimes(s.opts.Now(), 0)
		if cur, ok := s.leases[g.Name]; !ok || cur.holder != g.Holder || cur.term != g.Term || cur.expires <= now {
			return store.ErrLeaseLost
		}
		return nil
	})
}

// Leases returns the leases whose names begin with prefix, unexpired by
// the store's clock, as of the last durable batch (what a View sees).
func (s *Store) Leases(ctx context.Context, prefix string) ([]store.Grant, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return nil, err
	}
	defer s.gate.Leave()
	now, _ := store.LeaseTimes(s.opts.Now(), 0)
	var out []store.Grant
	for name, l := range s.durable.Load().leases {
		if strings.HasPrefix(name, prefix) && l.expires > now {
			out = append(out, store.Grant{Name: name, Holder: l.holder, Term: l.term, Expires: time.Unix(0, l.expires)})
		}
	}
	slices.SortFunc(out, func(a, b store.Grant) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Claim is Update: Updates run one at a time, so a List never meets a
// record another transaction holds.
func (s *Store) Claim(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.Update(ctx, fn)
}

// Watch adds kinds to those the change feed records.
func (s *Store) Watch(kinds ...store.Kind) { s.feed.Watch(kinds...) }

// Changes reads the change feed (see store.Store): positions are numbered
// in the order of the Updates' turns, which is their commit order, and
// readers see those of durable batches only. The feed is kept in memory:
// a position from before the store was opened fails with
// store.ErrChangesLost, as does one older than the last
// Options.ChangeLogSize changes.
func (s *Store) Changes(ctx context.Context, after string, limit int, kinds ...store.Kind) ([]store.Change, string, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return nil, "", err
	}
	defer s.gate.Leave()
	refs, next, err := s.feed.Read(after, limit, kinds)
	if err != nil {
		return nil, "", err
	}
	snap := s.durable.Load() // as new as the positions read, or newer
	out := make([]store.Change, len(refs))
	for i, ref := range refs {
		out[i] = store.Change{Record: store.Record{Kind: ref.Kind, ID: ref.ID}, Deleted: true}
		if t := snap.tables[ref.Kind]; t != nil {
			if r := t.get(ref.ID); r != nil {
				out[i] = store.Change{Record: r.record(ref.Kind)}
			}
		}
	}
	return out, next, nil
}

// cut returns the working state as a snapshot, sharing the tables no write
// touched since the last cut. The caller holds the turn.
func (s *Store) cut() *snapshot {
	prev := s.cutSnap
	feedPos := s.feed.Mark() - 1
	if len(s.dirty) == 0 && !s.leasesDirty && s.nextSeq == prev.nextSeq && feedPos == prev.feedPos {
		return prev
	}
	ns := &snapshot{tables: maps.Clone(prev.tables), leases: prev.leases, nextSeq: s.nextSeq, feedPos: feedPos}
	for kind := range s.dirty {
		ns.tables[kind] = s.tables[kind].clone()
	}
	clear(s.dirty)
	if s.leasesDirty {
		ns.leases = maps.Clone(s.leases)
		s.leasesDirty = false
	}
	s.cutSnap = ns
	return ns
}

// run is the syncer: it writes the jobs' entries, fsyncs, publishes the
// state they lead to for Views and wakes their Updates.
func (s *Store) run() {
	defer close(s.exited)
	for {
		var j *job
		select {
		case j = <-s.jobs:
			if j == nil {
				j = s.takeWithTurn()
			}
		case <-s.stop:
			// Close: no Update runs any more; write what is left.
			select {
			case j = <-s.jobs:
				if j == nil {
					j = s.takeWithTurn()
				}
			default:
				j = s.takeWithTurn()
			}
			if j != nil {
				s.sync(j)
			}
			return
		}
		for j != nil {
			s.sync(j)
			j = s.next()
		}
	}
}

// next returns the job to write after one was written: the entries that
// came meanwhile, when no Update is there to hand them over.
func (s *Store) next() *job {
	s.mu.Lock()
	if !s.pending || s.inTurn > 0 {
		s.idle = true
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	return s.takeWithTurn()
}

// takeWithTurn takes the waiting entries, if any, holding the turn.
func (s *Store) takeWithTurn() *job {
	s.turn.lock(context.Background())
	s.mu.Lock()
	var j *job
	if s.pending {
		j = s.take()
	} else {
		s.idle = true
	}
	s.mu.Unlock()
	s.turn.unlock()
	return j
}

// sync writes and fsyncs a job's entries as one batch.
func (s *Store) sync(j *job) {
	err := j.failed
	if err == nil {
		s.frame = frameBatch(s.frame[:0], j.data)
		if err = s.out.append(s.frame); err != nil {
			s.log.Error("journal: write failed; the store takes no more writes until Hoist restarts", "err", err)
			err = fmt.Errorf("journal: write failed, the store takes no more writes until restarted: %w", err)
			s.failure.Store(&err)
			s.turn.lock(context.Background())
			s.failed = err
			s.turn.unlock()
		}
	}
	if err == nil {
		s.durable.Store(j.snap)
		s.feed.Publish(j.snap.feedPos)
		s.stats.batches.Add(1)
	}
	j.b.err = err
	close(j.b.done)
	if cap(s.frame) > keptBuffer {
		s.frame = nil
	}
	s.mu.Lock()
	s.spare = nil
	if cap(j.data) <= keptBuffer {
		s.spare = j.data[:0]
	}
	s.mu.Unlock()
	if err == nil && s.out.size >= s.opts.SnapshotBytes && !s.snapBusy.Load() {
		s.rotate(j.snap)
	}
	s.direct.Store(s.out.direct)
}

// Kinds returns the kinds that have records, as of the last durable batch
// (store.Dumper).
func (s *Store) Kinds(ctx context.Context) ([]store.Kind, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return nil, err
	}
	defer s.gate.Leave()
	var kinds []store.Kind
	for kind, t := range s.durable.Load().tables {
		if t.byID.Len() > 0 {
			kinds = append(kinds, kind)
		}
	}
	return kinds, nil
}

// NextSeq returns the Seq the next new record would take, as of the last
// durable batch (store.Dumper).
func (s *Store) NextSeq(ctx context.Context) (int64, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return 0, err
	}
	defer s.gate.Leave()
	return s.durable.Load().nextSeq, nil
}

// Failed returns the error of the journal write or fsync that failed, after
// which the store takes no more writes until it is opened again, or nil.
func (s *Store) Failed() error {
	if p := s.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// DirectWrites reports whether the journal is being written with
// O_DIRECT|O_DSYNC rather than through the page cache.
func (s *Store) DirectWrites() bool { return s.direct.Load() }

// Stats are counters since Open.
type Stats struct {
	// Batches is the number of journal writes (each one fsync).
	Batches int64
	// Updates is the number of Updates (and Leases) that wrote an entry;
	// Updates/Batches is the mean group commit size.
	Updates int64
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{Batches: s.stats.batches.Load(), Updates: s.stats.updates.Load()}
}
