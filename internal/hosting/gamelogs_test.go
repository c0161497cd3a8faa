package hosting

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestGameRelative(t *testing.T) {
	tests := map[string]struct {
		in   string
		want string
		ok   bool
	}{
		"relative":       {"logs/server.log", "logs/server.log", true},
		"game mount":     {"/local/game/logs", "logs", true},
		"cleaned":        {"logs/../out.log", "out.log", true},
		"other absolute": {"/var/log/syslog", "", false},
		"escape":         {"../secret", "", false},
		"mount escape":   {"/local/game/../../etc/passwd", "", false},
		"root":           {".", "", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := GameRelative(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("GameRelative(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestWalkGameLogs: every file of the named paths under the root, none
// outside it (a path escaping it is reported), a missing one skipped, and
// fs.SkipAll from visit ends the walk.
func TestWalkGameLogs(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{"logs/a.log": "a", "logs/sub/b.log": "b", "other.log": "o"} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "logs", "link.log")); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := WalkGameLogs(root, []string{"/local/game/logs", "missing.log", "../escape"}, func(name string, r io.Reader) error {
		b, _ := io.ReadAll(r)
		got = append(got, name+"="+string(b))
		return nil
	})
	slices.Sort(got)
	if want := []string{"files/logs/a.log=a", "files/logs/sub/b.log=b"}; !slices.Equal(got, want) {
		t.Errorf("walked %q, want %q", got, want)
	}
	if err == nil {
		t.Error("the escaping log path was not reported")
	}
	got = nil
	_ = WalkGameLogs(root, []string{"logs", "other.log"}, func(name string, r io.Reader) error {
		got = append(got, name)
		return fs.SkipAll
	})
	if len(got) != 1 {
		t.Errorf("after fs.SkipAll the walk went on: %q", got)
	}
}
