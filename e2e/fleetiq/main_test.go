//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

package fleetiq_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/aws-sdk-go/aws/awserr"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// statusStep is the time a game server group spends in each transient
// status in the shared Hoist (--timings fleetiq.status-step): long enough
// for a test to make several calls while a group is being deleted, short
// enough to wait for. The tests that wait for it run in parallel.
const statusStep = 400 * time.Millisecond

// shared is the Hoist every test of this binary uses unless it needs its own
// (crash and health expiry); each test works on its own group names.
var shared *hoisttest.Hoist

// sharedClients are the clients of shared: aws-sdk-go-v2 (RPC v2 CBOR) and
// aws-sdk-go v1 (AWS JSON 1.1).
var sharedClients []namedClient

type namedClient struct {
	name string
	c    client
}

func TestMain(m *testing.M) {
	h, stop, err := hoisttest.StartShared(hoisttest.Options{Args: []string{
		"--timings", fmt.Sprintf("fleetiq.status-step=%s,fleetiq.sweep=50ms", statusStep)}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the shared Hoist:", err)
		os.Exit(1)
	}
	shared = h
	sharedClients = []namedClient{{"v2", newV2(h, true)}, {"v1", newV1(h)}}
	code := m.Run()
	stop()
	hoisttest.RemoveBuilds()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- shared Hoist log (last 8 KiB) ---\n%s\n", tail(h.Log(), 8<<10))
	}
	os.Exit(code)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// eachClient runs fn as a subtest per SDK against the shared Hoist.
func eachClient(t *testing.T, fn func(t *testing.T, c client)) {
	for _, nc := range sharedClients {
		t.Run(nc.name, func(t *testing.T) { fn(t, nc.c) })
	}
}

// eachClientParallel is eachClient with the subtests in parallel (for
// tests that mostly wait for group statuses to change).
func eachClientParallel(t *testing.T, fn func(t *testing.T, c client)) {
	for _, nc := range sharedClients {
		t.Run(nc.name, func(t *testing.T) {
			t.Parallel()
			fn(t, nc.c)
		})
	}
}

// ctx returns a context for one test's calls.
func ctx(t testing.TB) context.Context { return hoisttest.Context(t, 2*time.Minute) }

// httpTransport is the transport of the tests' clients: connections kept
// alive, no proxy (tests talk only to loopback).
func httpTransport() *http.Transport {
	return &http.Transport{Proxy: nil, MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
}

func httpClient() *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: httpTransport()}
}

// removeValidation drops aws-sdk-go-v2's client-side check of required
// members (absent for operations that have none).
func removeValidation(stack *middleware.Stack) error {
	_, _ = stack.Initialize.Remove("OperationInputValidation")
	return nil
}

// --- names ---

var (
	namesMu sync.Mutex
	names   = map[string]int{}
)

// uniq returns base, or base with a counter when base was used before in
// this process (go test -count=N runs tests again against the same Hoist).
func uniq(base string) string {
	namesMu.Lock()
	defer namesMu.Unlock()
	names[base]++
	if n := names[base]; n > 1 {
		return fmt.Sprintf("%s-r%d", base, n)
	}
	return base
}

// instanceN returns a valid EC2-style instance ID (i- and 17 characters).
func instanceN(n int) string { return fmt.Sprintf("i-%017d", n) }

// --- calls ---

// groupInput returns a valid CreateGameServerGroup input for name.
func groupInput(name string) *gl.CreateGameServerGroupInput {
	return &gl.CreateGameServerGroupInput{
		GameServerGroupName: aws.String(name),
		RoleArn:             aws.String("arn:aws:iam::123456789012:role/gamelift-fleetiq"),
		MinSize:             aws.Int32(1),
		MaxSize:             aws.Int32(10),
		LaunchTemplate:      &types.LaunchTemplateSpecification{LaunchTemplateName: aws.String("frog-template"), Version: aws.String("1")},
		InstanceDefinitions: []types.InstanceDefinition{{InstanceType: "c5.large"}, {InstanceType: "c5a.large", WeightedCapacity: aws.String("2")}},
	}
}

// createGroup creates a group with groupInput's inputs.
func createGroup(t testing.TB, c client, name string) *types.GameServerGroup {
	t.Helper()
	out, err := c.CreateGameServerGroup(ctx(t), groupInput(name))
	if err != nil {
		t.Fatalf("CreateGameServerGroup %s: %v", name, err)
	}
	return out.GameServerGroup
}

func describeGroup(t testing.TB, c client, name string) (*types.GameServerGroup, error) {
	t.Helper()
	out, err := c.DescribeGameServerGroup(ctx(t), &gl.DescribeGameServerGroupInput{GameServerGroupName: aws.String(name)})
	if err != nil {
		return nil, err
	}
	return out.GameServerGroup, nil
}

// register registers game server id on instance in group.
func register(t testing.TB, c client, group, id, instance string) *types.GameServer {
	t.Helper()
	out, err := c.RegisterGameServer(ctx(t), &gl.RegisterGameServerInput{GameServerGroupName: aws.String(group),
		GameServerId: aws.String(id), InstanceId: aws.String(instance), ConnectionInfo: aws.String("192.0.2.0:7777")})
	if err != nil {
		t.Fatalf("RegisterGameServer %s: %v", id, err)
	}
	return out.GameServer
}

// claim claims in group: any game server (id "") or the one id names;
// statuses, when given, are the filter's.
func claim(t testing.TB, c client, group, id string, statuses ...types.FilterInstanceStatus) (*types.GameServer, error) {
	t.Helper()
	in := &gl.ClaimGameServerInput{GameServerGroupName: aws.String(group)}
	if id != "" {
		in.GameServerId = aws.String(id)
	}
	if statuses != nil {
		in.FilterOption = &types.ClaimFilterOption{InstanceStatuses: statuses}
	}
	out, err := c.ClaimGameServer(ctx(t), in)
	if err != nil {
		return nil, err
	}
	return out.GameServer, nil
}

func mustClaim(t testing.TB, c client, group, id string, statuses ...types.FilterInstanceStatus) *types.GameServer {
	t.Helper()
	g, err := claim(t, c, group, id, statuses...)
	if err != nil {
		t.Fatalf("ClaimGameServer %s %q: %v", group, id, err)
	}
	return g
}

func describe(t testing.TB, c client, group, id string) (*types.GameServer, error) {
	t.Helper()
	out, err := c.DescribeGameServer(ctx(t), &gl.DescribeGameServerInput{GameServerGroupName: aws.String(group), GameServerId: aws.String(id)})
	if err != nil {
		return nil, err
	}
	return out.GameServer, nil
}

func setUtilization(t testing.TB, c client, group, id string, s types.GameServerUtilizationStatus) *types.GameServer {
	t.Helper()
	out, err := c.UpdateGameServer(ctx(t), &gl.UpdateGameServerInput{GameServerGroupName: aws.String(group),
		GameServerId: aws.String(id), UtilizationStatus: s})
	if err != nil {
		t.Fatalf("UpdateGameServer %s %s: %v", id, s, err)
	}
	return out.GameServer
}

// instances returns a group's instances as "id=STATUS", every page.
func instances(t testing.TB, c client, group string) []string {
	t.Helper()
	var got []string
	in := &gl.DescribeGameServerInstancesInput{GameServerGroupName: aws.String(group)}
	for {
		out, err := c.DescribeGameServerInstances(ctx(t), in)
		if err != nil {
			t.Fatalf("DescribeGameServerInstances %s: %v", group, err)
		}
		for _, i := range out.GameServerInstances {
			got = append(got, aws.ToString(i.InstanceId)+"="+string(i.InstanceStatus))
		}
		if out.NextToken == nil {
			return got
		}
		in.NextToken = out.NextToken
	}
}

// --- errors ---

// code returns the GameLift error code of err, through each SDK's typed
// errors: aws-sdk-go-v2's *types.XxxException, aws-sdk-go v1's awserr.Error.
// "" when err is nil or not a service error.
func code(err error) string {
	if err == nil {
		return ""
	}
	var (
		conflict *types.ConflictException
		notFound *types.NotFoundException
		invalid  *types.InvalidRequestException
		capacity *types.OutOfCapacityException
		tagging  *types.TaggingFailedException
		limit    *types.LimitExceededException
		internal *types.InternalServiceException
		unauth   *types.UnauthorizedException
	)
	switch {
	case errors.As(err, &conflict):
		return "ConflictException"
	case errors.As(err, &notFound):
		return "NotFoundException"
	case errors.As(err, &invalid):
		return "InvalidRequestException"
	case errors.As(err, &capacity):
		return "OutOfCapacityException"
	case errors.As(err, &tagging):
		return "TaggingFailedException"
	case errors.As(err, &limit):
		return "LimitExceededException"
	case errors.As(err, &internal):
		return "InternalServiceException"
	case errors.As(err, &unauth):
		return "UnauthorizedException"
	}
	var v1 awserr.Error
	if errors.As(err, &v1) {
		return v1.Code()
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return "untyped:" + api.ErrorCode()
	}
	return "not a service error: " + err.Error()
}

// message returns the service's message of err.
func message(err error) string {
	var v1 awserr.Error
	if errors.As(err, &v1) {
		return v1.Message()
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorMessage()
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// wantErr fails the test unless err has the code want and its message
// contains every one of mentions.
func wantErr(t testing.TB, err error, want string, mentions ...string) {
	t.Helper()
	if got := code(err); got != want {
		t.Errorf("error %q (%v), want %s", got, err, want)
		return
	}
	msg := message(err)
	for _, m := range mentions {
		if !strings.Contains(msg, m) {
			t.Errorf("%s message %q does not mention %q", want, msg, m)
		}
	}
}

// --- eventually ---

// eventually polls cond until it holds or d passes; cond returns what it
// saw for the failure message.
func eventually(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last saw %s", what, d, saw)
		}
		time.Sleep(5 * time.Millisecond) // poll interval, not a wait for time to pass
	}
}

// --- signed raw requests ---

// signedPost POSTs body to h's path, signed with SigV4 (service gamelift)
// with the e2e credentials, and returns the status and body.
func signedPost(t testing.TB, h *hoisttest.Hoist, path string, header http.Header, body []byte) (int, []byte) {
	t.Helper()
	return postAs(t, h, path, header, body, &aws.Credentials{AccessKeyID: hoisttest.AccessKeyID, SecretAccessKey: hoisttest.SecretAccessKey})
}

// postAs POSTs body to h's path signed with creds (nil: unsigned).
func postAs(t testing.TB, h *hoisttest.Hoist, path string, header http.Header, body []byte, creds *aws.Credentials) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, h.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if creds != nil {
		sum := sha256.Sum256(body)
		if err := v4.NewSigner().SignHTTP(ctx(t), *creds, req, hex.EncodeToString(sum[:]), "gamelift", hoisttest.Region, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// rawJSON calls operation op over AWS JSON 1.1 with body and returns the
// status and the decoded response (numbers kept as json.Number).
func rawJSON(t testing.TB, h *hoisttest.Hoist, op string, body any) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	hdr := http.Header{"Content-Type": {"application/x-amz-json-1.1"}, "X-Amz-Target": {"GameLift." + op}}
	status, resp := signedPost(t, h, "/", hdr, b)
	dec := json.NewDecoder(bytes.NewReader(resp))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("%s: response %q is not a JSON object: %v", op, resp, err)
	}
	return status, out
}

// setInstanceStatusHTTP calls POST /hoist/admin/SetGameServerInstanceStatus
// and returns the status and the decoded answer.
func setInstanceStatusHTTP(t testing.TB, h *hoisttest.Hoist, group, instance, status string) (int, map[string]string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"GameServerGroupName": group, "InstanceId": instance, "InstanceStatus": status})
	code, resp := signedPost(t, h, "/hoist/admin/SetGameServerInstanceStatus", http.Header{"Content-Type": {"application/json"}}, b)
	var out map[string]string
	if err := json.Unmarshal(resp, &out); err != nil {
		t.Fatalf("admin answer %q: %v", resp, err)
	}
	return code, out
}
