package matchmaking

import (
	"context"
	"errors"
	"slices"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/flexmatch"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
)

// TicketView is a ticket as the console shows it: the ticket as
// DescribeMatchmaking answers it, the match it is in, and that match's
// ruleEvaluationMetrics (those its events carry).
type TicketView struct {
	Ticket  api.MatchmakingTicket
	MatchID string
	Metrics []flexmatch.RuleMetric
}

// ListTickets lists up to limit tickets of a configuration, the most
// recently changed first (every write of a ticket inserts its record
// anew), after the cursor token ("" for the first page); it returns them
// and the next page's cursor ("" at the end). GameLift has no such
// operation (DescribeMatchmaking reads tickets by ID): it serves the
// console.
func (s *Service) ListTickets(ctx context.Context, config, token string, limit int) ([]TicketView, string, error) {
	var out []TicketView
	var next string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		q := store.Query{Kind: KindTicket, Parent: configName(config), HasParent: true, Order: store.OrderCreated, Desc: true}
		recs, n, err := paging.Records(ctx, tx, q, token, limit, nil)
		if err != nil {
			return err
		}
		out, next = make([]TicketView, 0, len(recs)), n
		for _, rec := range recs {
			var t ticketRecord
			if err := decodeTicket(rec, &t); err != nil {
				return err
			}
			v := TicketView{Ticket: s.withARN(&t), MatchID: t.MatchID}
			if t.MatchID != "" {
				m, err := getMatch(ctx, tx, t.MatchID)
				var nf *api.NotFoundException
				if err != nil && !errors.As(err, &nf) {
					return err
				}
				if m != nil {
					v.Metrics = m.Metrics
				}
			}
			out = append(out, v)
		}
		return nil
	})
	return out, next, err
}

// Diagnosis is what one matcher pass over a configuration's SEARCHING
// tickets would do now, run without writing anything: the matches it
// would make, each with its ruleEvaluationMetrics, and for each ticket it
// would leave searching the rules that held it back (empty: only the lack
// of other tickets did). `hoist match simulate` reports the same two
// things over simulated time (docs/flexmatch-simulate.md).
type Diagnosis struct {
	RuleSet string
	Rules   []string
	// Pool is the number of SEARCHING tickets the pass saw; TooMany is set
	// (and nothing was run) when there were more than the limit asked.
	Pool    int
	TooMany bool
	// RuleSetError is why the rule set could not be used ("" when it could).
	RuleSetError string
	Matches      []flexmatch.Match
	Held         []HeldTicket
	Exhausted    bool
}

// HeldTicket is a ticket a pass left searching, with the rules that held
// it back.
type HeldTicket struct {
	TicketID string
	Rules    []string
}

// Diagnose runs one matcher pass over the configuration's SEARCHING
// tickets without applying it, when there are at most maxPool of them.
func (s *Service) Diagnose(ctx context.Context, config string, maxPool int) (*Diagnosis, error) {
	d := &Diagnosis{}
	var pool []flexmatch.Ticket
	var rs *flexmatch.RuleSet
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		c, err := getConfig(ctx, tx, config)
		if err != nil {
			return err
		}
		d.RuleSet = api.ToString(c.RuleSetName)
		if rs, err = s.ruleSetOf(ctx, tx, c); err != nil {
			var ae api.Error
			if !errors.As(err, &ae) {
				return err
			}
			d.RuleSetError = ae.ErrorMessage()
			return nil
		}
		q := store.Query{Kind: KindTicket, Parent: api.ToString(c.Name), HasParent: true, Key: string(stSearching),
			HasKey: true, Order: store.OrderRankAsc, Limit: maxPool + 1}
		recs, _, err := tx.List(ctx, q)
		if err != nil {
			return err
		}
		d.Pool, d.TooMany = len(recs), len(recs) > maxPool
		for _, rec := range recs[:min(len(recs), maxPool)] {
			var t ticketRecord
			if err := decodeTicket(rec, &t); err != nil {
				return err
			}
			pool = append(pool, flexTicket(&t))
		}
		return nil
	})
	if err != nil || rs == nil || d.TooMany || len(pool) == 0 {
		return d, err
	}
	now := s.now()
	res := rs.Match(pool, now, uint64(now.UnixNano()))
	d.Rules, d.Matches, d.Exhausted = rs.Rules(), res.Matches, res.Exhausted
	for _, t := range pool {
		if rules, ok := res.Held[t.ID]; ok {
			d.Held = append(d.Held, HeldTicket{TicketID: t.ID, Rules: slices.Clone(rules)})
		}
	}
	return d, nil
}
