package server

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/console"
	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/store"
)

// consoleClient is a browser-like client of the console: a cookie jar,
// no redirects followed (the tests look at them).
func consoleClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// consoleDo sends a request and returns the answer with its body read.
func consoleDo(t *testing.T, c *http.Client, method, u string, form url.Values, header map[string]string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// signIn signs c in to the console at base with the test key pair.
func signIn(t *testing.T, c *http.Client, base string) *http.Response {
	t.Helper()
	resp, _ := consoleDo(t, c, "POST", base+"/console/signin",
		url.Values{"AccessKeyId": {testKey}, "SecretAccessKey": {testSecret}, "next": {"/console/fleets"}}, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/fleets" {
		t.Fatalf("sign-in: %d to %q, want 303 to /console/fleets", resp.StatusCode, resp.Header.Get("Location"))
	}
	return resp
}

var csrfField = regexp.MustCompile(`name="csrf" (?:value|content)="([^"]+)"`)

// csrfOf returns the CSRF token of a page's forms.
func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return m[1]
}

// TestConsoleSignIn: with credentials, every console page sends an
// operator without a session to sign in; a wrong secret (or an unknown
// key) is refused; the right pair starts a session whose cookie is
// HttpOnly, SameSite=Strict and limited to /console, kept in the store
// only as its hash, and which ends at --console-session.
func TestConsoleSignIn(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	srv, ts := start(t, clk)
	c := consoleClient(t)
	for _, p := range []string{"/console/", "/console/fleets", "/console/hosts", "/console/replicas", "/console/events"} {
		resp, _ := consoleDo(t, c, "GET", ts.URL+p, nil, nil)
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/signin?next=") {
			t.Errorf("GET %s without a session: %d to %q, want 303 to the sign-in", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if resp, _ := consoleDo(t, c, "GET", ts.URL+"/console/events/stream", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the event stream without a session: %d, want 401", resp.StatusCode)
	}
	if resp, _ := consoleDo(t, c, "POST", ts.URL+"/console/actions/drain-host", url.Values{"host": {"h"}}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a write without a session: %d, want 401", resp.StatusCode)
	}
	for _, pair := range [][2]string{{testKey, "wrong"}, {testKey, ""}, {"AKIDUNKNOWN", testSecret}, {"", ""}} {
		resp, body := consoleDo(t, c, "POST", ts.URL+"/console/signin",
			url.Values{"AccessKeyId": {pair[0]}, "SecretAccessKey": {pair[1]}}, nil)
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 || !strings.Contains(body, "not one Hoist accepts") {
			t.Errorf("sign-in as %q/%q: %d, cookies %v, want 401 and none", pair[0], pair[1], resp.StatusCode, resp.Cookies())
		}
	}
	resp := signIn(t, c, ts.URL)
	ck := resp.Cookies()[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console" || ck.Secure || ck.MaxAge != int((12*time.Hour).Seconds()) {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/console, not Secure over plain HTTP, 12h", ck)
	}
	// The store holds the session under the token's hash only.
	err := srv.Store().View(context.Background(), func(tx store.Tx) error {
		recs, _, err := tx.List(context.Background(), store.Query{Kind: console.KindSession})
		if err != nil || len(recs) != 1 {
			t.Fatalf("sessions stored: %d (%v), want 1", len(recs), err)
		}
		if strings.Contains(recs[0].ID+string(recs[0].Data), ck.Value) {
			t.Error("the store holds the session token itself")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	page, body := consoleDo(t, c, "GET", ts.URL+"/console/fleets", nil, nil)
	if page.StatusCode != http.StatusOK || !strings.Contains(body, testKey) {
		t.Fatalf("fleets page once signed in: %d\n%s", page.StatusCode, body)
	}
	checkSecurityHeaders(t, page.Header)
	// Signing out deletes the session; a new sign-in lasts 12h.
	resp, _ = consoleDo(t, c, "POST", ts.URL+"/console/signout", url.Values{"csrf": {csrfOf(t, body)}}, nil)
	if resp.StatusCode != http.StatusSeeOther || consoleSessions(t, srv) != 0 {
		t.Fatalf("sign-out: %d, %d sessions left", resp.StatusCode, consoleSessions(t, srv))
	}
	if resp, _ := consoleDo(t, c, "GET", ts.URL+"/console/fleets", nil, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after signing out: %d, want 303 to the sign-in", resp.StatusCode)
	}
	signIn(t, c, ts.URL)
	clk.Advance(12*time.Hour - time.Second)
	if resp, _ := consoleDo(t, c, "GET", ts.URL+"/console/fleets", nil, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("within the session's 12h: %d, want 200", resp.StatusCode)
	}
	clk.Advance(time.Second)
	if resp, _ := consoleDo(t, c, "GET", ts.URL+"/console/fleets", nil, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after the session's 12h: %d, want 303 to the sign-in", resp.StatusCode)
	}
}

// consoleSessions counts the console sessions in srv's store.
func consoleSessions(t *testing.T, srv *Server) int {
	t.Helper()
	var n int
	err := srv.Store().View(context.Background(), func(tx store.Tx) error {
		var err error
		n, err = tx.Count(context.Background(), store.Query{Kind: console.KindSession})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkSecurityHeaders checks the console's security headers.
func checkSecurityHeaders(t *testing.T, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP %q allows inline script or eval", csp)
	}
	for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
		"Referrer-Policy": "same-origin", "Cache-Control": "no-store"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}

// TestConsoleCSRF: a write action needs the CSRF token of the operator's
// session, from the console's own origin: without a token, with another
// session's, or with another site's Origin it is refused and changes
// nothing; with it, the instance is drained through the code of the admin
// action (DescribeGameServerInstances says DRAINING).
func TestConsoleCSRF(t *testing.T) {
	_, ts := start(t, nil)
	gl := client(ts.URL, testSecret)
	group, instance := "console-group", "i-0123456789abcdef0"
	registerGameServer(t, gl, group, instance)

	c, other := consoleClient(t), consoleClient(t)
	signIn(t, c, ts.URL)
	signIn(t, other, ts.URL)
	groupURL := ts.URL + "/console/fleetiq/group?name=" + group
	_, page := consoleDo(t, c, "GET", groupURL, nil, nil)
	token := csrfOf(t, page)
	_, otherPage := consoleDo(t, other, "GET", groupURL, nil, nil)
	otherToken := csrfOf(t, otherPage)
	if token == otherToken {
		t.Fatal("two sessions have the same CSRF token")
	}
	form := func(tok string) url.Values {
		return url.Values{"csrf": {tok}, "group": {group}, "instance": {instance}, "back": {"/console/fleetiq/group?name=" + group}}
	}
	action := ts.URL + "/console/actions/drain-instance"
	for name, tc := range map[string]struct {
		form   url.Values
		header map[string]string
	}{
		"no token":            {form: url.Values{"group": {group}, "instance": {instance}}},
		"another's token":     {form: form(otherToken)},
		"a forged token":      {form: form(strings.Repeat("A", len(token)))},
		"another site":        {form: form(token), header: map[string]string{"Origin": "http://evil.example"}},
		"cross-site fetch":    {form: form(token), header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
		"a lookalike origin":  {form: form(token), header: map[string]string{"Origin": ts.URL + ".evil.example"}},
		"several origins":     {form: form(token), header: map[string]string{"Origin": ts.URL + ", http://evil.example"}},
		"same-site, not same": {form: form(token), header: map[string]string{"Sec-Fetch-Site": "same-site"}},
	} {
		resp, _ := consoleDo(t, c, "POST", action, tc.form, tc.header)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, resp.StatusCode)
		}
	}
	if st := instanceStatus(t, gl, group, instance); st != types.GameServerInstanceStatusActive {
		t.Fatalf("after the refused writes the instance is %s, want ACTIVE", st)
	}
	resp, _ := consoleDo(t, c, "POST", action, form(token), map[string]string{"Origin": ts.URL, "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "done=") {
		t.Fatalf("drain with the token: %d to %q, want 303 back with done", resp.StatusCode, resp.Header.Get("Location"))
	}
	if st := instanceStatus(t, gl, group, instance); st != types.GameServerInstanceStatusDraining {
		t.Fatalf("after the drain the instance is %s, want DRAINING", st)
	}
}

// registerGameServer creates a FleetIQ group with one game server on
// instance.
func registerGameServer(t *testing.T, gl *glv2.Client, group, instance string) {
	t.Helper()
	ctx := context.Background()
	_, err := gl.CreateGameServerGroup(ctx, &glv2.CreateGameServerGroupInput{
		GameServerGroupName: &group, RoleArn: strp("arn:aws:iam::123456789012:role/gamelift"),
		MinSize: i32p(1), MaxSize: i32p(2),
		LaunchTemplate:      &types.LaunchTemplateSpecification{LaunchTemplateId: strp("lt-0123456789abcdef0")},
		InstanceDefinitions: []types.InstanceDefinition{{InstanceType: types.GameServerGroupInstanceTypeC5Large}, {InstanceType: types.GameServerGroupInstanceTypeC5Xlarge}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gl.RegisterGameServer(ctx, &glv2.RegisterGameServerInput{GameServerGroupName: &group,
		GameServerId: strp("gs-console-1"), InstanceId: &instance, ConnectionInfo: strp("192.0.2.0:80")})
	if err != nil {
		t.Fatal(err)
	}
}

// instanceStatus is a FleetIQ instance's status, as the API says.
func instanceStatus(t *testing.T, gl *glv2.Client, group, instance string) types.GameServerInstanceStatus {
	t.Helper()
	out, err := gl.DescribeGameServerInstances(context.Background(), &glv2.DescribeGameServerInstancesInput{
		GameServerGroupName: &group, InstanceIds: []string{instance}})
	if err != nil || len(out.GameServerInstances) != 1 {
		t.Fatalf("DescribeGameServerInstances: %v %v", out, err)
	}
	return out.GameServerInstances[0].InstanceStatus
}

func strp(s string) *string { return &s }
func i32p(n int32) *int32   { return &n }

// TestConsoleLoopbackOnly: without credentials the console needs no
// sign-in but answers loopback clients only, addressed by a loopback
// name (DNS rebinding refused by the browser guard), and takes writes
// only from its own origin with the CSRF token of its cookie.
func TestConsoleLoopbackOnly(t *testing.T) {
	srv, ts := startWith(t, nil, nil)
	c := consoleClient(t)
	resp, body := consoleDo(t, c, "GET", ts.URL+"/console/hosts", nil, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "loopback mode") {
		t.Fatalf("hosts page in loopback mode: %d\n%s", resp.StatusCode, body)
	}
	checkSecurityHeaders(t, resp.Header)
	if resp, _ := consoleDo(t, c, "GET", ts.URL+"/console/signin", nil, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("sign-in page in loopback mode: %d, want 303 to the overview", resp.StatusCode)
	}
	// A rebound name, and a page of another site.
	req, _ := http.NewRequest("GET", ts.URL+"/console/hosts", nil)
	req.Host = "evil.example"
	if r, err := c.Do(req); err != nil || r.StatusCode != http.StatusForbidden {
		t.Errorf("Host evil.example: %v %v, want 403", r.StatusCode, err)
	}
	token := csrfOf(t, body)
	for _, h := range []map[string]string{{"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
		resp, _ := consoleDo(t, c, "POST", ts.URL+"/console/actions/drain-host", url.Values{"csrf": {token}, "host": {"h-1"}}, h)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("drain-host with %v: %d, want 403", h, resp.StatusCode)
		}
	}
	if resp, _ := consoleDo(t, c, "POST", ts.URL+"/console/actions/drain-host", url.Values{"host": {"h-1"}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("drain-host without a token: %d, want 403", resp.StatusCode)
	}
	// With the token, from its own origin, the action runs (and says the
	// host does not exist: GameLift answers its errors 400).
	resp, body = consoleDo(t, c, "POST", ts.URL+"/console/actions/drain-host", url.Values{"csrf": {token}, "host": {"h-1"}},
		map[string]string{"Origin": ts.URL})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "NotFoundException: host h-1 does not exist") {
		t.Errorf("drain-host with the token: %d\n%s", resp.StatusCode, body)
	}
	// A client that is not on loopback (behind a proxy on this machine,
	// say) is refused by the console itself.
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "http://127.0.0.1/console/hosts", nil)
	r.RemoteAddr = "192.0.2.7:4000"
	srv.Handler().ServeHTTP(rec, r)
	if rec.Code != http.StatusForbidden {
		t.Errorf("a non-loopback client: %d, want 403", rec.Code)
	}
}

// TestConsoleOff: --console=false serves no console.
func TestConsoleOff(t *testing.T) {
	_, ts := startWith(t, nil, map[string]string{"HOIST_CONSOLE": "false"})
	resp, body := consoleDo(t, consoleClient(t), "GET", ts.URL+"/console/", nil, nil)
	if resp.StatusCode == http.StatusOK || strings.Contains(body, "Hoist console") {
		t.Errorf("/console/ with the console off: %d\n%s", resp.StatusCode, body)
	}
}

// TestConsolePaging: a list shows 25 rows and a link to the next page,
// which shows the rest and no link; a `next` Hoist did not issue is the
// API's InvalidRequestException.
func TestConsolePaging(t *testing.T) {
	_, ts := startWith(t, nil, nil)
	gl := client(ts.URL, "any")
	for i := range 27 {
		if _, err := gl.CreateGameSessionQueue(context.Background(), &glv2.CreateGameSessionQueueInput{
			Name: strp(fmt.Sprintf("queue-%02d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	c := consoleClient(t)
	_, first := consoleDo(t, c, "GET", ts.URL+"/console/queues", nil, nil)
	next := regexp.MustCompile(`id="next" href="([^"]+)"`).FindStringSubmatch(first)
	if n := strings.Count(first, `href="/console/queue?name=`); n != 25 || next == nil {
		t.Fatalf("first page: %d queues, next link %v; want 25 and a link", n, next)
	}
	_, second := consoleDo(t, c, "GET", ts.URL+html.UnescapeString(next[1]), nil, nil)
	if n := strings.Count(second, `href="/console/queue?name=`); n != 2 || strings.Contains(second, `id="next"`) ||
		!strings.Contains(second, "queue-26") {
		t.Fatalf("second page: %d queues; want queue-25 and queue-26 and no next link\n%s", n, second)
	}
	resp, body := consoleDo(t, c, "GET", ts.URL+"/console/queues?next=forged", nil, nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "InvalidRequestException") {
		t.Errorf("a forged next: %d\n%s", resp.StatusCode, body)
	}
}

// TestConsoleStreamEndsWithSession: the live event stream of a session
// ends when the session does (it is opened here 100 ms before).
func TestConsoleStreamEndsWithSession(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	_, ts := start(t, clk)
	c := consoleClient(t)
	signIn(t, c, ts.URL)
	clk.Advance(12*time.Hour - 100*time.Millisecond)
	resp, err := c.Get(ts.URL + "/console/events/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); done <- err }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream outlived its session by 20 s")
	}
}

// TestConsoleReplicas: the replicas page lists the replica registry's
// records: this replica with its address, start and live lease, and a
// registered replica whose lease is gone as expired.
func TestConsoleReplicas(t *testing.T) {
	srv, ts := startWith(t, nil, nil)
	ctx := context.Background()
	started := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	if err := srv.store.Update(ctx, func(tx store.Tx) error {
		return store.PutJSON(ctx, tx, store.Record{Kind: replicas.KindReplica, ID: "r-dead"},
			replicas.Record{ID: "r-dead", Addresses: []string{"http://127.0.0.9:9"}, Version: "v9.9.9", Started: started, Term: 1})
	}); err != nil {
		t.Fatal(err)
	}
	_, body := consoleDo(t, consoleClient(t), "GET", ts.URL+"/console/replicas", nil, nil)
	this := regexp.MustCompile(`<tr id="replica-` + regexp.QuoteMeta(srv.replica) + `">(.*?)</tr>`).FindStringSubmatch(body)
	if this == nil || !strings.Contains(this[1], "(this one)") || !strings.Contains(this[1], ts.URL) ||
		!strings.Contains(this[1], `class="registration">live until `) {
		t.Fatalf("the replicas page has no live row for this replica %s at %s:\n%s", srv.replica, ts.URL, body)
	}
	dead := regexp.MustCompile(`<tr id="replica-r-dead">(.*?)</tr>`).FindStringSubmatch(body)
	if dead == nil || !strings.Contains(dead[1], "http://127.0.0.9:9") || !strings.Contains(dead[1], "v9.9.9") ||
		!strings.Contains(dead[1], "2026-03-01 11:00:00") || !strings.Contains(dead[1], `class="registration">expired<`) {
		t.Fatalf("the replicas page does not list r-dead as expired:\n%s", body)
	}
}

// TestConsoleAnywhereFleet: an Anywhere fleet's page lists its computes
// (GameLift answers DescribeInstances for such a fleet with an error).
func TestConsoleAnywhereFleet(t *testing.T) {
	_, ts := startWith(t, nil, nil)
	ctx, gl := context.Background(), client(ts.URL, "any")
	if _, err := gl.CreateLocation(ctx, &glv2.CreateLocationInput{LocationName: strp("custom-console")}); err != nil {
		t.Fatal(err)
	}
	f, err := gl.CreateFleet(ctx, &glv2.CreateFleetInput{Name: strp("anywhere"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: strp("custom-console")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gl.RegisterCompute(ctx, &glv2.RegisterComputeInput{FleetId: f.FleetAttributes.FleetId,
		ComputeName: strp("compute-1"), IpAddress: strp("127.0.0.2"), Location: strp("custom-console")}); err != nil {
		t.Fatal(err)
	}
	resp, body := consoleDo(t, consoleClient(t), "GET", ts.URL+"/console/fleet?id="+*f.FleetAttributes.FleetId, nil, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<table id="computes">`) ||
		!strings.Contains(body, "<td>compute-1</td>") || !strings.Contains(body, "127.0.0.2") {
		t.Fatalf("an Anywhere fleet's page: %d, want 200 listing compute-1\n%s", resp.StatusCode, body)
	}
}
