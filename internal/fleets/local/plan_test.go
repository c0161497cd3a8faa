package local

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

func sp(lp, params string, n int32) api.ServerProcess {
	return api.ServerProcess{LaunchPath: api.String(lp), Parameters: api.String(params), ConcurrentExecutions: api.Int32(n)}
}

func TestWants(t *testing.T) {
	rc := api.RuntimeConfiguration{ServerProcesses: []api.ServerProcess{
		sp("/local/game/a", "-x", 2), sp("/local/game/b", "", 1), sp("/local/game/a", "-x", 3), sp("/local/game/a", "-y", 1),
	}}
	got := wants(rc)
	want := []want{{slot{"/local/game/a", "-x"}, 5}, {slot{"/local/game/b", ""}, 1}, {slot{"/local/game/a", "-y"}, 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("wants = %v, want %v", got, want)
	}
	if got := wants(api.RuntimeConfiguration{}); len(got) != 0 {
		t.Fatalf("wants of an empty configuration = %v", got)
	}
}

func TestNextLaunch(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	a, b := slot{"/local/game/a", ""}, slot{"/local/game/b", ""}
	ws := []want{{a, 2}, {b, 1}}
	tests := []struct {
		name string
		in   planInput
		slot slot
		ok   bool
		wait time.Duration
	}{
		{"first launch, nothing running", planInput{Now: now, Wants: ws, Stagger: time.Second}, a, true, 0},
		{"first slot full", planInput{Now: now, Wants: ws, Running: map[slot]int{a: 2}, Stagger: time.Second}, b, true, 0},
		{"all full", planInput{Now: now, Wants: ws, Running: map[slot]int{a: 2, b: 1}}, slot{}, false, 0},
		{"more running than wanted", planInput{Now: now, Wants: ws, Running: map[slot]int{a: 5, b: 3}}, slot{}, false, 0},
		{"stagger not over", planInput{Now: now, Wants: ws, LastLaunch: now.Add(-300 * time.Millisecond), Stagger: time.Second},
			slot{}, false, 700 * time.Millisecond},
		{"stagger over", planInput{Now: now, Wants: ws, LastLaunch: now.Add(-time.Second), Stagger: time.Second}, a, true, 0},
		{"first slot backing off, second free", planInput{Now: now, Wants: ws, NotBefore: map[slot]time.Time{a: now.Add(5 * time.Second)}},
			b, true, 0},
		{"both backing off: the sooner wins", planInput{Now: now, Wants: ws,
			NotBefore: map[slot]time.Time{a: now.Add(5 * time.Second), b: now.Add(2 * time.Second)}}, slot{}, false, 2 * time.Second},
		{"backoff longer than stagger", planInput{Now: now, Wants: ws[:1], LastLaunch: now, Stagger: time.Second,
			NotBefore: map[slot]time.Time{a: now.Add(4 * time.Second)}}, slot{}, false, 4 * time.Second},
		{"stagger longer than backoff", planInput{Now: now, Wants: ws[:1], LastLaunch: now, Stagger: 3 * time.Second,
			NotBefore: map[slot]time.Time{a: now.Add(time.Second)}}, slot{}, false, 3 * time.Second},
		{"backoff over", planInput{Now: now, Wants: ws[:1], NotBefore: map[slot]time.Time{a: now}}, a, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok, wait := nextLaunch(tt.in)
			if s != tt.slot || ok != tt.ok || wait != tt.wait {
				t.Fatalf("nextLaunch = %v, %v, %v; want %v, %v, %v", s, ok, wait, tt.slot, tt.ok, tt.wait)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	base, limit := time.Second, time.Minute
	for failures, want := range []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, time.Minute, time.Minute} {
		if got := backoff(failures, base, limit); got != want {
			t.Errorf("backoff(%d) = %v, want %v", failures, got, want)
		}
	}
	if got := backoff(1000, time.Hour, 24*time.Hour); got != 24*time.Hour {
		t.Errorf("backoff after 1000 failures = %v, want the limit", got)
	}
	if got := backoff(-1, base, limit); got != 0 {
		t.Errorf("backoff(-1) = %v", got)
	}
}

func TestHostPath(t *testing.T) {
	root := filepath.Join("/srv", "inst", "game")
	tests := []struct {
		lp, want, err string
	}{
		{"/local/game/server", root + "/server", ""},
		{"/local/game/bin/server.x86_64", root + "/bin/server.x86_64", ""},
		{"/local/game//bin/./server", root + "/bin/server", ""},
		{"/local/game/bin/", root + "/bin", ""},
		{`C:\game\server.exe`, root + "/server.exe", ""},
		{`c:\GAME\Bin\Server.exe`, root + "/Bin/Server.exe", ""},
		{"/local/game/../etc/passwd", "", "leaves the game directory"},
		{"/local/game/bin/../../x", "", "leaves the game directory"},
		{`C:\game\..\windows\cmd.exe`, "", "leaves the game directory"},
		{"/local/game/", "", "names no file"},
		{"/local/game/.", "", "names no file"},
		{"/local/game", "", "is not under /local/game"},
		{"/local/gamex/server", "", "is not under /local/game"},
		{"/LOCAL/GAME/server", "", "is not under /local/game"},
		{"/opt/game/server", "", "is not under /local/game"},
		{"local/game/server", "", "is not under /local/game"},
		{"server", "", "is not under /local/game"},
		{`D:\game\server.exe`, "", "is not under /local/game"},
		{"C:/game/server.exe", "", "is not under /local/game"},
		{"", "", "is not under /local/game"},
	}
	for _, tt := range tests {
		got, err := hostPath(root, tt.lp)
		switch {
		case tt.err == "" && (err != nil || got != filepath.FromSlash(tt.want)):
			t.Errorf("hostPath(%q) = %q, %v; want %q", tt.lp, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("hostPath(%q) = %q, %v; want an error saying %q", tt.lp, got, err, tt.err)
		}
	}
}

func TestSplitParameters(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{"-port 7777", []string{"-port", "7777"}},
		{"  -a\t-b\n-c  ", []string{"-a", "-b", "-c"}},
		{`-name "two words"`, []string{"-name", "two words"}},
		{`-name 'it is'`, []string{"-name", "it is"}},
		{`'$HOME' "$HOME" $HOME`, []string{"$HOME", "$HOME", "$HOME"}},
		{`a\ b`, []string{"a b"}},
		{`"q\"uote" "back\\slash" "keep\n"`, []string{`q"uote`, `back\slash`, `keep\n`}},
		{`'single \ stays'`, []string{`single \ stays`}},
		{`"" ''`, []string{"", ""}},
		{`pre"mid dle"post`, []string{"premid dlepost"}},
		{`-map=de_dust 'unclosed quote`, []string{"-map=de_dust", "unclosed quote"}},
		{`"unclosed double`, []string{"unclosed double"}},
		{`trailing\`, []string{`trailing\`}},
		{`*.log ; rm -rf / | x`, []string{"*.log", ";", "rm", "-rf", "/", "|", "x"}},
	}
	for _, tt := range tests {
		if got := splitParameters(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitParameters(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestProcessEnv(t *testing.T) {
	inst := []string{"GAMELIFT_SDK_WEBSOCKET_URL=ws://127.0.0.1:9080/sdk", "GAMELIFT_SDK_AUTH_TOKEN=fresh", "HEALTHCHECK_INTERVAL=5"}
	got := processEnv("/opt/bin:/usr/bin", "/data/instances/f/i", inst, "process-1")
	want := []string{"PATH=/opt/bin:/usr/bin", "HOME=/data/instances/f/i",
		"GAMELIFT_SDK_WEBSOCKET_URL=ws://127.0.0.1:9080/sdk", "GAMELIFT_SDK_AUTH_TOKEN=fresh", "HEALTHCHECK_INTERVAL=5",
		"GAMELIFT_SDK_PROCESS_ID=process-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("processEnv =\n %q\nwant\n %q", got, want)
	}
	if slices.Contains(inst, "GAMELIFT_SDK_PROCESS_ID=process-1") {
		t.Fatal("processEnv changed its input")
	}
	if got := baseEnv("", "/h"); !slices.Equal(got, []string{"PATH=" + DefaultPath, "HOME=/h"}) {
		t.Errorf("baseEnv without a PATH = %q", got)
	}
}
