package sessions

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// seedActive writes n ACTIVE game sessions of fleetID straight into a
// store (as the sessions package stores them), with a "mode" property of
// four values, a "skill" property of 0..999, up to 10 players of 10 and
// creation times one millisecond apart.
func seedActive(tb testing.TB, st store.Store, fleetID string, n int) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const batch = 1000
	for start := 0; start < n; start += batch {
		err := st.Update(context.Background(), func(tx store.Tx) error {
			for i := start; i < min(start+batch, n); i++ {
				id := fmt.Sprintf("arn:aws:gamelift:us-west-2::gamesession/%s/gsess-%08d", fleetID, i)
				gs := hosting.GameSession{ProcessID: fmt.Sprintf("proc-%d", i), Session: api.GameSession{
					GameSessionId: api.String(id), FleetId: api.String(fleetID), Name: api.String(fmt.Sprintf("game %d", i)),
					Status: api.GameSessionStatusActive, Location: api.String("us-west-2"),
					MaximumPlayerSessionCount: api.Int32(10), CurrentPlayerSessionCount: api.Int32(int32(rng.IntN(11))),
					CreationTime: &api.Timestamp{Time: created.Add(time.Duration(i) * time.Millisecond)},
					GameProperties: []api.GameProperty{
						{Key: api.String("mode"), Value: api.String([]string{"ctf", "dm", "tdm", "koth"}[rng.IntN(4)])},
						{Key: api.String("skill"), Value: api.String(fmt.Sprintf("%03d", rng.IntN(1000)))}},
				}}
				rec := store.Record{Kind: hosting.KindGameSession, ID: id, Parent: fleetID,
					Key: string(api.GameSessionStatusActive), Rank: never}
				if err := store.PutJSON(context.Background(), tx, rec, &gs); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkSearchGameSessions measures SearchGameSessions at the service
// level over the journal store with 100,000 ACTIVE game sessions in one
// fleet: loading the fleet into the index (the first search), then one
// search per operation (a filter on a game property and the player count,
// a sort on a property, 20 results), alone and with 1,000 game session
// writes a second going on (each search first re-reads what changed).
// Reports p50/p99 per search.
//
//	go test -run '^$' -bench SearchGameSessions -benchtime 2000x ./internal/sessions/
func BenchmarkSearchGameSessions(b *testing.B) {
	const n = 100_000
	h := newHarness(b, func(c *Config) { c.Now = time.Now })
	h.addFleet("fleet-1")
	seedActive(b, h.st, "fleet-1", n)
	in := &api.SearchGameSessionsInput{FleetId: api.String("fleet-1"),
		FilterExpression: api.String("gameSessionProperties.mode = 'ctf' AND hasAvailablePlayerSessions = true"),
		SortExpression:   api.String("gameSessionProperties.skill DESC")}
	start := time.Now()
	out, err := h.svc.SearchGameSessions(h.ctx, in)
	if err != nil {
		b.Fatal(err)
	}
	load := time.Since(start)
	if len(out.GameSessions) != maxSearchPage {
		b.Fatalf("%d results", len(out.GameSessions))
	}
	for _, churn := range []int{0, 1000} {
		b.Run(fmt.Sprintf("sessions=%d/writes-per-s=%d", n, churn), func(b *testing.B) {
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { // churn: UpdateGameSession on random sessions, at most churn a second
				defer close(done)
				if churn == 0 {
					return
				}
				tick := time.NewTicker(time.Second / time.Duration(churn))
				defer tick.Stop()
				rng := rand.New(rand.NewPCG(1, 1))
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					id := fmt.Sprintf("arn:aws:gamelift:us-west-2::gamesession/fleet-1/gsess-%08d", rng.IntN(n))
					_, err := h.svc.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: api.String(id),
						GameProperties: []api.GameProperty{{Key: api.String("skill"), Value: api.String(fmt.Sprintf("%03d", rng.IntN(1000)))}}})
					if err != nil {
						b.Error(err)
						return
					}
				}
			}()
			lat := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				if _, err := h.svc.SearchGameSessions(h.ctx, in); err != nil {
					b.Fatal(err)
				}
				lat[i] = time.Since(t0)
			}
			b.StopTimer()
			close(stop)
			<-done
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(load.Milliseconds()), "first-search-ms")
		})
	}
}
