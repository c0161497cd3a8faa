package store

import (
	"context"
	"errors"
)

// ManyGetter is implemented by the Tx of a store that reads several
// records of a kind in one round trip (PostgreSQL). GetMany is as a Get
// of each ID (in a Claim, it holds what it returns), in one statement.
type ManyGetter interface {
	GetMany(ctx context.Context, kind Kind, ids []string) ([]Record, error)
}

// GetMany returns the records of kind with the IDs ids that exist, in the
// order of ids (an ID given twice comes once); missing IDs are left out.
// It reads as tx.Get would, in one statement where tx is a ManyGetter,
// else one Get after another: a loop that would otherwise read its
// records one round trip each reads them in one.
func GetMany(ctx context.Context, tx Tx, kind Kind, ids []string) ([]Record, error) {
	if m, ok := tx.(ManyGetter); ok {
		return m.GetMany(ctx, kind, ids)
	}
	out := make([]Record, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		rec, err := tx.Get(ctx, kind, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// NewInserter is implemented by the Tx of a store whose Insert costs a
// round trip for its answer (PostgreSQL). InsertNew inserts a record
// whose ID its writer made new (a random one, as an event's): it is not
// answered, and goes with the transaction's next statement or its commit,
// as a Put does.
type NewInserter interface {
	InsertNew(ctx context.Context, rec Record) error
}

// InsertNew inserts rec, whose ID the caller made new (random, or drawn
// from a sequence only it uses), so that its insert needs no answer: on a
// NewInserter it is deferred like a Put, and an ID that existed after all
// fails the transaction (the Update returns an error that wraps
// ErrExists) rather than InsertNew. Elsewhere it is tx.Insert. It never
// replaces a record.
func InsertNew(ctx context.Context, tx Tx, rec Record) error {
	if n, ok := tx.(NewInserter); ok {
		return n.InsertNew(ctx, rec)
	}
	return tx.Insert(ctx, rec)
}

// Replacer is implemented by the Tx of a store that writes a record's new
// version without waiting for an answer (PostgreSQL).
type Replacer interface {
	Replace(ctx context.Context, rec Record) error
}

// Replace writes rec as a new version of its record: as a Delete (when it
// exists) followed by an Insert, so that it gets a new Seq (a Put keeps
// the Seq), but on a Replacer in one write that needs no answer, deferred
// as a Put is. A reader that tells versions apart by Seq sees a new one.
func Replace(ctx context.Context, tx Tx, rec Record) error {
	if r, ok := tx.(Replacer); ok {
		return r.Replace(ctx, rec)
	}
	if err := tx.Delete(ctx, rec.Kind, rec.ID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return tx.Insert(ctx, rec)
}

// ManyDeleter is implemented by the Tx of a store that deletes records
// without waiting for an answer (PostgreSQL).
type ManyDeleter interface {
	DeleteMany(ctx context.Context, kind Kind, ids []string) error
}

// DeleteMany deletes the records of kind with the IDs ids that exist (a
// missing one is no error), as a Delete of each would; on a ManyDeleter
// in one statement that needs no answer, deferred as a Put is. (An
// inbox's delivered messages.)
func DeleteMany(ctx context.Context, tx Tx, kind Kind, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if d, ok := tx.(ManyDeleter); ok {
		return d.DeleteMany(ctx, kind, ids)
	}
	for _, id := range ids {
		if err := tx.Delete(ctx, kind, id); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}

// Ref names a record for GetRefs. Unheld reads it as Unheld(tx).Get does:
// in a Claim, without holding it.
type Ref struct {
	Kind   Kind
	ID     string
	Unheld bool
}

// Got is what GetRefs read of a Ref: the record, when Found.
type Got struct {
	Record Record
	Found  bool
}

// RefsGetter is implemented by the Tx of a store that reads records of
// several kinds in one round trip (PostgreSQL): GetRefs is as a Get of
// each Ref (Unheld(tx).Get of an Unheld one), sent together.
type RefsGetter interface {
	GetRefs(ctx context.Context, refs []Ref) ([]Got, error)
}

// GetRefs reads the records refs name, a Got for each in the order of
// refs (Found false for one that does not exist): as tx.Get would each
// (Unheld(tx).Get for an Unheld ref), in one round trip where tx is a
// RefsGetter, else one Get after another. A function that needs several
// records whose IDs it knows before reading any (a Claim's counter, the
// configuration it counts for) reads them at the cost of one.
func GetRefs(ctx context.Context, tx Tx, refs []Ref) ([]Got, error) {
	if g, ok := tx.(RefsGetter); ok {
		return g.GetRefs(ctx, refs)
	}
	out := make([]Got, len(refs))
	for i, r := range refs {
		get := tx
		if r.Unheld {
			get = Unheld(tx)
		}
		rec, err := get.Get(ctx, r.Kind, r.ID)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i] = Got{Record: rec, Found: true}
	}
	return out, nil
}

// ChildFinder is implemented by the Tx of a store that finds a record and
// its first child in one statement (PostgreSQL): FirstWithChild is
// firstWithChildByLists in one round trip.
type ChildFinder interface {
	FirstWithChild(ctx context.Context, q, child Query, idFrom int) (parent, first Record, found bool, err error)
}

// FirstWithChild returns the first record of q, in q's order, that has a
// child, and its first child in child's order. A child of a record r is a
// record that child selects whose Key is child.Key followed by r.ID from
// its byte idFrom on (child.HasKey must be set: child.Key is that prefix;
// idFrom skips a prefix of the IDs, as a group's name in an instance's).
// found is false when no record of q has one. The Limit and After of both
// queries are ignored. It reads as firstWithChildByLists: in a Claim it
// holds every record of q it looked at (those passed over for want of a
// child too) and the child it returns, and SkipHeld passes over held
// records in either query. One round trip where tx is a ChildFinder. (A
// claim's busiest instance with an available game server, and that game
// server.)
func FirstWithChild(ctx context.Context, tx Tx, q, child Query, idFrom int) (Record, Record, bool, error) {
	if !child.HasKey || idFrom < 0 {
		return Record{}, Record{}, false, errors.New("store: FirstWithChild: the child query has no Key prefix, or idFrom is negative")
	}
	if f, ok := tx.(ChildFinder); ok {
		return f.FirstWithChild(ctx, q, child, idFrom)
	}
	return firstWithChildByLists(ctx, tx, q, child, idFrom)
}

// firstWithChildByLists is FirstWithChild as Lists: q one record at a
// time, and for each the first of its children, until one has a child.
func firstWithChildByLists(ctx context.Context, tx Tx, q, child Query, idFrom int) (Record, Record, bool, error) {
	q.Limit, q.After = 1, ""
	prefix := child.Key
	child.Limit, child.After = 1, ""
	for {
		recs, next, err := tx.List(ctx, q)
		if err != nil || len(recs) == 0 {
			return Record{}, Record{}, false, err
		}
		id := recs[0].ID
		child.Key = prefix + id[min(idFrom, len(id)):]
		kids, _, err := tx.List(ctx, child)
		if err != nil {
			return Record{}, Record{}, false, err
		}
		if len(kids) == 1 {
			return recs[0], kids[0], true, nil
		}
		if next == "" {
			return Record{}, Record{}, false, nil
		}
		q.After = next
	}
}
