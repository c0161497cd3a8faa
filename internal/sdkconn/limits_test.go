package sdkconn_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sdkconn/sdkconntest"
)

// dialErr dials like dial, returning the error.
func dialErr(e *sdkconntest.Endpoint, pid string) (*sdkclient.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return sdkclient.Dial(ctx, e.URL, sdkclient.Query(pid, computeID, fleetID, token), sdkclient.Options{})
}

// refusedWith reports whether err is a handshake refused with status.
func refusedWith(err error, status int) bool {
	var he *sdkclient.HandshakeError
	return errors.As(err, &he) && he.StatusCode == status
}

// closedWithin reports whether c ends within d.
func closedWithin(c *sdkclient.Client, d time.Duration) bool {
	select {
	case <-c.Done():
		return true
	case <-time.After(d):
		return false
	}
}

// TestNewSocketReplacesOld: a process keeps one socket, as a reconnect
// does: a new socket's older sibling is closed by Hoist once the new one
// is up, after ReplaceGrace (the SDK's RefreshConnection closes it itself
// within 5 s), and at once when a third arrives meanwhile; the newest stays.
// Before, one token opened any number of sockets for one process ID.
func TestNewSocketReplacesOld(t *testing.T) {
	t.Run("after the grace", func(t *testing.T) {
		e, _ := start(t, sdkconn.Config{ReplaceGrace: 200 * time.Millisecond})
		old := dial(t, e, "proc-1", sdkclient.Options{})
		fresh := dial(t, e, "proc-1", sdkclient.Options{})
		if !closedWithin(old, wait) {
			t.Fatal("the replaced socket is still open")
		}
		if code := old.CloseCode(); code != -1 {
			t.Errorf("replaced socket closed with %d, want no close frame (-1), which no SDK takes as final", code)
		}
		if closedWithin(fresh, 100*time.Millisecond) {
			t.Error("the new socket was closed")
		}
	})
	t.Run("a third socket", func(t *testing.T) {
		e, _ := start(t, sdkconn.Config{ReplaceGrace: time.Hour})
		first := dial(t, e, "proc-1", sdkclient.Options{})
		second := dial(t, e, "proc-1", sdkclient.Options{})
		if closedWithin(first, 100*time.Millisecond) {
			t.Fatal("the first socket was closed before its grace ended")
		}
		third := dial(t, e, "proc-1", sdkclient.Options{})
		if !closedWithin(first, wait) {
			t.Fatal("the oldest of three sockets is still open")
		}
		if closedWithin(second, 100*time.Millisecond) || closedWithin(third, 10*time.Millisecond) {
			t.Error("the two newest sockets should stay open")
		}
		if n := e.Server.Connections(); n != 2 {
			t.Errorf("%d sockets open, want 2", n)
		}
	})
}

// TestComputeSocketsCapped: one compute's credentials open at most
// MaxComputeSockets sockets at once (Anywhere computes accept any process
// ID); more are refused 429 before the upgrade, until one closes.
func TestComputeSocketsCapped(t *testing.T) {
	e, _ := start(t, sdkconn.Config{MaxComputeSockets: 3})
	var open []*sdkclient.Client
	for _, pid := range []string{"p1", "p2", "p3"} {
		open = append(open, dial(t, e, pid, sdkclient.Options{}))
	}
	if _, err := dialErr(e, "p4"); !refusedWith(err, http.StatusTooManyRequests) {
		t.Fatalf("a fourth socket of the compute: %v, want 429", err)
	}
	open[0].Drop()
	e.API.WaitMethod(t, wait, "Disconnected", "p1", 1)
	c, err := dialErr(e, "p4")
	if err != nil {
		t.Fatalf("after one closed: %v", err)
	}
	c.Drop()
}

// countSlots is a sdkconn.Slots of max slots.
type countSlots struct {
	max int64
	n   atomic.Int64
}

func (s *countSlots) TryTake() bool {
	if s.n.Add(1) > s.max {
		s.n.Add(-1)
		return false
	}
	return true
}

func (s *countSlots) Give() { s.n.Add(-1) }

// TestSocketsTakeSlots: each socket takes one of the Hoist-wide slots for
// long-lived connections; none free is 503 before the upgrade; a closed
// socket gives its slot back.
func TestSocketsTakeSlots(t *testing.T) {
	slots := &countSlots{max: 2}
	e, _ := start(t, sdkconn.Config{Slots: slots})
	a := dial(t, e, "p1", sdkclient.Options{})
	dial(t, e, "p2", sdkclient.Options{})
	if _, err := dialErr(e, "p3"); !refusedWith(err, http.StatusServiceUnavailable) {
		t.Fatalf("a third socket: %v, want 503", err)
	}
	a.Drop()
	e.API.WaitMethod(t, wait, "Disconnected", "p1", 1)
	c, err := dialErr(e, "p3")
	if err != nil {
		t.Fatalf("after one closed: %v", err)
	}
	c.Drop()
	e.API.WaitMethod(t, wait, "Disconnected", "p3", 1)
	if n := slots.n.Load(); n != 1 {
		t.Errorf("%d slots taken with one socket open", n)
	}
}

// TestHeartbeatFlood: a socket is served MessageBurst requests at once,
// then MessageRate a second of its clock; the rest of a flood is answered
// 429 without reaching the ProcessAPI, the socket staying open. Before,
// every heartbeat of a flood was served (73,000 in 10 s cost 0.8 cores).
func TestHeartbeatFlood(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	e, _ := start(t, sdkconn.Config{Now: clock.Now, MessageBurst: 5, MessageRate: 1000})
	c := dial(t, e, "proc-1", sdkclient.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	const flood = 100
	var ok, throttled atomic.Int32
	var wg sync.WaitGroup
	for range flood {
		wg.Go(func() {
			_, err := c.Call(ctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": true})
			var se *sdkclient.StatusError
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &se) && se.StatusCode == http.StatusTooManyRequests:
				throttled.Add(1)
			default:
				t.Errorf("heartbeat: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 5 || throttled.Load() != flood-5 {
		t.Errorf("%d served, %d throttled; want 5 and %d", ok.Load(), throttled.Load(), flood-5)
	}
	if n := e.API.Count("Heartbeat"); n != 5 {
		t.Errorf("%d heartbeats reached the ProcessAPI, want 5", n)
	}
	clock.Advance(time.Second)
	if _, err := c.Call(ctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": true}); err != nil {
		t.Errorf("a second later: %v", err)
	}
}
