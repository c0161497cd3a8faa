package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/sqlorder"
)

// Fixed statements. pgx prepares each statement text once per connection
// and keeps it (its statement cache), so these and the List and Count
// shapes below are parsed and planned once per connection.
const (
	sqlGet = `SELECT parent, key, rank, seq, data FROM hoist_records WHERE kind = $1 AND id = $2`
	// A Claim's Get holds the row it reads.
	sqlGetForUpdate = sqlGet + ` FOR UPDATE`
	// GetMany's: the records of kind $1 with the IDs $2, in ID order (a
	// Claim's locks them in that order, as every GetMany does).
	sqlGetMany          = `SELECT id, parent, key, rank, seq, data FROM hoist_records WHERE kind = $1 AND id = ANY($2::bytea[]) ORDER BY id`
	sqlGetManyForUpdate = sqlGetMany + ` FOR UPDATE`
	// InsertNew's: an insert that fails on an existing ID.
	sqlInsertNew = `INSERT INTO hoist_records (kind, id, parent, key, rank, data) VALUES ($1, $2, $3, $4, $5, $6)`

	sqlInsert = `INSERT INTO hoist_records (kind, id, parent, key, rank, data) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (kind, id) DO NOTHING`
	sqlPut = `INSERT INTO hoist_records (kind, id, parent, key, rank, data) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (kind, id) DO UPDATE SET
		parent = excluded.parent, key = excluded.key, rank = excluded.rank, data = excluded.data`
	// Replace's: a Put that gives the record a new Seq.
	sqlReplace = `INSERT INTO hoist_records (kind, id, parent, key, rank, data) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (kind, id) DO UPDATE SET
		parent = excluded.parent, key = excluded.key, rank = excluded.rank, data = excluded.data,
		seq = nextval('hoist_records_seq')`
	sqlDelete = `DELETE FROM hoist_records WHERE kind = $1 AND id = $2`
	// DeleteMany's: the records of kind $1 with the IDs $2 that exist.
	sqlDeleteMany = `DELETE FROM hoist_records WHERE kind = $1 AND id = ANY($2::bytea[])`

	// The same for a watched kind: the write and its change feed row in
	// one statement (the number of rows is the change rows').
	sqlInsertWatched     = `WITH w AS (` + sqlInsert + ` RETURNING kind, id) ` + sqlChangeFrom + `w`
	sqlInsertNewWatched  = `WITH w AS (` + sqlInsertNew + ` RETURNING kind, id) ` + sqlChangeFrom + `w`
	sqlPutWatched        = `WITH w AS (` + sqlPut + ` RETURNING kind, id) ` + sqlChangeFrom + `w`
	sqlReplaceWatched    = `WITH w AS (` + sqlReplace + ` RETURNING kind, id) ` + sqlChangeFrom + `w`
	sqlDeleteWatched     = `WITH w AS (` + sqlDelete + ` RETURNING kind, id) ` + sqlChangeFrom + `w`
	sqlDeleteManyWatched = `WITH w AS (` + sqlDeleteMany + ` RETURNING kind, id) ` + sqlChangeFrom + `w`
	sqlChangeFrom        = `INSERT INTO hoist_changes (xid, kind, id) SELECT pg_current_xact_id()::text::bigint, kind, id FROM `
)

// querier runs statements: a connection inside a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// shape is the shape of a List or Count statement: which filters are set,
// the order and whether it continues after a cursor. Its SQL takes the
// arguments kind, then parent, key and rank max when set, then the
// cursor's, then the limit (NULL: none).
type shape struct {
	count                bool
	parent, key, rankMax bool
	order                store.Order
	desc                 bool
	after                bool
	noData               bool
	// lock: a Claim's List, which holds the rows it returns; skip: one
	// that passes over those other transactions hold.
	lock, skip bool
}

// sql returns the statement text of k.
func (k shape) sql() string {
	n := 0
	arg := func() string { n++; return "$" + itoa(n) }
	return k.text(arg, nil, "")
}

// text returns the statement text of k, its placeholders numbered by arg
// in the order of the arguments (kind first). keyIs, when set, turns the
// Key's placeholder into the SQL that Key equals; limit, when set, is the
// SQL after its ORDER BY in place of a LIMIT placeholder.
func (k shape) text(arg func() string, keyIs func(string) string, limit string) string {
	var b strings.Builder
	switch {
	case k.count:
		b.WriteString(`SELECT count(*) FROM hoist_records WHERE kind = `)
	case k.noData:
		b.WriteString(`SELECT id, parent, key, rank, seq, NULL::bytea AS data FROM hoist_records WHERE kind = `)
	default:
		b.WriteString(`SELECT id, parent, key, rank, seq, data FROM hoist_records WHERE kind = `)
	}
	b.WriteString(arg())
	if k.parent {
		b.WriteString(` AND parent = ` + arg())
	}
	switch {
	case k.key && keyIs != nil:
		b.WriteString(` AND key = ` + keyIs(arg()))
	case k.key:
		b.WriteString(` AND key = ` + arg())
	}
	if k.rankMax {
		b.WriteString(` AND rank <= ` + arg())
	}
	if k.count {
		return b.String()
	}
	if k.after {
		b.WriteString(sqlorder.After(k.order, k.desc, arg))
	}
	b.WriteString(sqlorder.By(k.order, k.desc))
	if limit == "" {
		limit = ` LIMIT ` + arg()
	}
	b.WriteString(limit)
	switch {
	case k.lock && k.skip:
		b.WriteString(` FOR UPDATE SKIP LOCKED`)
	case k.lock:
		b.WriteString(` FOR UPDATE`)
	}
	return b.String()
}

// plan is a List or Count query ready to run.
type plan struct {
	shape shape
	args  []any
	limit int // 0: no cap
}

// planQuery turns q into a statement shape and its arguments. A List
// fetches one record more than Limit to learn whether there is a next
// page, except a locking one (lock), which would hold that record too.
func planQuery(q store.Query, count, lock bool) (plan, error) {
	desc := q.Desc && (q.Order == store.OrderID || q.Order == store.OrderCreated)
	p := plan{shape: shape{count: count, parent: q.HasParent, key: q.HasKey, rankMax: q.HasRankMax,
		order: q.Order, desc: desc, noData: q.NoData && !count, lock: lock && !count, skip: lock && !count && q.SkipHeld}}
	p.args = make([]any, 1, 8)
	p.args[0] = string(q.Kind)
	if q.HasParent {
		p.args = append(p.args, []byte(q.Parent))
	}
	if q.HasKey {
		p.args = append(p.args, []byte(q.Key))
	}
	if q.HasRankMax {
		p.args = append(p.args, q.RankMax)
	}
	if count {
		p.shape.order, p.shape.desc = store.OrderID, false
		return p, nil
	}
	if q.Order < store.OrderID || q.Order > store.OrderRankDesc {
		return plan{}, fmt.Errorf("postgres: unknown order %d", q.Order)
	}
	if q.After != "" {
		c, err := store.DecodeCursor(q.After, q.Order, desc)
		if err != nil {
			return plan{}, err
		}
		p.shape.after = true
		p.args = cursorArgs(c, p.args)
	}
	switch {
	case q.Limit > 0 && p.shape.lock:
		p.limit = min(q.Limit, math.MaxInt32-1)
		p.args = append(p.args, p.limit)
	case q.Limit > 0:
		p.limit = min(q.Limit, math.MaxInt32-1)
		p.args = append(p.args, p.limit+1)
	default:
		p.args = append(p.args, nil) // LIMIT NULL: all
	}
	return p, nil
}

// cursorArgs appends the arguments of sqlorder.After for c's order.
func cursorArgs(c store.Cursor, args []any) []any {
	switch c.Order {
	case store.OrderCreated:
		return append(args, c.Seq)
	case store.OrderRankAsc, store.OrderRankDesc:
		return append(args, c.Rank, []byte(c.ID))
	default:
		return append(args, []byte(c.ID))
	}
}

// getRecord reads one record with sql (sqlGet or sqlGetForUpdate).
func getRecord(ctx context.Context, q querier, sql string, kind store.Kind, id string) (store.Record, error) {
	rows, err := q.Query(ctx, sql, string(kind), []byte(id))
	if err != nil {
		return store.Record{}, err
	}
	defer rows.Close()
	rec, err := scanRecord(rows, kind, id)
	if err != nil {
		return rec, err
	}
	rows.Close()
	return rec, rows.Err()
}

// scanRecord reads the record of kind and id from the rows of sqlGet (or
// sqlGetForUpdate): store.ErrNotFound when there is none.
func scanRecord(rows pgx.Rows, kind store.Kind, id string) (store.Record, error) {
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return store.Record{}, err
		}
		return store.Record{}, store.ErrNotFound
	}
	var parent, key []byte
	rec := store.Record{Kind: kind, ID: id}
	if err := rows.Scan(&parent, &key, &rec.Rank, &rec.Seq, &rec.Data); err != nil {
		return store.Record{}, err
	}
	rec.Parent, rec.Key = string(parent), string(key)
	return rec, nil
}

// getRefs reads refs in one round trip, each with sqlGet, or with
// sqlGetForUpdate when held says so.
func getRefs(ctx context.Context, c *lazyTx, refs []store.Ref, held func(store.Ref) bool) ([]store.Got, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	stmts := make([]statement, len(refs))
	for i, r := range refs {
		sql := sqlGet
		if held(r) {
			sql = sqlGetForUpdate
		}
		stmts[i] = statement{sql, []any{string(r.Kind), []byte(r.ID)}}
	}
	out := make([]store.Got, len(refs))
	err := c.QueryEach(ctx, stmts, func(i int, rows pgx.Rows) error {
		rec, err := scanRecord(rows, refs[i].Kind, refs[i].ID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		out[i] = store.Got{Record: rec, Found: err == nil}
		return err
	})
	return out, err
}

// getMany reads the records of kind with the IDs ids that exist, in the
// order of ids, each once, with sql (sqlGetMany or sqlGetManyForUpdate).
func getMany(ctx context.Context, q querier, sql string, kind store.Kind, ids []string) ([]store.Record, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	arg := make([][]byte, len(ids))
	for i, id := range ids {
		arg[i] = []byte(id)
	}
	rows, err := q.Query(ctx, sql, string(kind), arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := make(map[string]store.Record, len(ids))
	for rows.Next() {
		var id, parent, key []byte
		rec := store.Record{Kind: kind}
		if err := rows.Scan(&id, &parent, &key, &rec.Rank, &rec.Seq, &rec.Data); err != nil {
			return nil, err
		}
		rec.ID, rec.Parent, rec.Key = string(id), string(parent), string(key)
		found[rec.ID] = rec
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]store.Record, 0, len(found))
	for _, id := range ids {
		if rec, ok := found[id]; ok {
			out = append(out, rec)
			delete(found, id)
		}
	}
	return out, nil
}

// listRecords runs a List query; lock: a Claim's (see shape.lock).
func listRecords(ctx context.Context, q querier, sq store.Query, lock bool) ([]store.Record, string, error) {
	p, err := planQuery(sq, false, lock)
	if err != nil {
		return nil, "", err
	}
	rows, err := q.Query(ctx, p.shape.sql(), p.args...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var recs []store.Record
	if p.limit > 0 {
		recs = make([]store.Record, 0, min(p.limit+1, 64))
	}
	var id, parent, key []byte
	for rows.Next() {
		r := store.Record{Kind: sq.Kind}
		if err := rows.Scan(&id, &parent, &key, &r.Rank, &r.Seq, &r.Data); err != nil {
			return nil, "", err
		}
		r.ID, r.Parent, r.Key = string(id), string(parent), string(key)
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	if p.shape.lock && p.limit > 0 && len(recs) == p.limit {
		return recs, store.EncodeCursor(p.shape.order, p.shape.desc, &recs[p.limit-1]), nil
	}
	if p.limit == 0 || len(recs) <= p.limit {
		return recs, "", nil
	}
	recs = recs[:p.limit]
	return recs, store.EncodeCursor(p.shape.order, p.shape.desc, &recs[p.limit-1]), nil
}

// countRecords runs a Count query.
func countRecords(ctx context.Context, q querier, sq store.Query) (int, error) {
	p, err := planQuery(sq, true, false)
	if err != nil {
		return 0, err
	}
	rows, err := q.Query(ctx, p.shape.sql(), p.args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	if !rows.Next() {
		return 0, errors.Join(rows.Err(), errors.New("postgres: count returned no row"))
	}
	if err := rows.Scan(&n); err != nil {
		return 0, err
	}
	rows.Close()
	return int(n), rows.Err()
}

// childSQL returns the statement of FirstWithChild for the shapes of its
// two queries, whose arguments are the first's (without cursor or limit),
// then the second's (its Key the children's prefix, followed by where the
// record's ID is taken from, 1-based; no cursor or limit):
// the records of the first in its order, each joined with its first
// child, the first pair answered. The first query's records are read
// (and in a Claim locked) one at a time as the join asks for them, the
// next only when the one before had no child; the join can only be a
// nested loop with the first query outside (the child's Key depends on the
// record's ID), so the pairs come in the first query's order: the first
// query's ORDER BY is kept by its OFFSET 0, which keeps PostgreSQL from
// merging it into the join (where its order would be dropped).
func childSQL(ps, cs shape) string {
	n := 0
	arg := func() string { n++; return "$" + itoa(n) }
	parent := ps.text(arg, nil, ` OFFSET 0`)
	child := cs.text(arg, func(prefix string) string { return prefix + ` || substr(p.id, ` + arg() + `)` }, ` LIMIT 1`)
	return `SELECT p.id, p.parent, p.key, p.rank, p.seq, p.data, c.id, c.parent, c.key, c.rank, c.seq, c.data FROM (` +
		parent + `) p CROSS JOIN LATERAL (` + child + `) c LIMIT 1`
}

// childArgs are the arguments of childSQL for the plans of its two
// queries (without cursor or limit; the second's with a Key) and idFrom:
// each plan's but its last, its LIMIT (NULL), which childSQL leaves out,
// and after the second's Key, where the ID is taken from (1-based).
func childArgs(pp, cp plan, cq store.Query, idFrom int) []any {
	args := append(pp.args[:len(pp.args)-1:len(pp.args)-1], cp.args[:len(cp.args)-1]...)
	kind := len(pp.args) - 1 // the second's arguments: kind, parent (when set), key, ...
	key := kind + 1
	if cq.HasParent {
		key++
	}
	return slices.Insert(args, key+1, any(int32(min(idFrom, math.MaxInt32-1)+1)))
}

// childStatement returns FirstWithChild's statement and its arguments;
// lock: a Claim's (see shape.lock).
func childStatement(pq, cq store.Query, idFrom int, lock bool) (string, []any, error) {
	pq.Limit, pq.After, cq.Limit, cq.After = 0, "", 0, ""
	pp, err := planQuery(pq, false, lock)
	if err != nil {
		return "", nil, err
	}
	cp, err := planQuery(cq, false, lock)
	if err != nil {
		return "", nil, err
	}
	return childSQL(pp.shape, cp.shape), childArgs(pp, cp, cq, idFrom), nil
}

// firstWithChild runs FirstWithChild's statement; lock: a Claim's.
func firstWithChild(ctx context.Context, q querier, pq, cq store.Query, idFrom int, lock bool) (store.Record, store.Record, bool, error) {
	sql, args, err := childStatement(pq, cq, idFrom, lock)
	if err != nil {
		return store.Record{}, store.Record{}, false, err
	}
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return store.Record{}, store.Record{}, false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return store.Record{}, store.Record{}, false, rows.Err()
	}
	p, c := store.Record{Kind: pq.Kind}, store.Record{Kind: cq.Kind}
	var pid, pparent, pkey, cid, cparent, ckey []byte
	if err := rows.Scan(&pid, &pparent, &pkey, &p.Rank, &p.Seq, &p.Data, &cid, &cparent, &ckey, &c.Rank, &c.Seq, &c.Data); err != nil {
		return store.Record{}, store.Record{}, false, err
	}
	p.ID, p.Parent, p.Key = string(pid), string(pparent), string(pkey)
	c.ID, c.Parent, c.Key = string(cid), string(cparent), string(ckey)
	rows.Close()
	return p, c, true, rows.Err()
}
