package fleetiq_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// The seed documents' sample names (ClaimGameServer, RegisterGameServer).
const (
	seedGroup    = "MegaFrogServers_NA"
	seedServer   = "mega-frog-game-12345678"
	seedInstance = "i-1234567890abcdef0"
	seedConn     = "192.0.2.0.80"
)

// sampleKeys are the members of the seed's sample ClaimGameServer response.
var sampleKeys = []string{"ClaimStatus", "ConnectionInfo", "GameServerData", "GameServerGroupArn", "GameServerGroupName",
	"GameServerId", "InstanceId", "LastClaimTime", "LastHealthCheckTime", "RegistrationTime", "UtilizationStatus"}

// without returns keys minus drop.
func without(keys []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return slices.Contains(drop, k) })
}

// checkServer compares a game server with what it should be; the times
// are checked against [from, to] windows by the callers.
func checkServer(t *testing.T, what string, g *types.GameServer, group, id, instance, conn, data string,
	util types.GameServerUtilizationStatus, claimed bool) {
	t.Helper()
	if g == nil {
		t.Fatalf("%s: no game server", what)
	}
	wantClaim := types.GameServerClaimStatus("")
	if claimed {
		wantClaim = types.GameServerClaimStatusClaimed
	}
	if aws.ToString(g.GameServerGroupName) != group || aws.ToString(g.GameServerGroupArn) != groupARN(group) ||
		aws.ToString(g.GameServerId) != id || aws.ToString(g.InstanceId) != instance ||
		aws.ToString(g.ConnectionInfo) != conn || g.GameServerData == nil || *g.GameServerData != data ||
		g.UtilizationStatus != util || g.ClaimStatus != wantClaim || g.RegistrationTime == nil || g.LastHealthCheckTime == nil {
		t.Errorf("%s: %s", what, show(g))
	}
}

// show renders a game server for failure messages.
func show(g *types.GameServer) string {
	if g == nil {
		return "<nil>"
	}
	tm := func(p *time.Time) string {
		if p == nil {
			return "-"
		}
		return p.UTC().Format("15:04:05.000")
	}
	data := "<nil>"
	if g.GameServerData != nil {
		data = fmt.Sprintf("%q", *g.GameServerData)
	}
	return fmt.Sprintf("{%s/%s on %s conn %q data %s %s claim %q reg %s claimed %s health %s arn %s}",
		aws.ToString(g.GameServerGroupName), aws.ToString(g.GameServerId), aws.ToString(g.InstanceId), aws.ToString(g.ConnectionInfo),
		data, g.UtilizationStatus, g.ClaimStatus, tm(g.RegistrationTime), tm(g.LastClaimTime), tm(g.LastHealthCheckTime),
		aws.ToString(g.GameServerGroupArn))
}

// within reports whether p is set and in [from truncated to ms, to].
func within(p *time.Time, from, to time.Time) bool {
	return p != nil && !p.Before(ms(from)) && !p.After(to)
}

// TestSeedSample replays the seeds' samples: the documented game server
// registered in MegaFrogServers_NA and claimed with the sample request
// (only GameServerGroupName), through each SDK, as raw JSON 1.1 (the
// sample's own wire format, compared member by member) and through the
// AWS CLI's claim-game-server.
func TestSeedSample(t *testing.T) {
	group := uniq(seedGroup)
	createGroup(t, sharedClients[0].c, group)
	eachClient(t, func(t *testing.T, c client) {
		before := time.Now()
		out, err := c.RegisterGameServer(ctx(t), &gl.RegisterGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: aws.String(seedServer), InstanceId: aws.String(seedInstance), ConnectionInfo: aws.String(seedConn)})
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		g := out.GameServer
		checkServer(t, "registered", g, group, seedServer, seedInstance, seedConn, "", types.GameServerUtilizationStatusAvailable, false)
		if !within(g.RegistrationTime, before, after) || !g.LastHealthCheckTime.Equal(*g.RegistrationTime) || g.LastClaimTime != nil {
			t.Errorf("registered at %s, called in [%v, %v]", show(g), before, after)
		}
		registered := *g.RegistrationTime

		before = time.Now()
		claimed, err := c.ClaimGameServer(ctx(t), &gl.ClaimGameServerInput{GameServerGroupName: aws.String(group)})
		after = time.Now()
		if err != nil {
			t.Fatal(err)
		}
		g = claimed.GameServer
		checkServer(t, "claimed", g, group, seedServer, seedInstance, seedConn, "", types.GameServerUtilizationStatusAvailable, true)
		if !within(g.LastClaimTime, before, after) || !g.RegistrationTime.Equal(registered) || !g.LastHealthCheckTime.Equal(registered) {
			t.Errorf("claimed: %s, called in [%v, %v]", show(g), before, after)
		}
		d, err := describe(t, c, group, seedServer)
		if err != nil {
			t.Fatal(err)
		}
		checkServer(t, "described", d, group, seedServer, seedInstance, seedConn, "", types.GameServerUtilizationStatusAvailable, true)
		if !d.LastClaimTime.Equal(*g.LastClaimTime) {
			t.Errorf("described %s", show(d))
		}
		if _, err := c.DeregisterGameServer(ctx(t), &gl.DeregisterGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: aws.String(seedServer)}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("JSON 1.1 wire", func(t *testing.T) {
		status, reg := rawJSON(t, shared, "RegisterGameServer", map[string]string{"GameServerGroupName": group,
			"GameServerId": seedServer, "InstanceId": seedInstance, "ConnectionInfo": seedConn})
		if status != 200 {
			t.Fatalf("RegisterGameServer: %d %v", status, reg)
		}
		checkWire(t, "RegisterGameServer", reg, group, without(sampleKeys, "ClaimStatus", "LastClaimTime"))
		// The seed's sample request, verbatim.
		status, resp := rawJSON(t, shared, "ClaimGameServer", map[string]string{"GameServerGroupName": group})
		if status != 200 {
			t.Fatalf("ClaimGameServer: %d %v", status, resp)
		}
		gs := checkWire(t, "ClaimGameServer", resp, group, sampleKeys)
		if gs["ClaimStatus"] != "CLAIMED" || gs["UtilizationStatus"] != "AVAILABLE" {
			t.Errorf("claimed %v", gs)
		}
		if gs["RegistrationTime"] != gs["LastHealthCheckTime"] {
			t.Errorf("LastHealthCheckTime %v, want the RegistrationTime %v", gs["LastHealthCheckTime"], gs["RegistrationTime"])
		}
		// UTILIZED ends the claim: ClaimStatus is left out, LastClaimTime stays.
		status, resp = rawJSON(t, shared, "UpdateGameServer", map[string]string{"GameServerGroupName": group,
			"GameServerId": seedServer, "UtilizationStatus": "UTILIZED"})
		if status != 200 {
			t.Fatalf("UpdateGameServer: %d %v", status, resp)
		}
		gs = checkWire(t, "UpdateGameServer", resp, group, without(sampleKeys, "ClaimStatus"))
		if gs["UtilizationStatus"] != "UTILIZED" {
			t.Errorf("updated %v", gs)
		}
		// Errors come back as {"__type", "message"}.
		status, resp = rawJSON(t, shared, "ClaimGameServer", map[string]string{"GameServerGroupName": group, "GameServerId": seedServer})
		if status != 400 || resp["__type"] != "ConflictException" || !strings.Contains(fmt.Sprint(resp["message"]), seedServer) {
			t.Errorf("claiming the UTILIZED game server: %d %v", status, resp)
		}
		status, resp = rawJSON(t, shared, "DeregisterGameServer", map[string]string{"GameServerGroupName": group, "GameServerId": seedServer})
		if status != 200 || len(resp) != 0 {
			t.Errorf("DeregisterGameServer: %d %v", status, resp)
		}
	})

	t.Run("AWS CLI", func(t *testing.T) {
		if _, err := exec.LookPath("aws"); err != nil {
			t.Skip("aws CLI not on PATH")
		}
		if _, err := sharedClients[0].c.RegisterGameServer(ctx(t), &gl.RegisterGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: aws.String(seedServer), InstanceId: aws.String(seedInstance), ConnectionInfo: aws.String(seedConn)}); err != nil {
			t.Fatal(err)
		}
		var out struct{ GameServer map[string]any }
		runAWS(t, &out, "gamelift", "claim-game-server", "--game-server-group-name", group)
		checkWire(t, "aws gamelift claim-game-server", map[string]any{"GameServer": out.GameServer}, group, sampleKeys)
		if out.GameServer["ClaimStatus"] != "CLAIMED" {
			t.Errorf("claimed %v", out.GameServer)
		}
		if _, err := sharedClients[0].c.DeregisterGameServer(ctx(t), &gl.DeregisterGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: aws.String(seedServer)}); err != nil {
			t.Fatal(err)
		}
	})
}

// checkWire checks a JSON response's GameServer member: exactly keys, the
// seed's values, timestamps as epoch seconds with at most milliseconds.
func checkWire(t *testing.T, what string, resp map[string]any, group string, keys []string) map[string]any {
	t.Helper()
	gs, ok := resp["GameServer"].(map[string]any)
	if !ok || len(resp) != 1 {
		t.Fatalf("%s: response %v, want one GameServer member", what, resp)
	}
	if got := slices.Sorted(maps.Keys(gs)); !slices.Equal(got, keys) {
		t.Errorf("%s: members %v, want %v", what, got, keys)
	}
	want := map[string]any{"ConnectionInfo": seedConn, "GameServerData": "", "GameServerGroupArn": groupARN(group),
		"GameServerGroupName": group, "GameServerId": seedServer, "InstanceId": seedInstance}
	for k, v := range want {
		if gs[k] != v {
			t.Errorf("%s: %s = %#v, want %#v", what, k, gs[k], v)
		}
	}
	for _, k := range []string{"RegistrationTime", "LastHealthCheckTime", "LastClaimTime"} {
		v, ok := gs[k]
		if !ok {
			continue
		}
		s := fmt.Sprint(v)
		whole, frac, _ := strings.Cut(s, ".")
		if _, isNum := v.(json.Number); !isNum || len(whole) != 10 || len(frac) > 3 {
			t.Errorf("%s: %s = %v, want epoch seconds with at most 3 decimals (like 1580218197.293)", what, k, v)
		}
	}
	return gs
}

// runAWS runs the AWS CLI against the shared Hoist and decodes its JSON
// output into out.
func runAWS(t *testing.T, out any, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx(t), "aws", append(args, "--endpoint-url", shared.URL, "--output", "json")...)
	cmd.Env = append(envWithoutAWS(), "AWS_ACCESS_KEY_ID="+hoisttest.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+hoisttest.SecretAccessKey,
		"AWS_DEFAULT_REGION="+hoisttest.Region, "AWS_REGION="+hoisttest.Region,
		"AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull, "AWS_MAX_ATTEMPTS=1", "AWS_PAGER=")
	b, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("aws %v: %v\n%s", args, err, stderr)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("aws %v: output %q: %v", args, b, err)
	}
}

func TestRegisterGameServer(t *testing.T) {
	eachClient(t, func(t *testing.T, c client) {
		base := uniq("register-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		a, b := base+"-a", base+"-b"
		createGroup(t, c, a)
		createGroup(t, c, b)
		// GameServerData and ConnectionInfo are optional and stored as given.
		out, err := c.RegisterGameServer(ctx(t), &gl.RegisterGameServerInput{GameServerGroupName: aws.String(groupARN(a)),
			GameServerId: aws.String(a + "-gs1"), InstanceId: aws.String(instanceN(1)), GameServerData: aws.String(`{"map":"swamp"}`)})
		if err != nil {
			t.Fatal(err)
		}
		g := out.GameServer
		if g.ConnectionInfo != nil || aws.ToString(g.GameServerData) != `{"map":"swamp"}` || aws.ToString(g.GameServerGroupName) != a {
			t.Errorf("registered %s", show(g))
		}
		if d, err := describe(t, c, a, a+"-gs1"); err != nil || aws.ToString(d.GameServerData) != `{"map":"swamp"}` || d.ConnectionInfo != nil {
			t.Errorf("described %s %v", show(d), err)
		}
		// A new instance ID joins the group as an ACTIVE instance.
		if got := instances(t, c, a); !slices.Equal(got, []string{instanceN(1) + "=ACTIVE"}) {
			t.Errorf("instances %v", got)
		}
		register(t, c, a, a+"-gs2", instanceN(2))
		if got := instances(t, c, a); !slices.Equal(got, []string{instanceN(1) + "=ACTIVE", instanceN(2) + "=ACTIVE"}) {
			t.Errorf("instances %v", got)
		}
		// Game server IDs are unique across all groups.
		_, err = c.RegisterGameServer(ctx(t), &gl.RegisterGameServerInput{GameServerGroupName: aws.String(b),
			GameServerId: aws.String(a + "-gs1"), InstanceId: aws.String(instanceN(1))})
		wantErr(t, err, "ConflictException", a+"-gs1", a)
		_, err = c.RegisterGameServer(ctx(t), &gl.RegisterGameServerInput{GameServerGroupName: aws.String(a),
			GameServerId: aws.String(a + "-gs1"), InstanceId: aws.String(instanceN(3))})
		wantErr(t, err, "ConflictException", a+"-gs1")
		// An instance keeps its status when more game servers register on
		// it (Hoist does not refuse registrations on a DRAINING instance).
		setStatusHTTP(t, a, instanceN(2), "DRAINING")
		register(t, c, a, a+"-gs3", instanceN(2))
		if got := instances(t, c, a); !slices.Equal(got, []string{instanceN(1) + "=ACTIVE", instanceN(2) + "=DRAINING"}) {
			t.Errorf("instances %v", got)
		}
		// RegisterGameServer's modeled errors have no NotFoundException.
		_, err = c.RegisterGameServer(ctx(t), &gl.RegisterGameServerInput{GameServerGroupName: aws.String(base + "-nope"),
			GameServerId: aws.String(base + "-gs9"), InstanceId: aws.String(instanceN(1))})
		wantErr(t, err, "InvalidRequestException", base+"-nope")
	})
}

func TestUpdateGameServer(t *testing.T) {
	eachClient(t, func(t *testing.T, c client) {
		group := uniq("update-gs-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		createGroup(t, c, group)
		id := group + "-gs1"
		reg := register(t, c, group, id, instanceN(1))

		// HealthCheck HEALTHY sets LastHealthCheckTime; data is replaced.
		before := time.Now()
		out, err := c.UpdateGameServer(ctx(t), &gl.UpdateGameServerInput{GameServerGroupName: aws.String(group), GameServerId: aws.String(id),
			HealthCheck: types.GameServerHealthCheckHealthy, GameServerData: aws.String("round-2")})
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		g := out.GameServer
		if !within(g.LastHealthCheckTime, before, after) || !g.RegistrationTime.Equal(*reg.RegistrationTime) ||
			aws.ToString(g.GameServerData) != "round-2" || g.UtilizationStatus != types.GameServerUtilizationStatusAvailable || g.LastClaimTime != nil {
			t.Errorf("after a health check: %s (called in [%v, %v])", show(g), before, after)
		}
		health := *g.LastHealthCheckTime

		// A claim, then UTILIZED: the claim ends, LastClaimTime stays.
		claimed := mustClaim(t, c, group, "")
		g = setUtilization(t, c, group, id, types.GameServerUtilizationStatusUtilized)
		if g.UtilizationStatus != types.GameServerUtilizationStatusUtilized || g.ClaimStatus != "" ||
			!g.LastClaimTime.Equal(*claimed.LastClaimTime) || !g.LastHealthCheckTime.Equal(health) {
			t.Errorf("UTILIZED: %s", show(g))
		}
		_, err = claim(t, c, group, "")
		wantErr(t, err, "OutOfCapacityException", group)
		_, err = claim(t, c, group, id)
		wantErr(t, err, "ConflictException", id, "UTILIZED")

		// AVAILABLE: claimable again; AVAILABLE on a claimed game server
		// keeps the claim.
		g = setUtilization(t, c, group, id, types.GameServerUtilizationStatusAvailable)
		if g.UtilizationStatus != types.GameServerUtilizationStatusAvailable || g.ClaimStatus != "" {
			t.Errorf("AVAILABLE: %s", show(g))
		}
		mustClaim(t, c, group, id)
		if g = setUtilization(t, c, group, id, types.GameServerUtilizationStatusAvailable); g.ClaimStatus != types.GameServerClaimStatusClaimed {
			t.Errorf("AVAILABLE ended a claim: %s", show(g))
		}
		// An update of nothing changes nothing.
		out, err = c.UpdateGameServer(ctx(t), &gl.UpdateGameServerInput{GameServerGroupName: aws.String(group), GameServerId: aws.String(id)})
		if err != nil || out.GameServer.ClaimStatus != types.GameServerClaimStatusClaimed || aws.ToString(out.GameServer.GameServerData) != "round-2" ||
			!out.GameServer.LastHealthCheckTime.Equal(health) {
			t.Errorf("empty update: %s %v", show(out.GameServer), err)
		}

		_, err = c.UpdateGameServer(ctx(t), &gl.UpdateGameServerInput{GameServerGroupName: aws.String(group), GameServerId: aws.String(group + "-nope")})
		wantErr(t, err, "NotFoundException", group+"-nope", group)
		other := group + "-other"
		createGroup(t, c, other)
		_, err = c.UpdateGameServer(ctx(t), &gl.UpdateGameServerInput{GameServerGroupName: aws.String(other), GameServerId: aws.String(id)})
		wantErr(t, err, "NotFoundException", id, other)
		_, err = describe(t, c, other, id)
		wantErr(t, err, "NotFoundException", id, other)
	})
}

func TestDeregisterGameServer(t *testing.T) {
	eachClient(t, func(t *testing.T, c client) {
		group := uniq("deregister-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		createGroup(t, c, group)
		register(t, c, group, group+"-gs1", instanceN(1))
		register(t, c, group, group+"-gs2", instanceN(2))
		setUtilization(t, c, group, group+"-gs2", types.GameServerUtilizationStatusUtilized)
		setStatusHTTP(t, group, instanceN(1), "DRAINING")
		for _, id := range []string{group + "-gs1", group + "-gs2"} { // AVAILABLE and UTILIZED alike
			if _, err := c.DeregisterGameServer(ctx(t), &gl.DeregisterGameServerInput{GameServerGroupName: aws.String(group),
				GameServerId: aws.String(id)}); err != nil {
				t.Fatal(err)
			}
			_, err := describe(t, c, group, id)
			wantErr(t, err, "NotFoundException", id)
		}
		// An instance without game servers is no longer in the group.
		if got := instances(t, c, group); len(got) != 0 {
			t.Errorf("instances %v after deregistering every game server", got)
		}
		_, err := c.DeregisterGameServer(ctx(t), &gl.DeregisterGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: aws.String(group + "-gs1")})
		wantErr(t, err, "NotFoundException", group+"-gs1")
		// The ID is free again; an instance Hoist forgot comes back ACTIVE.
		register(t, c, group, group+"-gs1", instanceN(1))
		if got := instances(t, c, group); !slices.Equal(got, []string{instanceN(1) + "=ACTIVE"}) {
			t.Errorf("instances %v", got)
		}
	})
}

func TestListGameServersPages(t *testing.T) {
	eachClient(t, func(t *testing.T, c client) {
		group := uniq("list-gs-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		createGroup(t, c, group)
		var ids []string
		for n := range 7 {
			id := fmt.Sprintf("%s-gs%d", group, n)
			register(t, c, group, id, instanceN(n%3))
			ids = append(ids, id)
		}
		mustClaim(t, c, group, ids[3])
		list := func(order types.SortOrder, limit *int32) (got []string, pages []int) {
			in := &gl.ListGameServersInput{GameServerGroupName: aws.String(group), SortOrder: order, Limit: limit}
			for {
				out, err := c.ListGameServers(ctx(t), in)
				if err != nil {
					t.Fatal(err)
				}
				pages = append(pages, len(out.GameServers))
				for _, g := range out.GameServers {
					got = append(got, aws.ToString(g.GameServerId))
					if claimed := aws.ToString(g.GameServerId) == ids[3]; claimed != (g.ClaimStatus == types.GameServerClaimStatusClaimed) {
						t.Errorf("listed %s", show(&g))
					}
				}
				if out.NextToken == nil {
					return got, pages
				}
				in.NextToken = out.NextToken
			}
		}
		got, pages := list("", aws.Int32(3))
		if !slices.Equal(got, ids) || !slices.Equal(pages, []int{3, 3, 1}) {
			t.Errorf("ascending, Limit 3: %v in pages %v", got, pages)
		}
		got, _ = list(types.SortOrderAscending, nil)
		if !slices.Equal(got, ids) {
			t.Errorf("ASCENDING: %v", got)
		}
		rev := slices.Clone(ids)
		slices.Reverse(rev)
		got, pages = list(types.SortOrderDescending, aws.Int32(4))
		if !slices.Equal(got, rev) || !slices.Equal(pages, []int{4, 3}) {
			t.Errorf("DESCENDING, Limit 4: %v in pages %v", got, pages)
		}

		_, err := c.ListGameServers(ctx(t), &gl.ListGameServersInput{GameServerGroupName: aws.String(group), NextToken: aws.String("bogus")})
		wantErr(t, err, "InvalidRequestException", "NextToken")
		// ListGameServers' modeled errors have no NotFoundException.
		_, err = c.ListGameServers(ctx(t), &gl.ListGameServersInput{GameServerGroupName: aws.String(group + "-nope")})
		wantErr(t, err, "InvalidRequestException", group+"-nope")
	})
}

func TestDescribeGameServerInstances(t *testing.T) {
	eachClient(t, func(t *testing.T, c client) {
		group := uniq("instances-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		createGroup(t, c, group)
		for n := 5; n >= 1; n-- { // registered in reverse: listed by instance ID all the same
			register(t, c, group, fmt.Sprintf("%s-gs%d", group, n), instanceN(n))
		}
		if code, resp := setInstanceStatusHTTP(t, shared, group, instanceN(2), "DRAINING"); code != 200 {
			t.Fatalf("admin: %d %v", code, resp)
		}
		if code, resp := setInstanceStatusHTTP(t, shared, group, instanceN(4), "SPOT_TERMINATING"); code != 200 {
			t.Fatalf("admin: %d %v", code, resp)
		}
		var got []string
		var pages []int
		in := &gl.DescribeGameServerInstancesInput{GameServerGroupName: aws.String(group), Limit: aws.Int32(2)}
		for {
			out, err := c.DescribeGameServerInstances(ctx(t), in)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, len(out.GameServerInstances))
			for _, i := range out.GameServerInstances {
				if aws.ToString(i.GameServerGroupName) != group || aws.ToString(i.GameServerGroupArn) != groupARN(group) {
					t.Errorf("instance %+v", i)
				}
				got = append(got, aws.ToString(i.InstanceId)+"="+string(i.InstanceStatus))
			}
			if out.NextToken == nil {
				break
			}
			in.NextToken = out.NextToken
		}
		want := []string{instanceN(1) + "=ACTIVE", instanceN(2) + "=DRAINING", instanceN(3) + "=ACTIVE",
			instanceN(4) + "=SPOT_TERMINATING", instanceN(5) + "=ACTIVE"}
		if !slices.Equal(got, want) || !slices.Equal(pages, []int{2, 2, 1}) {
			t.Errorf("instances %v in pages %v, want %v", got, pages, want)
		}
		// InstanceIds: only those (in instance ID order); unknown IDs are
		// left out.
		out, err := c.DescribeGameServerInstances(ctx(t), &gl.DescribeGameServerInstancesInput{GameServerGroupName: aws.String(groupARN(group)),
			InstanceIds: []string{instanceN(4), instanceN(9), instanceN(2)}})
		if err != nil {
			t.Fatal(err)
		}
		got = nil
		for _, i := range out.GameServerInstances {
			got = append(got, aws.ToString(i.InstanceId)+"="+string(i.InstanceStatus))
		}
		if !slices.Equal(got, []string{instanceN(2) + "=DRAINING", instanceN(4) + "=SPOT_TERMINATING"}) || out.NextToken != nil {
			t.Errorf("InstanceIds: %v next %v", got, out.NextToken)
		}

		_, err = c.DescribeGameServerInstances(ctx(t), &gl.DescribeGameServerInstancesInput{GameServerGroupName: aws.String(group + "-nope")})
		wantErr(t, err, "NotFoundException", group+"-nope")
		_, err = c.DescribeGameServerInstances(ctx(t), &gl.DescribeGameServerInstancesInput{GameServerGroupName: aws.String(group), NextToken: aws.String("bogus")})
		wantErr(t, err, "InvalidRequestException", "NextToken")
	})
}

// envWithoutAWS returns the environment without AWS_* and HOIST_*
// variables, so that a command sees only what a test gives it.
func envWithoutAWS() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "HOIST_")
	})
}
