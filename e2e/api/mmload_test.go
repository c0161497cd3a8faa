package api_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
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

// mmBenchBody is issue 15's benchmark rule set: 5v5, a skill distance
// rule (10, widened to 50 after 10 s) and a latency rule (150 ms).
const mmBenchBody = `{"name":"bench-5v5","ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"number","default":1000}],
 "teams":[{"name":"red","minPlayers":5,"maxPlayers":5},{"name":"blue","minPlayers":5,"maxPlayers":5}],
 "rules":[{"name":"SkillBand","type":"batchDistance","batchAttribute":"skill","maxDistance":10},
  {"name":"FastConnection","type":"latency","maxLatency":150}],
 "expansions":[{"target":"rules[SkillBand].maxDistance","steps":[{"waitTimeSeconds":10,"value":50}]}]}`

// TestMatchmakingThroughput starts -mm.tickets single-player tickets on a
// STANDALONE configuration of mmBenchBody through aws-sdk-go-v2 (32
// clients at once; skill uniform over [0, tickets/10), so that every run
// has 10 players per skill point; latencies uniform 20-140 ms to four
// regions, under the latency rule), polls DescribeMatchmaking until every ticket is COMPLETED or
// none completed for 2 s, and logs the share matched, the tickets matched
// per second and the wait of the matched tickets (EndTime - StartTime).
func TestMatchmakingThroughput(t *testing.T) {
	n := *mmLoadTickets
	h := startHoist(t)
	ctx := hoisttest.Context(t, 5*time.Minute)
	v2 := newV2(h)
	mmSetup(t, ctx, v2, "load", mmBenchBody, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	regions := []string{"us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1"}
	players := make([]types.Player, n)
	for i := range players {
		lat := map[string]int32{}
		for _, r := range regions {
			lat[r] = int32(20 + rng.IntN(121))
		}
		players[i] = types.Player{PlayerAttributes: map[string]types.AttributeValue{"skill": {N: awsv2.Float64(float64(rng.IntN(max(n/10, 1))))}},
			LatencyInMs: lat}
	}
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
				p := players[i]
				p.PlayerId = awsv2.String(ids[i])
				_, err := v2.StartMatchmaking(ctx, &glv2.StartMatchmakingInput{ConfigurationName: awsv2.String("load"), TicketId: awsv2.String(ids[i]),
					Players: []types.Player{p}})
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
	// Poll until every ticket has completed, or none did for 2 s.
	var mu sync.Mutex
	waits := make([]time.Duration, 0, n)
	pending := slices.Clone(ids)
	deadline := time.Now().Add(2 * time.Minute)
	progress, last := time.Now(), time.Now()
	for len(pending) > 0 && time.Since(progress) < 2*time.Second {
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
		if len(still) < len(pending) {
			progress, last = time.Now(), time.Now()
		}
		pending = still
	}
	if len(waits) == 0 {
		t.Fatal("no ticket matched")
	}
	total := last.Sub(begin)
	slices.Sort(waits)
	p99 := waits[len(waits)*99/100]
	rate := float64(len(waits)) / total.Seconds()
	t.Logf("%d tickets: started in %v (%.0f/s); %d (%.1f%%) COMPLETED within %v: %.0f tickets/s; wait p50 %v p99 %v max %v",
		n, started.Round(time.Millisecond), float64(n)/started.Seconds(), len(waits), 100*float64(len(waits))/float64(n),
		total.Round(time.Millisecond), rate, waits[len(waits)/2], p99, waits[len(waits)-1])
}
