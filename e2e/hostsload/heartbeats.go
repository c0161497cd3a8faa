//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/sysinfo"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// HeartbeatPhase is one count of simulated hosts heartbeating one Hoist.
type HeartbeatPhase struct {
	Run   int `json:"run"`
	Hosts int `json:"hosts"`
	// IntervalS is the heartbeat interval Hoist told the hosts.
	IntervalS float64 `json:"interval_s"`
	// Heartbeats counts those answered in the window; per second.
	Heartbeats     int     `json:"heartbeats"`
	HeartbeatsPerS float64 `json:"heartbeats_per_s"`
	// Heartbeat is a heartbeat's round trip (request to answer).
	Heartbeat loadreport.OpStats `json:"heartbeat"`
	Failed    int                `json:"failed"`
	// HoistCores and LoadCores: CPU use over the window, of Hoist and of
	// this program (the simulated hosts); OtherCores, of everything else.
	HoistCores float64 `json:"hoist_cores"`
	LoadCores  float64 `json:"load_program_cores"`
	OtherCores float64 `json:"other_cores"`
	// HoistCPUPerHeartbeatUS is Hoist's CPU time per heartbeat (µs), its
	// loops (liveness) included.
	HoistCPUPerHeartbeatUS float64 `json:"hoist_cpu_us_per_heartbeat"`
	// Hoist's resident memory, live heap (after a collection) and
	// goroutines before the hosts connected and at the window's end, and
	// the difference per host.
	RSSBeforeMiB      float64 `json:"rss_before_mib"`
	RSSAfterMiB       float64 `json:"rss_after_mib"`
	HeapBeforeMiB     float64 `json:"heap_before_mib"`
	HeapAfterMiB      float64 `json:"heap_after_mib"`
	HeapPerHostKiB    float64 `json:"heap_per_host_kib"`
	RSSPerHostKiB     float64 `json:"rss_per_host_kib"`
	GoroutinesPerHost float64 `json:"goroutines_per_host"`
}

// runHeartbeats runs each -hosts count -repeats times, each with a new
// Hoist on loopback.
func (e *env) runHeartbeats(ctx context.Context, rep *Report) error {
	for run := 1; run <= e.cfg.Repeats; run++ {
		for _, n := range e.cfg.Hosts {
			fmt.Fprintf(e.log, "hostsload: heartbeats run %d/%d, %d hosts\n", run, e.cfg.Repeats, n)
			p := &HeartbeatPhase{Run: run, Hosts: n}
			if err := e.heartbeatPhase(ctx, p); err != nil {
				return err
			}
			rep.Heartbeats = append(rep.Heartbeats, p)
		}
	}
	return nil
}

// heartbeatPhase starts Hoist, enrols and connects p.Hosts simulated
// hosts, lets each heartbeat once, then measures a window.
func (e *env) heartbeatPhase(ctx context.Context, p *HeartbeatPhase) error {
	h, err := e.startHoist("127.0.0.1")
	if err != nil {
		return err
	}
	defer func() { _ = h.Stop() }()
	sim, err := newSimulation(h)
	if err != nil {
		return h.fail(err)
	}
	defer sim.close()
	time.Sleep(2 * time.Second) // Hoist settles after its start
	before := h.memory()
	if err := sim.enrolAndConnect(ctx, p.Hosts); err != nil {
		return h.fail(err)
	}
	// Every host heartbeats twice at the interval it was told (the first at
	// a random offset within it), so that all heartbeat at the interval of
	// every host's count; then the window.
	time.Sleep(2*sim.interval() + time.Second) // hosts heartbeat on their own timers
	sim.reset()
	profile := e.profileWindow(h, p)
	hoist0, self0, start := cpuTime(h.PID()), cpuTime(os.Getpid()), time.Now()
	busy0, _ := sysinfo.MachineTicks()
	time.Sleep(e.cfg.Window) // the measured window: the hosts heartbeat meanwhile
	over := time.Since(start)
	p.IntervalS = sim.interval().Seconds()
	if err := profile(); err != nil {
		return err
	}
	busy1, _ := sysinfo.MachineTicks()
	hoistCPU, selfCPU := cpuTime(h.PID())-hoist0, cpuTime(os.Getpid())-self0
	lat, failed := sim.results()
	p.Heartbeats, p.Failed, p.Heartbeat = len(lat), failed, loadreport.Stats(lat)
	p.HeartbeatsPerS = float64(len(lat)) / over.Seconds()
	p.HoistCores, p.LoadCores = cores(hoistCPU, over), cores(selfCPU, over)
	machine := float64(busy1-busy0) / sysinfo.TicksPerSecond / over.Seconds()
	p.OtherCores = max(0, machine-p.HoistCores-p.LoadCores)
	if len(lat) > 0 {
		p.HoistCPUPerHeartbeatUS = float64(hoistCPU.Microseconds()) / float64(len(lat))
	}
	after := h.memory()
	p.RSSBeforeMiB, p.RSSAfterMiB = mib(before.rssKiB), mib(after.rssKiB)
	p.HeapBeforeMiB, p.HeapAfterMiB = float64(before.heap)/(1<<20), float64(after.heap)/(1<<20)
	p.HeapPerHostKiB = float64(after.heap-before.heap) / 1024 / float64(p.Hosts)
	p.RSSPerHostKiB = float64(after.rssKiB-before.rssKiB) / float64(p.Hosts)
	p.GoroutinesPerHost = float64(after.goroutines-before.goroutines) / float64(p.Hosts)
	if failed > 0 {
		return fmt.Errorf("%d heartbeats failed", failed)
	}
	return nil
}

// profileWindow starts a CPU profile of Hoist over the window when
// -profile asks for one; the returned function waits for it.
func (e *env) profileWindow(h *hoist, p *HeartbeatPhase) func() error {
	if e.cfg.profileDir == "" {
		return func() error { return nil }
	}
	if err := os.MkdirAll(e.cfg.profileDir, 0o755); err != nil {
		return func() error { return err }
	}
	file := filepath.Join(e.cfg.profileDir, fmt.Sprintf("hoist-cpu-%dhosts-run%d.pprof", p.Hosts, p.Run))
	errc := make(chan error, 1)
	go func() {
		errc <- loadreport.FetchProfile(h.pprofAddr, "profile", fmt.Sprintf("seconds=%d", max(1, int(e.cfg.Window.Seconds()))), time.Now(), file)
	}()
	return func() error { return <-errc }
}

// hoistMemory is Hoist's memory at a moment.
type hoistMemory struct {
	rssKiB     int64
	heap       int64 // live heap after a collection (HeapAlloc), bytes
	goroutines int
}

// memory reads Hoist's resident memory, and through its pprof listener its
// live heap after a collection and its goroutines.
func (h *hoist) memory() hoistMemory {
	var m hoistMemory
	m.rssKiB, _ = sysinfo.Memory(h.PID())
	if b, err := pprofGet(h.pprofAddr, "heap?debug=1&gc=1"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
				m.heap, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
	}
	if b, err := pprofGet(h.pprofAddr, "goroutine?debug=1"); err == nil {
		first, _, _ := strings.Cut(string(b), "\n")
		m.goroutines, _ = strconv.Atoi(strings.TrimPrefix(first, "goroutine profile: total "))
	}
	return m
}

// pprofGet reads /debug/pprof/<path> from Hoist's pprof listener.
func pprofGet(addr, path string) ([]byte, error) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/" + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(bufio.NewReader(resp.Body))
}

// simulation is the simulated hosts.
type simulation struct {
	h      *hoist
	client *http.Client
	tlsCfg *tls.Config
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	hosts  []*simHost
	every  time.Duration
	lat    []time.Duration
	failed int
	wg     sync.WaitGroup
}

// simHost is one simulated host: its credential and connection.
type simHost struct {
	id, secret string
	peer       *wsrpc.Peer
}

// newSimulation prepares simulated hosts of Hoist h, trusting its CA.
func newSimulation(h *hoist) (*simulation, error) {
	caPEM, err := os.ReadFile(filepath.Join(h.DataDir, "pki", "ca.pem"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no CA certificate in Hoist's ca.pem")
	}
	s := &simulation{h: h, tlsCfg: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	s.client = &http.Client{Transport: &http.Transport{TLSClientConfig: s.tlsCfg, MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// enrolAndConnect enrols n hosts with one token, connects each and says
// Hello, 32 at a time.
func (s *simulation) enrolAndConnect(ctx context.Context, n int) error {
	tok, err := s.h.admin("create-enrolment-token", "--pool", "sim")
	if err != nil {
		return err
	}
	errc := make(chan error, n)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errc <- s.join(ctx, tok, i)
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			return err
		}
	}
	return nil
}

// join enrols host i, connects it, says Hello and starts its heartbeats.
func (s *simulation) join(ctx context.Context, token string, i int) error {
	req := hostproto.EnrolRequest{Token: token, Pool: "sim", Location: "us-west-2", Address: fmt.Sprintf("198.18.%d.%d", i/250, 1+i%250),
		Instances: map[string]int{"*": 1}, Hostname: fmt.Sprintf("sim-%d", i)}
	body, _ := json.Marshal(req)
	resp, err := s.client.Post(s.h.TLSURL+hostproto.PathEnrol, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	var cred hostproto.EnrolReply
	err = json.NewDecoder(resp.Body).Decode(&cred)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("enrolling host %d: %s %v", i, resp.Status, err)
	}
	hdr := http.Header{}
	hostproto.SetCredential(hdr, cred.HostId, cred.HostSecret)
	ws, _, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(s.h.TLSURL, "https")+hostproto.PathConnect,
		&websocket.DialOptions{HTTPHeader: hdr, HTTPClient: s.client, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return fmt.Errorf("connecting host %d: %w", i, err)
	}
	sh := &simHost{id: cred.HostId, secret: cred.HostSecret}
	sh.peer = wsrpc.New(ws, wsrpc.Config{NewID: ids.UUID, MaxMessageBytes: hostproto.MaxMessageBytes,
		Handler: func(context.Context, *wsrpc.Request) (any, error) { return nil, nil }})
	go func() { _ = sh.peer.Run(s.ctx) }()
	var hello hostproto.HelloReply
	in := hostproto.Hello{ProtocolVersion: hostproto.Version, AgentVersion: "hostsload", InstancesDir: "/var/lib/hoist-agent/instances"}
	if err := sh.peer.Call(ctx, hostproto.ActionHello, in, &hello); err != nil {
		return fmt.Errorf("host %d Hello: %w", i, err)
	}
	every := time.Duration(hello.HeartbeatIntervalMs) * time.Millisecond
	s.mu.Lock()
	s.hosts = append(s.hosts, sh)
	s.every = max(s.every, every)
	s.mu.Unlock()
	s.wg.Go(func() { s.heartbeats(sh, every) })
	return nil
}

// heartbeats heartbeats at the interval Hoist tells, the first time at a
// random offset within the first interval (hosts start at different
// moments), until the simulation ends.
func (s *simulation) heartbeats(sh *simHost, every time.Duration) {
	t := time.NewTimer(time.Duration(rand.Int64N(int64(every))))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		var out hostproto.HeartbeatReply
		t0 := time.Now()
		err := sh.peer.Call(s.ctx, hostproto.ActionHeartbeat, hostproto.Heartbeat{}, &out)
		d := time.Since(t0)
		if s.ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		if err != nil {
			s.failed++
		} else {
			s.lat = append(s.lat, d)
			every = time.Duration(out.HeartbeatIntervalMs) * time.Millisecond
			s.every = every
		}
		s.mu.Unlock()
		t.Reset(every)
	}
}

// interval is the heartbeat interval Hoist last told a host.
func (s *simulation) interval() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.every
}

// reset forgets the heartbeats recorded so far.
func (s *simulation) reset() {
	s.mu.Lock()
	s.lat, s.failed = nil, 0
	s.mu.Unlock()
}

// results are the heartbeats' round trips and failures since reset.
func (s *simulation) results() ([]time.Duration, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.lat...), s.failed
}

// close disconnects every simulated host.
func (s *simulation) close() {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sh := range s.hosts {
		sh.peer.Abort()
	}
}

// HeartbeatMedians are the medians over the runs, per host count.
type HeartbeatMedians struct {
	Hosts                  int     `json:"hosts"`
	Runs                   int     `json:"runs"`
	IntervalS              float64 `json:"interval_s"`
	HeartbeatsPerS         float64 `json:"heartbeats_per_s"`
	HeartbeatP50           float64 `json:"heartbeat_p50_ms"`
	HeartbeatP99           float64 `json:"heartbeat_p99_ms"`
	HoistCores             float64 `json:"hoist_cores"`
	HoistCPUPerHeartbeatUS float64 `json:"hoist_cpu_us_per_heartbeat"`
	HeapPerHostKiB         float64 `json:"heap_per_host_kib"`
	RSSPerHostKiB          float64 `json:"rss_per_host_kib"`
	GoroutinesPerHost      float64 `json:"goroutines_per_host"`
	OtherCores             float64 `json:"other_cores"`
}

// summarizeHeartbeats takes the medians of the runs of each host count.
func summarizeHeartbeats(phases []*HeartbeatPhase) []HeartbeatMedians {
	var out []HeartbeatMedians
	order, byHosts := loadreport.GroupBy(phases, func(p *HeartbeatPhase) int { return p.Hosts })
	for _, hosts := range order {
		same := byHosts[hosts]
		med := func(f func(*HeartbeatPhase) float64) float64 { return loadreport.MedianOf(same, f) }
		out = append(out, HeartbeatMedians{Hosts: hosts, Runs: len(same),
			IntervalS:              med(func(q *HeartbeatPhase) float64 { return q.IntervalS }),
			HeartbeatsPerS:         med(func(q *HeartbeatPhase) float64 { return q.HeartbeatsPerS }),
			HeartbeatP50:           med(func(q *HeartbeatPhase) float64 { return q.Heartbeat.P50 }),
			HeartbeatP99:           med(func(q *HeartbeatPhase) float64 { return q.Heartbeat.P99 }),
			HoistCores:             med(func(q *HeartbeatPhase) float64 { return q.HoistCores }),
			HoistCPUPerHeartbeatUS: med(func(q *HeartbeatPhase) float64 { return q.HoistCPUPerHeartbeatUS }),
			HeapPerHostKiB:         med(func(q *HeartbeatPhase) float64 { return q.HeapPerHostKiB }),
			RSSPerHostKiB:          med(func(q *HeartbeatPhase) float64 { return q.RSSPerHostKiB }),
			GoroutinesPerHost:      med(func(q *HeartbeatPhase) float64 { return q.GoroutinesPerHost }),
			OtherCores:             med(func(q *HeartbeatPhase) float64 { return q.OtherCores }),
		})
	}
	return out
}

// printHeartbeats prints the heartbeats scenario's table.
func printHeartbeats(w io.Writer, rep *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\thosts\tinterval (s)\theartbeats/s\tp50 (ms)\tp99 (ms)\tHoist cores\tµs/heartbeat\theap/host (KiB)\tRSS/host (KiB)\tgoroutines/host\tother cores\t")
	row := func(run string, hosts int, interval, rate, p50, p99, c, us, heap, rss, g, other float64) {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.2f\t%.2f\t%.4f\t%.0f\t%.1f\t%.1f\t%.1f\t%.2f\t\n", run, hosts, interval, rate, p50, p99, c, us, heap, rss, g, other)
	}
	for _, p := range rep.Heartbeats {
		row(strconv.Itoa(p.Run), p.Hosts, p.IntervalS, p.HeartbeatsPerS, p.Heartbeat.P50, p.Heartbeat.P99, p.HoistCores,
			p.HoistCPUPerHeartbeatUS, p.HeapPerHostKiB, p.RSSPerHostKiB, p.GoroutinesPerHost, p.OtherCores)
	}
	if ms, ok := rep.Medians.([]HeartbeatMedians); ok {
		for _, m := range ms {
			row("median", m.Hosts, m.IntervalS, m.HeartbeatsPerS, m.HeartbeatP50, m.HeartbeatP99, m.HoistCores, m.HoistCPUPerHeartbeatUS,
				m.HeapPerHostKiB, m.RSSPerHostKiB, m.GoroutinesPerHost, m.OtherCores)
		}
	}
	tw.Flush()
}
