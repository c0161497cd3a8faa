package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/config"
)

// TestREADMEWalkthrough runs the shell blocks of the README's "Try it with
// the aws CLI" section as written, in a new shell (no AWS_* or HOIST_*
// variable, no AWS config files), against a Hoist without credentials.
// Only the address differs: the README's default address is replaced by
// the test Hoist's, and ./hoist by the built binary. The block that builds
// and starts Hoist is the harness's job.
func TestREADMEWalkthrough(t *testing.T) {
	needAWSCLI(t)
	readme, err := os.ReadFile(filepath.Join(hoisttest.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "## Try it with the aws CLI")
	if start < 0 {
		t.Fatal(`the README has no "Try it with the aws CLI" section`)
	}
	section = section[start:]
	if end := strings.Index(section[1:], "\n## "); end > 0 {
		section = section[:end+1]
	}
	var script []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		if strings.Contains(m[1], "go build -o hoist ./cmd/hoist") {
			continue
		}
		script = append(script, m[1])
	}
	if len(script) < 2 {
		t.Fatalf("found %d walkthrough blocks, want the FleetIQ and the hosting ones", len(script))
	}
	h := hoisttest.Start(t, hoisttest.Options{Unauthenticated: true, Args: []string{"--region", "us-west-2"}})
	body := strings.Join(script, "\n")
	body = strings.ReplaceAll(body, "http://"+config.DefaultAddr, h.URL)
	body = strings.ReplaceAll(body, "./hoist ", hoisttest.Binary(t)+" ")

	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"AWS_CONFIG_FILE=" + empty, "AWS_SHARED_CREDENTIALS_FILE=" + empty,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER=", "TMPDIR=" + dir, "NO_PROXY=127.0.0.1,localhost"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch uk := strings.ToUpper(k); {
		case strings.HasPrefix(uk, "AWS_"), strings.HasPrefix(uk, "HOIST_"), strings.HasSuffix(uk, "_PROXY"),
			uk == "BOTO_CONFIG", uk == "TMPDIR":
			continue
		}
		env = append(env, kv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", body)
	cmd.Dir = hoisttest.RepoRoot()
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's walkthrough failed: %v\n--- script\n%s\n--- stdout\n%s\n--- stderr\n%s\n--- hoist log\n%s",
			err, body, stdout.String(), stderr.String(), h.Log())
	}
	for _, want := range []string{"is now DRAINING", "FLEET_STATE_ACTIVE", `"PlayerId": "p1"`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the walkthrough's output lacks %q:\n%s", want, stdout.String())
		}
	}
}
