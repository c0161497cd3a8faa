package matchmaking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/flexmatch"
	"github.com/hoistgg/hoist/internal/store"
)

// Bounds of tickets (GameLift's documented limits).
const (
	MaxTicketID         = 128
	MaxTicketPlayers    = 10
	MaxDescribeTickets  = 10
	MaxPlayerAttributes = 10
	MaxAttrString       = 100
	MaxAttrList         = 100
	MaxAttrMap          = 10
)

// Ticket statuses, short.
const (
	stQueued     = api.MatchmakingConfigurationStatusQueued
	stSearching  = api.MatchmakingConfigurationStatusSearching
	stAccept     = api.MatchmakingConfigurationStatusRequiresAcceptance
	stPlacing    = api.MatchmakingConfigurationStatusPlacing
	stCompleted  = api.MatchmakingConfigurationStatusCompleted
	stFailed     = api.MatchmakingConfigurationStatusFailed
	stCancelled  = api.MatchmakingConfigurationStatusCancelled
	stTimedOut   = api.MatchmakingConfigurationStatusTimedOut
	activeStates = 4
)

// active lists the statuses of a ticket that has not ended.
var active = [activeStates]api.MatchmakingConfigurationStatus{stQueued, stSearching, stAccept, stPlacing}

func isActive(st api.MatchmakingConfigurationStatus) bool { return slices.Contains(active[:], st) }

// ticketRecord is a ticket's stored state.
type ticketRecord struct {
	Ticket api.MatchmakingTicket `json:"ticket"`
	// Deadline is when the ticket times out (StartTime + the
	// configuration's RequestTimeoutSeconds).
	Deadline time.Time `json:"deadline"`
	// MatchID is the match the ticket is in (REQUIRES_ACCEPTANCE, PLACING,
	// COMPLETED).
	MatchID string `json:"matchId,omitempty"`
	// Accepted are the players who accepted the current match.
	Accepted []string `json:"accepted,omitempty"`
	// Backfill marks a backfill ticket (StartMatchBackfill): its players
	// are in a game session already, each on a team.
	Backfill bool `json:"backfill,omitempty"`
	// GameSessionArn is the game session a backfill ticket fills ("" for
	// a STANDALONE backfill without one).
	GameSessionArn string `json:"gameSessionArn,omitempty"`
	// Size is what the ticket counts in its configuration's ticket bytes
	// (ticketbytes.go) while it is active: its record's size when it
	// started. 0 once it has ended (and on tickets an older Hoist started).
	Size int64 `json:"size,omitempty"`
	// seq is the Seq of the record the ticket was read from: the version
	// of the record, since every write of a ticket inserts it anew.
	seq int64
	// count is the record of the configuration's count that a ticket
	// StartMatchmaking starts adds to, as read (held by its Claim);
	// nil: the next in turn.
	count *heldCount
}

func (t *ticketRecord) id() string     { return api.ToString(t.Ticket.TicketId) }
func (t *ticketRecord) config() string { return api.ToString(t.Ticket.ConfigurationName) }

// putTicket stores t: Parent its configuration, Key its status, Rank its
// deadline (Unix ms) while QUEUED or SEARCHING, its match's acceptance
// deadline while REQUIRES_ACCEPTANCE, else its end time (or 0). The data
// leaves out what the record holds already or what follows from it (the
// ticket ID, the configuration's name and ARN): decodeTicket puts them
// back. A ticket inserted is counted in its configuration's ticket bytes,
// and a ticket that ends is taken out of them.
//
// Every write replaces the record (store.Replace: as a delete and an
// insert, in one deferred write on PostgreSQL), so that the record's Seq
// changes with each write: the matchmaker's pool cache knows
// a ticket changed by its Seq alone, without reading it (loop.go). It
// also keeps the journal store from holding a ticket's earlier version,
// with its data, in the indexes a Put leaves alone when Parent is
// unchanged (creation order, Parent). Nothing lists tickets in creation
// order.
func putTicket(ctx context.Context, tx store.Tx, t *ticketRecord, rank int64, insert bool) error {
	if !isActive(t.Ticket.Status) && t.Size > 0 {
		if err := addTicketBytes(ctx, tx, t.config(), -t.Size); err != nil {
			return err
		}
		t.Size = 0
	}
	rec, err := ticketRec(t, rank, insert)
	if err != nil {
		return err
	}
	if insert {
		data := rec.Data
		// A failed insert (ErrExists) fails the transaction, count and all.
		if rec.Data, err = sizeTicket(ctx, tx, t, data); err != nil {
			return err
		}
		// Not answered on PostgreSQL: an ID used already fails the
		// transaction with ErrExists, here or at its end (usedTicketID).
		return store.InsertNew(ctx, tx, rec)
	}
	return store.Replace(ctx, tx, rec) // a new Seq: a delete and insert, deferred on PostgreSQL
}

// ticketRec is t's record (see putTicket), without its size when insert.
func ticketRec(t *ticketRecord, rank int64, insert bool) (store.Record, error) {
	c := *t
	c.Ticket.TicketId, c.Ticket.ConfigurationName, c.Ticket.ConfigurationArn = nil, nil, nil
	if insert {
		c.Size = 0
	}
	data, err := json.Marshal(&c)
	if err != nil {
		return store.Record{}, err
	}
	return store.Record{Kind: KindTicket, ID: t.id(), Parent: t.config(), Key: statusKey(t.Ticket.Status), Rank: rank, Data: data}, nil
}

// startSearching writes a QUEUED ticket t, just read in tx, as SEARCHING.
// On a shared store (PostgreSQL) it is a Put, which keeps the record's
// Seq, so that the matchmaker learns the version it wrote without reading
// the record again (a round trip a ticket in its serial pass): no other
// version of the ticket had that Seq as SEARCHING, so the pool cannot
// mistake it. On the embedded stores it is putTicket (see there why).
func startSearching(ctx context.Context, tx store.Tx, t *ticketRecord, shared bool) error {
	t.Ticket.Status = stSearching
	if !shared {
		if err := putTicket(ctx, tx, t, t.Deadline.UnixMilli(), false); err != nil {
			return err
		}
		rec, err := tx.Get(ctx, KindTicket, t.id()) // the version just written, for the pool
		if err != nil {
			return err
		}
		t.seq = rec.Seq
		return nil
	}
	rec, err := ticketRec(t, t.Deadline.UnixMilli(), false)
	if err != nil {
		return err
	}
	return tx.Put(ctx, rec)
}

// decodeTicket reads a ticket record into t, with the ticket ID and the
// configuration's name from the record. The configuration's ARN is left
// for the API answers to fill in (withARN).
func decodeTicket(rec store.Record, t *ticketRecord) error {
	if err := store.Decode(rec, t); err != nil {
		return err
	}
	t.Ticket.TicketId, t.Ticket.ConfigurationName = api.String(rec.ID), api.String(rec.Parent)
	t.seq = rec.Seq
	return nil
}

// withARN returns t's ticket with its configuration's ARN, as the API
// answers it.
func (s *Service) withARN(t *ticketRecord) api.MatchmakingTicket {
	out := t.Ticket
	if out.ConfigurationArn == nil {
		out.ConfigurationArn = api.String(s.configARN(t.config()))
	}
	return out
}

// statusKey returns st as one of the status constants, so that the
// records' Keys share its bytes instead of each holding its own copy.
func statusKey(st api.MatchmakingConfigurationStatus) string {
	for _, c := range [...]api.MatchmakingConfigurationStatus{stQueued, stSearching, stAccept, stPlacing, stCompleted, stFailed, stCancelled, stTimedOut} {
		if c == st {
			return string(c)
		}
	}
	return string(st)
}

// getTicket reads a ticket; an unknown one is NotFoundException.
func getTicket(ctx context.Context, tx store.Tx, id string) (*ticketRecord, error) {
	rec, err := tx.Get(ctx, KindTicket, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, api.NewNotFoundException("matchmaking ticket %s does not exist", id)
		}
		return nil, err
	}
	t := new(ticketRecord)
	if err := decodeTicket(rec, t); err != nil {
		return nil, err
	}
	return t, nil
}

// ticketsByID reads the ticket records of ids that exist, in one
// store.GetMany (one round trip on PostgreSQL), by ID.
func ticketsByID(ctx context.Context, tx store.Tx, ids []string) (map[string]store.Record, error) {
	recs, err := store.GetMany(ctx, tx, KindTicket, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]store.Record, len(recs))
	for _, rec := range recs {
		byID[rec.ID] = rec
	}
	return byID, nil
}

// activeTickets counts the configuration's tickets that have not ended.
func activeTickets(ctx context.Context, tx store.Tx, config string) (int, error) {
	n := 0
	for _, st := range active {
		c, err := tx.Count(ctx, store.Query{Kind: KindTicket, Parent: config, HasParent: true, Key: string(st), HasKey: true})
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// toFlex converts API players to the matcher's.
func toFlex(ps []api.Player) []flexmatch.Player {
	out := make([]flexmatch.Player, len(ps))
	for i, p := range ps {
		fp := flexmatch.Player{ID: api.ToString(p.PlayerId), Team: api.ToString(p.Team)}
		if len(p.PlayerAttributes) > 0 {
			fp.Attributes = make(map[string]flexmatch.Value, len(p.PlayerAttributes))
			for k, v := range p.PlayerAttributes {
				fp.Attributes[k] = flexmatch.Value{S: v.S, N: v.N, SL: v.SL, SDM: v.SDM}
			}
		}
		if len(p.LatencyInMs) > 0 {
			fp.Latencies = make(map[string]int, len(p.LatencyInMs))
			for k, v := range p.LatencyInMs {
				fp.Latencies[k] = int(v)
			}
		}
		out[i] = fp
	}
	return out
}

// checkPlayers applies the rules of a ticket's players that need no rule
// set: 1-10 players (max for backfill), unique IDs, attribute values that
// are exactly one of S, N, SL, SDM and within GameLift's limits.
func checkPlayers(ps []api.Player, maxPlayers int) error {
	if len(ps) < 1 || len(ps) > maxPlayers {
		return api.NewInvalidRequestException("Players has %d entries, 1 to %d allowed", len(ps), maxPlayers)
	}
	seen := make(map[string]bool, len(ps))
	for i, p := range ps {
		id := api.ToString(p.PlayerId)
		switch {
		case id == "":
			return api.NewInvalidRequestException("Players[%d].PlayerId is required", i)
		case seen[id]:
			return api.NewInvalidRequestException("Players[%d].PlayerId %s repeats an earlier player", i, id)
		}
		seen[id] = true
		if len(p.PlayerAttributes) > MaxPlayerAttributes {
			return api.NewInvalidRequestException("Players[%d].PlayerAttributes has %d entries, at most %d allowed", i, len(p.PlayerAttributes), MaxPlayerAttributes)
		}
		for _, k := range slices.Sorted(maps.Keys(p.PlayerAttributes)) {
			if err := checkValue(p.PlayerAttributes[k]); err != nil {
				return api.NewInvalidRequestException("Players[%d].PlayerAttributes[%s]: %v", i, k, err)
			}
		}
		for _, r := range slices.Sorted(maps.Keys(p.LatencyInMs)) {
			if p.LatencyInMs[r] < 0 {
				return api.NewInvalidRequestException("Players[%d].LatencyInMs[%s] is negative", i, r)
			}
		}
	}
	return nil
}

// checkValue checks one AttributeValue.
func checkValue(v api.AttributeValue) error {
	n := 0
	for _, set := range []bool{v.S != nil, v.N != nil, v.SL != nil, v.SDM != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("exactly one of the values S, N, SL and SDM must be set")
	}
	switch {
	case v.S != nil && len(*v.S) > MaxAttrString:
		return fmt.Errorf("the value S is %d characters, at most %d allowed", len(*v.S), MaxAttrString)
	case len(v.SL) > MaxAttrList:
		return fmt.Errorf("the value SL has %d entries, at most %d allowed", len(v.SL), MaxAttrList)
	case len(v.SDM) > MaxAttrMap:
		return fmt.Errorf("the value SDM has %d entries, at most %d allowed", len(v.SDM), MaxAttrMap)
	}
	return nil
}

// ruleSetOf returns the parsed rule set of a configuration.
func (s *Service) ruleSetOf(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration) (*flexmatch.RuleSet, error) {
	return s.ruleSets.parsed(ctx, tx, api.ToString(c.RuleSetName))
}

// StartMatchmaking queues a ticket for the configuration's matchmaker.
func (s *Service) StartMatchmaking(ctx context.Context, in *api.StartMatchmakingInput) (*api.StartMatchmakingOutput, error) {
	id := api.ToString(in.TicketId)
	if id == "" {
		id = s.cfg.NewID()
	} else if len(id) > MaxTicketID || !configNamePattern.MatchString(id) {
		return nil, api.NewInvalidRequestException("TicketId %q must be 1 to %d letters, digits, '-' or '.'", id, MaxTicketID)
	}
	if err := checkPlayers(in.Players, MaxTicketPlayers); err != nil {
		return nil, err
	}
	now := s.now()
	pre, err := s.countsBefore(ctx, configName(api.ToString(in.ConfigurationName)), now)
	if err != nil {
		return nil, err
	}
	// The record of the count the ticket adds to: the same whether it
	// starts in a Claim or, after one, in an Update (which creates it).
	countID := nextCountID(configName(api.ToString(in.ConfigurationName)))
	var t *ticketRecord
	start := func(tx store.Tx, claimed bool) error {
		var err error
		var cnt ticketCounts
		t, cnt, err = s.startTx(ctx, tx, in, id, countID, now, claimed, pre)
		if err != nil {
			return err
		}
		t.Ticket.EstimatedWaitTime = estimatedSeconds(cnt.est)
		return s.checkTicketBytes(t, cnt.bytes)
	}
	if err := s.startIn(ctx, start); err != nil {
		return nil, usedTicketID(err, id)
	}
	s.counts.started(t.config(), t.Size)
	s.wake.Wake(t.config())
	return &api.StartMatchmakingOutput{MatchmakingTicket: &t.Ticket}, nil
}

// startTx stores the QUEUED ticket of a StartMatchmaking request in tx.
// Claimed (a Claim on PostgreSQL, startIn), it first holds the record of
// the configuration's count that the ticket adds to (readForStart: a
// configuration is deleted with every such record, so it cannot be
// deleted while tx holds one) and reads the configuration and its rule
// set without holding them, in one round trip; the ticket's insert (sent
// with COMMIT on PostgreSQL) refuses an ID used already, waiting for a
// transaction inserting the same ID at once.
// countID is the record of the count the ticket adds to; pre the
// configuration's counts read before (countsBefore; nil: read in tx,
// before the ticket is counted). It returns the counts too.
func (s *Service) startTx(ctx context.Context, tx store.Tx, in *api.StartMatchmakingInput, id, countID string, now time.Time, claimed bool, pre *ticketCounts) (t *ticketRecord, cnt ticketCounts, err error) {
	var held *heldCount
	var c *api.MatchmakingConfiguration
	var rs *flexmatch.RuleSet
	if claimed {
		held, c, rs, err = s.readForStart(ctx, tx, countID, configName(api.ToString(in.ConfigurationName)))
		if err != nil {
			return nil, cnt, err
		}
		tx = store.Unheld(tx)
	} else if c, err = getConfig(ctx, tx, api.ToString(in.ConfigurationName)); err != nil {
		return nil, cnt, err
	}
	if cnt, err = countsIn(ctx, tx, api.ToString(c.Name), now, pre); err != nil { // before putTicket counts t
		return nil, cnt, err
	}
	if rs == nil {
		rs, err = s.ruleSetOf(ctx, tx, c)
	}
	var ir *api.InvalidRequestException
	var nf *api.NotFoundException
	switch {
	case claimed && errors.As(err, &nf):
		return nil, cnt, errRunInUpdate // deleted since the configuration was read
	case errors.As(err, &ir):
		return nil, cnt, api.NewInvalidRequestException("the rule set %s of matchmaking configuration %s cannot be used: %s", api.ToString(c.RuleSetName), api.ToString(c.Name), ir.ErrorMessage())
	case err != nil:
		return nil, cnt, err
	}
	players := toFlex(in.Players)
	for i := range players {
		players[i].Team = "" // a matchmaking ticket's players have no team yet
	}
	if err := rs.CheckTicket(flexmatch.Ticket{ID: id, Start: now, Players: players}); err != nil {
		var fe *flexmatch.Error
		if errors.As(err, &fe) {
			return nil, cnt, api.NewInvalidRequestException("%s", fe.Error())
		}
		return nil, cnt, api.NewInvalidRequestException("Players: %v", err)
	}
	ps := slices.Clone(in.Players)
	for i := range ps {
		ps[i].Team = nil
	}
	if held == nil {
		if s.cfg.Shared {
			if err := createCounts(ctx, tx, api.ToString(c.Name)); err != nil {
				return nil, cnt, err
			}
		}
		n, err := countValue(ctx, tx, countID)
		if err != nil {
			return nil, cnt, err
		}
		held = &heldCount{id: countID, key: bytesAdded, n: n}
	}
	t = &ticketRecord{Ticket: api.MatchmakingTicket{TicketId: api.String(id), ConfigurationName: c.Name,
		ConfigurationArn: c.ConfigurationArn, Status: stQueued, StartTime: api.Time(now), Players: ps},
		Deadline: now.Add(time.Duration(api.ToInt32(c.RequestTimeoutSeconds)) * time.Second), count: held}
	err = putTicket(ctx, tx, t, t.Deadline.UnixMilli(), true)
	return t, cnt, usedTicketID(err, id)
}

// usedTicketID is err, or the answer to a ticket ID used already when err
// is ErrExists: from the insert of the ticket (putTicket), or from the
// end of its transaction where the insert is not answered.
func usedTicketID(err error, id string) error {
	if errors.Is(err, store.ErrExists) {
		return api.NewInvalidRequestException("TicketId %s was already used: ticket IDs cannot be reused", id)
	}
	return err
}

// readForStart reads, in a start's Claim, in one round trip
// (store.GetRefs): the record countID of the configuration's count that
// the ticket adds to, held; the configuration; and the rule set it named
// when this replica last read it (ruleSetOf), neither held. Deleting a
// configuration deletes every record of its count
// (DeleteMatchmakingConfiguration, SERIALIZABLE), so while a Claim holds
// one the configuration cannot be deleted (the delete waits, then fails
// with a serialization error, runs again and sees the new ticket). A
// missing record (a configuration an earlier Hoist created, whose first
// start writes them all: createCounts; or the configuration deleted) is
// errRunInUpdate: a new record would protect nothing. rs is
// nil when the configuration names another rule set now, or the one it
// names was not found (the caller reads it itself: ruleSetOf).
func (s *Service) readForStart(ctx context.Context, tx store.Tx, countID, config string) (held *heldCount, c *api.MatchmakingConfiguration, rs *flexmatch.RuleSet, err error) {
	refs := []store.Ref{{Kind: KindTicketBytes, ID: countID}, {Kind: KindConfiguration, ID: config, Unheld: true}}
	cached, _ := s.ruleSetNames.Load(config)
	if cached != nil {
		refs = append(refs, store.Ref{Kind: KindRuleSet, ID: cached.(string), Unheld: true})
	}
	got, err := store.GetRefs(ctx, tx, refs)
	if err != nil {
		return nil, nil, nil, err
	}
	if !got[0].Found {
		return nil, nil, nil, errRunInUpdate
	}
	if held, err = heldFrom(got[0].Record); err != nil {
		return nil, nil, nil, err
	}
	if c, err = namedFound[api.MatchmakingConfiguration](got[1], config, "matchmaking configuration"); err != nil {
		return nil, nil, nil, err
	}
	name := ruleSetName(api.ToString(c.RuleSetName))
	if cached != name {
		s.ruleSetNames.Store(config, name)
	} else if got[2].Found {
		rs, err = s.ruleSets.fromRecord(name, got[2].Record)
	}
	return held, c, rs, err
}

// DescribeMatchmaking returns the tickets named (1 to 10; unknown ones are
// left out), in the order asked.
func (s *Service) DescribeMatchmaking(ctx context.Context, in *api.DescribeMatchmakingInput) (*api.DescribeMatchmakingOutput, error) {
	if n := len(in.TicketIds); n < 1 || n > MaxDescribeTickets {
		return nil, api.NewInvalidRequestException("TicketIds has %d entries, 1 to %d allowed", n, MaxDescribeTickets)
	}
	out := &api.DescribeMatchmakingOutput{}
	now := s.now()
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		out.TicketList = make([]api.MatchmakingTicket, 0, len(in.TicketIds))
		ests := map[string]int64{}
		recs, err := ticketsByID(ctx, tx, in.TicketIds) // one read, not one a ticket
		if err != nil {
			return err
		}
		for _, id := range in.TicketIds {
			rec, ok := recs[id]
			if !ok {
				continue
			}
			t := new(ticketRecord)
			if err := decodeTicket(rec, t); err != nil {
				return err
			}
			if st := t.Ticket.Status; st == stQueued || st == stSearching {
				est, ok := ests[t.config()]
				if !ok {
					if est, err = estimate(ctx, tx, t.config(), now); err != nil {
						return err
					}
					ests[t.config()] = est
				}
				t.Ticket.EstimatedWaitTime = estimatedSeconds(est)
			}
			out.TicketList = append(out.TicketList, s.withARN(t))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StopMatchmaking cancels a ticket that has not ended. With its match
// waiting for acceptance, the match fails like a rejection: the match's
// other tickets go back to SEARCHING.
func (s *Service) StopMatchmaking(ctx context.Context, in *api.StopMatchmakingInput) (*api.StopMatchmakingOutput, error) {
	err := s.update(ctx, func(ctx context.Context, tx store.Tx) error {
		t, err := getTicket(ctx, tx, api.ToString(in.TicketId))
		if err != nil {
			return err
		}
		st := t.Ticket.Status
		if !isActive(st) {
			return api.NewInvalidRequestException("matchmaking ticket %s is %s: only a ticket that has not ended can be stopped", t.id(), st)
		}
		if st == stPlacing {
			return api.NewInvalidRequestException("matchmaking ticket %s is PLACING: its match is being placed", t.id())
		}
		return s.stopTx(ctx, tx, t, "Cancelled by request.")
	})
	if err != nil {
		return nil, err
	}
	return &api.StopMatchmakingOutput{}, nil
}

// endTx ends t with a terminal status and publishes its event.
func (s *Service) endTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, t *ticketRecord, st api.MatchmakingConfigurationStatus, reason, msg string, now time.Time, metrics []flexmatch.RuleMetric) error {
	return s.endWithTx(ctx, tx, c, t, st, reason, msg, eventReason(st), now, metrics)
}

// failTx ends t FAILED; its MatchmakingFailed event's reason is code.
func (s *Service) failTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, t *ticketRecord, code, msg string, now time.Time, metrics []flexmatch.RuleMetric) error {
	return s.endWithTx(ctx, tx, c, t, stFailed, "FAILED", msg, code, now, metrics)
}

// endWithTx ends t with status st (StatusReason reason, StatusMessage msg)
// and publishes its event with evReason: the match it was in (matchId),
// and its ruleEvaluationMetrics, the match's or, without a match, what the
// matcher's passes found for the ticket (ruleTally).
func (s *Service) endWithTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, t *ticketRecord, st api.MatchmakingConfigurationStatus, reason, msg, evReason string, now time.Time, metrics []flexmatch.RuleMetric) error {
	t.Ticket.Status, t.Ticket.EndTime = st, api.Time(now)
	t.Ticket.StatusReason, t.Ticket.StatusMessage = api.String(reason), api.String(msg)
	t.Accepted = nil
	if err := putTicket(ctx, tx, t, now.UnixMilli(), false); err != nil {
		return err
	}
	if t.Backfill && t.GameSessionArn != "" && s.cfg.Backfiller != nil {
		gs, id, reason := t.GameSessionArn, t.id(), backfillReason(st)
		later(ctx, func(ctx context.Context) { s.cfg.Backfiller.BackfillEnded(ctx, gs, id, reason) })
	}
	typ := map[api.MatchmakingConfigurationStatus]string{stCancelled: evCancelled, stTimedOut: evTimedOut, stFailed: evFailed}[st]
	d := s.detail(typ, c, []*ticketRecord{t})
	d.Reason, d.Message, d.MatchID = evReason, msg, t.MatchID
	if metrics == nil {
		metrics = s.tally.metrics(t.config(), t.id())
	}
	d.RuleEvaluationMetrics = toMetrics(metrics)
	if err := s.publish(ctx, tx, c, now, d); err != nil {
		return err
	}
	if t.Backfill && t.GameSessionArn != "" && st == stTimedOut {
		return s.autoTimedOutTx(ctx, tx, c, t.GameSessionArn, now)
	}
	return nil
}

// eventReason is the "reason" of a ticket's ending event, as GameLift's
// documented events give it (failTx gives a FAILED ticket's its own code).
func eventReason(st api.MatchmakingConfigurationStatus) string {
	switch st {
	case stCancelled:
		return "Cancelled"
	case stTimedOut:
		return "TimedOut"
	}
	return failUnexpected
}
