//go:build linux

package hosts

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/netns"
)

// replaceBound is how long these tests give a fleet to be back to its
// capacity after a host died: the host is LOST within heartbeat + grace +
// check (9.25s here), then the fleet reconciles (200ms) and the
// replacement is set up (a build download and a process start, a few
// seconds on a loaded machine). docs/hosts.md gives the bound with the
// default timers.
const replaceBound = 30 * time.Second

// threeHosts is Hoist on a test bridge and three pool hosts, each a
// network namespace of its own: two in us-west-2, one in eu-west-1.
type threeHosts struct {
	*env
	n      *netns.Network
	agents []*agent
	locs   []string
}

func startThreeHosts(t *testing.T) *threeHosts {
	n := netns.New(t, 3)
	th := &threeHosts{env: startHoist(t, n.Addr.String()), n: n, locs: []string{"us-west-2", "us-west-2", "eu-west-1"}}
	for i, h := range n.Hosts {
		th.agents = append(th.agents, th.startAgent(t, agentSpec{pool: "netns", location: th.locs[i], addr: h.Addr.String(),
			instances: "c5.large=2", command: h.Command}))
	}
	return th
}

// hostOf returns the index of the host with address ip.
func (th *threeHosts) hostOf(t *testing.T, ip string) int {
	t.Helper()
	for i, h := range th.n.Hosts {
		if h.Addr.String() == ip {
			return i
		}
	}
	t.Fatalf("%s is no host's address", ip)
	return -1
}

// spread returns the addresses of a fleet's ACTIVE instances, sorted.
func (th *threeHosts) spread(t *testing.T, fleetID string) []string {
	var ips []string
	for _, in := range th.activeInstances(t, fleetID, "us-west-2", "eu-west-1") {
		ips = append(ips, aws.ToString(in.IpAddress))
	}
	slices.Sort(ips)
	return ips
}

// addrs returns the hosts' addresses at the given indexes, sorted.
func (th *threeHosts) addrs(idx ...int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, th.n.Hosts[i].Addr.String())
	}
	slices.Sort(out)
	return out
}

// TestManagedFleetOverThreeHosts runs a managed fleet of 3 instances in
// two locations on three hosts (network namespaces on a test bridge, one
// `hoist agent --pool` each), with Hoist on the bridge: the instances
// spread over the hosts; game and player sessions report their host's
// address and players reach the game server there; a queue placement with
// player latencies lands in the right location, and so does a FlexMatch
// match through a WITH_QUEUE configuration; a hostile host is refused;
// kill -9 of an agent ends its game sessions INTERRUPTED and the fleet is
// back to 3 instances on the other hosts within replaceBound; a link cut
// shorter than the grace loses nothing, and a runtime configuration update
// made during it reaches the host when it reconnects; a link cut until the host is LOST
// has it told, when it is back, to end what it ran, and it takes new
// instances.
func TestManagedFleetOverThreeHosts(t *testing.T) {
	th := startThreeHosts(t)
	build := th.uploadGameServer(t, "netns")
	fleet := th.createFleet(t, build, "us-west-2", "eu-west-1")
	th.waitLocationActive(t, fleet, "us-west-2")
	th.waitLocationActive(t, fleet, "eu-west-1")
	if _, err := th.gl.UpdateFleetCapacity(th.ctx, &gl.UpdateFleetCapacityInput{FleetId: aws.String(fleet), Location: aws.String("us-west-2"),
		DesiredInstances: aws.Int32(2), MaxSize: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	all := th.addrs(0, 1, 2)
	eventually(t, waitLong, "3 instances, one on each host", func() (bool, string) {
		got := th.spread(t, fleet)
		return slices.Equal(got, all), strings.Join(got, ",")
	})
	s := th.playSession(t, fleet, "us-west-2", th.n.Hosts[0].Dial)
	home := th.hostOf(t, s.ip)
	if th.locs[home] != "us-west-2" {
		t.Fatalf("a us-west-2 game session on host %d (%s)", home, th.locs[home])
	}

	var placed session
	t.Run("placement by latency", func(t *testing.T) { placed = th.placeByLatency(t, fleet) })
	t.Run("FlexMatch WITH_QUEUE", func(t *testing.T) { th.matchWithQueue(t) })
	t.Run("hostile agent", func(t *testing.T) { th.hostileAgent(t, fleet, th.agents[2], placed) })
	t.Run("kill -9 of an agent", func(t *testing.T) { th.killAgent(t, fleet, home, s) })
	t.Run("short link cut", func(t *testing.T) { th.shortCut(t, fleet, 2) })
	t.Run("host lost and back", func(t *testing.T) { th.lostAndBack(t, fleet, 1-home) })
}

// matchWithQueue matches two players through a WITH_QUEUE matchmaking
// configuration over the queue placeByLatency made, with latencies that
// favour us-west-2: the match's game session is on a us-west-2 host, and
// its game server there accepts both players' sessions.
func (th *threeHosts) matchWithQueue(t *testing.T) {
	q, err := th.gl.DescribeGameSessionQueues(th.ctx, &gl.DescribeGameSessionQueuesInput{Names: []string{"netns"}})
	if err != nil || len(q.GameSessionQueues) != 1 {
		t.Fatalf("the queue: %v", err)
	}
	if _, err := th.gl.CreateMatchmakingRuleSet(th.ctx, &gl.CreateMatchmakingRuleSetInput{Name: aws.String("duel"),
		RuleSetBody: aws.String(`{"name":"duel","ruleLanguageVersion":"1.0",
			"teams":[{"name":"red","minPlayers":1,"maxPlayers":1},{"name":"blue","minPlayers":1,"maxPlayers":1}]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := th.gl.CreateMatchmakingConfiguration(th.ctx, &gl.CreateMatchmakingConfigurationInput{Name: aws.String("netns"),
		RuleSetName: aws.String("duel"), RequestTimeoutSeconds: aws.Int32(60), AcceptanceRequired: aws.Bool(false),
		FlexMatchMode: types.FlexMatchModeWithQueue, GameSessionQueueArns: []string{aws.ToString(q.GameSessionQueues[0].GameSessionQueueArn)},
		BackfillMode: types.BackfillModeManual}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"m1", "m2"} {
		if _, err := th.gl.StartMatchmaking(th.ctx, &gl.StartMatchmakingInput{ConfigurationName: aws.String("netns"), TicketId: aws.String("t-" + p),
			Players: []types.Player{{PlayerId: aws.String(p), LatencyInMs: map[string]int32{"us-west-2": 20, "eu-west-1": 180}}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"m1", "m2"} {
		var tk types.MatchmakingTicket
		eventually(t, waitShort, "ticket t-"+p+" COMPLETED", func() (bool, string) {
			out, err := th.gl.DescribeMatchmaking(th.ctx, &gl.DescribeMatchmakingInput{TicketIds: []string{"t-" + p}})
			if err != nil || len(out.TicketList) != 1 {
				return false, fmt.Sprint(err)
			}
			tk = out.TicketList[0]
			if tk.Status == types.MatchmakingConfigurationStatusFailed || tk.Status == types.MatchmakingConfigurationStatusTimedOut {
				t.Fatalf("ticket t-%s %s: %s", p, tk.Status, aws.ToString(tk.StatusMessage))
			}
			return tk.Status == types.MatchmakingConfigurationStatusCompleted, string(tk.Status)
		})
		ci := tk.GameSessionConnectionInfo
		if ci == nil || len(ci.MatchedPlayerSessions) != 1 {
			t.Fatalf("ticket t-%s connection info %+v", p, ci)
		}
		if i := th.hostOf(t, aws.ToString(ci.IpAddress)); th.locs[i] != "us-west-2" {
			t.Fatalf("the match's game session is on host %d, in %s; want us-west-2", i, th.locs[i])
		}
		answer, _ := acceptPlayer(t, th.n.Hosts[2].Dial, aws.ToString(ci.IpAddress), aws.ToInt32(ci.Port),
			aws.ToString(ci.MatchedPlayerSessions[0].PlayerSessionId))
		if answer != "OK" {
			t.Fatalf("the game server answered %q to matched player %s", answer, p)
		}
	}
}

// placeByLatency places a game session through a queue with player
// latencies that favour eu-west-1: it lands on the eu-west-1 host.
func (th *threeHosts) placeByLatency(t *testing.T, fleetID string) session {
	attrs, err := th.gl.DescribeFleetAttributes(th.ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := th.gl.CreateGameSessionQueue(th.ctx, &gl.CreateGameSessionQueueInput{Name: aws.String("netns"),
		Destinations: []types.GameSessionQueueDestination{{DestinationArn: attrs.FleetAttributes[0].FleetArn}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := th.gl.StartGameSessionPlacement(th.ctx, &gl.StartGameSessionPlacementInput{PlacementId: aws.String("p-eu"),
		GameSessionQueueName: aws.String("netns"), MaximumPlayerSessionCount: aws.Int32(4),
		PlayerLatencies: []types.PlayerLatency{
			{PlayerId: aws.String("p1"), RegionIdentifier: aws.String("us-west-2"), LatencyInMilliseconds: aws.Float32(180)},
			{PlayerId: aws.String("p1"), RegionIdentifier: aws.String("eu-west-1"), LatencyInMilliseconds: aws.Float32(20)}},
		DesiredPlayerSessions: []types.DesiredPlayerSession{{PlayerId: aws.String("p1")}}}); err != nil {
		t.Fatal(err)
	}
	var p *types.GameSessionPlacement
	eventually(t, waitShort, "placement FULFILLED", func() (bool, string) {
		out, err := th.gl.DescribeGameSessionPlacement(th.ctx, &gl.DescribeGameSessionPlacementInput{PlacementId: aws.String("p-eu")})
		if err != nil {
			return false, err.Error()
		}
		p = out.GameSessionPlacement
		return p.Status == types.GameSessionPlacementStateFulfilled, string(p.Status)
	})
	if aws.ToString(p.GameSessionRegion) != "eu-west-1" || aws.ToString(p.IpAddress) != th.n.Hosts[2].Addr.String() ||
		len(p.PlacedPlayerSessions) != 1 {
		t.Fatalf("placement %s at %s: want eu-west-1, on host 2 (%s), with its player session", aws.ToString(p.GameSessionRegion),
			aws.ToString(p.IpAddress), th.n.Hosts[2].Addr)
	}
	s := session{id: aws.ToString(p.GameSessionArn), ip: aws.ToString(p.IpAddress), port: aws.ToInt32(p.Port),
		player: aws.ToString(p.PlacedPlayerSessions[0].PlayerSessionId)}
	answer, conn := acceptPlayer(t, th.n.Hosts[0].Dial, s.ip, s.port, s.player)
	if answer != "OK" {
		t.Fatalf("the eu-west-1 game server answered %q to the placed player", answer)
	}
	s.conn = conn
	return s
}

// killAgent kills host i's agent with SIGKILL: its game session s ends
// TERMINATED INTERRUPTED and the fleet is back to 3 instances on the
// other hosts within replaceBound.
func (th *threeHosts) killAgent(t *testing.T, fleetID string, i int, s session) {
	start := time.Now()
	th.agents[i].kill9()
	gs := th.waitGameSession(t, s.id, types.GameSessionStatusTerminated)
	if gs.StatusReason != types.GameSessionStatusReasonInterrupted {
		t.Fatalf("the lost host's game session ended %s, want INTERRUPTED", gs.StatusReason)
	}
	other := 1 - i
	want := th.addrs(other, other, 2)
	eventually(t, replaceBound, "3 instances on the 2 other hosts", func() (bool, string) {
		got := th.spread(t, fleetID)
		return slices.Equal(got, want), strings.Join(got, ",")
	})
	t.Logf("host %d killed: its game session INTERRUPTED and the fleet back to 3 instances in %s", i, time.Since(start).Round(time.Millisecond))
	if !th.hasEvent(t, fleetID, types.EventCodeInstanceInterrupted) {
		t.Fatalf("no INSTANCE_INTERRUPTED event:\n%s", th.eventText(t, fleetID))
	}
	if h := th.hosts(t)[th.agents[i].hostID]; h.Status != "LOST" {
		t.Fatalf("the killed host is %s, want LOST", h.Status)
	}
}

// instanceIDs returns the IDs of a fleet's ACTIVE instances on host i.
func (th *threeHosts) instanceIDs(t *testing.T, fleetID string, i int) []string {
	var ids []string
	for _, in := range th.activeInstances(t, fleetID, th.locs[i]) {
		if aws.ToString(in.IpAddress) == th.n.Hosts[i].Addr.String() {
			ids = append(ids, aws.ToString(in.InstanceId))
		}
	}
	slices.Sort(ids)
	return ids
}

// shortCut takes host i's link down for less than its grace: the agent
// reconnects when it is back up and keeps its instances (Hoist's answer
// to its Hello lists them), none is lost. The fleet's runtime
// configuration changes during the cut (3 processes an instance instead
// of 2): Hoist's message to the host is lost with the link, and the host
// gets the change with the answer to its Hello.
func (th *threeHosts) shortCut(t *testing.T, fleetID string, i int) {
	before := th.instanceIDs(t, fleetID, i)
	h, a := th.n.Hosts[i], th.agents[i]
	lost := strings.Count(a.out.String(), "connection to Hoist lost")
	h.LinkDown(t)
	updated := make(chan error, 1)
	go func() { updated <- th.setProcesses(fleetID, 3) }()
	// Up again as soon as the agent noticed (its heartbeat went
	// unanswered) and the update is recorded: well within the grace Hoist
	// gives it.
	eventually(t, waitShort, "the agent noticed the cut, the update recorded", func() (bool, string) {
		noticed := strings.Count(a.out.String(), "connection to Hoist lost") > lost
		return noticed && th.processesPerInstance(t, fleetID) == 3, fmt.Sprint("noticed ", noticed)
	})
	h.LinkUp(t)
	defer func() {
		if err := <-updated; err != nil {
			t.Errorf("UpdateRuntimeConfiguration: %v", err)
		}
	}()
	eventually(t, waitLong, "the cut host's instance runs 3 processes", func() (bool, string) {
		n := th.activeProcesses(t, fleetID, th.locs[i])
		return n == 3*int32(len(before)), fmt.Sprint(n, " ACTIVE processes in ", th.locs[i])
	})
	eventually(t, waitShort, "the agent reconnected", func() (bool, string) {
		n := strings.Count(a.out.String(), "connected to Hoist")
		return n >= 2 && th.hosts(t)[a.hostID].Connected, th.hosts(t)[a.hostID].Status
	})
	if after := th.instanceIDs(t, fleetID, i); !slices.Equal(before, after) {
		t.Fatalf("instances of host %d before the cut %v, after %v: want them kept", i, before, after)
	}
	if st := th.hosts(t)[a.hostID].Status; st != "ACTIVE" {
		t.Fatalf("host %d is %s after a short cut", i, st)
	}
}

// lostAndBack takes host i's link down until Hoist declares it LOST (its
// instances are lost; with no other live host in its location the fleet
// cannot replace them yet), then up: the agent reconnects, is told to end
// the instances it still runs, and the fleet places new ones on it.
func (th *threeHosts) lostAndBack(t *testing.T, fleetID string, i int) {
	old := th.instanceIDs(t, fleetID, i)
	a, h := th.agents[i], th.n.Hosts[i]
	h.LinkDown(t)
	eventually(t, replaceBound, "host LOST", func() (bool, string) {
		st := th.hosts(t)[a.hostID].Status
		return st == "LOST", st
	})
	eventually(t, waitShort, "no capacity in its location", func() (bool, string) {
		return th.hasEvent(t, fleetID, types.EventCodeFleetActivationFailedNoInstances), "no event yet"
	})
	h.LinkUp(t)
	eventually(t, replaceBound, "the host's old instances ended and new ones placed on it", func() (bool, string) {
		for _, id := range old {
			if _, err := os.Stat(filepath.Join(a.dir, "instances", fleetID, id)); err == nil {
				return false, "old instance " + id + " still on the host"
			}
		}
		now := th.instanceIDs(t, fleetID, i)
		return len(now) == 2 && !slices.Contains(now, old[0]), strings.Join(now, ",")
	})
	if st := th.hosts(t)[a.hostID].Status; st != "ACTIVE" {
		t.Fatalf("the host is %s once back, want ACTIVE", st)
	}
}

// setProcesses sets the fleet's runtime configuration to n game servers
// an instance.
func (th *threeHosts) setProcesses(fleetID string, n int32) error {
	_, err := th.gl.UpdateRuntimeConfiguration(th.ctx, &gl.UpdateRuntimeConfigurationInput{FleetId: aws.String(fleetID),
		RuntimeConfiguration: &types.RuntimeConfiguration{ServerProcesses: []types.ServerProcess{{
			LaunchPath: aws.String("/local/game/gameserver"), Parameters: aws.String("-host 0.0.0.0 -accept-players"),
			ConcurrentExecutions: aws.Int32(n)}}}})
	return err
}

// processesPerInstance is the ConcurrentExecutions of the fleet's runtime
// configuration as Hoist has it.
func (th *threeHosts) processesPerInstance(t *testing.T, fleetID string) int32 {
	out, err := th.gl.DescribeRuntimeConfiguration(th.ctx, &gl.DescribeRuntimeConfigurationInput{FleetId: aws.String(fleetID)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToInt32(out.RuntimeConfiguration.ServerProcesses[0].ConcurrentExecutions)
}

// activeProcesses counts the fleet's ACTIVE server processes in a location.
func (th *threeHosts) activeProcesses(t *testing.T, fleetID, loc string) int32 {
	n, err := th.activeProcessesIn(fleetID, loc)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
