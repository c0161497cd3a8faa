//go:build linux

package procinit

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// confiner returns a Confiner, or skips the test where the system gives no
// namespaces.
func confiner(t *testing.T) *Confiner {
	t.Helper()
	c, err := New()
	if err != nil {
		t.Skipf("no namespaces for the init here: %v", err)
	}
	return c
}

// shell is a command running sh -c script with an empty environment.
func shell(script string) *exec.Cmd {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	return cmd
}

// namespaceOf returns the PID namespace of pid ("" once it is gone).
func namespaceOf(pid int) string {
	ns, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	return ns
}

// members returns the live processes of a PID namespace.
func members(ns string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || namespaceOf(pid) != ns {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] != 'Z' {
				out = append(out, pid)
			}
		}
	}
	return out
}

// TestExitAndStartFailures: the process's exit code and the signal that
// ended it come back as they are; a process that cannot be started fails
// Start with exec.Cmd.Start's error (an *os.PathError with its errno).
func TestExitAndStartFailures(t *testing.T) {
	c := confiner(t)
	for name, tc := range map[string]struct {
		script string
		want   Exit
	}{
		"code":   {"exit 7", Exit{Code: 7}},
		"zero":   {"true", Exit{Code: 0}},
		"signal": {"kill -TERM $$", Exit{Code: -1, Signal: syscall.SIGTERM}},
		"killed": {"kill -KILL $$", Exit{Code: -1, Signal: syscall.SIGKILL}},
	} {
		p, err := c.Start(shell(tc.script))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, err := p.Wait(); got != tc.want || err != nil {
			t.Errorf("%s: Wait = %+v, %v; want %+v", name, got, err, tc.want)
		}
	}
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]error{noexec: fs.ErrPermission, filepath.Join(dir, "missing"): fs.ErrNotExist} {
		cmd := exec.Command(path)
		cmd.Env = []string{}
		_, err := c.Start(cmd)
		var pe *os.PathError
		if !errors.As(err, &pe) || pe.Path != path || !errors.Is(err, want) {
			t.Errorf("Start(%s) = %v, want a PathError of %v", path, err, want)
		}
	}
}

// TestNothingOutlivesTheProcess: what the process started, in a session of
// its own (setsid) or double-forked, ends when it exits, and when its init
// is killed; Wait returns once the namespace is empty.
func TestNothingOutlivesTheProcess(t *testing.T) {
	c := confiner(t)
	for _, kill := range []bool{false, true} {
		in, release, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := shell("( setsid sleep 1000 & ); ( sleep 1000 & ); echo ok; read x; exit 0")
		cmd.Stdin = in
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.Start(cmd)
		in.Close()
		if err != nil {
			t.Fatal(err)
		}
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ok\n" {
			t.Fatalf("the process said %q", line)
		}
		ns := namespaceOf(p.Init.Process.Pid)
		if n := len(members(ns)); n < 4 { // the init, sh, two sleeps
			t.Errorf("%d processes in the namespace, want at least 4", n)
		}
		want := Exit{Code: 0}
		if kill {
			want = Exit{Code: -1, Signal: syscall.SIGKILL}
			syscall.Kill(-p.Init.Process.Pid, syscall.SIGKILL)
		}
		release.Close()
		if got, err := p.Wait(); got != want || err != nil {
			t.Errorf("kill=%v: Wait = %+v, %v; want %+v", kill, got, err, want)
		}
		if left := members(ns); len(left) != 0 {
			t.Errorf("kill=%v: processes %v are left in the namespace after Wait", kill, left)
		}
	}
}

// TestSignalsAreForwarded: SIGTERM to the init's group reaches the
// process's group.
func TestSignalsAreForwarded(t *testing.T) {
	c := confiner(t)
	cmd := shell(`trap 'exit 3' TERM; sleep 1000 & echo ok; wait`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ok\n" {
		t.Fatalf("the process said %q", line)
	}
	if err := syscall.Kill(-p.Init.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Wait(); got != (Exit{Code: 3}) || err != nil {
		t.Errorf("Wait = %+v, %v; want the trap's exit 3", got, err)
	}
}

// TestWhatTheProcessSees: only the processes of its namespace, none of the
// init's descriptors (the pipes to Hoist), and the init has no
// environment (the process's comes over the pipe).
func TestWhatTheProcessSees(t *testing.T) {
	c := confiner(t)
	cmd := shell(`cd /proc && echo [0-9]*; readlink /proc/$$/fd/3 /proc/$$/fd/4; echo end; echo "$SECRET"; read x`)
	cmd.Env = append(cmd.Env, "SECRET=s3cr3t")
	in, release, _ := os.Pipe()
	cmd.Stdin = in
	out, _ := cmd.StdoutPipe()
	p, err := c.Start(cmd)
	in.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	var lines []string
	for range 3 {
		l, _ := r.ReadString('\n')
		lines = append(lines, strings.TrimSpace(l))
	}
	if env, err := os.ReadFile("/proc/" + strconv.Itoa(p.Init.Process.Pid) + "/environ"); err != nil || len(env) != 0 {
		t.Errorf("the init's environment: %q, %v; want none", env, err)
	}
	release.Close()
	p.Wait()
	pids := strings.Fields(lines[0])
	if len(pids) > 4 || !strings.HasPrefix(lines[0], "1 ") {
		t.Errorf("the process sees the PIDs %v, want its namespace's few, from 1", pids)
	}
	if lines[1] != "end" {
		t.Errorf("the process has the init's descriptors 3 and 4 open: %q", lines[1])
	}
	if lines[2] != "s3cr3t" {
		t.Errorf("the process's environment did not come through: %q", lines[2])
	}
}

// TestUnprivileged: Hoist not root gets a user namespace for the init; the
// process runs as Hoist's user (not root of the namespace), sees only its
// namespace, and ends with everything it started. The test binary runs
// itself as nobody.
func TestUnprivileged(t *testing.T) {
	if os.Getenv("PROCINIT_UNPRIVILEGED") == "1" {
		unprivileged(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the test binary as another user")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	for d := filepath.Dir(dir); d != "/"; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			os.Chmod(d, st.Mode().Perm()|0o001) // a temporary directory of the test's
		}
	}
	bin := filepath.Join(dir, "procinit.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestUnprivileged$", "-test.v")
	cmd.Env = []string{"PROCINIT_UNPRIVILEGED=1", "PATH=/usr/bin:/bin"}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "--- SKIP") {
		t.Skipf("as nobody: %s", out)
	}
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// unprivileged is TestUnprivileged run as nobody.
func unprivileged(t *testing.T) {
	c := confiner(t)
	if !c.UserNamespace() {
		t.Fatal("not root, yet no user namespace")
	}
	cmd := shell(`id -u; cd /proc && echo [0-9]*; grep CapEff /proc/self/status; ( setsid sleep 1000 & ); read x; exit 0`)
	in, release, _ := os.Pipe()
	cmd.Stdin = in
	out, _ := cmd.StdoutPipe()
	p, err := c.Start(cmd)
	in.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	var lines []string
	for range 3 {
		l, _ := r.ReadString('\n')
		lines = append(lines, strings.TrimSpace(l))
	}
	ns := namespaceOf(p.Init.Process.Pid)
	release.Close()
	if got, err := p.Wait(); got != (Exit{}) || err != nil {
		t.Errorf("Wait = %+v, %v", got, err)
	}
	if lines[0] != strconv.Itoa(os.Getuid()) {
		t.Errorf("the process runs as %q, want Hoist's user %d", lines[0], os.Getuid())
	}
	if pids := strings.Fields(lines[1]); len(pids) > 4 || pids[0] != "1" {
		t.Errorf("the process sees the PIDs %v", pids)
	}
	if lines[2] != "CapEff:\t0000000000000000" {
		t.Errorf("the process has capabilities: %q", lines[2])
	}
	if left := members(ns); len(left) != 0 {
		t.Errorf("processes %v are left", left)
	}
}

// TestInitMemory reports the resident memory of an init (of this test
// binary; docs/fleets.md gives hoist's).
func TestInitMemory(t *testing.T) {
	c := confiner(t)
	cmd := shell("read x")
	in, release, _ := os.Pipe()
	cmd.Stdin = in
	p, err := c.Start(cmd)
	in.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Wait()
	defer release.Close()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(p.Init.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "RssAnon:") || strings.HasPrefix(l, "Threads:") {
			t.Log(strings.Join(strings.Fields(l), " "))
		}
	}
}
