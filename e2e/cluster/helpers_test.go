package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/cluster"
	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/internal/store"
)

// processes are simulated game server processes (SDK 5 WebSockets) of
// one Anywhere compute, each activating every game session it is sent,
// counting what each was sent.
type processes struct {
	mu      sync.Mutex
	created map[string][]string // process ID -> the game sessions it was sent
	clients []*sdkclient.Client
}

// connectProcesses registers the compute (through cl) of fleetID in
// location and connects n processes named <compute>-<i> to replica r's
// SDK endpoint (so r holds their connections), each ProcessReady and its
// first heartbeat. They are closed when the test ends.
func connectProcesses(ctx context.Context, t *testing.T, cl *gl.Client, r *cluster.Replica, fleetID, location, compute string, n int) *processes {
	t.Helper()
	if _, err := cl.RegisterCompute(ctx, &gl.RegisterComputeInput{FleetId: aws.String(fleetID), ComputeName: aws.String(compute),
		IpAddress: aws.String("127.0.0.1"), Location: aws.String(location)}); err != nil {
		t.Fatal(err)
	}
	tok, err := cl.GetComputeAuthToken(ctx, &gl.GetComputeAuthTokenInput{FleetId: aws.String(fleetID), ComputeName: aws.String(compute)})
	if err != nil {
		t.Fatal(err)
	}
	ps := &processes{created: map[string][]string{}}
	for i := range n {
		id := fmt.Sprintf("%s-%d", compute, i)
		proc, err := sdkclient.Dial(ctx, r.SDKEndpoint(), sdkclient.Query(id, compute, fleetID, aws.ToString(tok.AuthToken)),
			sdkclient.Options{OnMessage: func(c *sdkclient.Client, fr *sdkclient.Frame) { ps.onMessage(ctx, id, c, fr) }})
		if err != nil {
			t.Fatalf("SDK connection to replica %s: %v", r.Name, err)
		}
		t.Cleanup(func() { _ = proc.Close(1000, "") })
		ps.clients = append(ps.clients, proc)
		if _, err := proc.Call(ctx, "ActivateServerProcess", map[string]any{"SdkVersion": sdkclient.SDKVersion,
			"SdkLanguage": sdkclient.SDKLanguage, "Port": 7000 + i, "LogPaths": []string{}}); err != nil {
			t.Fatalf("ProcessReady on replica %s: %v", r.Name, err)
		}
		// The SDK's first heartbeat, right after ProcessReady: until it
		// comes (or 2 s passed) Hoist holds the process's messages.
		if _, err := proc.Call(ctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": true}); err != nil {
			t.Fatalf("first heartbeat on replica %s: %v", r.Name, err)
		}
	}
	return ps
}

// onMessage records a CreateGameSession and activates its game session.
func (ps *processes) onMessage(ctx context.Context, id string, c *sdkclient.Client, fr *sdkclient.Frame) {
	if fr.Action != "CreateGameSession" {
		return
	}
	gs, _ := fr.Fields()["GameSessionId"].(string)
	ps.mu.Lock()
	ps.created[id] = append(ps.created[id], gs)
	ps.mu.Unlock()
	_, _ = c.Call(ctx, "ActivateGameSession", map[string]any{"GameSessionId": gs})
}

// sent returns how many CreateGameSession messages the processes got, and
// the processes that got more than one.
func (ps *processes) sent() (int, []string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	n := 0
	var twice []string
	for id, gss := range ps.created {
		n += len(gss)
		if len(gss) > 1 {
			twice = append(twice, fmt.Sprintf("%s got %v", id, gss))
		}
	}
	slices.Sort(twice)
	return n, twice
}

// activeFleet creates an Anywhere fleet in custom-<name> (anywhereFleet)
// and waits until it is ACTIVE.
func activeFleet(ctx context.Context, t *testing.T, cl *gl.Client, name string) (fleetID, fleetARN string) {
	t.Helper()
	fleetID = anywhereFleet(ctx, t, cl, name)
	waitFor(ctx, t, "fleet ACTIVE", func() (bool, error) {
		out, err := cl.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
		if err != nil {
			return false, err
		}
		fleetARN = aws.ToString(out.FleetAttributes[0].FleetArn)
		return out.FleetAttributes[0].Status == types.FleetStatusActive, nil
	})
	return fleetID, fleetARN
}

// loopShardHolder waits until a replica holds the shard of loop for key
// (shard/<loop>/<key>) and returns it with the lease's term.
func loopShardHolder(ctx context.Context, t *testing.T, c *cluster.Cluster, loop, key string) (*cluster.Replica, int64) {
	t.Helper()
	name := store.ShardLeasePrefix(loop) + key
	var holder *cluster.Replica
	var term int64
	waitFor(ctx, t, name+" held", func() (bool, error) {
		gs, err := c.Leases(ctx, name)
		for _, g := range gs {
			if g.Name == name {
				holder, term = c.ByID(g.Holder), g.Term
			}
		}
		return holder != nil, err
	})
	return holder, term
}

// duelRules is a rule set that matches any two players, one a team.
const duelRules = `{"name":"duel","ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"number","default":10}],
 "teams":[{"name":"red","minPlayers":1,"maxPlayers":1},{"name":"blue","minPlayers":1,"maxPlayers":1}]}`

// standaloneConfigurations creates the duel rule set and a STANDALONE
// matchmaking configuration of it, without acceptance, for each name.
func standaloneConfigurations(ctx context.Context, t *testing.T, cl *gl.Client, names ...string) {
	t.Helper()
	if _, err := cl.CreateMatchmakingRuleSet(ctx, &gl.CreateMatchmakingRuleSetInput{Name: aws.String("duel"),
		RuleSetBody: aws.String(duelRules)}); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if _, err := cl.CreateMatchmakingConfiguration(ctx, &gl.CreateMatchmakingConfigurationInput{Name: aws.String(name),
			RuleSetName: aws.String("duel"), RequestTimeoutSeconds: aws.Int32(120), AcceptanceRequired: aws.Bool(false),
			FlexMatchMode: types.FlexMatchModeStandalone}); err != nil {
			t.Fatal(err)
		}
	}
}

// startTicket starts a one-player ticket (the player is the ticket ID).
func startTicket(ctx context.Context, cl *gl.Client, config, id string) error {
	_, err := cl.StartMatchmaking(ctx, &gl.StartMatchmakingInput{ConfigurationName: aws.String(config), TicketId: aws.String(id),
		Players: []types.Player{{PlayerId: aws.String(id)}}})
	return err
}

// tickets describes the tickets (ten a call) and returns them by ID.
func tickets(ctx context.Context, cl *gl.Client, ids []string) (map[string]types.MatchmakingTicket, error) {
	out := make(map[string]types.MatchmakingTicket, len(ids))
	for i := 0; i < len(ids); i += 10 {
		d, err := cl.DescribeMatchmaking(ctx, &gl.DescribeMatchmakingInput{TicketIds: ids[i:min(i+10, len(ids))]})
		if err != nil {
			return nil, err
		}
		for _, tk := range d.TicketList {
			out[aws.ToString(tk.TicketId)] = tk
		}
	}
	return out, nil
}

// waitTickets waits until every ticket is COMPLETED and returns them.
func waitTickets(ctx context.Context, t *testing.T, cl *gl.Client, ids []string) map[string]types.MatchmakingTicket {
	t.Helper()
	var got map[string]types.MatchmakingTicket
	waitFor(ctx, t, "tickets COMPLETED", func() (bool, error) {
		var err error
		if got, err = tickets(ctx, cl, ids); err != nil {
			return false, err
		}
		for _, id := range ids {
			if got[id].Status != types.MatchmakingConfigurationStatusCompleted {
				return false, nil
			}
		}
		return true, nil
	})
	return got
}

// checkTeams fails unless every ticket's player was given a team.
func checkTeams(t *testing.T, got map[string]types.MatchmakingTicket) {
	t.Helper()
	for id, tk := range got {
		if len(tk.Players) != 1 || aws.ToString(tk.Players[0].Team) == "" {
			t.Errorf("ticket %s completed without a team: %+v", id, tk.Players)
		}
	}
}

// matchEvents reads a live stream until the event whose ID is sentinel
// and counts, for each ticket, the MatchmakingSucceeded events naming it;
// each must name two tickets.
func matchEvents(t *testing.T, s *cluster.Stream, sentinel string) map[string]int {
	t.Helper()
	succeeded := map[string]int{}
	for {
		ev, err := s.Next(30 * time.Second)
		if err != nil {
			t.Fatalf("live stream after %d MatchmakingSucceeded tickets: %v", len(succeeded), err)
		}
		if ev.Envelope.ID == sentinel {
			return succeeded
		}
		var d struct {
			Type    string `json:"type"`
			Tickets []struct {
				TicketID string `json:"ticketId"`
			} `json:"tickets"`
		}
		if err := json.Unmarshal(ev.Envelope.Detail, &d); err != nil {
			t.Fatalf("event %s: %v", ev.Envelope.ID, err)
		}
		if d.Type == "MatchmakingSucceeded" {
			if len(d.Tickets) != 2 {
				t.Errorf("MatchmakingSucceeded %s names %d tickets, want 2", ev.Envelope.ID, len(d.Tickets))
			}
			for _, tk := range d.Tickets {
				succeeded[tk.TicketID]++
			}
		}
	}
}

// isOutOfCapacity reports whether err is ClaimGameServer's
// OutOfCapacityException.
func isOutOfCapacity(err error) bool {
	var oc *types.OutOfCapacityException
	return errors.As(err, &oc)
}
