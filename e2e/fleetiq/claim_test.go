package fleetiq_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

var (
	activeOnly   = []types.FilterInstanceStatus{types.FilterInstanceStatusActive}
	withDraining = []types.FilterInstanceStatus{types.FilterInstanceStatusActive, types.FilterInstanceStatusDraining}
)

// runAdmin runs `hoist admin <args>` (the built binary) against the shared
// Hoist with the e2e credentials and returns its exit code and output.
func runAdmin(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	full := append([]string{"admin"}, args...)
	if len(args) > 0 && args[0] == "set-instance-status" { // connection flags first: args may override them
		full = append([]string{"admin", args[0], "--endpoint", shared.URL, "--region", hoisttest.Region,
			"--access-key-id", hoisttest.AccessKeyID, "--secret-access-key", hoisttest.SecretAccessKey}, args[1:]...)
	}
	cmd := exec.CommandContext(ctx(t), hoisttest.Binary(t), full...)
	cmd.Env = envWithoutAWS()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("hoist admin: %v", err)
	return 0, "", ""
}

// setStatusCLI sets an instance's status with `hoist admin
// set-instance-status`.
func setStatusCLI(t testing.TB, group, instance, status string) {
	t.Helper()
	code, stdout, stderr := runAdmin(t, "set-instance-status", "--group", group, "--instance", instance, "--status", status)
	if code != 0 || !strings.Contains(stdout, instance) || !strings.Contains(stdout, status) {
		t.Fatalf("hoist admin set-instance-status %s %s %s: exit %d\n%s%s", group, instance, status, code, stdout, stderr)
	}
}

// setStatusHTTP sets an instance's status with the admin endpoint.
func setStatusHTTP(t testing.TB, group, instance, status string) {
	t.Helper()
	if code, resp := setInstanceStatusHTTP(t, shared, group, instance, status); code != http.StatusOK || len(resp) != 0 {
		t.Fatalf("POST /hoist/admin/SetGameServerInstanceStatus %s %s %s: %d %v", group, instance, status, code, resp)
	}
}

// TestClaimPlacementOrder: claims go to ACTIVE instances before DRAINING
// ones (only when the filter allows DRAINING; SPOT_TERMINATING never),
// to the busiest instance first (ties by instance ID), and on it to the
// oldest available game server. Instance statuses are set with both the
// admin subcommand and the admin endpoint.
func TestClaimPlacementOrder(t *testing.T) {
	eachClient(t, func(t *testing.T, c client) {
		group := uniq("placement-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		createGroup(t, c, group)
		A, B, C, D, E := instanceN(1), instanceN(2), instanceN(3), instanceN(4), instanceN(5)
		id := func(n int) string { return fmt.Sprintf("%s-s%02d", group, n) }
		// Registered in this order, so sNN is older than sMM when NN < MM.
		on := []string{1: B, 2: A, 3: B, 4: A, 5: C, 6: C, 7: D, 8: B, 9: E, 10: C, 11: C}
		for n := 1; n < len(on); n++ {
			register(t, c, group, id(n), on[n])
		}
		for _, n := range []int{1, 10, 11} { // B has 1 busy game server, C 2
			setUtilization(t, c, group, id(n), types.GameServerUtilizationStatusUtilized)
		}
		setStatusCLI(t, group, C, "DRAINING")
		setStatusHTTP(t, group, D, "SPOT_TERMINATING")
		want := []string{A + "=ACTIVE", B + "=ACTIVE", C + "=DRAINING", D + "=SPOT_TERMINATING", E + "=ACTIVE"}
		if got := instances(t, c, group); !slices.Equal(got, want) {
			t.Fatalf("instances %v, want %v", got, want)
		}

		steps := []struct {
			filter []types.FilterInstanceStatus
			want   int // 0: OutOfCapacityException
		}{
			{withDraining, 3}, // ACTIVE before the busier DRAINING C; busiest ACTIVE B; its oldest available (s02 on A is older)
			{nil, 8},          // B again until it is full
			{activeOnly, 2},   // A and E both idle: the lower instance ID
			{nil, 4},          // A is busier than E now
			{nil, 9},          // E
			{nil, 0},          // C is DRAINING, D SPOT_TERMINATING
			{activeOnly, 0},   // the same
		}
		for i, s := range steps {
			g, err := claim(t, c, group, "", s.filter...)
			if s.want == 0 {
				wantErr(t, err, "OutOfCapacityException", group)
				continue
			}
			if err != nil || aws.ToString(g.GameServerId) != id(s.want) {
				t.Fatalf("claim %d (filter %v): %s %v, want %s", i+1, s.filter, show(g), err, id(s.want))
			}
		}
		// A game server on a DRAINING instance: claimed by ID only when
		// the filter allows DRAINING.
		_, err := claim(t, c, group, id(5))
		wantErr(t, err, "ConflictException", id(5), C, "DRAINING")
		_, err = claim(t, c, group, id(5), activeOnly...)
		wantErr(t, err, "ConflictException", id(5), "DRAINING")
		for _, n := range []int{5, 6} { // placement with DRAINING allowed
			if g := mustClaim(t, c, group, "", withDraining...); aws.ToString(g.GameServerId) != id(n) {
				t.Fatalf("claimed %s, want %s on the DRAINING instance", show(g), id(n))
			}
		}
		_, err = claim(t, c, group, "", withDraining...)
		wantErr(t, err, "OutOfCapacityException", group)
		// SPOT_TERMINATING: never, by ID neither.
		_, err = claim(t, c, group, id(7), withDraining...)
		wantErr(t, err, "ConflictException", id(7), "SPOT_TERMINATING")
		// Back to ACTIVE (with the subcommand), D's game server is claimable.
		setStatusCLI(t, group, D, "ACTIVE")
		if g := mustClaim(t, c, group, ""); aws.ToString(g.GameServerId) != id(7) {
			t.Fatalf("claimed %s, want %s", show(g), id(7))
		}
		// Every claimed game server reads CLAIMED; the UTILIZED ones not.
		out, err := c.ListGameServers(ctx(t), &gl.ListGameServersInput{GameServerGroupName: aws.String(group)})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range out.GameServers {
			utilized := slices.Contains([]string{id(1), id(10), id(11)}, aws.ToString(g.GameServerId))
			if utilized != (g.UtilizationStatus == types.GameServerUtilizationStatusUtilized) || utilized == (g.ClaimStatus == types.GameServerClaimStatusClaimed) {
				t.Errorf("listed %s", show(&g))
			}
		}
	})
}

func TestClaimErrors(t *testing.T) {
	eachClient(t, func(t *testing.T, c client) {
		group := uniq("claim-errors-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		other, empty := group+"-other", group+"-empty"
		createGroup(t, c, group)
		createGroup(t, c, other)
		createGroup(t, c, empty)
		gs := func(s string) string { return group + "-" + s }
		for _, r := range []struct{ id, inst string }{{"free", instanceN(1)}, {"used", instanceN(1)}, {"claimed", instanceN(1)},
			{"drain", instanceN(2)}, {"drain2", instanceN(2)}, {"spot", instanceN(3)}} {
			register(t, c, group, gs(r.id), r.inst)
		}
		setUtilization(t, c, group, gs("used"), types.GameServerUtilizationStatusUtilized)
		mustClaim(t, c, group, gs("claimed"))
		setStatusHTTP(t, group, instanceN(2), "DRAINING")
		setStatusHTTP(t, group, instanceN(3), "SPOT_TERMINATING")

		tests := []struct {
			name, group, id string
			filter          []types.FilterInstanceStatus
			code            string // "" for success
			mentions        []string
		}{
			{"UTILIZED", group, gs("used"), nil, "ConflictException", []string{gs("used"), "UTILIZED"}},
			{"CLAIMED", group, gs("claimed"), nil, "ConflictException", []string{gs("claimed"), "CLAIMED"}},
			{"DRAINING, no filter", group, gs("drain"), nil, "ConflictException", []string{gs("drain"), "DRAINING"}},
			{"DRAINING, ACTIVE only", group, gs("drain"), activeOnly, "ConflictException", []string{gs("drain"), "DRAINING"}},
			{"DRAINING, empty filter list", group, gs("drain"), []types.FilterInstanceStatus{}, "ConflictException", []string{gs("drain"), "DRAINING"}},
			{"DRAINING, filter allows", group, gs("drain2"), withDraining, "", nil},
			{"SPOT_TERMINATING", group, gs("spot"), withDraining, "ConflictException", []string{gs("spot"), "SPOT_TERMINATING"}},
			{"filter without ACTIVE", group, gs("free"), []types.FilterInstanceStatus{types.FilterInstanceStatusDraining}, "InvalidRequestException", []string{"FilterOption.InstanceStatuses", "ACTIVE"}},
			{"filter without ACTIVE, any", group, "", []types.FilterInstanceStatus{types.FilterInstanceStatusDraining}, "InvalidRequestException", []string{"FilterOption.InstanceStatuses", "ACTIVE"}},
			{"unknown game server", group, gs("nope"), nil, "NotFoundException", []string{gs("nope"), group}},
			{"game server of another group", other, gs("free"), nil, "NotFoundException", []string{gs("free"), other}},
			{"unknown group", group + "-nope", "", nil, "NotFoundException", []string{group + "-nope"}},
			{"unknown group, by ID", group + "-nope", gs("free"), nil, "NotFoundException", []string{group + "-nope"}},
			{"nothing available", empty, "", nil, "OutOfCapacityException", []string{empty}},
			{"by ARN", groupARN(group), gs("free"), activeOnly, "", nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				g, err := claim(t, c, tc.group, tc.id, tc.filter...)
				if tc.code == "" {
					if err != nil || g.ClaimStatus != types.GameServerClaimStatusClaimed {
						t.Errorf("claim: %s %v", show(g), err)
					}
					return
				}
				wantErr(t, err, tc.code, tc.mentions...)
			})
		}
		// Left: one game server on the DRAINING instance, one on the
		// SPOT_TERMINATING one.
		_, err := claim(t, c, group, "")
		wantErr(t, err, "OutOfCapacityException", group)
		if g := mustClaim(t, c, group, "", withDraining...); aws.ToString(g.GameServerId) != gs("drain") {
			t.Errorf("claimed %s, want %s", show(g), gs("drain"))
		}
		_, err = claim(t, c, group, "", withDraining...)
		wantErr(t, err, "OutOfCapacityException", group)
	})
}

func TestClaimGameServerData(t *testing.T) {
	eachClient(t, func(t *testing.T, c client) {
		group := uniq("claim-data-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		createGroup(t, c, group)
		_, err := c.RegisterGameServer(ctx(t), &gl.RegisterGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: aws.String(group + "-gs1"), InstanceId: aws.String(instanceN(1)), GameServerData: aws.String("registered")})
		if err != nil {
			t.Fatal(err)
		}
		register(t, c, group, group+"-gs2", instanceN(1))
		// Data given with a claim is stored; without, the game server's
		// data stays.
		out, err := c.ClaimGameServer(ctx(t), &gl.ClaimGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: aws.String(group + "-gs1"), GameServerData: aws.String(`{"map":"swamp","players":8}`)})
		if err != nil || aws.ToString(out.GameServer.GameServerData) != `{"map":"swamp","players":8}` {
			t.Fatalf("claim with data: %s %v", show(out.GameServer), err)
		}
		if g, err := describe(t, c, group, group+"-gs1"); err != nil || aws.ToString(g.GameServerData) != `{"map":"swamp","players":8}` {
			t.Errorf("stored: %s %v", show(g), err)
		}
		g := mustClaim(t, c, group, "")
		if aws.ToString(g.GameServerId) != group+"-gs2" || g.GameServerData == nil || *g.GameServerData != "" {
			t.Errorf("claim without data: %s", show(g))
		}
	})
}

// TestConcurrentClaims: 64 goroutines, half on each SDK, claim from one
// group until it is out of capacity. Every available game server on an
// ACTIVE instance is handed out exactly once; UTILIZED game servers and
// those on a DRAINING instance never; every goroutine ends with
// OutOfCapacityException.
func TestConcurrentClaims(t *testing.T) {
	const (
		goroutines = 64
		servers    = 320
		activeInst = 8
	)
	c := sharedClients[0].c
	group := uniq("concurrent")
	createGroup(t, c, group)
	want := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 { // register in parallel too
		wg.Go(func() {
			for n := w; n < servers+20; n += 8 {
				id := fmt.Sprintf("%s-gs%04d", group, n)
				inst := instanceN(n % activeInst)
				if n >= servers {
					inst = instanceN(99) // set DRAINING below
				}
				_, err := c.RegisterGameServer(ctx(t), &gl.RegisterGameServerInput{GameServerGroupName: aws.String(group),
					GameServerId: aws.String(id), InstanceId: aws.String(inst)})
				available := n < servers && n%10 != 0
				if err == nil && n < servers && !available {
					_, err = c.UpdateGameServer(ctx(t), &gl.UpdateGameServerInput{GameServerGroupName: aws.String(group),
						GameServerId: aws.String(id), UtilizationStatus: types.GameServerUtilizationStatusUtilized})
				}
				if err != nil {
					t.Errorf("%s: %v", id, err) // not Fatal: not the test's goroutine
					return
				}
				mu.Lock()
				want[id] = available
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	setStatusHTTP(t, group, instanceN(99), "DRAINING")

	got := map[string][]int{} // game server -> goroutines it was handed to
	ends := make([]string, goroutines)
	for w := range goroutines {
		cl := sharedClients[w%len(sharedClients)].c
		wg.Go(func() {
			for {
				out, err := cl.ClaimGameServer(ctx(t), &gl.ClaimGameServerInput{GameServerGroupName: aws.String(group)})
				if err != nil {
					ends[w] = code(err)
					if ends[w] != "OutOfCapacityException" {
						t.Errorf("goroutine %d: %v", w, err)
					}
					return
				}
				mu.Lock()
				got[aws.ToString(out.GameServer.GameServerId)] = append(got[aws.ToString(out.GameServer.GameServerId)], w)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var missing, extra, twice []string
	for id, available := range want {
		if available && got[id] == nil {
			missing = append(missing, id)
		}
		if !available && got[id] != nil {
			extra = append(extra, id)
		}
	}
	for id, ws := range got {
		if len(ws) > 1 {
			twice = append(twice, fmt.Sprintf("%s to %v", id, ws))
		}
		if _, known := want[id]; !known {
			extra = append(extra, id)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra)+len(twice) > 0 {
		t.Errorf("never handed out: %v\nhanded out but not available: %v\nhanded out more than once: %v", missing, extra, twice)
	}
	n := 0
	for _, available := range want {
		if available {
			n++
		}
	}
	t.Logf("%d goroutines claimed %d game servers (%d available)", goroutines, len(got), n)
}

func TestAdminSetInstanceStatus(t *testing.T) {
	group := uniq("admin")
	c := sharedClients[0].c
	createGroup(t, c, group)
	register(t, c, group, group+"-gs1", instanceN(1))

	t.Run("subcommand", func(t *testing.T) {
		code, stdout, _ := runAdmin(t, "set-instance-status", "--group", groupARN(group), "--instance", instanceN(1), "--status", "DRAINING")
		if code != 0 || stdout != fmt.Sprintf("instance %s of %s is now DRAINING\n", instanceN(1), groupARN(group)) {
			t.Errorf("exit %d, %q", code, stdout)
		}
		if got := instances(t, c, group); !slices.Equal(got, []string{instanceN(1) + "=DRAINING"}) {
			t.Errorf("instances %v", got)
		}
		tests := []struct {
			name     string
			args     []string
			exit     int
			mentions []string
		}{
			{"unknown group", []string{"--group", group + "-nope", "--instance", instanceN(1), "--status", "ACTIVE"}, 1,
				[]string{"NotFoundException", group + "-nope"}},
			{"unknown instance", []string{"--group", group, "--instance", instanceN(7), "--status", "ACTIVE"}, 1,
				[]string{"NotFoundException", instanceN(7)}},
			{"bad status", []string{"--group", group, "--instance", instanceN(1), "--status", "STOPPED"}, 1,
				[]string{"InvalidRequestException", "InstanceStatus", "STOPPED"}},
			{"missing flag", []string{"--group", group, "--instance", instanceN(1)}, 2, []string{"--status"}},
			{"wrong secret", []string{"--group", group, "--instance", instanceN(1), "--status", "ACTIVE", "--secret-access-key", "not-the-secret"}, 1,
				[]string{"InvalidSignatureException"}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				code, _, stderr := runAdmin(t, append([]string{"set-instance-status"}, tc.args...)...)
				if code != tc.exit {
					t.Errorf("exit %d, want %d: %s", code, tc.exit, stderr)
				}
				for _, m := range tc.mentions {
					if !strings.Contains(stderr, m) {
						t.Errorf("stderr %q does not mention %q", stderr, m)
					}
				}
			})
		}
		if code, stdout, _ := runAdmin(t, "--help"); code != 0 || !strings.Contains(stdout, "set-instance-status") {
			t.Errorf("hoist admin --help: exit %d %q", code, stdout)
		}
	})

	t.Run("endpoint", func(t *testing.T) {
		setStatusHTTP(t, groupARN(group), instanceN(1), "SPOT_TERMINATING")
		if got := instances(t, c, group); !slices.Equal(got, []string{instanceN(1) + "=SPOT_TERMINATING"}) {
			t.Errorf("instances %v", got)
		}
		setStatusHTTP(t, group, instanceN(1), "ACTIVE")
		tests := []struct {
			name           string
			path, body     string
			status         int
			code, mentions string
		}{
			{"unknown group", "SetGameServerInstanceStatus", `{"GameServerGroupName":"` + group + `-nope","InstanceId":"` + instanceN(1) + `","InstanceStatus":"DRAINING"}`,
				400, "NotFoundException", group + "-nope"},
			{"unknown instance", "SetGameServerInstanceStatus", `{"GameServerGroupName":"` + group + `","InstanceId":"` + instanceN(8) + `","InstanceStatus":"DRAINING"}`,
				400, "NotFoundException", instanceN(8)},
			{"bad status", "SetGameServerInstanceStatus", `{"GameServerGroupName":"` + group + `","InstanceId":"` + instanceN(1) + `","InstanceStatus":"GONE"}`,
				400, "InvalidRequestException", "InstanceStatus"},
			{"missing member", "SetGameServerInstanceStatus", `{"GameServerGroupName":"` + group + `","InstanceStatus":"DRAINING"}`,
				400, "InvalidRequestException", "InstanceId"},
			{"unknown member", "SetGameServerInstanceStatus", `{"GameServerGroupName":"` + group + `","InstanceId":"` + instanceN(1) + `","InstanceStatus":"DRAINING","Force":true}`,
				400, "InvalidRequestException", "Force"},
			{"unknown action", "Frobnicate", `{}`, 404, "UnknownOperationException", "Frobnicate"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				status, resp := signedPost(t, shared, "/hoist/admin/"+tc.path, http.Header{"Content-Type": {"application/json"}}, []byte(tc.body))
				if status != tc.status || !strings.Contains(string(resp), `"__type":"`+tc.code+`"`) || !strings.Contains(string(resp), tc.mentions) {
					t.Errorf("%d %s, want %d %s mentioning %q", status, resp, tc.status, tc.code, tc.mentions)
				}
			})
		}
		// Signatures are verified as for the API.
		body := []byte(`{"GameServerGroupName":"` + group + `","InstanceId":"` + instanceN(1) + `","InstanceStatus":"DRAINING"}`)
		for name, tc := range map[string]struct {
			creds *aws.Credentials
			code  string
		}{
			"unsigned":     {nil, "MissingAuthenticationTokenException"},
			"wrong secret": {&aws.Credentials{AccessKeyID: hoisttest.AccessKeyID, SecretAccessKey: "not-the-secret"}, "InvalidSignatureException"},
			"unknown key":  {&aws.Credentials{AccessKeyID: "AKIDNOBODY", SecretAccessKey: "x"}, "UnrecognizedClientException"},
		} {
			t.Run(name, func(t *testing.T) {
				status, resp := postAs(t, shared, "/hoist/admin/SetGameServerInstanceStatus", http.Header{"Content-Type": {"application/json"}}, body, tc.creds)
				if status < 400 || status >= 500 || !strings.Contains(string(resp), `"__type":"`+tc.code+`"`) {
					t.Errorf("%d %s, want a 4xx %s", status, resp, tc.code)
				}
			})
		}
		resp, err := httpClient().Get(shared.URL + "/hoist/admin/SetGameServerInstanceStatus")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET: %d", resp.StatusCode)
		}
		if got := instances(t, c, group); !slices.Equal(got, []string{instanceN(1) + "=ACTIVE"}) {
			t.Errorf("instances %v after refused calls", got)
		}
	})
}
