package cluster_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"

	"github.com/hoistgg/hoist/e2e/cluster"
)

// renamesEnv sets how many renames TestSearchConvergence times (default
// 200; docs/performance.md's figures: 2000).
const renamesEnv = "HOIST_CONVERGENCE_RENAMES"

// TestSearchConvergence measures how soon a game session write through
// one replica is found by SearchGameSessions on another, while other
// writes keep going: three replicas; eight ACTIVE game sessions created
// through A; B and C each rename sessions 4-7 back to back (UpdateGameSession,
// one client each), so that their transactions are running whenever a
// search reads the change feed; A renames sessions 0-3 one at a time and,
// after each answer, B or C (in turn) searches for the new name until it
// finds it. Logs the median, p99 and max of the time from the rename's
// answer to the answer of the search that found it, and how many renames
// the first search found.
//
//	HOIST_CONVERGENCE_RENAMES=2000 go test -count=1 -v -run TestSearchConvergence ./e2e/cluster/
func TestSearchConvergence(t *testing.T) {
	n := 200
	if v := os.Getenv(renamesEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", renamesEnv, v)
		}
	}
	c := cluster.Start(t, cluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	a, b, cc := c.Replicas[0].V2(), c.Replicas[1].V2(), c.Replicas[2].V2()
	fleetID := anywhereFleet(ctx, t, a, "converge")
	ids := activeSessions(ctx, t, a, fleetID, "custom-converge", 8)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var background atomic.Int64
	for w, cl := range []*gl.Client{b, cc} {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := cl.UpdateGameSession(ctx, &gl.UpdateGameSessionInput{GameSessionId: aws.String(ids[4+2*w+i%2]),
					Name: aws.String(fmt.Sprintf("load-%d-%d", w, i))})
				if err != nil {
					t.Errorf("background rename: %v", err)
					return
				}
				background.Add(1)
			}
		})
	}
	t0 := time.Now()
	lat, first := convergence(ctx, t, a, []*gl.Client{b, cc}, fleetID, ids[:4], n)
	elapsed := time.Since(t0)
	close(stop)
	wg.Wait()
	t.Logf("%d renames through A, each found by a search on B or C after: median %v, p99 %v, max %v; "+
		"by the first search begun after it: %d; meanwhile %.0f background renames/s through B and C",
		len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1], first,
		float64(background.Load())/elapsed.Seconds())
}
