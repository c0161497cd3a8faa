package replicas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/store"
)

// KindInboxMessage is a message waiting in a replica's inbox. Record: ID
// random, Parent = the replica expected to hold the target's connection,
// Key = the target ("process/<ID>", "compute/<fleet>/<name>",
// "host/<ID>"), Rank = its place among the target's messages (one more
// than the last one waiting when it was posted).
const KindInboxMessage store.Kind = "InboxMessage"

// Target kinds.
const (
	TargetProcess = "process"
	TargetCompute = "compute"
	TargetHost    = "host"
)

// Target names a connection: its kind and its ID within the kind.
func Target(kind, id string) string { return kind + "/" + id }

// splitTarget returns a target's kind and ID.
func splitTarget(t string) (kind, id string) {
	kind, id, _ = strings.Cut(t, "/")
	return kind, id
}

// WakeChannel is the store wake channel of the inbox; a wake's payload is
// the ID of the replica whose inbox has something new.
const WakeChannel = "hoist_inbox"

// Defaults of the inbox.
const (
	// DefaultPoll is how often a replica looks at its inbox unwoken: the
	// authority, for a wake may be lost.
	DefaultPoll = 500 * time.Millisecond
	// deliverTimeout bounds one delivery over a connection.
	deliverTimeout = 10 * time.Second
	// maxTries is how many passes retry a message whose delivery failed
	// other than for want of a connection before it is dropped.
	maxTries = 5
	// pageSize is how many messages a pass reads at once.
	pageSize = 256
	// passWorkers is how many targets a pass handles at once: each
	// target costs a read of its messages and their delete, a few round
	// trips and a commit, so that a burst of messages for many processes (a
	// placement burst's game sessions) is not delivered one commit after
	// another.
	passWorkers = 8
)

// ErrNoConnection is returned (wrapped) by a Route's Deliver when this
// replica holds no connection of the target.
var ErrNoConnection = errors.New("replicas: no connection to the target on this replica")

// message is an InboxMessage's Data.
type message struct {
	Body   json.RawMessage `json:"body"`
	From   string          `json:"from"`
	Posted time.Time       `json:"posted"`
}

// Route is how the inbox reaches one kind of target.
type Route struct {
	// Holder returns, reading tx, the replica holding the target's
	// connection ("" for none).
	Holder func(ctx context.Context, tx store.Tx, id string) (string, error)
	// Deliver sends a message's body over this replica's connection to
	// the target and returns once it is written; ErrNoConnection when
	// there is none here.
	Deliver func(ctx context.Context, id string, body json.RawMessage) error
	// Undelivered, when set, is told of a message dropped (its target
	// has no connection anywhere), so that what waited on it can fail.
	Undelivered func(ctx context.Context, id string, body json.RawMessage)
}

// Config configures an Inbox.
type Config struct {
	Store store.Store
	// Self is this replica's ID.
	Self string
	// Poll defaults to DefaultPoll.
	Poll time.Duration
	Log  *slog.Logger
}

// Inbox is this replica's inbox, and the posting of messages to the
// others'. A nil *Inbox is a replica alone: nothing is remote.
type Inbox struct {
	cfg    Config
	log    *slog.Logger
	waker  store.Waker // nil: the store cannot wake (polling only)
	routes map[string]Route
	kick   chan struct{}

	mu      sync.Mutex
	pending map[string]bool // replicas to wake
	wakeSig chan struct{}
	tries   map[string]int // failed deliveries per message ID
}

// New returns an Inbox; its routes are added with Handle before Run.
func New(cfg Config) *Inbox {
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ib := &Inbox{cfg: cfg, log: cfg.Log, routes: map[string]Route{}, kick: make(chan struct{}, 1),
		pending: map[string]bool{}, wakeSig: make(chan struct{}, 1), tries: map[string]int{}}
	ib.waker, _ = cfg.Store.(store.Waker)
	return ib
}

// Handle sets the route of a target kind.
func (ib *Inbox) Handle(kind string, r Route) { ib.routes[kind] = r }

// Remote reports whether a connection held by replica is held by another
// replica than this one, so that a message for it goes through PostTx
// ("" is no connection: not remote). Always false for a nil Inbox.
func (ib *Inbox) Remote(replica string) bool {
	return ib != nil && replica != "" && replica != ib.cfg.Self
}

// PostTx writes msg (JSON-encoded) for target into replica's inbox in tx,
// after every message already waiting for target, so that the target
// gets its messages in the order their transactions committed (two
// transactions posting to one target both read its last message: the
// store serializes them). The caller wakes replica once tx committed.
func (ib *Inbox) PostTx(ctx context.Context, tx store.Tx, replica, target string, msg any) error {
	body, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("replicas: encoding a message for %s: %w", target, err)
	}
	last, _, err := tx.List(ctx, store.Query{Kind: KindInboxMessage, Key: target, HasKey: true,
		Order: store.OrderRankDesc, Limit: 1, NoData: true})
	if err != nil {
		return err
	}
	rank := int64(1)
	if len(last) == 1 {
		rank = last[0].Rank + 1
	}
	data, err := json.Marshal(message{Body: body, From: ib.cfg.Self, Posted: time.Now().UTC()})
	if err != nil {
		return err
	}
	// A random ID: inserted with the commit, without a round trip of its own.
	return store.InsertNew(ctx, tx, store.Record{Kind: KindInboxMessage, ID: ids.UUID(), Parent: replica, Key: target,
		Rank: rank, Data: data})
}

// Wake tells replica that its inbox has something new: at once when it
// is this one; else by a wake sent in the background, coalesced with the
// others pending. A nil Inbox ignores it.
func (ib *Inbox) Wake(replica string) {
	if ib == nil || replica == "" {
		return
	}
	if replica == ib.cfg.Self {
		ib.Kick()
		return
	}
	ib.mu.Lock()
	ib.pending[replica] = true
	ib.mu.Unlock()
	select {
	case ib.wakeSig <- struct{}{}:
	default:
	}
}

// Kick makes this replica look at its inbox now.
func (ib *Inbox) Kick() {
	select {
	case ib.kick <- struct{}{}:
	default:
	}
}

// Run delivers this replica's inbox until ctx ends: at each wake (LISTEN,
// when the store can) and every Poll; beside it, the wakes this replica
// sends go out, coalesced.
func (ib *Inbox) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	if ib.waker != nil {
		wg.Go(func() { ib.sendWakes(ctx) })
		wg.Go(func() {
			_ = ib.waker.Listen(ctx, WakeChannel, func(p string) {
				if p == "" || p == ib.cfg.Self {
					ib.Kick()
				}
			})
		})
	}
	tick := time.NewTicker(ib.cfg.Poll)
	defer tick.Stop()
	for {
		if err := ib.Pass(ctx); err != nil && ctx.Err() == nil {
			ib.log.Warn("inbox: pass", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-ib.kick:
		}
	}
}

// sendWakes sends the pending wakes, all of them in one statement, each
// time there are some.
func (ib *Inbox) sendWakes(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ib.wakeSig:
		}
		ib.mu.Lock()
		to := make([]string, 0, len(ib.pending))
		for r := range ib.pending {
			to = append(to, r)
		}
		clear(ib.pending)
		ib.mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := ib.waker.Wake(wctx, WakeChannel, to...); err != nil && ctx.Err() == nil {
			ib.log.Info("inbox: wake not sent (the replicas find their messages at their next poll)", "replicas", to, "err", err)
		}
		cancel()
	}
}

// Pass handles every target with messages in this replica's inbox, up
// to passWorkers targets at once, starting in the order their first
// waiting message was posted. Each target is handled by one worker, its
// messages in order; targets are distinct connections, whose messages
// were never ordered with each other's.
func (ib *Inbox) Pass(ctx context.Context) error {
	targets, err := ib.targets(ctx, ib.cfg.Self)
	if err != nil {
		return err
	}
	errs := make([]error, len(targets))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(passWorkers, len(targets)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(targets) {
					return
				}
				if err := ib.handleTarget(ctx, targets[i]); err != nil {
					errs[i] = fmt.Errorf("%s: %w", targets[i], err)
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// targets returns the distinct targets of replica's inbox (its first
// page), in creation order.
func (ib *Inbox) targets(ctx context.Context, replica string) ([]string, error) {
	var recs []store.Record
	err := store.Read(ctx, ib.cfg.Store, func(tx store.Tx) error { // one read
		var err error
		recs, _, err = tx.List(ctx, store.Query{Kind: KindInboxMessage, Parent: replica, HasParent: true,
			Order: store.OrderCreated, Limit: pageSize, NoData: true})
		return err
	})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range recs {
		if !seen[r.Key] {
			seen[r.Key] = true
			out = append(out, r.Key)
		}
	}
	return out, nil
}
