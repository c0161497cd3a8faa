//go:build unix

package metrics

import (
	"bytes"
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts"
	"github.com/hoistgg/hoist/internal/placement"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// scrapeScale is the cluster a scrape is measured on (docs/performance.md,
// "Metrics"): 1,000 hosts, each running one instance of 10 server
// processes, each process hosting an ACTIVE game session with 4 players
// (10,000 game sessions, 40,000 player slots), over 10 fleets.
type scrapeScale struct{ fleets, hosts, processesPerInstance int }

var benchScale = scrapeScale{fleets: 10, hosts: 1000, processesPerInstance: 10}

// BenchmarkScrape measures one whole scrape of /metrics (the cluster
// state computed afresh from the store, every metric gathered and
// encoded in the text format) of benchScale's cluster on the journal
// store.
func BenchmarkScrape(b *testing.B) {
	st := openJournal(b)
	populate(b, st, benchScale)
	benchScrape(b, st)
}

// BenchmarkScrapePostgres is BenchmarkScrape on PostgreSQL (a schema of
// its own in the database HOIST_TEST_DATABASE_URL names; skipped without
// it): what each replica of a cluster spends per scrape. cpu-ms/op is
// Hoist's CPU alone, not the database's.
func BenchmarkScrapePostgres(b *testing.B) {
	st, err := postgres.Open(context.Background(), pgtest.URL(b), postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	populate(b, st, benchScale)
	benchScrape(b, st)
}

// benchScrape measures whole scrapes of st's cluster state.
func benchScrape(b *testing.B, st store.Store) {
	c := &Cluster{Store: st}
	m := New("bench", c, ReplicaGauges{})
	var buf bytes.Buffer
	b.ReportAllocs()
	cpu := cpuTime(b)
	for b.Loop() {
		c.mu.Lock()
		c.last = nil // compute afresh: no cached state
		c.mu.Unlock()
		buf.Reset()
		fams, err := m.Registry().Gather()
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, f := range fams {
			if err := enc.Encode(f); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(buf.Len()), "bytes/scrape")
}

// cpuTime returns the CPU time (user and system) the process has used:
// what a scrape costs the machine, whatever else runs on it (the wall
// time of ns/op grows with the machine's load).
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkClusterState measures the cluster state's computation alone.
func BenchmarkClusterState(b *testing.B) {
	st := openJournal(b)
	populate(b, st, benchScale)
	c := &Cluster{Store: st}
	for b.Loop() {
		if _, err := c.compute(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// TestScrapeScale checks the figures of a small cluster built as the
// benchmark builds its own.
func TestScrapeScale(t *testing.T) {
	st := openJournal(t)
	populate(t, st, scrapeScale{fleets: 2, hosts: 4, processesPerInstance: 3})
	s, err := (&Cluster{Store: st}).State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Fleets) != 2 || s.Hosts["ACTIVE"] != 4 {
		t.Fatalf("fleets %d, hosts %v", len(s.Fleets), s.Hosts)
	}
	for _, f := range s.Fleets {
		if f.Active != 2 || f.ActiveGameSessions != 6 || f.CurrentPlayerSessions != 24 || f.ActiveServerProcesses != 6 ||
			f.HealthyServerProcesses != 6 || f.IdleInstances != 0 {
			t.Errorf("fleet %s: %+v", f.FleetID, f)
		}
	}
	if len(s.Queues) != 1 || s.Queues[0].Depth != 4 || s.Queues[0].AverageWait <= 0 {
		t.Errorf("queues: %+v", s.Queues)
	}
}

// populate writes sc's cluster, as the domains store it, plus a queue
// with 4 pending placements.
func populate(tb testing.TB, st store.Store, sc scrapeScale) {
	tb.Helper()
	const loc = "us-west-2"
	now := time.Now()
	var recs []store.Record
	put := func(kind store.Kind, id, parent, key string, v any) {
		rec := store.Record{Kind: kind, ID: id, Parent: parent, Key: key}
		recs = append(recs, rec)
		recs[len(recs)-1].Data = mustJSON(tb, v)
	}
	for f := range sc.fleets {
		fid := fmt.Sprintf("fleet-%08d-0000-0000-0000-000000000000", f)
		put(hosting.KindFleet, fid, "", string(api.FleetStatusActive), hosting.Fleet{
			Attributes:   api.FleetAttributes{FleetId: api.String(fid), Status: api.FleetStatusActive},
			Locations:    []hosting.FleetLocation{{Location: loc, Status: api.FleetStatusActive, Desired: int32(sc.hosts / sc.fleets), Max: 1000}},
			HomeLocation: loc})
	}
	for h := range sc.hosts {
		hid := fmt.Sprintf("host-%04d", h)
		put(hosts.KindHost, hid, "", string(hosts.StatusActive), hosts.Host{HostID: hid, Pool: "p", Location: loc,
			Address: "192.0.2.1", Capacity: map[string]int{"*": 1}, Status: hosts.StatusActive})
		fid := fmt.Sprintf("fleet-%08d-0000-0000-0000-000000000000", h%sc.fleets)
		inst := fmt.Sprintf("i-%017d", h)
		put(hosting.KindCompute, fid+"/"+inst, fid, loc, hosting.Compute{FleetID: fid, ComputeName: inst, Location: loc,
			Status: api.ComputeStatusActive, InstanceStatus: api.InstanceStatusActive, IPAddress: "192.0.2.1", CreationTime: now, Host: hid})
		for p := range sc.processesPerInstance {
			pid := fmt.Sprintf("process-%04d-%04d", h, p)
			gsid := "arn:aws:gamelift:" + loc + "::gamesession/" + fid + "/gsess-" + pid
			put(hosting.KindProcess, pid, fid, hosting.ProcessKey(loc, hosting.ProcessActive, false), hosting.Process{
				ID: pid, FleetID: fid, ComputeName: inst, Location: loc, State: hosting.ProcessActive,
				LaunchPath: "/local/game/gameserver", Port: int32(2000 + p), GameSessionID: gsid, LaunchedAt: now,
				ReadyAt: now, LastHeartbeat: now, ConnectedTo: "replica-1"})
			put(hosting.KindGameSession, gsid, fid, string(api.GameSessionStatusActive), hosting.GameSession{ProcessID: pid,
				Session: api.GameSession{GameSessionId: api.String(gsid), FleetId: api.String(fid), Name: api.String("game"),
					Status: api.GameSessionStatusActive, Location: api.String(loc), ComputeName: api.String(inst),
					CurrentPlayerSessionCount: api.Int32(4), MaximumPlayerSessionCount: api.Int32(8),
					IpAddress: api.String("192.0.2.1"), Port: api.Int32(int32(2000 + p)), CreationTime: api.Time(now),
					PlayerSessionCreationPolicy: api.PlayerSessionCreationPolicyAcceptAll}})
		}
	}
	put(placement.KindQueue, "q", "", "", map[string]string{"name": "q"})
	for i := range 4 {
		id := fmt.Sprintf("placement-%d", i)
		put(placement.KindPlacement, id, "q", string(api.GameSessionPlacementStatePending), map[string]any{
			"placement": api.GameSessionPlacement{PlacementId: api.String(id), GameSessionQueueName: api.String("q"),
				Status: api.GameSessionPlacementStatePending, StartTime: api.Time(now.Add(-time.Minute))}})
	}
	for len(recs) > 0 {
		n := min(len(recs), 2000)
		batch := recs[:n]
		recs = recs[n:]
		err := st.Update(context.Background(), func(tx store.Tx) error {
			for _, r := range batch {
				if err := tx.Put(context.Background(), r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}
