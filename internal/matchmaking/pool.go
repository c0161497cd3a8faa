package matchmaking

import (
	"context"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/flexmatch"
	"github.com/hoistgg/hoist/internal/store"
)

// flexTicket is the matcher's view of a searching ticket.
func flexTicket(t *ticketRecord) flexmatch.Ticket {
	f := flexmatch.Ticket{ID: t.id(), Start: t.Ticket.StartTime.Time, Players: toFlex(t.Ticket.Players), Backfill: t.Backfill}
	if !t.Backfill {
		for k := range f.Players {
			f.Players[k].Team = ""
		}
	}
	return f
}

// pooled is a SEARCHING ticket as the matchmaker keeps it between passes:
// the matcher's view of it, its deadline, its size (ticketRecord.Size)
// and the version (Seq) of the record it was decoded from.
type pooled struct {
	seq, size int64
	deadline  time.Time
	flex      flexmatch.Ticket
}

// newPooled returns t as the pool keeps it (t.seq its record's version).
func newPooled(t *ticketRecord) *pooled {
	return &pooled{seq: t.seq, size: t.Size, deadline: t.Deadline, flex: flexTicket(t)}
}

// poolCache keeps the decoded SEARCHING tickets of each configuration
// between passes, so that a pass reads and decodes only the tickets whose
// records it has not seen: each pass lists the configuration's SEARCHING
// records without their data (ID and Seq), reads the records whose ID or
// Seq is new (every write of a ticket gives its record a new Seq:
// putTicket), and forgets the tickets no longer listed. A pass therefore
// costs time in proportion to the number of tickets, not their size.
//
// It is a cache of the store, never the truth: a replica that takes the
// matchmaker's lease over starts with an empty cache and fills it from
// the store, and a match is applied only if each of its tickets' records
// is still the version the matcher saw (applyTx), in the transaction that
// applies it.
type poolCache struct {
	mu sync.Mutex
	m  map[string]map[string]*pooled // configuration -> ticket ID -> entry
}

// searching lists the configuration's SEARCHING tickets in tx.
func (c *poolCache) searching(ctx context.Context, tx store.Tx, config string) ([]*pooled, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m[config]
	cur := make(map[string]*pooled, len(old))
	var out []*pooled
	q := store.Query{Kind: KindTicket, Parent: config, HasParent: true, Key: string(stSearching), HasKey: true,
		Order: store.OrderRankAsc, Limit: 4096, NoData: true}
	for {
		recs, next, err := tx.List(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			e := old[rec.ID]
			if e == nil || e.seq != rec.Seq {
				t, err := getTicket(ctx, tx, rec.ID)
				if err != nil {
					return nil, err
				}
				e = newPooled(t)
			}
			cur[rec.ID] = e
			out = append(out, e)
		}
		if next == "" {
			break
		}
		q.After = next
	}
	if c.m == nil {
		c.m = map[string]map[string]*pooled{}
	}
	c.m[config] = cur
	return out, nil
}

// add keeps tickets the loop itself moved to SEARCHING, so that the next
// pass need not read them again.
func (c *poolCache) add(config string, es []*pooled) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(es) == 0 || c.m[config] == nil {
		return
	}
	for _, e := range es {
		c.m[config][e.flex.ID] = e
	}
}

// keep forgets the tickets of configurations that no longer exist.
func (c *poolCache) keep(cfgs []*api.MatchmakingConfiguration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make(map[string]bool, len(cfgs))
	for _, cfg := range cfgs {
		names[api.ToString(cfg.Name)] = true
	}
	for n := range c.m {
		if !names[n] {
			delete(c.m, n)
		}
	}
}
