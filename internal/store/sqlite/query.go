package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/sqlorder"
)

// fixedStmt names a statement whose text never changes.
type fixedStmt uint8

const (
	noFixed fixedStmt = iota
	stmtBegin
	stmtBeginImmediate
	stmtCommit
	stmtRollback
	stmtSavepoint
	stmtRelease
	stmtRollbackTo
	stmtGet
	stmtInsert
	stmtPut
	stmtPutData
	stmtSetData
	stmtSetKeyRank
	stmtSetIndexed
	stmtDelete
	stmtLease
	stmtLeaseHeld
	stmtLeases
	stmtSaveSeq
)

var fixedSQL = [...]string{
	stmtBegin:          `BEGIN`,
	stmtBeginImmediate: `BEGIN IMMEDIATE`,
	stmtCommit:         `COMMIT`,
	stmtRollback:       `ROLLBACK`,
	stmtSavepoint:      `SAVEPOINT u`,
	stmtRelease:        `RELEASE u`,
	stmtRollbackTo:     `ROLLBACK TO u`,
	stmtGet:            `SELECT parent, key, rank, seq, data FROM records WHERE kind = ? AND id = ?`,
	stmtInsert: `INSERT INTO records (kind, id, parent, key, rank, seq, data) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (kind, id) DO NOTHING`,
	stmtPut: `INSERT INTO records (kind, id, parent, key, rank, seq, data) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (kind, id) DO UPDATE SET
		parent = excluded.parent, key = excluded.key, rank = excluded.rank, data = excluded.data`,
	// A Put that changes only Data: no index holds data, so SQLite writes
	// no index entry (the upsert sets the indexed columns and so rewrites
	// every index that holds one of them).
	stmtPutData: `UPDATE records SET data = ?
		WHERE kind = ? AND id = ? AND parent = ? AND key = ? AND rank = ?`,
	// Puts of a record the same Update read (writeTx.known): found by
	// rowid, and setting only the columns that change, so SQLite rewrites
	// only the indexes holding them (none for Data; the two Key and Rank
	// indexes when Parent stays).
	stmtSetData:    `UPDATE records SET data = ? WHERE seq = ? AND kind = ? AND id = ?`,
	stmtSetKeyRank: `UPDATE records SET key = ?, rank = ?, data = ? WHERE seq = ? AND kind = ? AND id = ?`,
	stmtSetIndexed: `UPDATE records SET parent = ?, key = ?, rank = ?, data = ? WHERE seq = ? AND kind = ? AND id = ?`,
	stmtDelete:     `DELETE FROM records WHERE kind = ? AND id = ?`,
	// A lease row is taken over when it is free (expired) or renewed by its
	// holder; otherwise the conditional upsert changes nothing. A renewal
	// before expiry keeps the term, any other grant starts the next.
	// Arguments: name, holder, expires, now.
	stmtLease: `INSERT INTO leases (name, holder, expires, term) VALUES (?1, ?2, ?3, 1)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires = excluded.expires,
		term = CASE WHEN leases.holder = excluded.holder AND leases.expires > ?4
			THEN leases.term ELSE leases.term + 1 END
		WHERE leases.holder = excluded.holder OR leases.expires <= ?4
		RETURNING term`,
	// Is the lease still held in a term, unexpired? (UpdateFenced)
	stmtLeaseHeld: `SELECT 1 FROM leases WHERE name = ? AND holder = ? AND term = ? AND expires > ?`,
	stmtLeases:    `SELECT name, holder, term, expires FROM leases WHERE expires > ? ORDER BY name`,
	stmtSaveSeq:   `UPDATE meta SET value = ? WHERE name = 'seq'`,
}

// stmtKey identifies a prepared statement: a fixed one, or the shape of a
// List or Count query (which filters are set, the order and the paging).
// Every connection caches its statements by stmtKey.
type stmtKey struct {
	fixed                fixedStmt
	count                bool
	exists               bool // SELECT 1 ... LIMIT 1: is there a record after the cursor?
	parent, key, rankMax bool
	order                store.Order
	desc                 bool
	after, limit         bool
	noData               bool // List without the data column (Query.NoData)
}

// sql returns the statement text of k.
func (k stmtKey) sql() string {
	if k.fixed != noFixed {
		return fixedSQL[k.fixed]
	}
	var b strings.Builder
	switch {
	case k.count:
		b.WriteString(`SELECT count(*) FROM records WHERE kind = ?`)
	case k.exists:
		b.WriteString(`SELECT 1 FROM records WHERE kind = ?`)
	case k.noData:
		// NULL for data: the index holding the filters and the order
		// then covers the query, and no row of the table is read.
		b.WriteString(`SELECT id, parent, key, rank, seq, NULL FROM records WHERE kind = ?`)
	default:
		b.WriteString(`SELECT id, parent, key, rank, seq, data FROM records WHERE kind = ?`)
	}
	if k.parent {
		b.WriteString(` AND parent = ?`)
	}
	if k.key {
		b.WriteString(` AND key = ?`)
	}
	if k.rankMax {
		b.WriteString(` AND rank <= ?`)
	}
	if k.count {
		return b.String()
	}
	if k.after {
		b.WriteString(sqlorder.After(k.order, k.desc, positional))
	}
	if k.exists {
		b.WriteString(` LIMIT 1`)
		return b.String()
	}
	b.WriteString(sqlorder.By(k.order, k.desc))
	if k.limit {
		b.WriteString(` LIMIT ?`)
	}
	return b.String()
}

// positional is SQLite's placeholder, the same for every argument
// (sqlorder.After's arg).
func positional() string { return "?" }

// plan is a List or Count query ready to run.
type plan struct {
	key   stmtKey
	args  []any
	limit int // 0: no cap
	// filters is how many of args are the filters' (kind, parent, key,
	// rank max), before the cursor's and the limit.
	filters int
}

// planQuery turns q into a statement key and its arguments. A List fetches
// one record more than Limit to learn whether there is a next page.
func planQuery(q store.Query, count bool) (plan, error) {
	desc := q.Desc && (q.Order == store.OrderID || q.Order == store.OrderCreated)
	p := plan{key: stmtKey{count: count, parent: q.HasParent, key: q.HasKey, rankMax: q.HasRankMax,
		order: q.Order, desc: desc, noData: q.NoData && !count}}
	p.args = make([]any, 1, 8)
	p.args[0] = string(q.Kind)
	if q.HasParent {
		p.args = append(p.args, q.Parent)
	}
	if q.HasKey {
		p.args = append(p.args, q.Key)
	}
	if q.HasRankMax {
		p.args = append(p.args, q.RankMax)
	}
	p.filters = len(p.args)
	if count {
		p.key.order, p.key.desc = store.OrderID, false
		return p, nil
	}
	if q.Order < store.OrderID || q.Order > store.OrderRankDesc {
		return plan{}, fmt.Errorf("sqlite: unknown order %d", q.Order)
	}
	if q.After != "" {
		c, err := store.DecodeCursor(q.After, q.Order, desc)
		if err != nil {
			return plan{}, err
		}
		p.key.after = true
		p.args = cursorArgs(c, p.args)
	}
	if q.Limit > 0 {
		p.key.limit = true
		p.limit = min(q.Limit, math.MaxInt32)
		p.args = append(p.args, p.limit+1)
	}
	return p, nil
}

// cursorArgs appends the arguments of sqlorder.After for c's order (the
// rank twice for OrderRankDesc: see sqlorder.After).
func cursorArgs(c store.Cursor, args []any) []any {
	switch c.Order {
	case store.OrderCreated:
		return append(args, c.Seq)
	case store.OrderRankAsc:
		return append(args, c.Rank, c.ID)
	case store.OrderRankDesc:
		return append(args, c.Rank, c.Rank, c.ID)
	default:
		return append(args, c.ID)
	}
}

// The read helpers below run their statements with context.Background and
// check ctx themselves (the caller checked it before the call; listRecords
// checks it again while it reads rows). A context given to the driver costs
// goroutines per statement, and on the write connection an interrupted
// statement would roll back the whole batch.

// getRecord reads one record through stmtGet.
func getRecord(_ context.Context, c *conn, kind store.Kind, id string) (store.Record, error) {
	rows, err := c.query(stmtKey{fixed: stmtGet}, []any{string(kind), id})
	if err != nil {
		return store.Record{}, dbErr("get "+string(kind)+"/"+id, err)
	}
	defer rows.Close()
	var v [5]driver.Value
	err = rows.Next(v[:])
	if err == io.EOF {
		return store.Record{}, store.ErrNotFound
	}
	if err != nil {
		return store.Record{}, dbErr("get "+string(kind)+"/"+id, err)
	}
	return store.Record{Kind: kind, ID: id, Parent: text(v[0]), Key: text(v[1]), Rank: integer(v[2]),
		Seq: integer(v[3]), Data: blobOf(v[4])}, nil
}

// The columns' types are fixed (the table is STRICT and its columns NOT
// NULL): the driver hands out TEXT as string, INTEGER as int64 and BLOB as
// a []byte of its own.

func text(v driver.Value) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

func integer(v driver.Value) int64 {
	n, _ := v.(int64)
	return n
}

func blobOf(v driver.Value) []byte {
	switch x := v.(type) {
	case []byte:
		return x
	case string:
		return []byte(x)
	}
	return nil
}

// listRecords runs a List query.
func listRecords(ctx context.Context, c *conn, q store.Query) ([]store.Record, string, error) {
	p, err := planQuery(q, false)
	if err != nil {
		return nil, "", err
	}
	if p.key.order == store.OrderRankDesc && p.limit > 0 {
		return listRankDesc(ctx, c, q, p)
	}
	recs, err := queryRecords(ctx, c, q.Kind, p)
	if err != nil {
		return nil, "", err
	}
	if p.limit == 0 || len(recs) <= p.limit {
		return recs, "", nil
	}
	recs = recs[:p.limit]
	return recs, store.EncodeCursor(p.key.order, p.key.desc, &recs[p.limit-1]), nil
}

// listRankDesc runs a List in OrderRankDesc with a Limit. The index holds
// rank ascending, so SQLite reads the ranks backwards and sorts each group
// of equal rank by ID: fetching Limit+1 records, to learn whether there is
// a next page, would sort the whole group holding the extra record (say the
// 99 idle instances below the one busy one). So it fetches Limit records
// and, when the page is full, asks whether any record follows the last.
func listRankDesc(ctx context.Context, c *conn, q store.Query, p plan) ([]store.Record, string, error) {
	p.args[len(p.args)-1] = p.limit
	recs, err := queryRecords(ctx, c, q.Kind, p)
	if err != nil || len(recs) < p.limit {
		return recs, "", err
	}
	last := &recs[len(recs)-1]
	ek := p.key
	ek.exists, ek.after, ek.limit = true, true, false
	args := cursorArgs(store.Cursor{Order: store.OrderRankDesc, Rank: last.Rank, ID: last.ID}, p.args[:p.filters:p.filters])
	rows, err := c.query(ek, args)
	if err != nil {
		return nil, "", dbErr("list "+string(q.Kind), err)
	}
	defer rows.Close()
	var v [1]driver.Value
	err = rows.Next(v[:])
	if err == io.EOF {
		return recs, "", nil
	}
	if err != nil {
		return nil, "", dbErr("list "+string(q.Kind), err)
	}
	return recs, store.EncodeCursor(p.key.order, p.key.desc, last), nil
}

// queryRecords runs the List statement of p and returns every row.
func queryRecords(ctx context.Context, c *conn, kind store.Kind, p plan) ([]store.Record, error) {
	rows, err := c.query(p.key, p.args)
	if err != nil {
		return nil, dbErr("list "+string(kind), err)
	}
	defer rows.Close()
	var recs []store.Record
	if p.limit > 0 {
		recs = make([]store.Record, 0, min(p.limit+1, 64))
	}
	var v [6]driver.Value
	for {
		if len(recs)%256 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		err := rows.Next(v[:])
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, dbErr("list "+string(kind), err)
		}
		recs = append(recs, store.Record{Kind: kind, ID: text(v[0]), Parent: text(v[1]), Key: text(v[2]),
			Rank: integer(v[3]), Seq: integer(v[4]), Data: blobOf(v[5])})
	}
}

// countRecords runs a Count query.
func countRecords(_ context.Context, c *conn, q store.Query) (int, error) {
	p, err := planQuery(q, true)
	if err != nil {
		return 0, err
	}
	rows, err := c.query(p.key, p.args)
	if err != nil {
		return 0, dbErr("count "+string(q.Kind), err)
	}
	defer rows.Close()
	var v [1]driver.Value
	if err := rows.Next(v[:]); err != nil {
		return 0, dbErr("count "+string(q.Kind), err)
	}
	return int(integer(v[0])), nil
}
