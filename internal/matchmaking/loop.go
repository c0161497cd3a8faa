package matchmaking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/flexmatch"
	"github.com/hoistgg/hoist/internal/store"
)

// States of a match record (its Key).
const (
	matchAccepting = "accepting"
	matchPlacing   = "placing"
)

// batch is how many tickets (or matches) one transaction of the
// matchmaker changes: large enough that a pass over thousands of tickets
// takes few commits, small enough that API calls are not held up behind it.
// batchBytes bounds the same transactions by the size of the tickets they
// write (their sizes when they started, ticketRecord.Size): tickets near
// GameLift's limits are over a megabyte each, and a transaction's writes
// are held in memory until it commits.
const (
	batch      = 256
	batchBytes = 4 << 20
)

// matchRecord is a formed match waiting for acceptance or placement.
type matchRecord struct {
	ID      string                 `json:"id"`
	Config  string                 `json:"config"`
	State   string                 `json:"state"`
	Tickets []string               `json:"tickets"`
	Teams   []flexmatch.Team       `json:"teams"`
	Metrics []flexmatch.RuleMetric `json:"metrics,omitempty"`
	// AcceptDeadline is when acceptance times out.
	AcceptDeadline time.Time `json:"acceptDeadline,omitzero"`
	// AutoMax is the rule set's most players, for a match placed under
	// BackfillMode AUTOMATIC; AutoTicket the ID of the automatic backfill
	// ticket its game session gets ("" when the match is full).
	AutoMax    int    `json:"autoMax,omitempty"`
	AutoTicket string `json:"autoTicket,omitempty"`
}

func putMatch(ctx context.Context, tx store.Tx, m *matchRecord) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return tx.Put(ctx, store.Record{Kind: KindMatch, ID: m.ID, Parent: m.Config, Key: m.State, Rank: m.AcceptDeadline.UnixMilli(), Data: data})
}

func getMatch(ctx context.Context, tx store.Tx, id string) (*matchRecord, error) {
	m := new(matchRecord)
	if _, err := store.GetJSON(ctx, tx, KindMatch, id, m); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, api.NewNotFoundException("match %s does not exist", id)
		}
		return nil, err
	}
	return m, nil
}

// matchTickets reads the tickets of m that are still in status st and in m.
func matchTickets(ctx context.Context, tx store.Tx, m *matchRecord, st api.MatchmakingConfigurationStatus) ([]*ticketRecord, error) {
	ts := make([]*ticketRecord, 0, len(m.Tickets))
	for _, id := range m.Tickets {
		t, err := getTicket(ctx, tx, id)
		var nf *api.NotFoundException
		if errors.As(err, &nf) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if t.Ticket.Status == st && t.MatchID == m.ID {
			ts = append(ts, t)
		}
	}
	return ts, nil
}

// listQueued lists the configuration's QUEUED tickets without their data.
func listQueued(ctx context.Context, tx store.Tx, config string) ([]store.Record, error) {
	q := store.Query{Kind: KindTicket, Parent: config, HasParent: true, Key: string(stQueued), HasKey: true,
		Order: store.OrderRankAsc, Limit: 4096, NoData: true}
	var out []store.Record
	for {
		recs, next, err := tx.List(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
		if next == "" {
			return out, nil
		}
		q.After = next
	}
}

// Process makes one pass of the matchmaker over every configuration, and
// removes old tickets when that is due. Tests call it directly with a fake
// clock; Run's passes (processHeld, every Interval and whenever a ticket
// starts) cover the configurations whose shards the replica holds.
func (s *Service) Process(ctx context.Context) error {
	err := s.processHeld(ctx, nil)
	return errors.Join(err, s.sweepIfDue(ctx, s.now()))
}

// sweepIfDue removes the tickets past their retention when a sweep is due.
func (s *Service) sweepIfDue(ctx context.Context, now time.Time) error {
	if !s.sweeper.due(now) {
		return nil
	}
	if err := s.sweep(ctx, now); err != nil {
		return errors.New("removing old tickets: " + err.Error())
	}
	return nil
}

// processHeld makes one pass over the configurations held (nil: every
// configuration, unfenced), each written under its shard's grant.
func (s *Service) processHeld(ctx context.Context, held *store.Held) error {
	var cfgs []*api.MatchmakingConfiguration
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		cfgs = cfgs[:0]
		q := store.Query{Kind: KindConfiguration, Order: store.OrderID, Limit: 256}
		for {
			recs, next, err := tx.List(ctx, q)
			if err != nil {
				return err
			}
			for _, rec := range recs {
				if held != nil && !held.Has(rec.ID) {
					continue // another replica's
				}
				c := new(api.MatchmakingConfiguration)
				if err := store.Decode(rec, c); err != nil {
					return err
				}
				cfgs = append(cfgs, c)
			}
			if next == "" {
				return nil
			}
			q.After = next
		}
	})
	if err != nil {
		return err
	}
	s.pool.keep(cfgs)
	s.tally.keep(cfgs)
	var errs []error
	// One pass of the loop matches for at most passWork units of the
	// matcher's work: configurations whose rule sets make passes slow
	// cannot stall the others for long. When it runs out, the remaining
	// configurations only have their tickets moved and timed out, and the
	// next pass starts matching at the first of them, so every
	// configuration gets its turn.
	budget := s.passWork
	start := 0
	if i := slices.IndexFunc(cfgs, func(c *api.MatchmakingConfiguration) bool { return api.ToString(c.Name) >= s.matchFrom }); i > 0 {
		start = i
	}
	s.matchFrom = ""
	for k := range cfgs {
		if ctx.Err() != nil {
			break
		}
		c := cfgs[(start+k)%len(cfgs)]
		if budget <= 0 && s.matchFrom == "" {
			s.matchFrom = api.ToString(c.Name)
		}
		var g store.Grant
		if held != nil {
			g, _ = held.Grant(api.ToString(c.Name))
		}
		spent, start := budget, time.Now()
		if err := s.processConfig(ctx, g, c, &budget); err != nil {
			errs = append(errs, fmt.Errorf("matchmaking configuration %s: %w", api.ToString(c.Name), err))
		}
		if s.cfg.OnPass != nil {
			s.cfg.OnPass(api.ToString(c.Name), time.Since(start).Seconds(), spent-budget)
		}
	}
	return errors.Join(errs...)
}

// passWork is the matcher's work one pass of the loop may spend (the
// default of Service.passWork), in
// flexmatch's units: four full matcher passes (a pass over 100,000
// benchmark tickets spends about a seventh of one).
const passWork = 4 * flexmatch.PassWork

// processConfig makes one pass over one configuration's tickets: QUEUED
// ones start SEARCHING, those past their deadline time out, matches past
// their acceptance deadline are decided, and the matcher runs over the
// SEARCHING pool. Its writes are fenced by g (no term: unfenced).
func (s *Service) processConfig(ctx context.Context, g store.Grant, c *api.MatchmakingConfiguration, budget *int) error {
	now := s.now()
	name := api.ToString(c.Name)
	var (
		queued    []store.Record
		searching []*pooled
		expired   []*matchRecord
		rs        *flexmatch.RuleSet
		rsErr     error
	)
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		if rs, rsErr = s.ruleSetOf(ctx, tx, c); rsErr != nil {
			var ae api.Error
			if !errors.As(rsErr, &ae) {
				return rsErr
			}
		}
		if queued, err = listQueued(ctx, tx, name); err != nil {
			return err
		}
		if searching, err = s.pool.searching(ctx, tx, name); err != nil {
			return err
		}
		expired, err = expiredMatches(ctx, tx, name, now)
		return err
	})
	if err != nil {
		return err
	}
	// QUEUED -> SEARCHING (or TIMED_OUT), and SEARCHING past the deadline
	// -> TIMED_OUT. pool is the matcher's view of the SEARCHING tickets,
	// and inPool each of them as the pool cache keeps it (its record's
	// version).
	pool := make([]flexmatch.Ticket, 0, len(searching)+len(queued))
	inPool := make(map[string]*pooled, len(searching)+len(queued))
	moves := make([]move, 0, len(queued))
	for _, rec := range queued {
		moves = append(moves, move{id: rec.ID, from: stQueued})
	}
	for _, e := range searching {
		if !now.Before(e.deadline) {
			moves = append(moves, move{id: e.flex.ID, from: stSearching})
		} else {
			pool = append(pool, e.flex)
			inPool[e.flex.ID] = e
		}
	}
	for len(moves) > 0 {
		moved, n, err := s.moveTickets(ctx, g, c, moves, now)
		if err != nil {
			return err
		}
		moves = moves[n:]
		for _, e := range moved {
			pool = append(pool, e.flex)
			inPool[e.flex.ID] = e
		}
		s.pool.add(name, moved)
	}
	// Matches whose acceptance timed out.
	for _, m := range expired {
		err := s.updateIn(ctx, g, func(ctx context.Context, tx store.Tx) error {
			cur, err := getMatch(ctx, tx, m.ID)
			var nf *api.NotFoundException
			if errors.As(err, &nf) {
				return nil
			}
			if err != nil || cur.State != matchAccepting {
				return err
			}
			return s.failAcceptanceTx(ctx, tx, c, cur, now, acceptTimedOut, nil)
		})
		if err != nil {
			return err
		}
	}
	if rsErr != nil {
		// A rule set this Hoist cannot parse (or one gone): the tickets
		// search (and time out) without matches.
		return rsErr
	}
	if len(pool) == 0 || *budget <= 0 {
		return nil
	}
	// The matcher over the SEARCHING pool.
	res := rs.Match(pool, now, uint64(now.UnixNano()))
	s.tally.pass(name, rs.Rules(), pool, res.Held)
	*budget -= res.Work
	if res.Exhausted {
		s.log.Warn("the matcher ran out of its work budget: the tickets it did not try wait for the next pass",
			"configuration", name, "tickets", len(pool), "work", res.Work)
	}
	var waited time.Duration
	var matched int
	for i := 0; i < len(res.Matches); {
		// Batch matches up to about `batch` tickets and batchBytes per
		// transaction.
		j, size, bytes := i, 0, int64(0)
		for j < len(res.Matches) {
			b := matchBytes(&res.Matches[j], inPool)
			if j > i && (size+len(res.Matches[j].Tickets) > batch || bytes+b > batchBytes) {
				break
			}
			size, bytes = size+len(res.Matches[j].Tickets), bytes+b
			j++
		}
		part := res.Matches[i:j]
		var w time.Duration
		var n int
		err := s.updateIn(ctx, g, func(ctx context.Context, tx store.Tx) error {
			w, n = 0, 0
			// Every ticket of the batch's matches in one read.
			var ids []string
			for k := range part {
				ids = append(ids, part[k].Tickets...)
			}
			read, err := ticketsByID(ctx, tx, ids)
			if err != nil {
				return err
			}
			for k := range part {
				ts, err := s.applyTx(ctx, tx, c, rs, &part[k], inPool, read, now)
				if err != nil {
					return err
				}
				for _, t := range ts {
					w += now.Sub(t.Ticket.StartTime.Time)
					n++
				}
			}
			if j == len(res.Matches) && matched+n > 0 {
				return recordWaitTx(ctx, tx, name, (waited+w)/time.Duration(matched+n), now)
			}
			return nil
		})
		if err != nil {
			return err
		}
		waited, matched = waited+w, matched+n
		i = j
	}
	if c.FlexMatchMode == api.FlexMatchModeWithQueue && len(res.Matches) > 0 {
		s.kickPlacer()
	}
	return nil
}

// move is a ticket the loop moves on from status from: a QUEUED ticket
// starts SEARCHING, a ticket past its deadline times out.
type move struct {
	id   string
	from api.MatchmakingConfigurationStatus
}

// moveTickets moves the first of the tickets (at most batch of them, and
// about batchBytes) in one transaction, each only if it is still in the
// status it was listed in. It returns the tickets that started SEARCHING,
// as the pool keeps them, and how many of moves it went through.
func (s *Service) moveTickets(ctx context.Context, g store.Grant, c *api.MatchmakingConfiguration, moves []move, now time.Time) ([]*pooled, int, error) {
	name := api.ToString(c.Name)
	var moved []*pooled
	var n int
	err := s.updateIn(ctx, g, func(ctx context.Context, tx store.Tx) error {
		moved, n = moved[:0], 0
		est, err := estimate(ctx, tx, name, now)
		if err != nil {
			return err
		}
		// The batch's tickets in one read (one round trip on PostgreSQL);
		// the bytes bound may stop the loop before the last of them.
		ids := make([]string, 0, min(len(moves), batch))
		for _, mv := range moves[:min(len(moves), batch)] {
			ids = append(ids, mv.id)
		}
		byID, err := ticketsByID(ctx, tx, ids)
		if err != nil {
			return err
		}
		var bytes int64
		for _, mv := range moves {
			if n == batch || bytes >= batchBytes {
				break
			}
			n++
			rec, ok := byID[mv.id]
			if !ok {
				continue // gone meanwhile
			}
			delete(byID, mv.id) // listed twice: moved once
			t := new(ticketRecord)
			if err := decodeTicket(rec, t); err != nil {
				return err
			}
			if t.Ticket.Status != mv.from {
				continue // changed meanwhile
			}
			bytes += t.Size
			if !now.Before(t.Deadline) {
				if err := s.endTx(ctx, tx, c, t, stTimedOut, "TIMED_OUT", "Removed from matchmaking due to timing out.", now, nil); err != nil {
					return err
				}
				continue
			}
			if err := startSearching(ctx, tx, t, s.cfg.Shared); err != nil {
				return err
			}
			d := s.detail(evSearching, c, []*ticketRecord{t})
			d.EstimatedWaitMillis = estimatedMillis(est)
			if err := s.publish(ctx, tx, c, now, d); err != nil {
				return err
			}
			moved = append(moved, newPooled(t))
		}
		return nil
	})
	return moved, n, err
}

// matchBytes is the size of a match's tickets, as the pool knows them.
func matchBytes(m *flexmatch.Match, inPool map[string]*pooled) int64 {
	var n int64
	for _, id := range m.Tickets {
		if e := inPool[id]; e != nil {
			n += e.size
		}
	}
	return n
}

// expiredMatches reads the configuration's matches whose acceptance
// deadline has passed.
func expiredMatches(ctx context.Context, tx store.Tx, config string, now time.Time) ([]*matchRecord, error) {
	recs, _, err := tx.List(ctx, store.Query{Kind: KindMatch, Parent: config, HasParent: true, Key: matchAccepting, HasKey: true,
		Order: store.OrderRankAsc, RankMax: now.UnixMilli(), HasRankMax: true})
	if err != nil {
		return nil, err
	}
	out := make([]*matchRecord, 0, len(recs))
	for _, rec := range recs {
		m := new(matchRecord)
		if err := store.Decode(rec, m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// applyTx applies one match the matcher formed, if every one of its
// tickets is still SEARCHING and its record the version the matcher saw
// (inPool: the pool's tickets by ID); else it is dropped, and its tickets
// that are still SEARCHING search on. It returns the match's tickets (none
// when dropped). read holds the match's ticket records as tx read them
// (a ticket missing from it does not exist).
func (s *Service) applyTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, rs *flexmatch.RuleSet, fm *flexmatch.Match, inPool map[string]*pooled, read map[string]store.Record, now time.Time) ([]*ticketRecord, error) {
	ts := make([]*ticketRecord, 0, len(fm.Tickets))
	backfills := 0
	for _, id := range fm.Tickets {
		rec, ok := read[id]
		if !ok {
			return nil, nil
		}
		t := new(ticketRecord)
		if err := decodeTicket(rec, t); err != nil {
			return nil, err
		}
		if e := inPool[id]; e == nil || t.seq != e.seq || t.Ticket.Status != stSearching || !now.Before(t.Deadline) {
			return nil, nil
		}
		if t.Backfill {
			backfills++
		}
		ts = append(ts, t)
	}
	if backfills > 1 || (backfills == 1 && len(ts) < 2) {
		s.log.Warn("matcher formed a match with more than one backfill ticket, or of a backfill ticket alone: dropped", "tickets", fm.Tickets)
		return nil, nil
	}
	m := &matchRecord{ID: s.cfg.NewID(), Config: api.ToString(c.Name), Tickets: fm.Tickets, Teams: fm.Teams, Metrics: fm.Metrics}
	team := map[string]string{}
	for _, tm := range fm.Teams {
		for _, p := range tm.Players {
			team[p] = tm.Name
		}
	}
	for _, t := range ts {
		t.MatchID = m.ID
		for i := range t.Ticket.Players {
			if t.Backfill {
				continue // its players stay on their teams
			}
			if tn, ok := team[api.ToString(t.Ticket.Players[i].PlayerId)]; ok {
				t.Ticket.Players[i].Team = api.String(tn)
			}
		}
	}
	acc := c.AcceptanceRequired != nil && *c.AcceptanceRequired
	d := s.detail(evPotential, c, ts)
	d.MatchID, d.AcceptanceRequired, d.RuleEvaluationMetrics = m.ID, &acc, toMetrics(fm.Metrics)
	if acc {
		d.AcceptanceTimeout = api.ToInt32(c.AcceptanceTimeoutSeconds)
	}
	if err := s.publish(ctx, tx, c, now, d); err != nil {
		return nil, err
	}
	if acc {
		m.State = matchAccepting
		m.AcceptDeadline = now.Add(time.Duration(api.ToInt32(c.AcceptanceTimeoutSeconds)) * time.Second)
		if err := putMatch(ctx, tx, m); err != nil {
			return nil, err
		}
		for _, t := range ts {
			t.Ticket.Status, t.Accepted = stAccept, nil
			t.Ticket.StatusReason, t.Ticket.StatusMessage = nil, nil
			if t.Backfill {
				// Only new players accept.
				for _, p := range t.Ticket.Players {
					t.Accepted = append(t.Accepted, api.ToString(p.PlayerId))
				}
			}
			if err := putTicket(ctx, tx, t, m.AcceptDeadline.UnixMilli(), false); err != nil {
				return nil, err
			}
		}
		return ts, nil
	}
	return ts, s.proceedTx(ctx, tx, c, rs, m, ts, now)
}

// proceedTx takes a match that needs no (more) acceptance on: STANDALONE
// completes it, WITH_QUEUE places it.
func (s *Service) proceedTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, rs *flexmatch.RuleSet, m *matchRecord, ts []*ticketRecord, now time.Time) error {
	for _, t := range ts {
		if t.Backfill {
			return s.backfillTx(ctx, tx, c, m, ts, t, now)
		}
	}
	if c.FlexMatchMode == api.FlexMatchModeStandalone {
		if m.State != "" {
			if err := tx.Delete(ctx, KindMatch, m.ID); err != nil {
				return err
			}
		}
		return s.succeedTx(ctx, tx, c, m, ts, now, nil)
	}
	return s.placeTx(ctx, tx, c, rs, m, ts, now)
}

// succeedTx completes a match's tickets and publishes MatchmakingSucceeded
// (gs: the game session of a placed match, nil for STANDALONE).
func (s *Service) succeedTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, m *matchRecord, ts []*ticketRecord, now time.Time, gs *eventSession) error {
	// The tickets leave the configuration's count in one write, not one
	// read and write each (putTicket).
	var ended int64
	for _, t := range ts {
		ended, t.Size = ended+t.Size, 0
	}
	if ended > 0 {
		if err := addTicketBytes(ctx, tx, api.ToString(c.Name), -ended); err != nil {
			return err
		}
	}
	for _, t := range ts {
		t.Ticket.Status, t.Ticket.EndTime = stCompleted, api.Time(now)
		t.Ticket.StatusReason, t.Ticket.StatusMessage, t.Accepted = nil, nil, nil
		if err := putTicket(ctx, tx, t, now.UnixMilli(), false); err != nil {
			return err
		}
	}
	d := s.detail(evSucceeded, c, ts)
	d.MatchID = m.ID
	if gs != nil {
		gs.Players = d.GameSessionInfo.Players
		d.GameSessionInfo = *gs
	}
	return s.publish(ctx, tx, c, now, d)
}
