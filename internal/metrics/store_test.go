package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/hoistgg/hoist/internal/events"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/fleetiq"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/matchmaking"
	"github.com/hoistgg/hoist/internal/placement"
	"github.com/hoistgg/hoist/internal/store"
)

// retrying runs each Update's function twice, as a backend retrying a
// serialization failure does: the first attempt's writes are discarded.
type retrying struct{ store.Store }

var errDiscard = errors.New("discarded attempt")

func (r retrying) Update(ctx context.Context, fn func(store.Tx) error) error {
	err := r.Store.Update(ctx, func(tx store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errDiscard
	})
	if !errors.Is(err, errDiscard) {
		return err
	}
	return r.Store.Update(ctx, fn)
}

// TestTransitionsCounted: the store wrapper counts each GameLift event of
// a committed transaction once, from the Key its records had before and
// after it: not the attempts a backend discarded, not a transaction that
// failed, not a record rewritten without a change.
func TestTransitionsCounted(t *testing.T) {
	ctx := context.Background()
	m := New("r1", nil, ReplicaGauges{})
	st := m.WrapStore(retrying{openJournal(t)})
	const fleet, loc = "fleet-1", "us-west-2"
	gsARN := "arn:aws:gamelift:" + loc + "::gamesession/" + fleet + "/gsess-1"
	put := func(recs ...store.Record) {
		t.Helper()
		if err := st.Update(ctx, func(tx store.Tx) error {
			for _, r := range recs {
				if err := tx.Put(ctx, r); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	process := func(state hosting.ProcessState, idle bool, reason string) store.Record {
		return store.Record{Kind: hosting.KindProcess, ID: "process-1", Parent: fleet, Key: hosting.ProcessKey(loc, state, idle),
			Data: mustJSON(t, hosting.Process{ID: "process-1", FleetID: fleet, Location: loc, State: state, EndReason: reason})}
	}
	player := func(st api.PlayerSessionStatus) store.Record {
		return store.Record{Kind: hosting.KindPlayerSession, ID: "psess-1", Parent: gsARN, Key: string(st), Data: []byte("{}")}
	}
	session := func(st api.GameSessionStatus, reason api.GameSessionStatusReason) store.Record {
		return store.Record{Kind: hosting.KindGameSession, ID: gsARN, Parent: fleet, Key: string(st),
			Data: mustJSON(t, hosting.GameSession{Session: api.GameSession{Status: st, StatusReason: reason, Location: api.String(loc)}})}
	}

	put(process(hosting.ProcessLaunching, false, ""))
	put(process(hosting.ProcessActive, true, ""), session(api.GameSessionStatusActive, ""), player(api.PlayerSessionStatusReserved))
	put(process(hosting.ProcessActive, false, ""), player(api.PlayerSessionStatusActive))
	put(player(api.PlayerSessionStatusActive)) // rewritten, unchanged
	failed := st.Update(ctx, func(tx store.Tx) error {
		if err := tx.Put(ctx, process(hosting.ProcessTerminated, false, "SERVER_PROCESS_CRASHED: exited with code 1")); err != nil {
			return err
		}
		return errors.New("the transaction fails")
	})
	if failed == nil {
		t.Fatal("the failing transaction committed")
	}
	put(process(hosting.ProcessTerminated, false, "SERVER_PROCESS_CRASHED: exited with code 1"),
		session(api.GameSessionStatusTerminated, api.GameSessionStatusReasonInterrupted))

	g := &m.gl
	for name, c := range map[string]struct {
		got  float64
		want float64
	}{
		"ServerProcessActivations":          {testutil.ToFloat64(g.serverProcessActivations.WithLabelValues(fleet, loc)), 1},
		"PlayerSessionActivations":          {testutil.ToFloat64(g.playerSessionActivations.WithLabelValues(fleet, loc)), 1},
		"ServerProcessTerminations":         {testutil.ToFloat64(g.serverProcessTerminations.WithLabelValues(fleet, loc)), 1},
		"ServerProcessAbnormalTerminations": {testutil.ToFloat64(g.serverProcessAbnormalTerminations.WithLabelValues(fleet, loc)), 1},
		"GameSessionInterruptions":          {testutil.ToFloat64(g.gameSessionInterruptions.WithLabelValues(fleet, loc)), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}
}

// TestInsertsCounted: a placement or ticket counts as started when it is
// inserted, not when matchmaking rewrites a ticket (delete, then insert,
// in one transaction); a FleetIQ instance set to SPOT_TERMINATING counts
// its game servers as interrupted, once.
func TestInsertsCounted(t *testing.T) {
	ctx := context.Background()
	m := New("r1", nil, ReplicaGauges{})
	st := m.WrapStore(retrying{openJournal(t)})
	ticket := store.Record{Kind: matchmaking.KindTicket, ID: "t1", Parent: "cfg", Key: "QUEUED",
		Data: []byte(`{"ticket":{"TicketId":"t1","Players":[{"PlayerId":"a"},{"PlayerId":"b"}]}}`)}
	rewrite := func(tx store.Tx) error {
		if err := tx.Delete(ctx, ticket.Kind, ticket.ID); err != nil {
			return err
		}
		return tx.Insert(ctx, ticket)
	}
	instance := func(status string) store.Record {
		return store.Record{Kind: fleetiq.KindInstance, ID: "grp/i-1", Parent: "grp", Key: status + "/1",
			Data: []byte(`{"g":"grp","i":"i-1","s":"` + status + `","a":1,"b":2}`)}
	}
	steps := []func(tx store.Tx) error{
		func(tx store.Tx) error { return tx.Insert(ctx, ticket) },
		rewrite, rewrite,
		func(tx store.Tx) error {
			return tx.Insert(ctx, store.Record{Kind: placement.KindPlacement, ID: "p1", Parent: "q", Key: "PENDING", Data: []byte("{}")})
		},
		func(tx store.Tx) error {
			return tx.Put(ctx, store.Record{Kind: placement.KindPlacement, ID: "p1", Parent: "q", Key: "FULFILLED", Data: []byte("{}")})
		},
		func(tx store.Tx) error { return tx.Put(ctx, instance("ACTIVE")) },
		func(tx store.Tx) error { return tx.Put(ctx, instance("SPOT_TERMINATING")) },
		func(tx store.Tx) error { return tx.Put(ctx, instance("SPOT_TERMINATING")) },
	}
	for _, step := range steps {
		if err := st.Update(ctx, step); err != nil {
			t.Fatal(err)
		}
	}
	g := &m.gl
	for name, c := range map[string][2]float64{
		"TicketsStarted":          {testutil.ToFloat64(g.ticketsStarted.WithLabelValues("cfg")), 1},
		"PlayersStarted":          {testutil.ToFloat64(g.playersStarted.WithLabelValues("cfg")), 2},
		"PlacementsStarted":       {testutil.ToFloat64(g.placementsStarted.WithLabelValues("q")), 1},
		"PlacementsSucceeded":     {testutil.ToFloat64(g.placementsSucceeded.WithLabelValues("q")), 1},
		"GameServerInterruptions": {testutil.ToFloat64(g.gameServerInterruptions.WithLabelValues("grp")), 3},
	} {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
}

// TestMatchmakingEventsCounted: each matchmaking event counts once its
// transaction commits, with a sample of the ticket's wait.
func TestMatchmakingEventsCounted(t *testing.T) {
	ctx := context.Background()
	m := New("r1", nil, ReplicaGauges{})
	st := m.WrapStore(retrying{openJournal(t)})
	p := m.WrapPublisher(discard{})
	publish := func(typ, acceptance string) {
		t.Helper()
		d, _ := json.Marshal(map[string]any{"type": typ, "acceptance": acceptance,
			"tickets": []map[string]string{{"startTime": "2026-01-01T00:00:00.000Z"}, {"startTime": "2026-01-01T00:00:10.000Z"}}})
		e := eventAt(typ, d)
		if err := st.Update(ctx, func(tx store.Tx) error { return p.Publish(ctx, tx, e) }); err != nil {
			t.Fatal(err)
		}
	}
	publish("PotentialMatchCreated", "")
	publish("AcceptMatchCompleted", "Rejected")
	publish("MatchmakingSucceeded", "")
	publish("MatchmakingTimedOut", "")
	g := &m.gl
	for name, c := range map[string][2]float64{
		"MatchesCreated":  {testutil.ToFloat64(g.matchesCreated.WithLabelValues("cfg")), 1},
		"MatchesRejected": {testutil.ToFloat64(g.matchesRejected.WithLabelValues("cfg")), 1},
		"MatchesPlaced":   {testutil.ToFloat64(g.matchesPlaced.WithLabelValues("cfg")), 1},
		"TicketsTimedOut": {testutil.ToFloat64(g.ticketsTimedOut.WithLabelValues("cfg")), 2},
	} {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	if n := sampleCount(t, g.timeToMatch.WithLabelValues("cfg")); n != 2 {
		t.Errorf("TimeToMatch samples = %d, want 2 (one per ticket)", n)
	}
}

// discard is a Publisher that records nothing.
type discard = events.Discard

// eventAt is a matchmaking event of configuration cfg at a minute past
// 2026-01-01T00:00Z.
func eventAt(typ string, detail []byte) events.Event {
	return events.Event{DetailType: events.DetailTypeMatchmaking, Detail: detail,
		Resources: []string{"arn:aws:gamelift:us-west-2:123456789012:matchmakingconfiguration/cfg"},
		Time:      time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)}
}

// sampleCount returns a histogram's count of samples.
func sampleCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	var d dto.Metric
	if err := o.(prometheus.Metric).Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetHistogram().GetSampleCount()
}

// waking is a store with PostgreSQL's optional Waker.
type waking struct{ store.Store }

func (waking) Wake(context.Context, string, ...string) error                      { return nil }
func (waking) Listen(ctx context.Context, _ string, _ func(payload string)) error { return nil }

// TestWrapStoreKeepsWaker: the wrapped store is still a store.Waker when
// the store it wraps is one (the replicas' inboxes fell back to polling
// alone behind the wrapper before), and is none when it is not.
func TestWrapStoreKeepsWaker(t *testing.T) {
	m := New("r1", &Cluster{}, ReplicaGauges{})
	if _, ok := m.WrapStore(waking{}).(store.Waker); !ok {
		t.Error("a wrapped PostgreSQL-like store lost its Waker")
	}
	if _, ok := m.WrapStore(retrying{}).(store.Waker); ok {
		t.Error("a wrapped store without Waker has one")
	}
}
