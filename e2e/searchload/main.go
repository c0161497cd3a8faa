// Command searchload measures SearchGameSessions through the real API: the
// real Hoist binary (credentials set, so every SigV4 signature is verified;
// a new data directory; loopback ports) and aws-sdk-go-v2 as the client.
//
//	go run ./e2e/searchload [-sessions 100000] [-requests 2000] [-clients 1,4] [-writes 0,200]
//
// It creates an Anywhere fleet through the API, stops Hoist, writes
// -sessions ACTIVE game sessions of that fleet into its journal store (as
// the sessions package stores them: a game session needs a server process
// to become ACTIVE, and 100,000 processes do not fit on a test machine; the
// search neither knows nor cares), starts Hoist again and times one first
// search (which loads the fleet into the index), then -requests searches
// for each number of -clients, while UpdateGameSession changes a random
// session's game properties -writes times a second through the API. The
// search filters on a game property and hasAvailablePlayerSessions and
// sorts on a game property (20 results a page). Prints p50, p99 and max.
// See docs/performance.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
)

func main() {
	sessions := flag.Int("sessions", 100_000, "ACTIVE game sessions in the fleet")
	requests := flag.Int("requests", 2000, "searches per measurement")
	clients := flag.String("clients", "1,4", "concurrent searching clients (comma-separated list)")
	writes := flag.String("writes", "0,200", "UpdateGameSession calls a second during the searches (comma-separated list)")
	flag.Parse()
	if err := run(*sessions, *requests, ints(*clients), ints(*writes)); err != nil {
		fmt.Fprintln(os.Stderr, "searchload:", err)
		os.Exit(1)
	}
}

func ints(s string) []int {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			fmt.Fprintf(os.Stderr, "searchload: %q is not a number\n", f)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

// filter and sort are the measured search.
const (
	filter = "gameSessionProperties.mode = 'ctf' AND hasAvailablePlayerSessions = true"
	sortBy = "gameSessionProperties.skill DESC"
)

func run(n, requests int, clients, writes []int) error {
	bin, err := hoisttest.BuildBinary()
	defer hoisttest.RemoveBuilds()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "hoist-searchload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dataDir := filepath.Join(dir, "data")
	ctx := context.Background()

	h, err := start(bin, dir, dataDir)
	if err != nil {
		return err
	}
	fleetID, err := anywhereFleet(ctx, h)
	if err != nil {
		h.Stop(time.Minute)
		return err
	}
	if err := h.Stop(time.Minute); err != nil {
		return err
	}
	t0 := time.Now()
	if err := seed(filepath.Join(dataDir, "store"), fleetID, n); err != nil {
		return err
	}
	fmt.Printf("seeded %d ACTIVE game sessions in %v\n", n, time.Since(t0).Round(time.Millisecond))

	h, err = start(bin, dir, dataDir)
	if err != nil {
		return err
	}
	defer h.Stop(time.Minute)
	c := hoisttest.NewV2(h.URL, hoisttest.AccessKeyID, hoisttest.SecretAccessKey)
	in := &gl.SearchGameSessionsInput{FleetId: aws.String(fleetID), FilterExpression: aws.String(filter), SortExpression: aws.String(sortBy)}
	t0 = time.Now()
	out, err := c.SearchGameSessions(ctx, in)
	if err != nil {
		return err
	}
	fmt.Printf("first search (loads the fleet into the index): %v, %d results\n", time.Since(t0).Round(time.Millisecond), len(out.GameSessions))
	fmt.Printf("filter %q, sort %q, %d requests each\n", filter, sortBy, requests)
	for _, w := range writes {
		for _, cl := range clients {
			lat, err := measure(ctx, c, in, fleetID, n, requests, cl, w)
			if err != nil {
				return err
			}
			slices.Sort(lat)
			fmt.Printf("clients=%d writes/s=%d: p50 %v  p99 %v  max %v\n", cl, w,
				lat[len(lat)/2].Round(10*time.Microsecond), lat[len(lat)*99/100].Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond))
		}
	}
	return nil
}

func start(bin, dir, dataDir string) (*hoisttest.Process, error) {
	_ = os.Remove(filepath.Join(dir, "ready.json")) // the previous run's
	return hoisttest.Launch("hoist", bin, append(hoisttest.ServeArgs(dataDir, false), "--local-hosting", "in-process"), hoisttest.CredentialsEnv(), dir)
}

// anywhereFleet creates a custom location and an Anywhere fleet in it.
func anywhereFleet(ctx context.Context, h *hoisttest.Process) (string, error) {
	c := hoisttest.NewV2(h.URL, hoisttest.AccessKeyID, hoisttest.SecretAccessKey)
	if _, err := c.CreateLocation(ctx, &gl.CreateLocationInput{LocationName: aws.String("custom-search")}); err != nil {
		return "", err
	}
	out, err := c.CreateFleet(ctx, &gl.CreateFleetInput{Name: aws.String("search"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: aws.String("custom-search")}}})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.FleetAttributes.FleetId), nil
}

// gameSessionID is the ID of seeded game session i.
func gameSessionID(fleetID string, i int) string {
	return fmt.Sprintf("arn:aws:gamelift:%s::gamesession/%s/gsess-%08d", hoisttest.Region, fleetID, i)
}

// seed writes n ACTIVE game sessions into the journal store at dir: a
// "mode" property of four values, a "skill" property 000..999, 0 to 10
// players of 10.
func seed(dir, fleetID string, n int) error {
	st, err := journal.Open(dir, journal.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	created := time.Now().Add(-time.Hour)
	const batch = 1000
	for start := 0; start < n; start += batch {
		err := st.Update(context.Background(), func(tx store.Tx) error {
			for i := start; i < min(start+batch, n); i++ {
				id := gameSessionID(fleetID, i)
				gs := hosting.GameSession{ProcessID: fmt.Sprintf("seeded-%d", i), Session: api.GameSession{
					GameSessionId: api.String(id), FleetId: api.String(fleetID), Name: api.String(fmt.Sprintf("game %d", i)),
					Status: api.GameSessionStatusActive, Location: api.String("custom-search"),
					MaximumPlayerSessionCount: api.Int32(10), CurrentPlayerSessionCount: api.Int32(int32(rng.IntN(11))),
					CreationTime:                api.Time(created.Add(time.Duration(i) * time.Millisecond)),
					PlayerSessionCreationPolicy: api.PlayerSessionCreationPolicyAcceptAll,
					GameProperties: []api.GameProperty{
						{Key: api.String("mode"), Value: api.String([]string{"ctf", "dm", "tdm", "koth"}[rng.IntN(4)])},
						{Key: api.String("skill"), Value: api.String(fmt.Sprintf("%03d", rng.IntN(1000)))}},
				}}
				rec := store.Record{Kind: hosting.KindGameSession, ID: id, Parent: fleetID,
					Key: string(api.GameSessionStatusActive), Rank: 1<<63 - 1}
				if err := store.PutJSON(context.Background(), tx, rec, &gs); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// measure runs requests searches from clients goroutines while a writer
// updates random sessions writes times a second, and returns the latencies.
func measure(ctx context.Context, c *gl.Client, in *gl.SearchGameSessionsInput, fleetID string, n, requests, clients, writes int) ([]time.Duration, error) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var werr error
	if writes > 0 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(1, 1))
			tick := time.NewTicker(time.Second / time.Duration(writes))
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				_, err := c.UpdateGameSession(ctx, &gl.UpdateGameSessionInput{GameSessionId: aws.String(gameSessionID(fleetID, rng.IntN(n))),
					GameProperties: []types.GameProperty{{Key: aws.String("skill"), Value: aws.String(fmt.Sprintf("%03d", rng.IntN(1000)))}}})
				if err != nil {
					werr = err
					return
				}
			}
		})
	}
	lat := make([]time.Duration, requests)
	next := make(chan int, requests)
	for i := range requests {
		next <- i
	}
	close(next)
	errs := make(chan error, clients)
	var cw sync.WaitGroup
	for range clients {
		cw.Go(func() {
			for i := range next {
				t0 := time.Now()
				out, err := c.SearchGameSessions(ctx, in)
				lat[i] = time.Since(t0)
				if err == nil && len(out.GameSessions) != 20 {
					err = fmt.Errorf("%d results, want 20", len(out.GameSessions))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	cw.Wait()
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	return lat, werr
}
