package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/cluster"
	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/internal/events"
)

const (
	topic       = "arn:aws:sns:us-west-2:123456789012:cluster-smoke"
	streamQueue = "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/smoke-stream"
	hookQueue   = "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/smoke-hooks"
)

// TestClusterSmoke runs three replicas on one PostgreSQL schema and checks
// that they act as one Hoist: resources created through one are read
// through the others, SearchGameSessions converges on every replica, the
// live stream of one shows the events published through the others once,
// a webhook gets each event once, and one replica killed, restarted or
// paused leaves the others serving.
func TestClusterSmoke(t *testing.T) {
	hook := newReceiver(t)
	c := cluster.Start(t, cluster.Options{Args: []string{"--webhooks", topic + "=" + hook.srv.URL,
		"--timings", "events.deliver=100ms,events.backoff=100ms"}})
	run := func(name string, f func(ctx context.Context, t *testing.T)) bool {
		return t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			f(ctx, t)
		})
	}
	var fleetID string
	if !run("ResourcesThroughEveryReplica", func(ctx context.Context, t *testing.T) { fleetID = resources(ctx, t, c) }) {
		return
	}
	run("SearchConverges", func(ctx context.Context, t *testing.T) { searchConverges(ctx, t, c, fleetID) })
	run("EventStreamOnce", func(ctx context.Context, t *testing.T) { streamOnce(ctx, t, c) })
	run("WebhookOnce", func(ctx context.Context, t *testing.T) { webhookOnce(ctx, t, c, hook) })
	run("KillRestartPause", func(ctx context.Context, t *testing.T) { killRestartPause(ctx, t, c) })
}

// resources: an Anywhere fleet (returned) created through A, an alias
// through B, a queue through C, each read through the other two and
// through the spreading client.
func resources(ctx context.Context, t *testing.T, c *cluster.Cluster) string {
	a, b, cc := c.Replicas[0].V2(), c.Replicas[1].V2(), c.Replicas[2].V2()
	fleetID := anywhereFleet(ctx, t, a, "smoke")
	al, err := b.CreateAlias(ctx, &gl.CreateAliasInput{Name: aws.String("smoke"),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeSimple, FleetId: aws.String(fleetID)}})
	if err != nil {
		t.Fatal(err)
	}
	aliasID := aws.ToString(al.Alias.AliasId)
	if _, err := cc.CreateGameSessionQueue(ctx, &gl.CreateGameSessionQueueInput{Name: aws.String("smoke"),
		Destinations: []types.GameSessionQueueDestination{{DestinationArn: al.Alias.AliasArn}}}); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*gl.Client{b, cc} {
		out, err := cl.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
		if err != nil || len(out.FleetAttributes) != 1 {
			t.Fatalf("fleet through another replica: %v, %v", out, err)
		}
	}
	for _, cl := range []*gl.Client{a, cc} {
		out, err := cl.DescribeAlias(ctx, &gl.DescribeAliasInput{AliasId: aws.String(aliasID)})
		if err != nil || aws.ToString(out.Alias.RoutingStrategy.FleetId) != fleetID {
			t.Fatalf("alias through another replica: %v, %v", out, err)
		}
	}
	for _, cl := range []*gl.Client{a, b} {
		out, err := cl.DescribeGameSessionQueues(ctx, &gl.DescribeGameSessionQueuesInput{Names: []string{"smoke"}})
		if err != nil || len(out.GameSessionQueues) != 1 ||
			aws.ToString(out.GameSessionQueues[0].Destinations[0].DestinationArn) != aws.ToString(al.Alias.AliasArn) {
			t.Fatalf("queue through another replica: %v, %v", out, err)
		}
	}
	spread := c.Client()
	for range 6 { // two rounds over the three replicas
		out, err := spread.ListAliases(ctx, &gl.ListAliasesInput{Name: aws.String("smoke")})
		if err != nil || len(out.Aliases) != 1 {
			t.Fatalf("ListAliases through the spreading client: %v, %v", out, err)
		}
	}
	return fleetID
}

// searchConverges: four game sessions created through A (their processes
// are connected to A) are found by SearchGameSessions on every replica;
// then each rename through A is timed until a search on B or C finds it,
// and a replica sees its own rename at once.
func searchConverges(ctx context.Context, t *testing.T, c *cluster.Cluster, fleetID string) {
	a := c.Replicas[0].V2()
	ids := activeSessions(ctx, t, a, fleetID, "custom-smoke", 4)
	for _, r := range c.Replicas {
		if got := search(ctx, t, r.V2(), fleetID, ""); len(got) != 4 {
			t.Fatalf("replica %s finds %d game sessions, want 4", r.Name, len(got))
		}
	}
	lat, first := convergence(ctx, t, a, []*gl.Client{c.Replicas[1].V2(), c.Replicas[2].V2()}, fleetID, ids, 100)
	t.Logf("a rename through A found by a search on B or C after: median %v, p99 %v, max %v; by the first search begun after it: %d of %d",
		lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1], first, len(lat))
	// B's own rename is found by B's next search.
	b := c.Replicas[1].V2()
	if _, err := b.UpdateGameSession(ctx, &gl.UpdateGameSessionInput{GameSessionId: aws.String(ids[0]), Name: aws.String("by-b")}); err != nil {
		t.Fatal(err)
	}
	if got := search(ctx, t, b, fleetID, "gameSessionName = 'by-b'"); !slices.Equal(got, ids[:1]) {
		t.Fatalf("B's own rename: B's next search finds %v", got)
	}
}

// convergence renames the sessions through w n times; after each, it
// searches on the next of readers until the new name is found, and
// returns the times from the rename's answer to that search's answer,
// sorted, and how many renames the first search found.
func convergence(ctx context.Context, t *testing.T, w *gl.Client, readers []*gl.Client, fleetID string, ids []string, n int) ([]time.Duration, int) {
	var lat []time.Duration
	first := 0
	for i := range n {
		name := fmt.Sprintf("rename-%d", i)
		if _, err := w.UpdateGameSession(ctx, &gl.UpdateGameSessionInput{GameSessionId: aws.String(ids[i%len(ids)]),
			Name: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		r := readers[i%len(readers)]
		for tries := 1; ; tries++ {
			if len(search(ctx, t, r, fleetID, "gameSessionName = '"+name+"'")) == 1 {
				if tries == 1 {
					first++
				}
				break
			}
			if time.Since(t0) > 30*time.Second {
				t.Fatalf("rename %d through A not found by another replica's search within 30 s (%d searches)", i, tries)
			}
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	return lat, first
}

// search returns the IDs of the fleet's ACTIVE game sessions matching
// filter, sorted.
func search(ctx context.Context, t *testing.T, cl *gl.Client, fleetID, filter string) []string {
	t.Helper()
	in := &gl.SearchGameSessionsInput{FleetId: aws.String(fleetID)}
	if filter != "" {
		in.FilterExpression = aws.String(filter)
	}
	out, err := cl.SearchGameSessions(ctx, in)
	if err != nil {
		t.Fatalf("SearchGameSessions: %v", err)
	}
	var ids []string
	for _, gs := range out.GameSessions {
		ids = append(ids, aws.ToString(gs.GameSessionId))
	}
	slices.Sort(ids)
	return ids
}

// anywhereFleet creates, through cl, a custom location custom-<name> and
// an Anywhere fleet in it, and returns the fleet's ID.
func anywhereFleet(ctx context.Context, t *testing.T, cl *gl.Client, name string) string {
	if _, err := cl.CreateLocation(ctx, &gl.CreateLocationInput{LocationName: aws.String("custom-" + name)}); err != nil {
		t.Fatal(err)
	}
	f, err := cl.CreateFleet(ctx, &gl.CreateFleetInput{Name: aws.String(name), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: aws.String("custom-" + name)}}})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(f.FleetAttributes.FleetId)
}

// activeSessions registers a compute in location through cl (so its processes connect
// to that replica), connects n processes that activate what they are
// given, and creates n game sessions through cl; it returns their IDs,
// sorted, once all are ACTIVE.
func activeSessions(ctx context.Context, t *testing.T, cl *gl.Client, fleetID, location string, n int) []string {
	waitFor(ctx, t, "fleet ACTIVE", func() (bool, error) {
		out, err := cl.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
		return err == nil && out.FleetAttributes[0].Status == types.FleetStatusActive, err
	})
	reg, err := cl.RegisterCompute(ctx, &gl.RegisterComputeInput{FleetId: aws.String(fleetID), ComputeName: aws.String("compute-1"),
		IpAddress: aws.String("127.0.0.1"), Location: aws.String(location)})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cl.GetComputeAuthToken(ctx, &gl.GetComputeAuthTokenInput{FleetId: aws.String(fleetID), ComputeName: aws.String("compute-1")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		proc, err := sdkclient.Dial(ctx, aws.ToString(reg.Compute.GameLiftServiceSdkEndpoint),
			sdkclient.Query(fmt.Sprintf("process-%d", i), "compute-1", fleetID, aws.ToString(tok.AuthToken)), sdkclient.Options{
				OnMessage: func(c *sdkclient.Client, fr *sdkclient.Frame) {
					if fr.Action == "CreateGameSession" {
						id, _ := fr.Fields()["GameSessionId"].(string)
						_, _ = c.Call(ctx, "ActivateGameSession", map[string]any{"GameSessionId": id})
					}
				}})
		if err != nil {
			t.Fatalf("SDK connection: %v", err)
		}
		t.Cleanup(func() { _ = proc.Close(1000, "") })
		if _, err := proc.Call(ctx, "ActivateServerProcess", map[string]any{"SdkVersion": sdkclient.SDKVersion,
			"SdkLanguage": sdkclient.SDKLanguage, "Port": 7000 + i, "LogPaths": []string{}}); err != nil {
			t.Fatalf("ProcessReady: %v", err)
		}
	}
	var ids []string
	for i := range n {
		waitFor(ctx, t, "CreateGameSession placed", func() (bool, error) {
			out, err := cl.CreateGameSession(ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetID),
				Location: aws.String(location), MaximumPlayerSessionCount: aws.Int32(4),
				GameProperties: []types.GameProperty{{Key: aws.String("mode"), Value: aws.String([]string{"ctf", "dm"}[i%2])}}})
			var full *types.FleetCapacityExceededException
			if errors.As(err, &full) { // a ProcessReady not placeable yet
				return false, nil
			}
			if err == nil {
				ids = append(ids, aws.ToString(out.GameSession.GameSessionId))
			}
			return err == nil, err
		})
	}
	waitFor(ctx, t, "game sessions ACTIVE", func() (bool, error) {
		out, err := cl.DescribeGameSessions(ctx, &gl.DescribeGameSessionsInput{FleetId: aws.String(fleetID), StatusFilter: aws.String("ACTIVE")})
		return err == nil && len(out.GameSessions) == n, err
	})
	slices.Sort(ids)
	return ids
}

// streamOnce: a live stream on C gets each of 30 events published at once
// through A and B exactly once, and nothing else.
func streamOnce(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	s, err := c.Replicas[2].Stream(ctx, "resource=smoke-stream", "")
	if err != nil {
		t.Fatal(err)
	}
	want := publishSpread(ctx, t, []*cluster.Replica{c.Replicas[0], c.Replicas[1]}, streamQueue, "", 30)
	sentinel, err := c.Replicas[0].SendTestEvent(ctx, streamQueue, "", "last")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for {
		ev, err := s.Next(30 * time.Second)
		if err != nil {
			t.Fatalf("stream on C after %d events: %v", len(seen), err)
		}
		if ev.Envelope.ID == sentinel {
			break
		}
		seen[ev.Envelope.ID]++
	}
	checkOnce(t, "the stream on C", seen, want)
}

// webhookOnce: with every replica configured with the same webhook, 30
// events published through A, B and C reach it once each.
func webhookOnce(ctx context.Context, t *testing.T, c *cluster.Cluster, hook *receiver) {
	want := publishSpread(ctx, t, c.Replicas, hookQueue, topic, 30)
	sentinel, err := c.Replicas[1].SendTestEvent(ctx, hookQueue, topic, "last")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the last event at the webhook", func() (bool, error) { return hook.count(sentinel) > 0, nil })
	seen := hook.counts()
	delete(seen, sentinel)
	checkOnce(t, "the webhook", seen, want)
}

// publishSpread publishes n test events about resource (to topic's
// webhooks), spread over the replicas, one goroutine each, and returns
// their ids.
func publishSpread(ctx context.Context, t *testing.T, rs []*cluster.Replica, resource, topic string, n int) map[string]bool {
	var mu sync.Mutex
	want := map[string]bool{}
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			for j := i; j < n; j += len(rs) {
				id, err := r.SendTestEvent(ctx, resource, topic, fmt.Sprint("event ", j))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return want
}

// checkOnce fails unless seen counts each id of want once and nothing
// else.
func checkOnce(t *testing.T, where string, seen map[string]int, want map[string]bool) {
	t.Helper()
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("%s got event %s %d times", where, id, seen[id])
		}
	}
	for id, n := range seen {
		if !want[id] {
			t.Errorf("%s got event %s (%d times), not published here", where, id, n)
		}
	}
}

// killRestartPause: B killed with SIGKILL, then C paused with SIGSTOP:
// the spreading client goes on through the others; B restarted and C
// resumed serve what was written meanwhile.
func killRestartPause(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	b, cc := c.Replicas[1], c.Replicas[2]
	spread := c.Client()
	b.Kill()
	for i := range 3 {
		if _, err := spread.CreateAlias(ctx, &gl.CreateAliasInput{Name: aws.String(fmt.Sprint("while-b-down-", i)),
			RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeTerminal, Message: aws.String("down")}}); err != nil {
			t.Fatalf("CreateAlias with B killed: %v", err)
		}
	}
	b.Restart()
	if out, err := b.V2().ListAliases(ctx, &gl.ListAliasesInput{RoutingStrategyType: types.RoutingStrategyTypeTerminal}); err != nil || len(out.Aliases) != 3 {
		t.Fatalf("B after its restart: %v, %v", out, err)
	}
	cc.Pause()
	for i := range 3 {
		if _, err := spread.CreateAlias(ctx, &gl.CreateAliasInput{Name: aws.String(fmt.Sprint("while-c-paused-", i)),
			RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeTerminal, Message: aws.String("paused")}}); err != nil {
			t.Fatalf("CreateAlias with C paused: %v", err)
		}
	}
	cc.Resume()
	if out, err := cc.V2().ListAliases(ctx, &gl.ListAliasesInput{RoutingStrategyType: types.RoutingStrategyTypeTerminal}); err != nil || len(out.Aliases) != 6 {
		t.Fatalf("C after SIGCONT: %v, %v", out, err)
	}
}

// receiver is a webhook endpoint that counts the events it gets by id.
type receiver struct {
	mu  sync.Mutex
	got map[string]int
	srv *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{got: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.got[req.Header.Get(events.HeaderEventID)]++
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[id]
}

func (r *receiver) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.got))
	for k, v := range r.got {
		out[k] = v
	}
	return out
}

// waitFor polls cond until it holds, fails, or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within the test's time", what)
		case <-tick.C:
		}
	}
}
