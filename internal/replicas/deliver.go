package replicas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hoistgg/hoist/internal/store"
)

// waiting is a target's messages, in order, and who holds its connection.
type waiting struct {
	holder string
	msgs   []store.Record
}

// look reads target's holder, then its waiting messages (every replica's
// inbox: a message re-routed late still comes before the later ones), in
// a store.Read: the two reads need not share a snapshot (a connection
// that moves after either is found moved when its message is delivered,
// as it would be after a snapshot's reads).
func (ib *Inbox) look(ctx context.Context, route Route, target, id string) (waiting, error) {
	var w waiting
	err := store.Read(ctx, ib.cfg.Store, func(tx store.Tx) error {
		var err error
		if w.holder, err = route.Holder(ctx, tx, id); err != nil {
			return err
		}
		w.msgs, _, err = tx.List(ctx, store.Query{Kind: KindInboxMessage, Key: target, HasKey: true,
			Order: store.OrderRankAsc, Limit: pageSize})
		return err
	})
	return w, err
}

// handleTarget delivers target's messages when its connection is here,
// re-routes those of this inbox to the replica now holding it, or drops
// them when it has none.
func (ib *Inbox) handleTarget(ctx context.Context, target string) error {
	kind, id := splitTarget(target)
	route, ok := ib.routes[kind]
	if !ok {
		return ib.drop(ctx, target, Route{}, ib.cfg.Self, "no route for its kind")
	}
	w, err := ib.look(ctx, route, target, id)
	if err != nil {
		return err
	}
	switch w.holder {
	case ib.cfg.Self:
		return ib.deliver(ctx, target, route, id, w.msgs)
	case "":
		return ib.drop(ctx, target, route, ib.cfg.Self, "its target has no connection")
	default:
		return ib.reroute(ctx, target, ib.cfg.Self, w.holder)
	}
}

// deliver sends msgs over this replica's connection in order, stopping
// at the first that fails, and deletes those sent. A target with no
// connection here after all (its record names this replica, its socket is
// gone) loses the rest; another failure is retried by the next passes,
// up to maxTries.
func (ib *Inbox) deliver(ctx context.Context, target string, route Route, id string, msgs []store.Record) error {
	var sent []string
	var failed error
	for _, rec := range msgs {
		var m message
		if err := json.Unmarshal(rec.Data, &m); err != nil {
			ib.log.Warn("inbox: a damaged message dropped", "target", target, "err", err)
			sent = append(sent, rec.ID)
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, deliverTimeout)
		err := route.Deliver(dctx, id, m.Body)
		cancel()
		if err != nil {
			if failed = ib.failed(ctx, target, route, id, rec, m, err); failed != nil {
				break // kept, and the ones after it, for the next pass
			}
		}
		sent = append(sent, rec.ID) // delivered, or dropped
	}
	if err := ib.remove(ctx, sent); err != nil {
		return err
	}
	return failed
}

// failed decides about a message whose delivery failed: dropped (nil)
// when there is no connection here or it failed maxTries times, else
// kept for the next pass (the error).
func (ib *Inbox) failed(ctx context.Context, target string, route Route, id string, rec store.Record, m message, err error) error {
	ib.mu.Lock()
	ib.tries[rec.ID]++
	n := ib.tries[rec.ID]
	if errors.Is(err, ErrNoConnection) || n >= maxTries || ctx.Err() != nil {
		delete(ib.tries, rec.ID)
	}
	ib.mu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !errors.Is(err, ErrNoConnection) && n < maxTries {
		return fmt.Errorf("delivery failed (try %d of %d): %w", n, maxTries, err)
	}
	ib.log.Warn("inbox: message dropped: not delivered", "target", target, "from", m.From, "err", err)
	if route.Undelivered != nil {
		route.Undelivered(ctx, id, m.Body)
	}
	return nil
}

// remove deletes delivered messages (one already gone is no error): one
// statement, sent with the COMMIT of a Claim (on PostgreSQL a READ
// COMMITTED transaction: deleting rows by ID needs no serializable
// snapshot, and a poster reading the target's last message while it goes
// either numbers its message after it or, finding none, from 1).
func (ib *Inbox) remove(ctx context.Context, msgIDs []string) error {
	if len(msgIDs) == 0 {
		return nil
	}
	return ib.cfg.Store.Claim(ctx, func(tx store.Tx) error {
		return store.DeleteMany(ctx, tx, KindInboxMessage, msgIDs)
	})
}

// inboxOf lists the messages for target in replica's inbox.
func inboxOf(ctx context.Context, tx store.Tx, replica, target string) ([]store.Record, error) {
	recs, _, err := tx.List(ctx, store.Query{Kind: KindInboxMessage, Parent: replica, HasParent: true,
		Key: target, HasKey: true, Order: store.OrderRankAsc, Limit: pageSize})
	return recs, err
}

// reroute moves target's messages from replica's inbox to holder's, and
// wakes holder.
func (ib *Inbox) reroute(ctx context.Context, target, replica, holder string) error {
	err := ib.cfg.Store.Update(ctx, func(tx store.Tx) error {
		recs, err := inboxOf(ctx, tx, replica, target)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			rec.Parent = holder
			if err := tx.Put(ctx, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	ib.log.Info("inbox: messages re-routed: their target's connection moved", "target", target, "from", replica, "to", holder)
	ib.Wake(holder)
	return nil
}

// drop deletes target's messages from replica's inbox, logging each and
// telling the route.
func (ib *Inbox) drop(ctx context.Context, target string, route Route, replica, why string) error {
	var dropped []store.Record
	err := ib.cfg.Store.Update(ctx, func(tx store.Tx) error {
		recs, err := inboxOf(ctx, tx, replica, target)
		if err != nil {
			return err
		}
		dropped = recs
		gone := make([]string, len(recs))
		for i, rec := range recs {
			gone[i] = rec.ID
		}
		return store.DeleteMany(ctx, tx, KindInboxMessage, gone)
	})
	if err != nil {
		return err
	}
	_, id := splitTarget(target)
	for _, rec := range dropped {
		var m message
		_ = json.Unmarshal(rec.Data, &m)
		ib.log.Warn("inbox: message dropped: "+why, "target", target, "from", m.From, "posted", m.Posted)
		if route.Undelivered != nil {
			route.Undelivered(ctx, id, m.Body)
		}
	}
	return nil
}

// Adopt handles the inbox of a dead replica (the janitor calls it once it
// cleared what named the replica): each target's messages go to the
// replica now holding its connection, or are dropped.
func (ib *Inbox) Adopt(ctx context.Context, dead string) error {
	if ib == nil {
		return nil
	}
	for {
		targets, err := ib.targets(ctx, dead)
		if err != nil || len(targets) == 0 {
			return err
		}
		for _, t := range targets {
			if err := ib.adoptTarget(ctx, dead, t); err != nil {
				return fmt.Errorf("%s: %w", t, err)
			}
		}
	}
}

// adoptTarget re-routes or drops one target's messages of a dead
// replica's inbox.
func (ib *Inbox) adoptTarget(ctx context.Context, dead, target string) error {
	kind, id := splitTarget(target)
	route, ok := ib.routes[kind]
	if !ok {
		return ib.drop(ctx, target, Route{}, dead, "no route for its kind")
	}
	w, err := ib.look(ctx, route, target, id)
	if err != nil {
		return err
	}
	if w.holder == "" || w.holder == dead {
		return ib.drop(ctx, target, route, dead, "its replica died and it has no connection elsewhere")
	}
	return ib.reroute(ctx, target, dead, w.holder)
}
