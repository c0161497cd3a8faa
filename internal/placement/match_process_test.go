package placement

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sdkconn/sdkconntest"
	"github.com/hoistgg/hoist/internal/sessions"
	"github.com/hoistgg/hoist/internal/store"
)

// realWait bounds each wait for the real game server.
const realWait = 30 * time.Second

// watchAPI is sessions' ProcessAPI that reports ProcessReady and
// ActivateGameSession once they are recorded.
type watchAPI struct {
	hosting.ProcessAPI
	ready     chan int32
	activated chan string
}

func (w watchAPI) ProcessReady(ctx context.Context, c hosting.Conn, port int32, logPaths []string) error {
	err := w.ProcessAPI.ProcessReady(ctx, c, port, logPaths)
	if err == nil {
		w.ready <- port
	}
	return err
}

func (w watchAPI) ActivateGameSession(ctx context.Context, c hosting.Conn, id string) error {
	err := w.ProcessAPI.ActivateGameSession(ctx, c, id)
	if err == nil {
		w.activated <- id
	}
	return err
}

// forwardMessenger records messages (as the harness's messenger does) and
// delivers them through the SDK endpoint (set once it exists).
type forwardMessenger struct {
	rec *messenger
	to  hosting.Messenger
}

func (m *forwardMessenger) SendToProcess(ctx context.Context, pid string, msg hosting.Message) error {
	m.rec.SendToProcess(ctx, pid, msg)
	return m.to.SendToProcess(ctx, pid, msg)
}

// recordingBackfiller is a hosting.Backfiller that records what reaches it.
type recordingBackfiller struct {
	mu     sync.Mutex
	starts []hosting.BackfillRequest
	stops  []string
}

func (b *recordingBackfiller) StartMatchBackfill(_ context.Context, c hosting.Conn, req hosting.BackfillRequest) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.starts = append(b.starts, req)
	return "bf-from-sdk", nil
}

func (b *recordingBackfiller) StopMatchBackfill(_ context.Context, c hosting.Conn, gs, conf, ticket string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stops = append(b.stops, ticket)
	return nil
}

// outputLines follows a process's output and lets a test wait for a line.
type outputLines struct {
	mu      sync.Mutex
	text    []string
	changed chan struct{}
}

func (l *outputLines) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.text = append(l.text, sc.Text())
		close(l.changed)
		l.changed = make(chan struct{})
		l.mu.Unlock()
	}
}

func (l *outputLines) waitFor(t *testing.T, parts ...string) string {
	t.Helper()
	deadline := time.After(realWait)
	for {
		l.mu.Lock()
		for _, line := range l.text {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(line, p)
			}
			if ok {
				l.mu.Unlock()
				return line
			}
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no game server output line with %q", parts)
		}
	}
}

// TestMatchWithRealGameServer runs a match's whole plumbing against the
// test game server (e2e/gameserver) speaking the real protocol to a real
// SDK endpoint: the match placement puts the game session on it and it
// receives MatchmakerData in CreateGameSession and activates; a backfill
// reaches it as UpdateGameSession with the new data; its own
// StartMatchBackfill and StopMatchBackfill reach the Backfiller after the
// host check; the end of another backfill reaches it too.
func TestMatchWithRealGameServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the test game server")
	}
	h := newHarness(t)
	// Sessions and placement again, sending through a real SDK endpoint.
	fwd := &forwardMessenger{rec: h.msgr}
	sess, err := sessions.New(sessions.Config{Store: h.st, Region: "us-west-2", Now: h.clock.Now, NewID: h.newID,
		ReplicaID: "r1", DataDir: t.TempDir(), Messenger: fwd})
	h.must(err)
	h.sess = sess
	watch := watchAPI{ProcessAPI: sess.ProcessAPI(), ready: make(chan int32, 1), activated: make(chan string, 1)}
	bf := &recordingBackfiller{}
	const token = "0123456789abcdef0123456789abcdef"
	compute := "i-fleet-a-us-west-2"
	e := sdkconntest.Start(t, sdkconn.Config{API: watch, Backfiller: bf},
		sdkconntest.Tokens{token: {FleetID: "fleet-a", ComputeName: compute}})
	fwd.to = e.Server
	h.svc = New(Config{Store: h.st, Sessions: sess, Region: "us-west-2", Account: "123456789012", Now: h.clock.Now, NewID: h.newID})
	sess.SetPlacementHook(h.svc)
	var o outcomes
	h.svc.SetOnMatchPlacement(o.hook)

	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", nil, fleetARN("fleet-a"))

	bin := filepath.Join(t.TempDir(), "gameserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/hoistgg/hoist/e2e/gameserver").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-accept-players")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GAMELIFT_SDK_WEBSOCKET_URL=" + e.URL, "GAMELIFT_SDK_AUTH_TOKEN=" + token,
		"GAMELIFT_SDK_PROCESS_ID=proc-real", "GAMELIFT_SDK_HOST_ID=" + compute, "GAMELIFT_SDK_FLEET_ID=fleet-a",
		"HEALTHCHECK_INTERVAL=60s", "HEALTHCHECK_MAX_JITTER=1ms", "SERVICE_CALL_TIMEOUT=10s", "HOIST_TEST_RECONNECT_INTERVAL=50ms"}
	out := &outputLines{changed: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	go out.read(pr)
	h.must(cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		pw.Close()
		if t.Failed() {
			out.mu.Lock()
			t.Logf("game server output:\n%s", strings.Join(out.text, "\n"))
			out.mu.Unlock()
		}
	})
	var port int32
	select {
	case port = <-watch.ready:
	case <-time.After(realWait):
		t.Fatal("the game server did not call ProcessReady")
	}

	// The match placement lands on the game server, and is fulfilled when
	// the game server activates its game session.
	h.must(h.startMatch(matchReq("m1", "q")))
	h.process()
	var gsID string
	select {
	case gsID = <-watch.activated:
	case <-time.After(realWait):
		t.Fatal("the game server did not activate the match's game session")
	}
	got := o.list()
	if len(got) != 1 || got[0].Status != api.GameSessionPlacementStateFulfilled || got[0].GameSessionArn != gsID {
		t.Fatalf("outcomes = %+v, activated %s", got, gsID)
	}
	out.waitFor(t, "game session started", `matchmakerData="{\"matchId\":\"m1\"`)

	// A backfill with one new player: UpdateGameSession with the new data.
	data2 := strings.Replace(matchData, `"players":[{"playerId":"bob","attributes":{}}]`,
		`"players":[{"playerId":"bob","attributes":{}},{"playerId":"carol","attributes":{}}]`, 1)
	var b *sessions.Backfilled
	// MaximumPlayerSessionCount is 2 and both slots are taken: raise it first.
	_, err = sess.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: api.String(gsID), MaximumPlayerSessionCount: api.Int32(3)})
	h.must(err)
	h.must(sess.Update(h.ctx, func(tx store.Tx) error {
		var err error
		b, err = sess.BackfillTx(h.ctx, tx, sessions.Backfill{GameSessionID: gsID, TicketID: "bf-1", MatchmakerData: data2,
			Players: []api.DesiredPlayerSession{{PlayerId: api.String("carol")}}})
		return err
	}))
	h.must(sess.SendBackfilled(h.ctx, b))
	out.waitFor(t, "game session updated", "reason=MATCHMAKING_DATA_UPDATED", "backfillTicket=bf-1", "carol")

	// The game server asks for a backfill itself, and stops it.
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), realWait)
	h.must(err)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(realWait))
	r := bufio.NewReader(conn)
	say := func(line string) string {
		t.Helper()
		if _, err := fmt.Fprintln(conn, line); err != nil {
			t.Fatal(err)
		}
		reply, err := r.ReadString('\n')
		h.must(err)
		return strings.TrimSpace(reply)
	}
	conf := "arn:aws:gamelift:us-west-2:123456789012:matchmakingconfiguration/duel"
	players, _ := json.Marshal([]map[string]any{
		{"PlayerId": "alice", "Team": "red", "LatencyInMs": map[string]int{"us-west-2": 30}},
		{"PlayerId": "bob", "Team": "blue", "PlayerAttributes": map[string]any{"skill": map[string]any{"AttrType": "DOUBLE", "N": 7}}},
	})
	if reply := say(`BACKFILL {"MatchmakingConfigurationArn":"` + conf + `","Players":` + string(players) + `}`); reply != `OK {"TicketId":"bf-from-sdk"}` {
		t.Fatalf("BACKFILL: %s", reply)
	}
	if reply := say("STOPBACKFILL " + conf + " bf-from-sdk"); reply != "OK" {
		t.Fatalf("STOPBACKFILL: %s", reply)
	}
	bf.mu.Lock()
	if len(bf.starts) != 1 || bf.starts[0].GameSessionArn != gsID || len(bf.starts[0].Players) != 2 ||
		*bf.starts[0].Players[1].PlayerAttributes["skill"].N != 7 || len(bf.stops) != 1 || bf.stops[0] != "bf-from-sdk" {
		t.Errorf("Backfiller got starts %+v, stops %v", bf.starts, bf.stops)
	}
	bf.mu.Unlock()

	// A backfill that ends without players.
	h.must(sess.SendBackfillEnded(h.ctx, gsID, "bf-2", sessions.BackfillTimedOut))
	out.waitFor(t, "game session updated", "reason=BACKFILL_TIMED_OUT", "backfillTicket=bf-2")
	if reply := say("MATCHDATA"); !strings.Contains(reply, "carol") || !strings.Contains(reply, "BACKFILL_TIMED_OUT") {
		t.Fatalf("MATCHDATA: %s", reply)
	}
}
