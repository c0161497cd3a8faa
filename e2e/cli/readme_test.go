package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// The documentation's shell examples are tests: every ```sh or ```bash
// block of README.md and docs/*.md runs, page by page, in order, in one new
// bash shell (-euo pipefail) in the repository root, as a reader who
// copies the blocks of a page into a terminal would run them. A block is
// left out only when the line before its fence is
//
//	<!-- doc-test skip: why -->
//
// (a command that never ends, one for another machine); output belongs in
// a comment or in a block of another language.
// A page that talks to Hoist takes its address from $HOIST_ENDPOINT
// (E=${HOIST_ENDPOINT:-http://127.0.0.1:9080}); the test starts a Hoist of
// its own for such a page, the way the README does, and sets the variable.
// `./hoist` and `go run ./cmd/hoist` in a block run the binary the test
// built (the same program, without building it again). CONTRIBUTING.md
// says the same to writers.

// docSkipMarker is the comment that keeps the next block from running.
const docSkipMarker = "<!-- doc-test skip:"

// docBlock is one fenced block of a page.
type docBlock struct {
	line  int    // of the opening fence, from 1
	text  string // the commands
	skip  string // why it is not run; "" runs it
	shell bool   // a sh or bash block
}

// shellBlocks returns the sh and bash blocks of a Markdown page in order.
// A skip marker must give a reason and stand right before a shell block.
func shellBlocks(md string) ([]docBlock, error) {
	var blocks []docBlock
	var cur *docBlock
	marker := ""
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		switch lang, fence := strings.CutPrefix(trimmed, "```"); {
		case cur != nil && trimmed == "```":
			if cur.shell {
				blocks = append(blocks, *cur)
			}
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case fence:
			lang = strings.TrimSpace(lang)
			cur = &docBlock{line: i + 1, skip: marker, shell: lang == "sh" || lang == "bash"}
			if marker != "" && !cur.shell {
				return nil, fmt.Errorf("line %d: %s stands before a block that is not sh or bash", i+1, docSkipMarker)
			}
			marker = ""
		default:
			marker = ""
			if rest, ok := strings.CutPrefix(trimmed, docSkipMarker); ok {
				if marker = strings.TrimSpace(strings.TrimSuffix(rest, "-->")); marker == "" {
					return nil, fmt.Errorf("line %d: %s without a reason", i+1, docSkipMarker)
				}
			}
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: a block is not closed", cur.line)
	}
	return blocks, nil
}

// docScript is what runs for a page: its runnable blocks, in order.
func docScript(t *testing.T, page string) string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(hoisttest.RepoRoot(), page))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := shellBlocks(string(md))
	if err != nil {
		t.Fatalf("%s: %v", page, err)
	}
	var parts []string
	for _, b := range blocks {
		if b.skip == "" {
			parts = append(parts, fmt.Sprintf("# %s:%d\n%s", page, b.line, b.text))
		}
	}
	return strings.Join(parts, "\n")
}

// docTools are the commands a page may need beside bash and go, with what
// installs them; a page that uses a missing one is skipped.
var docTools = map[string]string{"aws": "the awscli package", "jq": "the jq package", "curl": "the curl package"}

// needDocTools skips the test when the script uses a command that is not
// installed.
func needDocTools(t *testing.T, page, script string) {
	t.Helper()
	for tool, pkg := range docTools {
		used := regexp.MustCompile(`(^|[\s;&|(])` + tool + `\s`).MatchString(script)
		if _, err := exec.LookPath(tool); used && err != nil {
			t.Skipf("the %s command is not installed: %s's examples use it (CI installs %s)", tool, page, pkg)
		}
	}
}

// docOutputs are what a page's run must print (stdout and stderr), beside
// exiting with status 0.
var docOutputs = map[string][]string{
	"README.md":                  {"is now DRAINING", "FLEET_STATE_ACTIVE", `"PlayerId": "p1"`},
	"docs/aliases.md":            {`"FleetId": "fleet-`, "TerminalRoutingStrategyException", "Please update your game"},
	"docs/placement.md":          {"FULFILLED"},
	"docs/flexmatch.md":          {`"Status": "COMPLETED"`, `"Team": "`, "CANCELLED"},
	"docs/fleetiq.md":            {"is now DRAINING"},
	"docs/flexmatch-simulate.md": {"valid", `"timedOut": 1`},
	"docs/hosts.md":              {`"Connected": true`, "127.0.0.2\tec2-127-0-0-2.us-west-2.compute.hoist.localhost", "RESERVED\t127.0.0.2", "gets no new instance"},
}

// runDoc runs page's examples: against a Hoist started as the README
// starts it when the page talks to one. It returns Hoist (nil when none
// was needed) and what the script printed.
func runDoc(t *testing.T, page string) (*hoisttest.Hoist, string) {
	t.Helper()
	script := docScript(t, page)
	if script == "" {
		t.Skipf("%s has no shell block to run", page)
	}
	needDocTools(t, page, script)
	bin := hoisttest.Binary(t)
	script = strings.ReplaceAll(script, "go run ./cmd/hoist ", bin+" ")
	script = strings.ReplaceAll(script, "./hoist ", bin+" ")

	dir := t.TempDir()
	// Run as root, Hoist and its agents run server processes as an
	// unprivileged user, which must pass through the directories a page
	// makes under $TMPDIR.
	_ = os.Chmod(dir, 0o711)
	_ = os.Chmod(filepath.Dir(dir), 0o711)
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"AWS_CONFIG_FILE=" + empty, "AWS_SHARED_CREDENTIALS_FILE=" + empty,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER=", "TMPDIR=" + dir, "NO_PROXY=127.0.0.1,localhost",
		"PYTHONDONTWRITEBYTECODE=1"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch uk := strings.ToUpper(k); {
		case strings.HasPrefix(uk, "AWS_"), strings.HasPrefix(uk, "HOIST_"), strings.HasSuffix(uk, "_PROXY"),
			uk == "BOTO_CONFIG", uk == "TMPDIR":
			continue
		}
		env = append(env, kv)
	}
	var h *hoisttest.Hoist
	if strings.Contains(script, "HOIST_ENDPOINT") {
		h = hoisttest.Start(t, hoisttest.Options{WorkDir: t.TempDir(), Unauthenticated: true})
		env = append(env, "HOIST_ENDPOINT="+h.URL)
	}
	out, err := runShell(script, env)
	// A page that failed may leave a Hoist it started, and a Hoist's local
	// agent runs in a session of its own: end both.
	hoisttest.StopLocalAgentsUnder(dir, 30*time.Second)
	if err != nil {
		hoistLog := "(none started)"
		if h != nil {
			hoistLog = h.Log()
		}
		t.Fatalf("%s's examples failed: %v\n--- script\n%s\n--- output\n%s\n--- hoist log\n%s", page, err, script, out, hoistLog)
	}
	for _, want := range docOutputs[page] {
		if !strings.Contains(out, want) {
			t.Errorf("the output of %s's examples lacks %q:\n%s", page, want, out)
		}
	}
	return h, out
}

// runShell runs script in a new bash (-euo pipefail) in the repository
// root with env, for at most scriptTimeout, and returns its output
// (stdout and stderr, interleaved).
func runShell(script string, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = hoisttest.RepoRoot()
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if cmd.Process != nil {
		// What the script left running in the background (a Hoist of its
		// own, when it failed half-way).
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w (killed after %s)", err, scriptTimeout)
	}
	return out.String(), err
}

// TestREADMEWalkthrough runs the README's shell blocks the way a person
// does: Hoist built with go build and started as ./hoist in a new working
// directory, with no --data-dir (its data in the relative hoist-data),
// and the walkthrough in a new shell from the repository root: FleetIQ,
// then a build uploaded with the aws CLI, a fleet that becomes ACTIVE (its
// processes reach Hoist over wss, trusting Hoist's CA through the
// SSL_CERT_FILE Hoist gives them), a game session and a player session.
func TestREADMEWalkthrough(t *testing.T) {
	t.Parallel()
	h, _ := runDoc(t, "README.md")
	if h != nil && !strings.Contains(h.Log(), "data_dir="+h.DataDir) {
		t.Errorf("Hoist's log does not name its data directory %s, made absolute:\n%s", h.DataDir, h.LogTail(40))
	}
}

// TestDocExamples runs the shell blocks of every page of docs/, one page
// per subtest, each in a new shell against a Hoist of its own.
func TestDocExamples(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob(filepath.Join(hoisttest.RepoRoot(), "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md pages (%v)", err)
	}
	for _, p := range pages {
		page := "docs/" + filepath.Base(p)
		t.Run(filepath.Base(p), func(t *testing.T) {
			t.Parallel()
			runDoc(t, page)
		})
	}
}

// TestShellBlocks: the reader of the examples finds sh and bash blocks,
// honours the skip marker, and refuses a marker without a reason.
func TestShellBlocks(t *testing.T) {
	md := "intro\n```sh\necho one\n```\n<!-- doc-test skip: output -->\n```bash\nnot run\n```\n```text\n```sh inside text\n```\n  ```bash\n  echo two\n  ```\n"
	blocks, err := shellBlocks(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 || blocks[0].text != "echo one\n" || blocks[1].skip != "output" || blocks[2].text != "  echo two\n" || blocks[2].line != 12 {
		t.Errorf("blocks %+v", blocks)
	}
	for _, bad := range []string{"<!-- doc-test skip: -->\n```sh\nx\n```\n", "<!-- doc-test skip: why -->\n```json\n{}\n```\n", "```sh\nopen\n"} {
		if _, err := shellBlocks(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestVersionNamesTheRevision: hoist --version of the binary built as the
// README builds it (go build in a git clone) names the commit it was built
// from. It skips where the go command stamps no revision: outside a git
// clone (a git worktree, an unpacked archive) or with -buildvcs=false.
func TestVersionNamesTheRevision(t *testing.T) {
	root := hoisttest.RepoRoot()
	if st, err := os.Stat(filepath.Join(root, ".git")); err != nil || !st.IsDir() {
		t.Skip("the repository is not a git clone (no .git directory): the go command stamps no revision")
	}
	if flags, _ := exec.Command("go", "env", "GOFLAGS").Output(); strings.Contains(string(flags), "-buildvcs=false") {
		t.Skipf("GOFLAGS has -buildvcs=false (%s): the go command stamps no revision", strings.TrimSpace(string(flags)))
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("git rev-parse HEAD: %v", err)
	}
	out, err := exec.Command(hoisttest.Binary(t), "--version").Output()
	if err != nil || !strings.Contains(string(out), "git "+strings.TrimSpace(string(head))) {
		t.Errorf("hoist --version: %q, %v; want the revision %s", out, err, strings.TrimSpace(string(head)))
	}
}
