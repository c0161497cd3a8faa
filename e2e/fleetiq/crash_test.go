package fleetiq_test

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// TestCrashRecovery: Hoist is killed with SIGKILL while goroutines on both
// SDKs register and claim game servers; restarted on the same data
// directory, every acknowledged registration is there and every
// acknowledged claim still holds (claims last 60 s; the test checks well
// within that), and the instance indexes agree with the game servers:
// claiming until OutOfCapacityException hands out exactly the game servers
// that read unclaimed.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two Hoists")
	}
	dir := t.TempDir()
	crashRecovery(t, hoisttest.Options{DataDir: dir}, hoisttest.Options{DataDir: dir})
}

// TestCrashRecoveryPostgres is TestCrashRecovery with Hoist on PostgreSQL
// (a schema of its own in the database of HOIST_TEST_DATABASE_URL), the
// second Hoist on a new data directory: what the first acknowledged is in
// the database.
func TestCrashRecoveryPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two Hoists")
	}
	args := []string{"--store", "postgres", "--database-url", pgtest.URL(t)}
	crashRecovery(t, hoisttest.Options{Args: args}, hoisttest.Options{Args: args})
}

// crashRecovery is TestCrashRecovery with the options of the Hoist killed
// and of the one restarted.
func crashRecovery(t *testing.T, first, second hoisttest.Options) {
	h := hoisttest.Start(t, first)
	clients := []client{newV2(h, true), newV1(h)}
	const group = "crash"
	createGroup(t, clients[0], group)

	var (
		mu         sync.Mutex
		registered = map[string]time.Time{} // acknowledged: RegistrationTime
		claimed    = map[string]time.Time{} // acknowledged: LastClaimTime
		firstClaim time.Time
		acks       atomic.Int64
		stop       = make(chan struct{})
		wg         sync.WaitGroup
	)
	for w := range 6 {
		c := clients[w%len(clients)]
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("crash-w%d-%05d", w, n)
				out, err := c.RegisterGameServer(ctx(t), &gl.RegisterGameServerInput{GameServerGroupName: aws.String(group),
					GameServerId: aws.String(id), InstanceId: aws.String(instanceN(w*10 + n%4))})
				if err == nil {
					mu.Lock()
					registered[id] = *out.GameServer.RegistrationTime
					mu.Unlock()
					acks.Add(1)
				}
				if n%2 == 0 {
					continue
				}
				cl, err := c.ClaimGameServer(ctx(t), &gl.ClaimGameServerInput{GameServerGroupName: aws.String(group)})
				if err == nil {
					mu.Lock()
					if firstClaim.IsZero() {
						firstClaim = time.Now()
					}
					claimed[aws.ToString(cl.GameServer.GameServerId)] = *cl.GameServer.LastClaimTime
					mu.Unlock()
					acks.Add(1)
				}
			}
		})
	}
	eventually(t, 60*time.Second, "500 acknowledged calls", func() (bool, string) {
		return acks.Load() >= 500, fmt.Sprint(acks.Load())
	})
	h.Kill()
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("killed after %d acknowledged registrations and %d acknowledged claims", len(registered), len(claimed))

	h2 := hoisttest.Start(t, second)
	c := newV2(h2, true)
	all := map[string]types.GameServer{}
	in := &gl.ListGameServersInput{GameServerGroupName: aws.String(group), Limit: aws.Int32(100)}
	for {
		out, err := c.ListGameServers(ctx(t), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range out.GameServers {
			all[aws.ToString(g.GameServerId)] = g
		}
		if out.NextToken == nil {
			break
		}
		in.NextToken = out.NextToken
	}
	if since := time.Since(firstClaim); since > 50*time.Second {
		t.Fatalf("the restart took until %v after the first claim: too late to check 60-second claims", since)
	}
	for id, at := range registered {
		g, ok := all[id]
		if !ok {
			t.Errorf("acknowledged registration of %s lost", id)
			continue
		}
		if !g.RegistrationTime.Equal(at) {
			t.Errorf("%s: RegistrationTime %v, acknowledged %v", id, g.RegistrationTime, at)
		}
	}
	for id, at := range claimed {
		g, ok := all[id]
		if !ok {
			t.Errorf("claimed game server %s lost", id)
			continue
		}
		if g.ClaimStatus != types.GameServerClaimStatusClaimed || g.LastClaimTime == nil || g.LastClaimTime.Before(at) {
			t.Errorf("acknowledged claim of %s (at %v) lost: %s", id, at, show(&g))
		}
	}
	// The indexes agree with the records: exactly the unclaimed game
	// servers can be claimed, once each.
	var free, got []string
	for id, g := range all {
		if g.ClaimStatus == "" && g.UtilizationStatus == types.GameServerUtilizationStatusAvailable {
			free = append(free, id)
		}
	}
	for {
		g, err := claim(t, c, group, "")
		if code(err) == "OutOfCapacityException" {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, aws.ToString(g.GameServerId))
		if len(got) > len(all) {
			t.Fatalf("claimed %d game servers of %d", len(got), len(all))
		}
	}
	sort.Strings(free)
	sort.Strings(got)
	if fmt.Sprint(free) != fmt.Sprint(got) {
		t.Errorf("after the restart claimed %v, want the unclaimed %v", got, free)
	}
	t.Logf("after the restart: %d game servers (%d registered by calls that got no answer), %d unclaimed",
		len(all), len(all)-len(registered), len(free))
}

// TestHealthExpiry: with --health-expiry, a game server that stops
// reporting HEALTHY is deregistered (its instance leaves the group with its
// last game server), one that keeps reporting stays.
func TestHealthExpiry(t *testing.T) {
	const expiry = time.Second
	h := hoisttest.Start(t, hoisttest.Options{Args: []string{"--health-expiry", expiry.String(),
		"--timings", "fleetiq.sweep=20ms,fleetiq.status-step=10ms"}})
	c := newV1(h)
	const group = "health"
	createGroup(t, c, group)
	register(t, c, group, "health-silent", instanceN(1))
	register(t, c, group, "health-utilized", instanceN(1))
	setUtilization(t, c, group, "health-utilized", types.GameServerUtilizationStatusUtilized) // not a health report
	reg := register(t, c, group, "health-reporting", instanceN(2))
	mustClaim(t, c, group, "health-silent")

	report := func() *types.GameServer {
		out, err := c.UpdateGameServer(ctx(t), &gl.UpdateGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: aws.String("health-reporting"), HealthCheck: types.GameServerHealthCheckHealthy})
		if err != nil {
			t.Fatalf("health report: %v", err)
		}
		return out.GameServer
	}
	gone := func(id string) bool {
		_, err := describe(t, c, group, id)
		if err != nil && code(err) != "NotFoundException" {
			t.Fatal(err)
		}
		return err != nil
	}
	// The silent game servers go (claimed or UTILIZED alike), while the
	// reporting one, which reports every 50 ms, stays.
	var last *types.GameServer
	eventually(t, 30*time.Second, "silent game servers deregistered", func() (bool, string) {
		if time.Since(*reg.RegistrationTime) < expiry*3/4 {
			if gone("health-silent") || gone("health-utilized") {
				t.Fatalf("deregistered before --health-expiry %v", expiry)
			}
		}
		if last == nil || time.Since(*last.LastHealthCheckTime) >= 50*time.Millisecond {
			last = report()
		}
		return gone("health-silent") && gone("health-utilized"), "still registered"
	})
	if gone("health-reporting") {
		t.Fatal("the reporting game server was deregistered")
	}
	if got := instances(t, c, group); len(got) != 1 || got[0] != instanceN(2)+"=ACTIVE" {
		t.Errorf("instances %v", got)
	}
	// Once it stops reporting, it goes too.
	eventually(t, 30*time.Second, "the game server that stopped reporting deregistered", func() (bool, string) {
		return gone("health-reporting"), "still registered"
	})
	if !h.Exited() && len(instances(t, c, group)) != 0 {
		t.Errorf("instances left: %v", instances(t, c, group))
	}
}
