package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/smithy-go"

	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
	"github.com/hoistgg/hoist/internal/store/sqlite"
)

const (
	testKey    = "AKIDSERVERTEST"
	testSecret = "server-test-secret"
)

// start composes a Hoist on a temp data directory behind an httptest
// server on loopback.
func start(t *testing.T, clk *clocktest.Clock) (*Server, *httptest.Server) {
	t.Helper()
	return startWith(t, clk, map[string]string{"HOIST_CREDENTIALS": testKey + ":" + testSecret})
}

// startWith is start with the given environment (no HOIST_CREDENTIALS:
// the unauthenticated mode).
func startWith(t *testing.T, clk *clocktest.Clock, env map[string]string) (*Server, *httptest.Server) {
	t.Helper()
	cfg, err := config.Parse([]string{"--data-dir", t.TempDir(), "--timings", "fleetiq.status-step=1ms"},
		func(k string) (string, bool) { v, ok := env[k]; return v, ok }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	opts := Options{Config: cfg, Addr: ts.Listener.Addr().String()}
	if clk != nil {
		opts.Now = clk.Now
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv.Handler()
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		if err := srv.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return srv, ts
}

func client(url, secret string) *glv2.Client {
	return glv2.NewFromConfig(awsv2.Config{
		Region:      "us-west-2",
		Credentials: credentials.NewStaticCredentialsProvider(testKey, secret, ""),
		Retryer:     func() awsv2.Retryer { return awsv2.NopRetryer{} },
	}, func(o *glv2.Options) { o.BaseEndpoint = awsv2.String(url) })
}

// adminCall sends a signed admin action and returns the status and body.
func adminCall(t *testing.T, base, action, body string, sign bool) (int, map[string]string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/hoist/admin/"+action, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if sign {
		sum := sha256.Sum256([]byte(body))
		creds := awsv2.Credentials{AccessKeyID: testKey, SecretAccessKey: testSecret}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "gamelift", "us-west-2", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]string{}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestAdminSetInstanceStatus(t *testing.T) {
	_, ts := start(t, nil)
	ctx := context.Background()
	gl := client(ts.URL, testSecret)
	_, err := gl.CreateGameServerGroup(ctx, &glv2.CreateGameServerGroupInput{
		GameServerGroupName: awsv2.String("admin-group"), RoleArn: awsv2.String("arn:aws:iam::123456789012:role/r"),
		MinSize: awsv2.Int32(1), MaxSize: awsv2.Int32(2),
		LaunchTemplate: &types.LaunchTemplateSpecification{LaunchTemplateId: awsv2.String("lt-1")},
		InstanceDefinitions: []types.InstanceDefinition{{InstanceType: types.GameServerGroupInstanceTypeC5Large},
			{InstanceType: types.GameServerGroupInstanceTypeC5Xlarge}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gl.RegisterGameServer(ctx, &glv2.RegisterGameServerInput{GameServerGroupName: awsv2.String("admin-group"),
		GameServerId: awsv2.String("gs-1"), InstanceId: awsv2.String("i-0123456789abcdef0")})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"GameServerGroupName":"admin-group","InstanceId":"i-0123456789abcdef0","InstanceStatus":"DRAINING"}`
	if st, out := adminCall(t, ts.URL, "SetGameServerInstanceStatus", body, false); st != 403 || out["__type"] != "MissingAuthenticationTokenException" {
		t.Errorf("unsigned: %d %v, want 403 MissingAuthenticationTokenException", st, out)
	}
	if st, out := adminCall(t, ts.URL, "SetGameServerInstanceStatus", body, true); st != 200 {
		t.Fatalf("signed: %d %v", st, out)
	}
	insts, err := gl.DescribeGameServerInstances(ctx, &glv2.DescribeGameServerInstancesInput{GameServerGroupName: awsv2.String("admin-group")})
	if err != nil {
		t.Fatal(err)
	}
	if len(insts.GameServerInstances) != 1 || insts.GameServerInstances[0].InstanceStatus != types.GameServerInstanceStatusDraining {
		t.Errorf("instances = %+v, want the instance DRAINING", insts.GameServerInstances)
	}
	_, err = gl.ClaimGameServer(ctx, &glv2.ClaimGameServerInput{GameServerGroupName: awsv2.String("admin-group")})
	var oc *types.OutOfCapacityException
	if !errors.As(err, &oc) {
		t.Errorf("claim with only a DRAINING instance: %v, want OutOfCapacityException", err)
	}
	for name, tc := range map[string]struct {
		action, body string
		status       int
		code         string
	}{
		"bad status":     {"SetGameServerInstanceStatus", `{"GameServerGroupName":"admin-group","InstanceId":"i-0123456789abcdef0","InstanceStatus":"GONE"}`, 400, "InvalidRequestException"},
		"missing field":  {"SetGameServerInstanceStatus", `{"GameServerGroupName":"admin-group","InstanceStatus":"ACTIVE"}`, 400, "InvalidRequestException"},
		"unknown field":  {"SetGameServerInstanceStatus", `{"Group":"admin-group"}`, 400, "InvalidRequestException"},
		"unknown group":  {"SetGameServerInstanceStatus", `{"GameServerGroupName":"nope","InstanceId":"i-0123456789abcdef0","InstanceStatus":"ACTIVE"}`, 400, "NotFoundException"},
		"unknown action": {"Reboot", `{}`, 404, "UnknownOperationException"},
	} {
		t.Run(name, func(t *testing.T) {
			st, out := adminCall(t, ts.URL, tc.action, tc.body, true)
			if st != tc.status || out["__type"] != tc.code || out["message"] == "" {
				t.Errorf("got %d %v, want %d %s with a message", st, out, tc.status, tc.code)
			}
		})
	}
}

func TestFallbackAndSignatures(t *testing.T) {
	_, ts := start(t, nil)
	ctx := context.Background()
	_, err := client(ts.URL, testSecret).DescribeVpcPeeringAuthorizations(ctx, &glv2.DescribeVpcPeeringAuthorizationsInput{})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "UnsupportedOperationException" || !strings.Contains(ae.ErrorMessage(), "DescribeVpcPeeringAuthorizations") {
		t.Errorf("DescribeVpcPeeringAuthorizations: %v, want UnsupportedOperationException naming it", err)
	}
	_, err = client(ts.URL, "wrong-secret").ListBuilds(ctx, &glv2.ListBuildsInput{})
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidSignatureException" {
		t.Errorf("wrong secret: %v, want InvalidSignatureException", err)
	}
	resp, err := http.Get(ts.URL + "/hoist/health")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("health: %v %v", resp, err)
	}
}

func TestLogURLs(t *testing.T) {
	clk := clocktest.New(time.Now())
	srv, ts := start(t, clk)
	get := func(u string) int {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	u := srv.logURL("arn:aws:gamelift:us-west-2::gamesession/fleet-1/gsess-1")
	if !strings.HasPrefix(u, ts.URL+"/hoist/logs?") {
		t.Fatalf("log URL %s is not on %s", u, ts.URL)
	}
	if st := get(u); st != 404 {
		t.Errorf("unknown game session: %d, want 404", st)
	}
	parsed, _ := url.Parse(u)
	q := parsed.Query()
	q.Set("gameSessionId", "arn:aws:gamelift:us-west-2::gamesession/fleet-1/gsess-2")
	parsed.RawQuery = q.Encode()
	if st := get(parsed.String()); st != 403 {
		t.Errorf("tampered URL: %d, want 403", st)
	}
	if st := get(ts.URL + "/hoist/logs?gameSessionId=x"); st != 400 {
		t.Errorf("unsigned URL: %d, want 400", st)
	}
	clk.Advance(LogURLTTL + time.Second)
	if st := get(u); st != 403 {
		t.Errorf("expired URL: %d, want 403", st)
	}
}

func TestReplicaIDIsStable(t *testing.T) {
	dir := t.TempDir()
	a, err := replicaID(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := replicaID(dir)
	if err != nil || a != b || !strings.HasPrefix(a, "hoist-") {
		t.Errorf("replica IDs %q, %q (%v): want one stable hoist-... ID", a, b, err)
	}
	if c, _ := replicaID(t.TempDir()); c == a {
		t.Errorf("two data directories share replica ID %s", a)
	}
	if _, err := os.Stat(filepath.Join(dir, replicaFile)); err != nil {
		t.Error(err)
	}
}

func TestSharedKeyIsStored(t *testing.T) {
	srv, _ := start(t, nil)
	k, err := sharedKey(context.Background(), srv.Store(), "log-urls", time.Now)
	if err != nil || !bytes.Equal(k, srv.logKey) {
		t.Errorf("sharedKey = %x, %v; want the key the server loaded", k, err)
	}
}

// TestOpenStoreChoice: a new data directory gets the journal store; one that
// holds only a SQLite store (from a Hoist before the journal store) keeps
// it; --store picks explicitly.
func TestOpenStoreChoice(t *testing.T) {
	open := func(dir, choice string) store.Store {
		t.Helper()
		st, err := openStore(&config.Config{DataDir: dir, Store: choice}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := open(t.TempDir(), ""); reflect.TypeOf(st) != reflect.TypeFor[*journal.Store]() {
		t.Errorf("new data directory: %T, want the journal store", st)
	}
	old := t.TempDir()
	if st := open(old, config.StoreSQLite); reflect.TypeOf(st) != reflect.TypeFor[*sqlite.Store]() {
		t.Errorf("--store sqlite: %T", st)
	}
	if st := open(old, ""); reflect.TypeOf(st) != reflect.TypeFor[*sqlite.Store]() {
		t.Errorf("data directory with a SQLite store: %T, want it kept", st)
	}
	if st := open(old, config.StoreJournal); reflect.TypeOf(st) != reflect.TypeFor[*journal.Store]() {
		t.Errorf("--store journal: %T", st)
	}
	if st := open(old, ""); reflect.TypeOf(st) != reflect.TypeFor[*journal.Store]() {
		t.Errorf("data directory with both stores: %T, want the journal store", st)
	}
}

// TestOpenStorePostgres: --store postgres opens the database of
// --database-url, not a store in the data directory.
func TestOpenStorePostgres(t *testing.T) {
	dir := t.TempDir()
	st, err := openStore(&config.Config{DataDir: dir, Store: config.StorePostgres, DatabaseURL: pgtest.URL(t)}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if reflect.TypeOf(st) != reflect.TypeFor[*postgres.Store]() {
		t.Errorf("--store postgres: %T", st)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("--store postgres wrote %d entries in the data directory", len(entries))
	}
}

// TestOpenStoreJournalWrites: --journal-writes buffered keeps the journal
// out of direct writes.
func TestOpenStoreJournalWrites(t *testing.T) {
	st, err := openStore(&config.Config{DataDir: t.TempDir(), JournalWrites: config.JournalBuffered}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.(*journal.Store).DirectWrites() {
		t.Error("--journal-writes buffered: the journal writes directly")
	}
}

// TestMaxUnpackedSize: --max-unpacked-size reaches the builds service.
func TestMaxUnpackedSize(t *testing.T) {
	cfg, err := config.Parse([]string{"--data-dir", t.TempDir(), "--max-unpacked-size", "3MiB"}, func(string) (string, bool) { return "", false }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Config: cfg, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	if got := srv.builds.Limits().MaxUnpackedSize; got != 3<<20 {
		t.Errorf("builds' MaxUnpackedSize = %d, want 3 MiB", got)
	}
}
