package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/config"
)

// startFront composes a Hoist with the environment env behind the
// http.Server HTTPServer makes, on loopback.
func startFront(t *testing.T, env map[string]string) (*Server, string) {
	t.Helper()
	cfg, err := config.Parse([]string{"--data-dir", t.TempDir()}, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	srv, err := New(Options{Config: cfg, Addr: ts.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config = srv.HTTPServer(nil)
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		_ = srv.Close(t.Context())
	})
	return srv, ts.Listener.Addr().String()
}

// rawRequest opens a connection to addr and writes head (the request line
// and headers, without the blank line ending them unless complete) and
// body. Write errors are ignored: Hoist may close the connection first.
func rawRequest(t *testing.T, addr, head string, body []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, head)
	_, _ = c.Write(body)
	return c
}

// readStatus reads the response on c within d: its status, 0 when the
// connection ended without one, -1 when nothing came within d.
func readStatus(c net.Conn, d time.Duration) int {
	_ = c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return -1
		}
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// residentBytes is this process's resident set (VmRSS), or 0 where
// /proc is not there.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestUnsignedBodiesAreNotRead: 40 clients announce 10 MiB bodies without
// an Authorization header, send 64 KiB and stall. Each is answered at
// at once, without its body being read, and Hoist's heap does not grow with the bodies announced. Before
// the fix the API read (and allocated) the announced body before checking
// authentication and waited for it forever: 40 clients pinned 400 MiB.
func TestUnsignedBodiesAreNotRead(t *testing.T) {
	srv, addr := startFront(t, map[string]string{"HOIST_CREDENTIALS": testKey + ":" + testSecret, "HOIST_HTTP_BODY_TIMEOUT": "30s"})
	const clients, announced = 40, 10 << 20
	heads := []string{
		"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-amz-json-1.1\r\nX-Amz-Target: GameLift.CreateScript\r\n",
		"POST /service/GameLift/operation/CreateScript HTTP/1.1\r\nHost: 127.0.0.1\r\nSmithy-Protocol: rpc-v2-cbor\r\nContent-Type: application/cbor\r\n",
		"POST /hoist/admin/SetGameServerInstanceStatus HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n",
		"PUT /" + srv.builds.Bucket() + "/builds/x.zip HTTP/1.1\r\nHost: 127.0.0.1\r\n",
	}
	before, rssBefore := heapInUse(), residentBytes()
	conns := make([]net.Conn, clients)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			head := heads[i%len(heads)] + fmt.Sprintf("Content-Length: %d\r\n\r\n", announced)
			conns[i] = rawRequest(t, addr, head, make([]byte, 64<<10))
		})
	}
	wg.Wait()
	statuses := make([]int, clients)
	for i, c := range conns {
		if i%len(heads) == 3 {
			// S3 authenticates before the body too, then drains a refused
			// body to io.Discard (so that the SDK reads the error) until
			// the body deadline: no answer to wait for here, but its
			// connections count in the heap below.
			continue
		}
		wg.Go(func() { statuses[i] = readStatus(c, 2*time.Second) })
	}
	wg.Wait()
	grown := int64(heapInUse()) - int64(before) // the connections are still open
	rssGrown := residentBytes() - rssBefore
	for i, st := range statuses {
		if i%len(heads) == 3 {
			continue
		}
		if st != http.StatusForbidden && st != http.StatusBadRequest {
			t.Errorf("client %d (%s): status %d, want an immediate 403 or 400", i, strings.Fields(heads[i%len(heads)])[1], st)
		}
	}
	t.Logf("heap grew by %.1f MiB with %d stalled clients", float64(grown)/(1<<20), clients)
	if grown > 64<<20 {
		t.Errorf("heap grew by %d MiB with %d stalled clients, want at most 64 MiB", grown>>20, clients)
	}
	// The resident set (Hoist and the test's clients share the process)
	// stays bounded too: 40 announced bodies of 10 MiB would be 400 MiB.
	t.Logf("resident set grew by %.1f MiB", float64(rssGrown)/(1<<20))
	if rssBefore > 0 && rssGrown > 96<<20 {
		t.Errorf("resident set grew by %d MiB with %d stalled clients, want at most 96 MiB", rssGrown>>20, clients)
	}
}

// fakeSigned is a well-formed SigV4 Authorization for the unauthenticated
// mode (which checks the form only).
const fakeSigned = "Authorization: AWS4-HMAC-SHA256 Credential=AKIDANY/20250601/us-west-2/gamelift/aws4_request, " +
	"SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=" +
	"0000000000000000000000000000000000000000000000000000000000000000\r\nX-Amz-Date: 20250601T000000Z\r\n"

func apiHead(contentLength int) string {
	return "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-amz-json-1.1\r\n" +
		"X-Amz-Target: GameLift.ListBuilds\r\n" + fakeSigned + fmt.Sprintf("Content-Length: %d\r\n\r\n", contentLength)
}

// TestSlowClientsAreCutOff: with short timeouts and two body slots, a
// client that never finishes its headers and clients that never finish
// their bodies are cut off; a third body meanwhile waits briefly and gets
// 503; once the slow ones are gone a request goes through. Before the fix
// Hoist had no body deadline and no cap: the slow clients were held
// forever and the third body was read.
func TestSlowClientsAreCutOff(t *testing.T) {
	srv, addr := startFront(t, map[string]string{
		"HOIST_HTTP_HEADER_TIMEOUT": "300ms", "HOIST_HTTP_BODY_TIMEOUT": "2s",
		"HOIST_HTTP_IDLE_TIMEOUT": "300ms", "HOIST_HTTP_MAX_BODIES": "2",
	})
	srv.bodies.wait = 50 * time.Millisecond

	start := time.Now()
	headers := rawRequest(t, addr, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n", nil)
	slow := []net.Conn{rawRequest(t, addr, apiHead(1000), []byte("{")), rawRequest(t, addr, apiHead(1000), []byte("{"))}

	// The two slow bodies hold both slots; a third body finds none.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := rawRequest(t, addr, apiHead(2), []byte("{}"))
		st := readStatus(c, 5*time.Second)
		if st == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) || time.Since(start) > 1500*time.Millisecond {
			t.Fatalf("a third body while two slow ones are read: %d, want 503", st)
		}
	}
	for i, c := range slow {
		st := readStatus(c, 5*time.Second)
		if st == -1 || st == http.StatusOK {
			t.Errorf("slow body %d: %d, want it cut off", i, st)
		}
	}
	if st := readStatus(headers, 5*time.Second); st == -1 {
		t.Errorf("slow headers: not cut off")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("slow clients were cut off after %v", d)
	}
	if st := readStatus(rawRequest(t, addr, apiHead(2), []byte("{}")), 5*time.Second); st != http.StatusOK {
		t.Errorf("after the slow clients: %d, want 200", st)
	}
	// An idle keep-alive connection is closed after the idle timeout.
	c := rawRequest(t, addr, apiHead(2), []byte("{}"))
	if st := readStatus(c, 5*time.Second); st != http.StatusOK {
		t.Fatalf("keep-alive request: %d", st)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("idle connection: %v, want it closed by Hoist", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// zeroSigned is an Authorization naming the access key id, dated now,
// with a signature of zeros: it passes every check made from the headers
// when id is a configured key, and fails once the body is read.
func zeroSigned(id string) string {
	now := time.Now().UTC()
	return "Authorization: AWS4-HMAC-SHA256 Credential=" + id + "/" + now.Format("20060102") + "/us-west-2/gamelift/aws4_request, " +
		"SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=" + strings.Repeat("0", 64) + "\r\n" +
		"X-Amz-Date: " + now.Format("20060102T150405Z") + "\r\n"
}

// TestKnownKeyBodiesAreBounded: with credentials configured, 40 clients
// name a configured access key with a zero signature (or an unknown key)
// and announce 9 MB bodies, sending all but the last byte, then stall.
// A body over its operation's bound (ListBuilds) is refused 413 before
// it is read; an unknown key 403; bodies an operation may take
// (CreateScript: 7 MB, within its ZipFile's 5 MB in base64) are read only
// as far as the bytes of bodies read at once allow (16 MiB here), the
// others wait a second, then get 503. Before: every one of the 32 body
// slots read its 9 MB (the API's 10 MiB limit), pinning 500 MiB.
func TestKnownKeyBodiesAreBounded(t *testing.T) {
	_, addr := startFront(t, map[string]string{"HOIST_CREDENTIALS": testKey + ":" + testSecret,
		"HOIST_HTTP_BODY_TIMEOUT": "30s", "HOIST_HTTP_BODY_MEMORY": "16MiB"})
	const clients = 40
	type kind struct {
		op, key   string
		announced int
		want      int // status at once; 0: 503 unless among the few read
	}
	kinds := []kind{
		{"ListBuilds", testKey, 9_000_000, http.StatusRequestEntityTooLarge},
		{"CreateScript", testKey, 7_000_000, 0},
		{"CreateScript", "AKIDUNKNOWN", 9_000_000, http.StatusBadRequest}, // UnrecognizedClientException
		{"CreateScript", testKey, 7_000_000, 0},
	}
	body := make([]byte, 9_000_000)
	before, rssBefore := heapInUse(), residentBytes()
	conns := make([]net.Conn, clients)
	var wg sync.WaitGroup
	for i := range conns {
		k := kinds[i%len(kinds)]
		wg.Go(func() {
			head := "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-amz-json-1.1\r\n" +
				"X-Amz-Target: GameLift." + k.op + "\r\n" + zeroSigned(k.key) +
				fmt.Sprintf("Content-Length: %d\r\n\r\n", k.announced)
			conns[i] = rawRequest(t, addr, head, body[:k.announced-1])
		})
	}
	wg.Wait()
	statuses := make([]int, clients)
	for i, c := range conns {
		wg.Go(func() { statuses[i] = readStatus(c, 3*time.Second) })
	}
	wg.Wait()
	grown := int64(heapInUse()) - int64(before) // the connections are still open
	rssGrown := residentBytes() - rssBefore
	held := 0
	for i, st := range statuses {
		switch k := kinds[i%len(kinds)]; {
		case k.want != 0 && st != k.want:
			t.Errorf("client %d (%s, key %s): status %d, want %d", i, k.op, k.key, st, k.want)
		case k.want == 0 && st == -1:
			held++
		case k.want == 0 && st != http.StatusServiceUnavailable:
			t.Errorf("client %d (%s): status %d, want 503 or no answer yet", i, k.op, st)
		}
	}
	t.Logf("%d bodies held; heap grew by %.1f MiB, resident set by %.1f MiB", held, float64(grown)/(1<<20), float64(rssGrown)/(1<<20))
	if held > 2 {
		t.Errorf("%d bodies of 7 MB are being read at once; 16 MiB allows 2", held)
	}
	if grown > 48<<20 {
		t.Errorf("heap grew by %d MiB, want at most 48 MiB", grown>>20)
	}
	if rssBefore > 0 && rssGrown > 96<<20 {
		t.Errorf("resident set grew by %d MiB, want at most 96 MiB", rssGrown>>20)
	}
}

// TestBodyBytesTaken: a body of known length takes all of it at its first
// read; a chunked body takes what it reads (at most bodyChunk a read) and, when
// the budget runs short, waits, then fails with 503; a body larger than the
// whole budget is 413 at once; everything comes back at the end of the
// requests.
func TestBodyBytesTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newBodyLimits(0, 0, 200<<10, func(*http.Request) bool { return false })
		body := func(n, length int) *limitedBody {
			return &limitedBody{ReadCloser: io.NopCloser(bytes.NewReader(make([]byte, n))), l: l,
				rc: http.NewResponseController(httptest.NewRecorder()), length: int64(length)}
		}
		known := body(100<<10, 100<<10)
		if _, err := known.Read(make([]byte, 1)); err != nil || l.budget.free != 100<<10 {
			t.Fatalf("known length: %v, %d bytes free, want 100 KiB", err, l.budget.free)
		}
		chunked := body(200<<10, -1)
		start := time.Now()
		n, err := io.Copy(io.Discard, chunked)
		if err != errBusyBytes || n > 100<<10 || n < 100<<10-bodyChunk || time.Since(start) != bodySlotWait {
			t.Errorf("chunked: %d bytes, %v after %v; want the 100 KiB left, then 503 after %v", n, err, time.Since(start), bodySlotWait)
		}
		if _, err := body(300<<10, 300<<10).Read(make([]byte, 1)); err != errBodyTooLarge {
			t.Errorf("a body larger than the budget: %v, want 413", err)
		}
		known.end()
		chunked.end()
		if l.budget.free != l.budget.total {
			t.Errorf("%d bytes free after the requests, want %d", l.budget.free, l.budget.total)
		}
	})
}
