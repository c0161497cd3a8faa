package builds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/builds/buildstest"
)

// writeTree writes files (path -> content; a trailing "*" in the path
// makes the file executable) under a new directory.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if n, ok := strings.CutSuffix(name, "*"); ok {
			name, mode = n, 0o755
		}
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestCLIUploadBuild runs the real `aws gamelift upload-build` (skipped
// without the CLI) against the build operations and the S3 endpoint.
func TestCLIUploadBuild(t *testing.T) {
	tests := map[string]struct {
		files  map[string]string
		global bool
		large  bool
	}{
		"single PutObject, AWS_ENDPOINT_URL_S3": {files: map[string]string{"bin/server*": "#!/bin/sh\n", "data/a.txt": "data"}},
		"single PutObject, AWS_ENDPOINT_URL":    {files: map[string]string{"server*": "#!/bin/sh\n"}, global: true},
		"multipart":                             {files: map[string]string{"bin/server*": "#!/bin/sh\n"}, large: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			srv := startHoist(t, h)
			root := writeTree(t, tc.files)
			var payload []byte
			if tc.large {
				_, payload = bigArchive(t, 9<<20) // random, so the zip needs two 8 MiB parts
				if err := os.WriteFile(filepath.Join(root, "payload.bin"), payload, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			id := buildstest.UploadWithCLI(t, srv.URL, buildstest.CLIOptions{
				BuildRoot: root, Name: "cli", Version: "7", OperatingSystem: "AMAZON_LINUX_2023",
				Tags: []string{"team=core"}, GlobalEndpoint: tc.global,
			})
			d, err := h.DescribeBuild(h.ctx, &api.DescribeBuildInput{BuildId: &id})
			if err != nil || d.Build.Status != api.BuildStatusReady || *d.Build.Name != "cli" || *d.Build.Version != "7" {
				t.Fatalf("build %+v, %v", d, err)
			}
			dir, _ := h.BuildDir(h.ctx, id)
			st, err := os.Stat(filepath.Join(dir, "bin", "server"))
			if tc.files["bin/server*"] != "" && (err != nil || st.Mode()&0o100 == 0) {
				t.Errorf("bin/server lost its executable bit: %v %v", st, err)
			}
			if tc.large {
				got, err := os.ReadFile(filepath.Join(dir, "payload.bin"))
				if err != nil || string(got) != string(payload) {
					t.Errorf("payload.bin differs: %d bytes, %v", len(got), err)
				}
			}
		})
	}
}

// TestCLIRefusedArchive checks that the CLI shows why an archive was
// refused.
func TestCLIRefusedArchive(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.MaxEntries = 2 })
	srv := startHoist(t, h)
	root := writeTree(t, map[string]string{"a": "1", "b": "2", "c": "3"})
	out, err := buildstest.RunCLIUpload(t, srv.URL, buildstest.CLIOptions{BuildRoot: root, OperatingSystem: "AMAZON_LINUX_2023"})
	if err == nil || !strings.Contains(string(out), "InvalidBuildArchive") || !strings.Contains(string(out), "the limit is 2") {
		t.Fatalf("CLI: %v\n%s", err, out)
	}
	list, _ := h.ListBuilds(h.ctx, &api.ListBuildsInput{Status: api.BuildStatusFailed})
	if len(list.Builds) != 1 {
		t.Fatalf("FAILED builds: %+v", list.Builds)
	}
}
