package cluster_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/cluster"
	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// consoleCookie is the console's session cookie.
const consoleCookie = "hoist_console"

// consoleGet fetches a console page from r (cookie: the session cookie,
// nil none) and returns the answer with its body read; redirects are not
// followed.
func consoleGet(t *testing.T, r *cluster.Replica, path string, cookie *http.Cookie) (*http.Response, string) {
	t.Helper()
	return consoleSend(t, r, http.MethodGet, path, nil, cookie)
}

// consoleSend sends a console request to r, a form (non-nil) as a POST of
// the console's own origin.
func consoleSend(t *testing.T, r *cluster.Replica, method, path string, form url.Values, cookie *http.Cookie) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, r.URL()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", r.URL())
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("replica %s: %s %s: %v", r.Name, method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp, string(b)
}

var consoleCSRF = regexp.MustCompile(`name="csrf" (?:value|content)="([^"]+)"`)

// consoleAcrossReplicas signs in to the console on A (the cluster runs
// with credentials), then uses that session cookie on B: B shows the
// game server group created through A, the fleet, queue and PENDING
// placement created through C, and lists the three replicas; the
// placement is stopped on B with the CSRF token of a page of A (the key
// is the cluster's).
func consoleAcrossReplicas(t *testing.T, c *cluster.Cluster, fleetID string) {
	t.Helper()
	a, b := c.Replicas[0], c.Replicas[1]
	if resp, _ := consoleGet(t, b, "/console/queues", nil); resp.StatusCode != http.StatusSeeOther ||
		!strings.HasPrefix(resp.Header.Get("Location"), "/console/signin") {
		t.Fatalf("B without a session: %d to %q, want 303 to the sign-in", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ := consoleSend(t, a, http.MethodPost, "/console/signin", url.Values{"AccessKeyId": {hoisttest.AccessKeyID},
		"SecretAccessKey": {hoisttest.SecretAccessKey}, "next": {"/console/queues"}}, nil)
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == consoleCookie && ck.Value != "" {
			cookie = &http.Cookie{Name: ck.Name, Value: ck.Value}
		}
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == nil {
		t.Fatalf("sign-in on A: %d, cookie %v; want 303 and a session cookie", resp.StatusCode, cookie)
	}
	for path, want := range map[string][]string{
		"/console/queues":                                  {"cluster-metrics"},
		"/console/queue?name=cluster-metrics":              {"stays-pending", "PENDING", "/console/actions/stop-placement"},
		"/console/fleet?id=" + fleetID:                     {"custom-metrics"},
		"/console/fleetiq/group?name=" + "cluster-metrics": {"gs-1", "gs-2"},
	} {
		resp, body := consoleGet(t, b, path, cookie)
		for _, w := range want {
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, w) {
				t.Fatalf("B's %s with A's session: %d, want 200 showing %q:\n%s", path, resp.StatusCode, w, body)
			}
		}
	}
	consoleReplicasListed(t, c, b, cookie)

	_, page := consoleGet(t, a, "/console/queue?name=cluster-metrics", cookie)
	m := consoleCSRF.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in A's queue page:\n%s", page)
	}
	resp, body := consoleSend(t, b, http.MethodPost, "/console/actions/stop-placement", url.Values{"csrf": {m[1]},
		"placement": {"stays-pending"}, "back": {"/console/queue?name=cluster-metrics"}}, cookie)
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "done=") {
		t.Fatalf("stop-placement on B with A's token: %d to %q\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if _, body := consoleGet(t, c.Replicas[2], "/console/queue?name=cluster-metrics", cookie); !strings.Contains(body, "CANCELLED") {
		t.Fatalf("C's queue page after the stop shows no CANCELLED placement:\n%s", body)
	}
}

// consoleReplicasListed checks that r's replicas page lists every replica
// of the cluster with its address and a live registration, r as "this
// one".
func consoleReplicasListed(t *testing.T, c *cluster.Cluster, r *cluster.Replica, cookie *http.Cookie) {
	t.Helper()
	_, body := consoleGet(t, r, "/console/replicas", cookie)
	rows := regexp.MustCompile(`(?s)<tr id="replica-[^"]+">(.*?)</tr>`).FindAllStringSubmatch(body, -1)
	for _, x := range c.Replicas {
		found := false
		for _, row := range rows {
			if strings.Contains(row[1], "<td>"+x.URL()+"</td>") {
				found = strings.Contains(row[1], `class="registration">live until `) &&
					strings.Contains(row[1], "(this one)") == (x == r)
			}
		}
		if !found {
			t.Fatalf("replica %s's replicas page: no live row for replica %s at %s (this one: %v):\n%s",
				r.Name, x.Name, x.URL(), x == r, body)
		}
	}
}
