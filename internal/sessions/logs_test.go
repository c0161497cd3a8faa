package sessions

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLogCollection(t *testing.T) {
	h := newHarness(t)
	root, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(root, "logs", "server.log"), "server")
	write(t, filepath.Join(root, "logs", "sub", "match.log"), "match")
	write(t, filepath.Join(root, "extra.log"), "extra")
	write(t, filepath.Join(outside, "secret"), "secret")
	write(t, filepath.Join(outside, "stdout"), "hello from stdout")
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "logs", "leak.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link.log")); err != nil {
		t.Fatal(err)
	}
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2", func(c *hosting.Compute) { c.GameRoot = root })
	h.must(h.svc.ProcessLaunched(h.ctx, hosting.Process{ID: "proc-1", FleetID: "fleet-1", ComputeName: "i-1",
		Location: "us-west-2", OutputPath: filepath.Join(outside, "stdout")}))
	c := conn("fleet-1", "i-1", "proc-1")
	h.must(h.sdk.Connected(h.ctx, c))
	h.must(h.sdk.ProcessReady(h.ctx, c, 7777, []string{"logs", "/local/game/extra.log", "/local/game/link.log",
		"/etc/passwd", "../secret", "missing.log"}))
	gs, err := h.create("fleet-1")
	h.must(err)
	id := api.ToString(gs.GameSessionId)
	h.must(h.sdk.ActivateGameSession(h.ctx, c, id))

	_, err = h.svc.GetGameSessionLogUrl(h.ctx, &api.GetGameSessionLogUrlInput{GameSessionId: &id})
	wantCode(t, err, "NotFoundException")
	h.must(h.sdk.ProcessEnding(h.ctx, c))
	h.must(h.svc.ProcessExited(h.ctx, "proc-1", 0, ""))

	out, err := h.svc.GetGameSessionLogUrl(h.ctx, &api.GetGameSessionLogUrlInput{GameSessionId: &id})
	h.must(err)
	if u := api.ToString(out.PreSignedUrl); u != "http://127.0.0.1:9080/hoist/logs/"+id {
		t.Fatalf("URL = %s", u)
	}
	var buf bytes.Buffer
	h.must(h.svc.WriteLogArchive(h.ctx, &buf, id))
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	h.must(err)
	got := map[string]string{}
	for _, f := range zr.File {
		r, err := f.Open()
		h.must(err)
		b, err := io.ReadAll(r)
		h.must(err)
		got[f.Name] = string(b)
	}
	want := map[string]string{
		"files/logs/server.log":    "server",
		"files/logs/sub/match.log": "match",
		"files/extra.log":          "extra",
		"process-output.log":       "hello from stdout",
	}
	if !reflect.DeepEqual(got, want) {
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range got {
				if !yield(k) {
					return
				}
			}
		})
		t.Fatalf("archive holds %v\nwant %v", names, want)
	}
}

func TestLogCollectionElsewhere(t *testing.T) {
	h := newHarness(t)
	root := t.TempDir()
	write(t, filepath.Join(root, "server.log"), "server")
	h.addFleet("fleet-1")
	// The compute's files are on another replica: nothing is collected here.
	h.addCompute("fleet-1", "i-1", "us-west-2", func(c *hosting.Compute) { c.GameRoot, c.Host = root, "r2" })
	c := conn("fleet-1", "i-1", "proc-1")
	h.must(h.sdk.Connected(h.ctx, c))
	h.must(h.sdk.ProcessReady(h.ctx, c, 7777, []string{"server.log"}))
	gs, err := h.create("fleet-1")
	h.must(err)
	h.must(h.svc.ProcessExited(h.ctx, "proc-1", 1, ""))
	_, err = h.svc.GetGameSessionLogUrl(h.ctx, &api.GetGameSessionLogUrlInput{GameSessionId: gs.GameSessionId})
	wantCode(t, err, "NotFoundException")
}

func TestLogLimits(t *testing.T) {
	dir := t.TempDir()
	dst, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	lc := &logCopier{dst: dst, maxFile: 4, maxTotal: 6, maxFiles: 3}
	steps := []struct {
		name, content, want string
		err                 error
	}{
		{"a/1.log", "123456", "1234", nil}, // cut at maxFile
		{"2.log", "abc", "ab", nil},        // cut at maxTotal
		{"3.log", "x", "", errLogLimit},    // total reached
	}
	for _, st := range steps {
		err := lc.copy(st.name, bytes.NewReader([]byte(st.content)))
		if err != st.err {
			t.Fatalf("copy %s: %v, want %v", st.name, err, st.err)
		}
		if st.err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, st.name))
		if err != nil || string(b) != st.want {
			t.Fatalf("%s = %q (%v), want %q", st.name, b, err, st.want)
		}
	}
}
