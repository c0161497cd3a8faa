package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// operationsDoc reads docs/operations.md.
func operationsDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hoisttest.RepoRoot(), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// backupCommand is the tar command docs/operations.md backs a journal
// store's data directory up with: its options before -czf, and the paths.
var backupCommand = regexp.MustCompile(`(?m)^\s*tar -C /var/lib/hoist (.*)-czf \S+ (.+)$`)

// TestBackupRestore backs a data directory up as docs/operations.md says
// (Hoist stopped with SIGTERM, then its tar command), restores it into a
// new directory and starts Hoist there: the records are there, and so are
// Hoist's CA and replica ID (a backup without pki/ would get a new CA,
// which no host or game server trusts).
func TestBackupRestore(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("tar is not installed")
	}
	m := backupCommand.FindStringSubmatch(operationsDoc(t))
	if m == nil {
		t.Fatal("docs/operations.md has no `tar -C /var/lib/hoist ... -czf FILE PATHS` line")
	}
	h := hoisttest.Start(t, hoisttest.Options{Args: []string{"--local-hosting", "off"}})
	ctx := hoisttest.Context(t, 2*time.Minute)
	alias, err := h.V2().CreateAlias(ctx, &gl.CreateAliasInput{Name: aws.String("backed-up"),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeTerminal, Message: aws.String("kept")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.StopWith(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "backup.tar.gz")
	args := append(append([]string{"-C", h.DataDir}, strings.Fields(m[1])...), "-czf", archive)
	args = append(args, strings.Fields(m[2])...)
	if out, err := exec.Command("tar", args...).CombinedOutput(); err != nil {
		t.Fatalf("tar %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	restored := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(restored, 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Dir(restored), 0o711) // as hoisttest.Start does
	if out, err := exec.Command("tar", "-C", restored, "-xzf", archive).CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v\n%s", err, out)
	}
	again := hoisttest.Start(t, hoisttest.Options{DataDir: restored, Args: []string{"--local-hosting", "off"}})
	got, err := again.V2().DescribeAlias(ctx, &gl.DescribeAliasInput{AliasId: alias.Alias.AliasId})
	if err != nil || aws.ToString(got.Alias.Name) != "backed-up" {
		t.Errorf("DescribeAlias on the restored Hoist: %v, %v", got, err)
	}
	for _, f := range []string{filepath.Join("pki", "ca.pem"), "replica-id"} {
		before, err1 := os.ReadFile(filepath.Join(h.DataDir, f))
		after, err2 := os.ReadFile(filepath.Join(restored, f))
		if err1 != nil || err2 != nil || !bytes.Equal(before, after) {
			t.Errorf("%s: the restored Hoist has another (%v, %v)", f, err1, err2)
		}
	}
}

// metricName is a Prometheus metric name of Hoist's in a doc.
var metricName = regexp.MustCompile(`\b(?:gamelift|hoist)_[A-Za-z0-9_]+`)

// TestAlertNames: every metric docs/operations.md's alerts name is one
// docs/metrics.md lists (a histogram by its name, or its _bucket, _count
// and _sum series). It skips while there is no docs/metrics.md.
func TestAlertNames(t *testing.T) {
	metrics, err := os.ReadFile(filepath.Join(hoisttest.RepoRoot(), "docs", "metrics.md"))
	if os.IsNotExist(err) {
		t.Skip("no docs/metrics.md: nothing to check the alerts' metric names against")
	}
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, n := range metricName.FindAllString(string(metrics), -1) {
		listed[n] = true
	}
	doc := operationsDoc(t)
	_, alerts, _ := strings.Cut(doc, "## Metrics and alerts")
	names := metricName.FindAllString(alerts, -1)
	if len(names) == 0 {
		t.Fatal(`docs/operations.md's "Metrics and alerts" names no metric`)
	}
	for _, n := range names {
		base := n
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			base = strings.TrimSuffix(base, suffix)
		}
		if !listed[n] && !listed[base] {
			t.Errorf("docs/operations.md's alerts name %s, which docs/metrics.md does not list", n)
		}
	}
}
