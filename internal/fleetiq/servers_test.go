package fleetiq

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// TestSeedSample replays the ClaimGameServer documentation's example: the
// claimed game server looks like its sample response.
func TestSeedSample(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Timings.StatusStep = -1 })
	h.group(seedGroup)
	reg := h.register(seedGroup, seedServer, seedInstance)
	if reg.ClaimStatus != "" || reg.UtilizationStatus != api.GameServerUtilizationStatusAvailable || reg.LastClaimTime != nil {
		t.Errorf("registered = %+v", reg)
	}
	out, err := h.svc.ClaimGameServer(h.ctx, &api.ClaimGameServerInput{GameServerGroupName: api.String(seedGroup)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out)
	var gotMap, wantMap map[string]any
	json.Unmarshal(got, &gotMap)
	json.Unmarshal([]byte(`{"GameServer": {
		"ClaimStatus": "CLAIMED",
		"ConnectionInfo": "192.0.2.0:80",
		"GameServerData": "",
		"GameServerGroupArn": "arn:aws:gamelift:us-west-2:123456789012:gameservergroup/MegaFrogServers_NA",
		"GameServerGroupName": "MegaFrogServers_NA",
		"GameServerId": "mega-frog-game-12345678",
		"InstanceId": "i-1234567890abcdef0",
		"LastClaimTime": 1580218197.293,
		"LastHealthCheckTime": 1580218197.293,
		"RegistrationTime": 1580218197.293,
		"UtilizationStatus": "AVAILABLE"}}`), &wantMap)
	if !reflect.DeepEqual(gotMap, wantMap) {
		t.Errorf("claim response\n got %s\nwant %v", got, wantMap)
	}
}

func TestRegisterGameServer(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.group("other")
	out, err := h.svc.RegisterGameServer(h.ctx, &api.RegisterGameServerInput{
		GameServerGroupName: api.String(h.svc.groupARN(seedGroup)), GameServerId: api.String(seedServer),
		InstanceId: api.String(seedInstance), ConnectionInfo: api.String("192.0.2.0:80"), GameServerData: api.String("map=swamp")})
	if err != nil {
		t.Fatalf("register in a NEW group, by ARN: %v", err)
	}
	g := out.GameServer
	if *g.GameServerGroupName != seedGroup || *g.GameServerData != "map=swamp" || *g.ConnectionInfo != "192.0.2.0:80" ||
		!g.RegistrationTime.Equal(t0) || !g.LastHealthCheckTime.Equal(t0) {
		t.Errorf("registered = %+v", g)
	}
	if got := h.instances(seedGroup); !reflect.DeepEqual(got, []string{seedInstance + "=ACTIVE"}) {
		t.Errorf("instances = %v", got)
	}
	tests := map[string]struct {
		group, id string
		check     func(error) bool
	}{
		"same ID, same group":   {seedGroup, seedServer, isErr[*api.ConflictException]},
		"same ID, other group":  {"other", seedServer, isErr[*api.ConflictException]},
		"group does not exist":  {"nope", "gs-1", isErr[*api.InvalidRequestException]},
		"another group's ARN":   {"arn:aws:gamelift:us-west-2::fleet/other", "gs-2", isErr[*api.InvalidRequestException]},
		"same ID, wrong casing": {seedGroup, "MEGA-frog-game-12345678", func(err error) bool { return err == nil }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := h.svc.RegisterGameServer(h.ctx, &api.RegisterGameServerInput{GameServerGroupName: api.String(tc.group),
				GameServerId: api.String(tc.id), InstanceId: api.String(seedInstance)})
			if !tc.check(err) {
				t.Errorf("err = %v", err)
			}
		})
	}
	h.checkCounts()
}

func TestUpdateGameServer(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.register(seedGroup, seedServer, seedInstance)
	h.clock.Advance(30 * time.Second)
	out, err := h.svc.UpdateGameServer(h.ctx, &api.UpdateGameServerInput{GameServerGroupName: api.String(seedGroup),
		GameServerId: api.String(seedServer), HealthCheck: api.GameServerHealthCheckHealthy, GameServerData: api.String("v2")})
	if err != nil {
		t.Fatal(err)
	}
	if g := out.GameServer; !g.LastHealthCheckTime.Equal(t0.Add(30*time.Second)) || *g.GameServerData != "v2" || !g.RegistrationTime.Equal(t0) {
		t.Errorf("after health check = %+v", g)
	}
	// A claim, then UTILIZED ends the claim.
	h.mustClaim(seedGroup, "")
	g := h.utilization(seedGroup, seedServer, api.GameServerUtilizationStatusUtilized)
	if g.ClaimStatus != "" || g.UtilizationStatus != api.GameServerUtilizationStatusUtilized || !g.LastClaimTime.Equal(t0.Add(30*time.Second)) {
		t.Errorf("utilized = %+v", g)
	}
	if h.keys()[seedServer] != keyUtilized {
		t.Errorf("key = %q", h.keys()[seedServer])
	}
	h.checkCounts()
	g = h.utilization(seedGroup, seedServer, api.GameServerUtilizationStatusAvailable)
	if g.UtilizationStatus != api.GameServerUtilizationStatusAvailable || g.ClaimStatus != "" {
		t.Errorf("available again = %+v", g)
	}
	h.checkCounts()
	// AVAILABLE on a claimed game server keeps the claim.
	h.mustClaim(seedGroup, seedServer)
	if g = h.utilization(seedGroup, seedServer, api.GameServerUtilizationStatusAvailable); g.ClaimStatus != api.GameServerClaimStatusClaimed {
		t.Errorf("AVAILABLE ended a claim: %+v", g)
	}
	// An update without fields changes nothing.
	out, err = h.svc.UpdateGameServer(h.ctx, &api.UpdateGameServerInput{GameServerGroupName: api.String(seedGroup), GameServerId: api.String(seedServer)})
	if err != nil || out.GameServer.ClaimStatus != api.GameServerClaimStatusClaimed {
		t.Errorf("empty update: %+v %v", out, err)
	}
	// After the claim ran out, UTILIZED still works and counts right.
	h.clock.Advance(ClaimHold)
	if g = h.utilization(seedGroup, seedServer, api.GameServerUtilizationStatusUtilized); g.UtilizationStatus != api.GameServerUtilizationStatusUtilized {
		t.Errorf("utilized after an expired claim = %+v", g)
	}
	h.checkCounts()
	for name, grp := range map[string]string{"unknown game server": seedGroup, "wrong group": "other"} {
		t.Run(name, func(t *testing.T) {
			id := seedServer
			if grp == seedGroup {
				id = "nope-123"
			}
			_, err := h.svc.UpdateGameServer(h.ctx, &api.UpdateGameServerInput{GameServerGroupName: api.String(grp), GameServerId: api.String(id)})
			if !isErr[*api.NotFoundException](err) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestDeregisterGameServer(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.register(seedGroup, seedServer, seedInstance)
	h.register(seedGroup, "gs-2", seedInstance)
	h.register(seedGroup, "gs-3", instanceN(2))
	h.mustClaim(seedGroup, "gs-2")
	for _, id := range []string{"gs-2", seedServer} {
		if err := h.svc.DeregisterGameServer(h.ctx, &api.DeregisterGameServerInput{GameServerGroupName: api.String(seedGroup), GameServerId: api.String(id)}); err != nil {
			t.Fatal(err)
		}
		h.checkCounts()
	}
	// The instance went with its last game server.
	if got := h.instances(seedGroup); !reflect.DeepEqual(got, []string{instanceN(2) + "=ACTIVE"}) {
		t.Errorf("instances = %v", got)
	}
	if h.describe(seedGroup, seedServer) != nil {
		t.Error("deregistered game server still described")
	}
	err := h.svc.DeregisterGameServer(h.ctx, &api.DeregisterGameServerInput{GameServerGroupName: api.String(seedGroup), GameServerId: api.String(seedServer)})
	if !isErr[*api.NotFoundException](err) {
		t.Errorf("second deregister: %v", err)
	}
	// The ID may register again.
	h.register(seedGroup, seedServer, seedInstance)
	h.checkCounts()
}

func TestListGameServers(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.group("other")
	ids := []string{"gs-c", "gs-a", "gs-d", "gs-b", "gs-e"}
	for i, id := range ids {
		h.register(seedGroup, id, instanceN(i%2))
		h.clock.Advance(time.Second)
	}
	h.register("other", "gs-other", seedInstance)
	list := func(order api.SortOrder, limit int32) []string {
		var got []string
		var token *string
		for {
			out, err := h.svc.ListGameServers(h.ctx, &api.ListGameServersInput{GameServerGroupName: api.String(seedGroup),
				SortOrder: order, Limit: api.Int32(limit), NextToken: token})
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range out.GameServers {
				got = append(got, *g.GameServerId)
			}
			if token = out.NextToken; token == nil {
				return got
			}
		}
	}
	reversed := []string{"gs-e", "gs-b", "gs-d", "gs-a", "gs-c"}
	tests := map[string]struct {
		order api.SortOrder
		limit int32
		want  []string
	}{
		"default is oldest first": {"", 100, ids},
		"ascending, pages of 2":   {api.SortOrderAscending, 2, ids},
		"descending, pages of 3":  {api.SortOrderDescending, 3, reversed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := list(tc.order, tc.limit); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	// A claim or an update does not move a game server in the order.
	h.mustClaim(seedGroup, "gs-c")
	h.utilization(seedGroup, "gs-c", api.GameServerUtilizationStatusUtilized)
	if got := list("", 100); !reflect.DeepEqual(got, ids) {
		t.Errorf("after updates: %v", got)
	}
	_, err := h.svc.ListGameServers(h.ctx, &api.ListGameServersInput{GameServerGroupName: api.String("nope")})
	if !isErr[*api.InvalidRequestException](err) {
		t.Errorf("unknown group: %v", err)
	}
	_, err = h.svc.ListGameServers(h.ctx, &api.ListGameServersInput{GameServerGroupName: api.String(seedGroup), NextToken: api.String("x")})
	if !isErr[*api.InvalidRequestException](err) {
		t.Errorf("bad token: %v", err)
	}
}

func TestDescribeGameServerInstances(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	for i := 5; i >= 1; i-- {
		h.register(seedGroup, "gs-"+instanceN(i), instanceN(i))
	}
	if err := h.svc.SetInstanceStatus(h.ctx, seedGroup, instanceN(2), "DRAINING"); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.SetInstanceStatus(h.ctx, h.svc.groupARN(seedGroup), instanceN(3), "SPOT_TERMINATING"); err != nil {
		t.Fatal(err)
	}
	all := []string{instanceN(1) + "=ACTIVE", instanceN(2) + "=DRAINING", instanceN(3) + "=SPOT_TERMINATING", instanceN(4) + "=ACTIVE", instanceN(5) + "=ACTIVE"}
	if got := h.instances(seedGroup); !reflect.DeepEqual(got, all) {
		t.Errorf("instances = %v", got)
	}
	describe := func(ids []string, limit int32) []string {
		var got []string
		var token *string
		for {
			out, err := h.svc.DescribeGameServerInstances(h.ctx, &api.DescribeGameServerInstancesInput{
				GameServerGroupName: api.String(seedGroup), InstanceIds: ids, Limit: api.Int32(limit), NextToken: token})
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range out.GameServerInstances {
				if *i.GameServerGroupArn != h.svc.groupARN(seedGroup) || *i.GameServerGroupName != seedGroup {
					t.Errorf("instance %+v", i)
				}
				got = append(got, *i.InstanceId+"="+string(i.InstanceStatus))
			}
			if token = out.NextToken; token == nil {
				return got
			}
		}
	}
	if got := describe(nil, 2); !reflect.DeepEqual(got, all) {
		t.Errorf("pages of 2 = %v", got)
	}
	if got := describe([]string{instanceN(4), instanceN(2), instanceN(9)}, 1); !reflect.DeepEqual(got, []string{all[1], all[3]}) {
		t.Errorf("filtered = %v", got)
	}
	_, err := h.svc.DescribeGameServerInstances(h.ctx, &api.DescribeGameServerInstancesInput{GameServerGroupName: api.String("nope")})
	if !isErr[*api.NotFoundException](err) {
		t.Errorf("unknown group: %v", err)
	}
}

func TestSetInstanceStatusErrors(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.register(seedGroup, seedServer, seedInstance)
	tests := map[string]struct {
		group, instance, status string
		check                   func(error) bool
	}{
		"unknown status":   {seedGroup, seedInstance, "TERMINATED", isErr[*api.InvalidRequestException]},
		"lower case":       {seedGroup, seedInstance, "draining", isErr[*api.InvalidRequestException]},
		"unknown group":    {"nope", seedInstance, "DRAINING", isErr[*api.NotFoundException]},
		"unknown instance": {seedGroup, instanceN(7), "DRAINING", isErr[*api.NotFoundException]},
		"no change":        {seedGroup, seedInstance, "ACTIVE", func(err error) bool { return err == nil }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if err := h.svc.SetInstanceStatus(h.ctx, tc.group, tc.instance, tc.status); !tc.check(err) {
				t.Errorf("err = %v", err)
			}
		})
	}
}
