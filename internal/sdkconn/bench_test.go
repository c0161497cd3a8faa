package sdkconn_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sdkconn/sdkconntest"
)

// nopAPI answers every call at once, so the benchmark measures the
// endpoint (decoding, dispatch, replies, WebSocket I/O), not a store.
type nopAPI struct{}

func (nopAPI) Connected(context.Context, hosting.Conn) error                     { return nil }
func (nopAPI) Disconnected(context.Context, hosting.Conn, bool)                  {}
func (nopAPI) ProcessReady(context.Context, hosting.Conn, int32, []string) error { return nil }
func (nopAPI) Heartbeat(context.Context, hosting.Conn, bool) error               { return nil }
func (nopAPI) ActivateGameSession(context.Context, hosting.Conn, string) error   { return nil }
func (nopAPI) AcceptPlayerSession(context.Context, hosting.Conn, string, string) error {
	return nil
}
func (nopAPI) RemovePlayerSession(context.Context, hosting.Conn, string, string) error {
	return nil
}
func (nopAPI) UpdatePlayerSessionCreationPolicy(context.Context, hosting.Conn, string, api.PlayerSessionCreationPolicy) error {
	return nil
}
func (nopAPI) DescribePlayerSessions(context.Context, hosting.Conn, hosting.DescribePlayerSessionsRequest) (map[string]any, error) {
	return nil, nil
}
func (nopAPI) ProcessEnding(context.Context, hosting.Conn) error { return nil }
func (nopAPI) GetComputeCertificate(context.Context, hosting.Conn) (map[string]any, error) {
	return nil, nil
}
func (nopAPI) GetFleetRoleCredentials(context.Context, hosting.Conn, string, string) (map[string]any, error) {
	return nil, nil
}
func (nopAPI) CheckGameSessionHost(context.Context, hosting.Conn, string) error { return nil }

// BenchmarkHeartbeats measures how many WebSocket request/reply round
// trips per second the endpoint serves: conns processes, each with
// inflight heartbeats outstanding at a time (1 is how the SDK calls; more
// models a process whose calls overlap). One op is one heartbeat answered.
//
//	go test -run '^$' -bench Heartbeats -benchtime 200000x ./internal/sdkconn/
func BenchmarkHeartbeats(b *testing.B) {
	for _, conns := range []int{1, 16, 64, 256} {
		for _, inflight := range []int{1, 8} {
			b.Run(fmt.Sprintf("conns=%d/inflight=%d", conns, inflight), func(b *testing.B) {
				benchHeartbeats(b, conns, inflight)
			})
		}
	}
}

func benchHeartbeats(b *testing.B, conns, inflight int) {
	e := sdkconntest.Start(b, sdkconn.Config{API: nopAPI{}, Logger: slog.New(slog.DiscardHandler), MessageBurst: 1 << 30, MessageRate: 1e9, MaxComputeSockets: 1024},
		sdkconntest.Tokens{token: {FleetID: fleetID, ComputeName: computeID}})
	clients := make([]*sdkclient.Client, conns)
	for i := range clients {
		clients[i] = dial(b, e, fmt.Sprintf("proc-%d", i), sdkclient.Options{})
	}
	ctx := context.Background()
	fields := map[string]any{"HealthStatus": true}
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, c := range clients {
		for range inflight {
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					if _, err := c.Call(ctx, "HeartbeatServerProcess", fields); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
