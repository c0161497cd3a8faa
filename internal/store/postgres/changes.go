package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hoistgg/hoist/internal/store"
)

// sqlHorizon is the change feed's horizon: every transaction whose ID is
// below it has ended, so its rows are all there or never will be.
const sqlHorizon = `pg_snapshot_xmin(pg_current_snapshot())::text::bigint`

// sqlChanges reads the feed in one statement (one snapshot): the horizon
// and the floor, then at most $3 rows after position ($1, $2) and below
// the horizon, of the kinds $4 (NULL: all), each with its record as it is
// now (NULLs when it was deleted). It returns at least one row, holding
// the horizon and the floor, even when no change is due.
const sqlChanges = `WITH h AS (SELECT ` + sqlHorizon + ` AS x,
		(SELECT value FROM hoist_meta WHERE name = 'changes_floor') AS floor),
	c AS (SELECT c.xid, c.ord, c.kind, c.id FROM hoist_changes c, h
		WHERE (c.xid, c.ord) > ($1, $2) AND c.xid < h.x AND ($4::text[] IS NULL OR c.kind = ANY($4))
		ORDER BY c.xid, c.ord LIMIT $3)
	SELECT h.x, h.floor, c.xid, c.ord, c.kind, c.id, r.parent, r.key, r.rank, r.seq, r.data
	FROM h LEFT JOIN c ON true LEFT JOIN hoist_records r ON r.kind = c.kind AND r.id = c.id
	ORDER BY c.xid, c.ord`

// Changes reads the change feed (see store.Store and the package
// documentation). A position is (xid, ord): the last row read, or (the
// horizon, 0) once every row below the horizon was read.
func (s *Store) Changes(ctx context.Context, after string, limit int, kinds ...store.Kind) ([]store.Change, string, error) {
	if err := s.gate.Begin(ctx); err != nil {
		return nil, "", err
	}
	defer s.gate.Leave()
	if after == "" {
		var x int64
		if err := s.pool.QueryRow(ctx, `SELECT `+sqlHorizon).Scan(&x); err != nil {
			return nil, "", connErr(ctx, "changes", err)
		}
		return nil, store.EncodePosition(x, 0), nil
	}
	xid, ord, err := store.DecodePosition(after)
	if err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		limit = store.DefaultChangesLimit
	}
	var kindArg []string
	if len(kinds) > 0 {
		for _, k := range kinds {
			kindArg = append(kindArg, string(k))
		}
	}
	rows, err := s.pool.Query(ctx, sqlChanges, xid, ord, limit, kindArg)
	if err != nil {
		return nil, "", connErr(ctx, "changes", err)
	}
	defer rows.Close()
	page, err := readChanges(rows, xid, ord)
	if err != nil {
		return nil, "", connErr(ctx, "changes", err)
	}
	switch {
	case xid > page.horizon:
		return nil, "", store.ErrInvalidCursor
	case xid < page.floor:
		return nil, "", store.ErrChangesLost
	}
	if page.rows < limit && page.horizon > page.xid { // everything below the horizon was read
		page.xid, page.ord = page.horizon, 0
	}
	return page.changes, store.EncodePosition(page.xid, page.ord), nil
}

// changePage is what one read of the feed returned.
type changePage struct {
	horizon, floor int64
	xid, ord       int64 // the position reached
	rows           int
	changes        []store.Change
}

// readChanges reads the rows of sqlChanges, each record once.
func readChanges(rows pgx.Rows, xid, ord int64) (changePage, error) {
	p := changePage{xid: xid, ord: ord}
	seen := map[store.ChangeRef]bool{}
	for rows.Next() {
		var cxid, cord, rank, seq *int64
		var kind *string
		var id, parent, key, data []byte
		if err := rows.Scan(&p.horizon, &p.floor, &cxid, &cord, &kind, &id, &parent, &key, &rank, &seq, &data); err != nil {
			return p, err
		}
		if cxid == nil {
			continue // no change: the row holds the horizon only
		}
		p.rows++
		p.xid, p.ord = *cxid, *cord
		ref := store.ChangeRef{Kind: store.Kind(*kind), ID: string(id)}
		if seen[ref] {
			continue
		}
		seen[ref] = true
		c := store.Change{Record: store.Record{Kind: ref.Kind, ID: ref.ID}, Deleted: seq == nil}
		if seq != nil {
			c.Record.Parent, c.Record.Key, c.Record.Rank, c.Record.Seq = string(parent), string(key), *rank, *seq
			c.Record.Data = data
		}
		p.changes = append(p.changes, c)
	}
	return p, rows.Err()
}

// sqlTrim deletes the feed's rows older than the retention ($1, an
// interval in microseconds) below the horizon, and raises the floor to the
// first transaction kept.
const sqlTrim = `WITH h AS (SELECT ` + sqlHorizon + ` AS x),
	cut AS (SELECT least(h.x, coalesce((SELECT xid FROM hoist_changes
		WHERE at >= now() - make_interval(secs => $1::double precision / 1000000)
		ORDER BY xid, ord LIMIT 1), h.x)) AS x FROM h),
	gone AS (DELETE FROM hoist_changes WHERE xid < (SELECT x FROM cut))
	UPDATE hoist_meta SET value = greatest(value, (SELECT x FROM cut)) WHERE name = 'changes_floor'`

// every runs fn every interval until Close (a background loop of the
// store: Close does not wait for a slow fn, whose context it cancels).
func (s *Store) every(interval time.Duration, fn func(ctx context.Context)) {
	s.loopsDone.Add(1)
	go func() {
		defer s.loopsDone.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { <-s.stopLoops; cancel() }()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stopLoops:
				return
			case <-t.C:
				fn(ctx)
			}
		}
	}()
}

// trimLoop trims the change feed every quarter of the retention until
// Close. Every replica trims; they agree.
func (s *Store) trimLoop() {
	s.every(max(s.opts.ChangeRetention/4, time.Second), func(ctx context.Context) {
		if err := s.trim(ctx); err != nil {
			s.log.Warn("postgres: trimming the change feed", "err", err)
		}
	})
}

// trim runs sqlTrim once.
func (s *Store) trim(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := s.pool.Exec(ctx, sqlTrim, s.opts.ChangeRetention.Microseconds())
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
