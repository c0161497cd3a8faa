package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hoistgg/hoist/internal/store"
)

// The live stream reads events in the order they were committed, through
// the store's change feed: each Publish also inserts a kindLive record (no
// data, under the event's ID), which nothing changes afterwards and
// which is deleted with its event, and every replica watches that kind. A
// reader follows the feed's inserts of kindLive, so it skips no event and
// repeats none, whichever replica published it and in whatever order
// their transactions took their store Seqs (on PostgreSQL, Seq is the
// order inserts ran, not the order they committed).
//
// A stream's position, sent as each event's SSE id (a Cursor), is
// "<seq>.<feed position>.<n>": the event came n-th in the feed's page read
// from that position, and its kindLive record has that Seq. Resumed with
// it (Last-Event-ID), a reader reads the same page again and skips its
// first n changes: a page read again from a position starts with the same
// changes. Where the feed no longer holds the position (PostgreSQL keeps
// 10 minutes, an embedded store its last changes and only until it is
// opened again), the reader replays instead the kept events after <seq>,
// in Seq order. An id that is only a number (an older Hoist's, or "0" for
// every kept event) replays the same way. A replay takes the feed's head
// before its first listing and, once a listing comes back empty, follows
// the feed from that head, leaving out the events it listed: an event
// committed before the head is in the listings, one committed after it in
// the feed (and in a listing too when it committed before that listing).
// Replays go by Seq, so on PostgreSQL a replay after a Seq misses an event
// with a lower Seq that committed after the event of that Seq was sent;
// following the feed does not.

// kindLive holds, for each published event (ID the event's), nothing
// (the event's own record holds the envelope), inserted with the event and
// deleted with it: the change feed's inserts of this kind are what live
// streams follow.
const kindLive store.Kind = "EventLive"

// ErrBadCursor: a Last-Event-ID that is not a position of the stream.
var ErrBadCursor = errors.New("not an id the event stream sent")

// maxCursorSkip bounds the n of a Cursor (a page holds at most this many
// changes).
const maxCursorSkip = 1 << 16

// Item is a stored event as the live stream reads it.
type Item struct {
	// Cursor is the stream's position after this event, sent as the SSE
	// id: a Reader started after it continues with the next event.
	Cursor string
	ID     string
	// Resources are the envelope's resources.
	Resources []string
	// Body is the envelope.
	Body json.RawMessage
}

// Matches reports whether the event is about resource: one of its
// resources is resource, or is an ARN whose resource name (after the
// last '/') is resource. "" matches every event.
func (it Item) Matches(resource string) bool {
	if resource == "" {
		return true
	}
	for _, r := range it.Resources {
		if r == resource {
			return true
		}
		if i := strings.LastIndexByte(r, '/'); i >= 0 && strings.HasPrefix(r, "arn:") && r[i+1:] == resource {
			return true
		}
	}
	return false
}

// Reader follows the published events for one live stream, in commit
// order. It is not safe for concurrent use.
type Reader struct {
	s *Service
	// seq is the Seq after which a replay lists events: of the last event
	// sent (its kindLive record's, when it came from the feed).
	seq    int64
	replay bool
	// head is, during a replay, the feed's head taken before its first
	// listing: every event committed after it comes from the feed, every
	// one before it from the listings.
	head string
	// pos is the feed position the next page is read from; skip how many
	// changes of that page were sent already (a resumed Cursor).
	pos  string
	skip int
	// replayed holds the IDs a replay sent and the feed has not shown
	// since: the feed leaves them out.
	replayed map[string]struct{}
}

// NewReader returns a Reader of the events after cursor: "" starts with
// the next event committed; a Cursor an Item carried continues after that
// item; a number replays the kept events after that store Seq ("0": all
// of them) and goes on with the next ones. Anything else is ErrBadCursor.
func (s *Service) NewReader(ctx context.Context, cursor string) (*Reader, error) {
	r := &Reader{s: s, replayed: map[string]struct{}{}}
	if cursor == "" {
		_, head, err := s.cfg.Store.Changes(ctx, "", 0, kindLive)
		if err != nil {
			return nil, err
		}
		r.pos = head
		return r, nil
	}
	c, err := parseCursor(cursor)
	if err != nil {
		return nil, err
	}
	r.seq, r.pos, r.skip, r.replay = c.seq, c.pos, c.skip, c.pos == ""
	return r, nil
}

// cursor is a parsed Cursor: pos "" for a bare Seq (a replay).
type cursor struct {
	seq  int64
	pos  string
	skip int
}

// parseCursor parses a Last-Event-ID: "<seq>" or "<seq>.<position>.<n>".
func parseCursor(s string) (cursor, error) {
	seq, rest, hasPos := strings.Cut(s, ".")
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil || n < 0 {
		return cursor{}, ErrBadCursor
	}
	if !hasPos {
		return cursor{seq: n}, nil
	}
	pos, skip, ok := strings.Cut(rest, ".")
	k, err := strconv.Atoi(skip)
	if _, _, perr := store.DecodePosition(pos); !ok || perr != nil || err != nil || k < 0 || k > maxCursorSkip {
		return cursor{}, ErrBadCursor
	}
	return cursor{seq: n, pos: pos, skip: k}, nil
}

// String formats c as parseCursor reads it.
func (c cursor) String() string {
	if c.pos == "" {
		return strconv.FormatInt(c.seq, 10)
	}
	return fmt.Sprintf("%d.%s.%d", c.seq, c.pos, c.skip)
}

// Next returns the next events (at most about limit), or none when there
// is none yet.
func (r *Reader) Next(ctx context.Context, limit int) ([]Item, error) {
	if r.replay {
		items, done, err := r.replayPage(ctx, limit)
		if err != nil || !done {
			return items, err
		}
	}
	return r.follow(ctx, limit)
}

// replayPage lists the kept events after r.seq, in Seq order; done: there
// were none, and the reader now follows the feed from its head as it was
// before the replay's first listing.
func (r *Reader) replayPage(ctx context.Context, limit int) (items []Item, done bool, err error) {
	if r.head == "" {
		if _, r.head, err = r.s.cfg.Store.Changes(ctx, "", 0, kindLive); err != nil {
			return nil, false, err
		}
	}
	err = r.s.cfg.Store.View(ctx, func(tx store.Tx) error {
		items = items[:0]
		q := store.Query{Kind: kindEvent, Order: store.OrderCreated, Limit: limit}
		if r.seq > 0 {
			q.After = store.EncodeCursor(store.OrderCreated, false, &store.Record{Seq: r.seq})
		}
		recs, _, err := tx.List(ctx, q)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			it, err := item(rec, cursor{seq: rec.Seq}.String())
			if err != nil {
				return err
			}
			items = append(items, it)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if len(items) == 0 {
		r.replay, r.pos, r.skip, r.head = false, r.head, 0, ""
		return nil, true, nil
	}
	for _, it := range items {
		r.replayed[it.ID] = struct{}{}
	}
	r.seq, _ = strconv.ParseInt(items[len(items)-1].Cursor, 10, 64)
	return items, false, nil
}

// follow reads one page of the feed from r.pos. A position the feed no
// longer holds turns the reader to a replay after the last event sent.
func (r *Reader) follow(ctx context.Context, limit int) ([]Item, error) {
	chs, next, err := r.s.cfg.Store.Changes(ctx, r.pos, limit, kindLive)
	if err == nil && r.skip > len(chs) {
		err = store.ErrChangesLost // not the page the cursor was made in
	}
	if errors.Is(err, store.ErrChangesLost) || errors.Is(err, store.ErrInvalidCursor) {
		r.replay = true
		items, _, err := r.replayPage(ctx, limit)
		return items, err
	}
	if err != nil {
		return nil, err
	}
	bodies, err := r.s.events(ctx, chs[min(r.skip, len(chs)):])
	if err != nil {
		return nil, err
	}
	var items []Item
	for i := r.skip; i < len(chs); i++ {
		c := chs[i]
		if c.Deleted {
			continue // deleted before it was read (a full outbox)
		}
		if _, ok := r.replayed[c.Record.ID]; ok {
			delete(r.replayed, c.Record.ID)
			continue
		}
		rec, ok := bodies[c.Record.ID]
		if !ok {
			continue // its event was deleted since (retention, a full outbox)
		}
		rec.Seq = c.Record.Seq
		it, err := item(rec, cursor{seq: c.Record.Seq, pos: r.pos, skip: i + 1}.String())
		if err != nil {
			return nil, err
		}
		items = append(items, it)
		r.seq = c.Record.Seq
	}
	r.pos, r.skip = next, 0
	return items, nil
}

// events reads, in one view, the event records of a page of kindLive
// inserts (a kindLive record holds no data: the event's record has the
// envelope, so the outbox does not keep it twice); an event deleted since
// is left out.
func (s *Service) events(ctx context.Context, chs []store.Change) (map[string]store.Record, error) {
	out := make(map[string]store.Record, len(chs))
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		for _, c := range chs {
			if c.Deleted {
				continue
			}
			rec, err := tx.Get(ctx, kindEvent, c.Record.ID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			out[c.Record.ID] = rec
		}
		return nil
	})
	return out, err
}

// item makes the Item of a kindEvent record.
func item(rec store.Record, cursor string) (Item, error) {
	body, err := eventBody(rec.Data)
	if err != nil {
		return Item{}, fmt.Errorf("event %s: %w", rec.ID, err)
	}
	var env struct {
		Resources []string `json:"resources"`
	}
	_ = json.Unmarshal(body, &env)
	return Item{Cursor: cursor, ID: rec.ID, Resources: env.Resources, Body: body}, nil
}
