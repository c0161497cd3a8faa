package api_test

import (
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

var mmLoadTickets = flag.Int("mm.tickets", 1000, "tickets TestMatchmakingThroughput starts (10000 for the documented run)")

// TestMatchmakingThroughput starts -mm.tickets single-player tickets on a
// STANDALONE 5v5 configuration through aws-sdk-go-v2 (32 clients at once),
// polls DescribeMatchmaking until every ticket is COMPLETED, and logs the
// tickets matched per second and the p99 wait (EndTime - StartTime).
func TestMatchmakingThroughput(t *testing.T) {
	n := *mmLoadTickets
	h := startHoist(t)
	ctx := hoisttest.Context(t, 5*time.Minute)
	v2 := newV2(h)
	mmSetup(t, ctx, v2, "load", mmTeamsBody, nil)
	const clients = 32
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("load-%06d", i)
	}
	begin := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				_, err := v2.StartMatchmaking(ctx, &glv2.StartMatchmakingInput{ConfigurationName: awsv2.String("load"), TicketId: awsv2.String(ids[i]),
					Players: []types.Player{{PlayerId: awsv2.String(ids[i]), PlayerAttributes: map[string]types.AttributeValue{"skill": {N: awsv2.Float64(float64(i % 50))}}}}})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	started := time.Since(begin)
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	// Poll until every ticket has completed.
	var mu sync.Mutex
	waits := make([]time.Duration, 0, n)
	pending := slices.Clone(ids)
	deadline := time.Now().Add(2 * time.Minute)
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tickets not COMPLETED after 2 minutes", len(pending), n)
		}
		var still []string
		var pw sync.WaitGroup
		chunks := make(chan []string)
		for range clients {
			pw.Go(func() {
				for ch := range chunks {
					out, err := v2.DescribeMatchmaking(ctx, &glv2.DescribeMatchmakingInput{TicketIds: ch})
					if err != nil {
						t.Error(err)
						continue
					}
					mu.Lock()
					done := map[string]bool{}
					for _, tk := range out.TicketList {
						if tk.Status == types.MatchmakingConfigurationStatusCompleted {
							done[awsv2.ToString(tk.TicketId)] = true
							waits = append(waits, tk.EndTime.Sub(*tk.StartTime))
						} else if tk.Status != types.MatchmakingConfigurationStatusQueued && tk.Status != types.MatchmakingConfigurationStatusSearching {
							t.Errorf("ticket %s is %s", awsv2.ToString(tk.TicketId), tk.Status)
						}
					}
					for _, id := range ch {
						if !done[id] {
							still = append(still, id)
						}
					}
					mu.Unlock()
				}
			})
		}
		for i := 0; i < len(pending); i += 10 {
			chunks <- pending[i:min(i+10, len(pending))]
		}
		close(chunks)
		pw.Wait()
		if t.Failed() {
			t.FailNow()
		}
		slices.Sort(still)
		pending = still
	}
	total := time.Since(begin)
	slices.Sort(waits)
	p99 := waits[len(waits)*99/100]
	rate := float64(n) / total.Seconds()
	t.Logf("%d tickets: started in %v (%.0f/s), all COMPLETED in %v: %.0f tickets/s; wait p50 %v p99 %v max %v",
		n, started.Round(time.Millisecond), float64(n)/started.Seconds(), total.Round(time.Millisecond), rate,
		waits[len(waits)/2], p99, waits[len(waits)-1])
}
