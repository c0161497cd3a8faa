package cluster_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/cluster"
	"github.com/hoistgg/hoist/internal/store"
)

// failoverBound is the documented time within which every loop a dead
// replica ran resumes on the survivors (docs/replicas.md).
const failoverBound = 15 * time.Second

// TestKillUnderLoad kills one of three replicas with SIGKILL while
// claims, placements and FlexMatch tickets keep coming through all of
// them, and checks that no acknowledged write was lost and that every
// loop the dead replica ran resumed on the survivors within 15 s.
//
// Setup: a game server group of 2,000 game servers; three queues, each of
// an Anywhere fleet of its own, whose placement shards the three
// replicas hold one each; three STANDALONE matchmaking configurations,
// likewise. The processes of the two queues the survivors hold are
// connected to those survivors; the victim's queue's fleet has none, so
// the placements started on it before the kill wait (PENDING) for its
// shard's next holder, to whose replica its processes connect once the
// lease shows it. Load: claimers (ClaimGameServer, then UTILIZED),
// placements on the survivors' queues, tickets on the three
// configurations, all through the round-robin client; every acknowledged
// answer is recorded and read back at the end.
func TestKillUnderLoad(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Args: []string{"--timings", clusterTimings}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A, started first, took the single-lease loops (the sessions sweep,
	// hosts' liveness, the events housekeeping, ...) at its first pass.
	victim := c.Replicas[0]
	k := setupKill(ctx, t, c, victim)
	stream, err := c.Replicas[1].Stream(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	l := startLoad(ctx, t, c, k)
	l.waitFor(ctx, t, 40, 10, 40) // the load runs before the kill

	probes := k.startPlacementProbes(ctx, t, c.Client(), 3)
	held := leasesOf(ctx, t, c, victim)
	killed := time.Now()
	victim.Kill()
	moved := make(chan map[string]time.Duration, 1)
	go func() { moved <- watchLeases(ctx, c, held, killed) }()
	ticketProbe := k.startTicketProbe(ctx, t, c.Client())
	matchedc := make(chan time.Duration, 1)
	go func() { matchedc <- ticketsCompleted(ctx, c.Client(), ticketProbe, killed) }()
	placed := k.failoverPlacement(ctx, t, c, probes, killed)
	matched := <-matchedc
	t.Logf("the victim's configuration: two tickets started after the kill COMPLETED %v after it", matched.Round(time.Millisecond))
	took := <-moved
	// and goes on after it
	l.waitFor(ctx, t, l.claims()+40, min(l.placements()+10, 2*killProcesses), l.tickets()+40)
	l.stop()

	checkFailover(t, took, held, placed, matched)
	checkClaims(ctx, t, c.Client(), l)
	checkPlacements(ctx, t, c.Client(), append(l.placed(), probes...))
	checkTickets(ctx, t, c, l, stream, k.configs)
}

// killSetup is what TestKillUnderLoad made before the load.
type killSetup struct {
	queues  map[string]string // queue -> its fleet's ID
	holders map[string]*cluster.Replica
	configs []string
	// victimQueue is the queue whose shard the victim holds;
	// victimConfig the configuration.
	victimQueue, victimConfig string
	procs                     map[string]*processes // per queue of a survivor
}

const (
	killGroup     = "kill-claims"
	killServers   = 2000
	killProcesses = 80 // per survivor's queue: placements it may take
)

// setupKill makes the game server group, the three fleets and queues and
// the three configurations, waits until each replica holds the shard of
// one queue and one configuration, and connects the processes of the
// survivors' queues.
func setupKill(ctx context.Context, t *testing.T, c *cluster.Cluster, victim *cluster.Replica) *killSetup {
	t.Helper()
	spread := c.Client()
	gameServerGroup(ctx, t, spread, killGroup, killServers, 10)
	k := &killSetup{queues: map[string]string{}, holders: map[string]*cluster.Replica{}, procs: map[string]*processes{},
		configs: []string{"kill-m0", "kill-m1", "kill-m2"}}
	for i := range 3 {
		q := fmt.Sprintf("kill-q%d", i)
		fleetID, fleetARN := activeFleet(ctx, t, spread, q)
		if _, err := spread.CreateGameSessionQueue(ctx, &gl.CreateGameSessionQueueInput{Name: aws.String(q),
			Destinations: []types.GameSessionQueueDestination{{DestinationArn: aws.String(fleetARN)}}}); err != nil {
			t.Fatal(err)
		}
		k.queues[q] = fleetID
	}
	standaloneConfigurations(ctx, t, spread, k.configs...)
	k.victimQueue = spreadShards(ctx, t, c, "placement", slices.Sorted(maps.Keys(k.queues)), victim, k.holders)
	k.victimConfig = spreadShards(ctx, t, c, "matchmaking", k.configs, victim, nil)
	for q, fleetID := range k.queues {
		if q != k.victimQueue {
			h := k.holders[q]
			k.procs[q] = connectProcesses(ctx, t, h.V2(), h, fleetID, "custom-"+q, q+"-host", killProcesses)
		}
	}
	return k
}

// spreadShards waits until the shards of loop for keys are held by as
// many different replicas, records the holders in holders (if not nil)
// and returns the key the victim holds.
func spreadShards(ctx context.Context, t *testing.T, c *cluster.Cluster, loop string, keys []string, victim *cluster.Replica, holders map[string]*cluster.Replica) string {
	t.Helper()
	var victimKey string
	waitFor(ctx, t, loop+" shards on every replica", func() (bool, error) {
		seen := map[*cluster.Replica]string{}
		for _, key := range keys {
			h, err := c.Holder(ctx, store.ShardLeasePrefix(loop)+key)
			if err != nil || h == nil {
				return false, err
			}
			seen[h] = key
			if holders != nil {
				holders[key] = h
			}
		}
		victimKey = seen[victim]
		return len(seen) == len(keys), nil
	})
	return victimKey
}

// startPlacementProbes starts n placements on the victim's queue (whose
// fleet has no process yet) and returns their IDs.
func (k *killSetup) startPlacementProbes(ctx context.Context, t *testing.T, cl *gl.Client, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("probe-%d", i)
		if _, err := cl.StartGameSessionPlacement(ctx, &gl.StartGameSessionPlacementInput{PlacementId: aws.String(id),
			GameSessionQueueName: aws.String(k.victimQueue), MaximumPlayerSessionCount: aws.Int32(2)}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// failoverPlacement waits until a survivor holds the victim's queue's
// shard, connects that queue's processes to it, and waits until the
// probes are FULFILLED; it returns the time from the kill.
func (k *killSetup) failoverPlacement(ctx context.Context, t *testing.T, c *cluster.Cluster, probes []string, killed time.Time) time.Duration {
	t.Helper()
	var holder *cluster.Replica
	waitFor(ctx, t, "the victim's queue's shard on a survivor", func() (bool, error) {
		h, err := c.Holder(ctx, store.ShardLeasePrefix("placement")+k.victimQueue)
		if h != nil && h.Up() {
			holder = h
		}
		return holder != nil, err
	})
	connectProcesses(ctx, t, holder.V2(), holder, k.queues[k.victimQueue], "custom-"+k.victimQueue, k.victimQueue+"-host", len(probes))
	spread := c.Client()
	for _, id := range probes {
		waitFor(ctx, t, "probe "+id+" FULFILLED", func() (bool, error) {
			out, err := spread.DescribeGameSessionPlacement(ctx, &gl.DescribeGameSessionPlacementInput{PlacementId: aws.String(id)})
			return err == nil && out.GameSessionPlacement.Status == types.GameSessionPlacementStateFulfilled, err
		})
	}
	t.Logf("the victim's queue: shard on %s, its placements started before the kill FULFILLED %v after it",
		holder.Name, time.Since(killed).Round(time.Millisecond))
	return time.Since(killed)
}

// startTicketProbe starts two tickets on the configuration whose shard
// the victim held, right after the kill.
func (k *killSetup) startTicketProbe(ctx context.Context, t *testing.T, cl *gl.Client) []string {
	t.Helper()
	ids := []string{"probe-ticket-0", "probe-ticket-1"}
	for _, id := range ids {
		if err := startTicket(ctx, cl, k.victimConfig, id); err != nil {
			t.Fatalf("StartMatchmaking after the kill: %v", err)
		}
	}
	return ids
}

// ticketsCompleted polls the tickets until all have COMPLETED (or ctx
// ends: a minute is returned) and returns the time from killed.
func ticketsCompleted(ctx context.Context, cl *gl.Client, ids []string, killed time.Time) time.Duration {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if got, err := tickets(ctx, cl, ids); err == nil {
			done := 0
			for _, id := range ids {
				if got[id].Status == types.MatchmakingConfigurationStatusCompleted {
					done++
				}
			}
			if done == len(ids) {
				return time.Since(killed)
			}
		}
		select {
		case <-ctx.Done():
			return time.Minute
		case <-tick.C:
		}
	}
}

// leasesOf returns the leases r holds now, but for its own presence.
func leasesOf(ctx context.Context, t *testing.T, c *cluster.Cluster, r *cluster.Replica) map[string]bool {
	t.Helper()
	id, err := r.ID()
	if err != nil {
		t.Fatal(err)
	}
	all, err := c.Leases(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, g := range all {
		if g.Holder == id && !strings.HasPrefix(g.Name, store.PresencePrefix) && !strings.Contains(g.Name, id) {
			held[g.Name] = true
		}
	}
	return held
}

// watchLeases polls the leases until each of held is held by another
// replica (or a minute passed) and returns, for each, the time from
// killed until it was seen so.
func watchLeases(ctx context.Context, c *cluster.Cluster, held map[string]bool, killed time.Time) map[string]time.Duration {
	took := map[string]time.Duration{}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for len(took) < len(held) && time.Since(killed) < time.Minute {
		if all, err := c.Leases(ctx, ""); err == nil {
			for _, g := range all {
				if r := c.ByID(g.Holder); held[g.Name] && r != nil && r.Up() {
					if _, ok := took[g.Name]; !ok {
						took[g.Name] = time.Since(killed)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return took
		case <-tick.C:
		}
	}
	return took
}

// checkFailover fails unless every lease the victim held and both probes
// moved to a survivor within failoverBound; it logs the times.
func checkFailover(t *testing.T, took map[string]time.Duration, held map[string]bool, placed, matched time.Duration) {
	t.Helper()
	var lines []string
	for name := range held {
		d, ok := took[name]
		if !ok || d > failoverBound {
			t.Errorf("lease %s: taken over after %v (ok %v), want within %v", name, d, ok, failoverBound)
		}
		lines = append(lines, fmt.Sprintf("%s %v", name, d.Round(time.Millisecond)))
	}
	slices.Sort(lines)
	t.Logf("the victim's leases, taken over by a survivor after: %s", strings.Join(lines, "; "))
	if placed > failoverBound || matched > failoverBound {
		t.Errorf("after the kill, the victim's queue placed after %v and its configuration matched after %v, want within %v",
			placed, matched, failoverBound)
	}
}

// load is the claims, placements and tickets TestKillUnderLoad sends,
// with every acknowledged answer.
type load struct {
	done chan struct{}
	wg   sync.WaitGroup

	mu        sync.Mutex
	claimed   map[string]int // game server -> acknowledged claims of it
	utilized  map[string]bool
	placedIDs []string
	ticketIDs map[string][]string // configuration -> acknowledged tickets
	// outOfCapacity are the times of OutOfCapacityException answers.
	outOfCapacity []time.Time
}

// startLoad starts four claimers, a placer per survivor's queue and two
// ticket starters, all through the round-robin client, each paced.
func startLoad(ctx context.Context, t *testing.T, c *cluster.Cluster, k *killSetup) *load {
	l := &load{done: make(chan struct{}), claimed: map[string]int{}, utilized: map[string]bool{}, ticketIDs: map[string][]string{}}
	spread := c.Client()
	for range 4 {
		l.paced(100*time.Millisecond, func() bool { return l.claimOnce(ctx, spread) })
	}
	for q := range k.procs {
		var n atomic.Int64
		l.paced(250*time.Millisecond, func() bool { return l.placeOnce(ctx, spread, q, &n) })
	}
	for w := range 2 {
		var n atomic.Int64
		l.paced(50*time.Millisecond, func() bool { return l.ticketOnce(ctx, spread, k.configs, w, &n) })
	}
	return l
}

// paced runs step every interval until stop, or until step returns false.
func (l *load) paced(interval time.Duration, step func() bool) {
	l.wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for step() {
			select {
			case <-l.done:
				return
			case <-tick.C:
			}
		}
	})
}

// stop ends the load and waits for it.
func (l *load) stop() {
	close(l.done)
	l.wg.Wait()
}

// claimOnce claims a game server and sets it UTILIZED, recording what
// was acknowledged, and the OutOfCapacityException answers.
func (l *load) claimOnce(ctx context.Context, cl *gl.Client) bool {
	out, err := cl.ClaimGameServer(ctx, &gl.ClaimGameServerInput{GameServerGroupName: aws.String(killGroup)})
	if isOutOfCapacity(err) {
		l.mu.Lock()
		l.outOfCapacity = append(l.outOfCapacity, time.Now())
		l.mu.Unlock()
		return true
	}
	if err != nil {
		return true // sent to the victim as it died: not acknowledged
	}
	id := aws.ToString(out.GameServer.GameServerId)
	l.mu.Lock()
	l.claimed[id]++
	l.mu.Unlock()
	if _, err := cl.UpdateGameServer(ctx, &gl.UpdateGameServerInput{GameServerGroupName: aws.String(killGroup),
		GameServerId: aws.String(id), UtilizationStatus: types.GameServerUtilizationStatusUtilized}); err == nil {
		l.mu.Lock()
		l.utilized[id] = true
		l.mu.Unlock()
	}
	return true
}

// placeOnce starts a placement on queue q, recording it if acknowledged;
// false once q's processes are all spoken for.
func (l *load) placeOnce(ctx context.Context, cl *gl.Client, q string, n *atomic.Int64) bool {
	i := n.Add(1)
	if i > killProcesses {
		return false
	}
	id := fmt.Sprintf("%s-%d", q, i)
	if _, err := cl.StartGameSessionPlacement(ctx, &gl.StartGameSessionPlacementInput{PlacementId: aws.String(id),
		GameSessionQueueName: aws.String(q), MaximumPlayerSessionCount: aws.Int32(2)}); err == nil {
		l.mu.Lock()
		l.placedIDs = append(l.placedIDs, id)
		l.mu.Unlock()
	}
	return true
}

// ticketOnce starts a ticket on the next configuration, recording it if
// acknowledged.
func (l *load) ticketOnce(ctx context.Context, cl *gl.Client, configs []string, w int, n *atomic.Int64) bool {
	i := n.Add(1)
	cfg := configs[int(i)%len(configs)]
	id := fmt.Sprintf("%s-w%d-%d", cfg, w, i)
	if err := startTicket(ctx, cl, cfg, id); err == nil {
		l.mu.Lock()
		l.ticketIDs[cfg] = append(l.ticketIDs[cfg], id)
		l.mu.Unlock()
	}
	return true
}

func (l *load) claims() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.claimed)
}

func (l *load) placements() int { return len(l.placed()) }

func (l *load) placed() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.placedIDs)
}

func (l *load) tickets() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ids := range l.ticketIDs {
		n += len(ids)
	}
	return n
}

// waitFor waits until the load has had at least this many acknowledged
// claims, placements and tickets.
func (l *load) waitFor(ctx context.Context, t *testing.T, claims, placements, tickets int) {
	t.Helper()
	waitFor(ctx, t, fmt.Sprintf("%d claims, %d placements, %d tickets acknowledged", claims, placements, tickets), func() (bool, error) {
		return l.claims() >= claims && l.placements() >= placements && l.tickets() >= tickets, nil
	})
}

// checkClaims: no game server was acknowledged to two claims, and every
// acknowledged claim and UTILIZED holds.
func checkClaims(ctx context.Context, t *testing.T, cl *gl.Client, l *load) {
	t.Helper()
	all := listGameServers(ctx, t, cl, killGroup)
	for id, n := range l.claimed {
		gs := all[id]
		switch {
		case n > 1:
			t.Errorf("game server %s acknowledged to %d claims", id, n)
		case l.utilized[id] && gs.UtilizationStatus != types.GameServerUtilizationStatusUtilized:
			t.Errorf("game server %s: UTILIZED acknowledged, now %q", id, gs.UtilizationStatus)
		case gs.ClaimStatus != types.GameServerClaimStatusClaimed && gs.UtilizationStatus != types.GameServerUtilizationStatusUtilized:
			t.Errorf("game server %s: claim acknowledged, now %q and %q", id, gs.ClaimStatus, gs.UtilizationStatus)
		}
	}
	t.Logf("%d acknowledged claims (%d UTILIZED) all hold", len(l.claimed), len(l.utilized))
	available := 0
	for _, gs := range all {
		if gs.ClaimStatus == "" && gs.UtilizationStatus == types.GameServerUtilizationStatusAvailable {
			available++
		}
	}
	if len(l.outOfCapacity) > 0 && available > 0 {
		t.Errorf("%d claims answered OutOfCapacityException, at %v, while %d game servers are still available",
			len(l.outOfCapacity), l.outOfCapacity, available)
	}
}

// checkPlacements: every acknowledged placement exists and is FULFILLED.
func checkPlacements(ctx context.Context, t *testing.T, cl *gl.Client, ids []string) {
	t.Helper()
	for _, id := range ids {
		waitFor(ctx, t, "placement "+id+" FULFILLED", func() (bool, error) {
			out, err := cl.DescribeGameSessionPlacement(ctx, &gl.DescribeGameSessionPlacementInput{PlacementId: aws.String(id)})
			if err != nil {
				return false, err
			}
			switch st := out.GameSessionPlacement.Status; st {
			case types.GameSessionPlacementStatePending:
				return false, nil
			case types.GameSessionPlacementStateFulfilled:
				return true, nil
			default:
				return false, fmt.Errorf("placement %s is %s", id, st)
			}
		})
	}
	t.Logf("%d acknowledged placements all FULFILLED", len(ids))
}

// checkTickets: a last ticket on each configuration pairs with whatever
// is still searching; then every acknowledged ticket has COMPLETED, and
// the live stream saw each in one MatchmakingSucceeded.
func checkTickets(ctx context.Context, t *testing.T, c *cluster.Cluster, l *load, s *cluster.Stream, configs []string) {
	t.Helper()
	cl := c.Client()
	var ids []string
	for _, cfg := range configs {
		if err := startTicket(ctx, cl, cfg, cfg+"-closer"); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, l.ticketIDs[cfg]...)
	}
	got := waitTickets(ctx, t, cl, ids)
	checkTeams(t, got)
	sentinel, err := c.Replicas[1].SendTestEvent(ctx, "kill-sentinel", "", "last")
	if err != nil {
		t.Fatal(err)
	}
	succeeded := matchEvents(t, s, sentinel)
	for _, id := range ids {
		if succeeded[id] != 1 {
			t.Errorf("ticket %s in %d MatchmakingSucceeded events, want 1", id, succeeded[id])
		}
	}
	t.Logf("%d acknowledged tickets all COMPLETED, each in one match", len(ids))
}
