package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/smithy-go"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/netns"
)

// BaseEnv names the local image the container test builds on, in place of
// the Containerfile's default (debian:bookworm-slim, from a registry the
// tests may not reach). CONTRIBUTING.md says how to make one.
const BaseEnv = "HOIST_TEST_CONTAINER_BASE"

// defaultBase is the image the test builds on when BaseEnv is unset.
const defaultBase = "localhost/hoist-test-base:bookworm"

// imageUID is the account the image runs Hoist as (the Containerfile's USER).
const imageUID = 10001

// TestContainerImage builds deploy/container/Containerfile with buildah
// from the release binary (tools/release -archive=false) and runs it:
// the image runs hoist serve as UID 10001 with /var/lib/hoist its volume;
// without credentials Hoist refuses to listen beyond loopback and exits;
// with them, in a network namespace of the test's own, it serves the API
// on the namespace's address to a signed client from outside (and refuses
// a wrong secret), keeping its data in the volume.
func TestContainerImage(t *testing.T) {
	base := containerPrerequisites(t)
	image := buildImage(t, base)
	cfg := imageConfig(t, image)
	if cfg.User != "10001:10001" || !slices.Equal(append(cfg.Entrypoint, cfg.Cmd...), []string{"/usr/local/bin/hoist", "serve"}) {
		t.Errorf("image runs %q %q as %q, want /usr/local/bin/hoist serve as 10001:10001", cfg.Entrypoint, cfg.Cmd, cfg.User)
	}
	if _, ok := cfg.Volumes["/var/lib/hoist"]; !ok || !slices.Contains(cfg.Env, "HOIST_DATA_DIR=/var/lib/hoist") {
		t.Errorf("image volumes %v, environment %q: want the data directory /var/lib/hoist a volume", cfg.Volumes, cfg.Env)
	}
	ctr := buildah(t, "from", "--pull=never", image)
	t.Cleanup(func() { _, _ = exec.Command("buildah", "rm", ctr).CombinedOutput() })

	if out := buildah(t, "run", "--isolation", "chroot", ctr, "--", "/usr/local/bin/hoist", "--version"); out != "hoist "+testVersion {
		t.Errorf("hoist --version in the image: %q, want %q", out, "hoist "+testVersion)
	}
	if out := buildah(t, "run", "--isolation", "chroot", ctr, "--", "id", "-u"); out != "10001" {
		t.Errorf("the image runs as UID %s, want %d", out, imageUID)
	}
	out, err := exec.Command("buildah", append([]string{"run", "--isolation", "chroot", ctr, "--"}, cfg.command()...)...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to listen on 0.0.0.0:9080 without credentials") {
		t.Errorf("hoist serve without credentials: %v\n%s\nwant it refused", err, out)
	}
	serveInNamespace(t, ctr, cfg)
}

// testVersion is the version the test's release build is stamped with.
const testVersion = "v0.0.0-test.image"

// containerPrerequisites skips the test unless it can build and run the
// image here, and returns the base image to build on.
func containerPrerequisites(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("the image is built for linux/amd64 and linux/arm64, and run here: not on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if os.Geteuid() != 0 {
		t.Skip("buildah's chroot isolation needs root: run as root to build and run the image")
	}
	if _, err := exec.LookPath("buildah"); err != nil {
		t.Skip("buildah is not installed (Debian: apt-get install buildah): the container image is not built")
	}
	base := os.Getenv(BaseEnv)
	if base == "" {
		base = defaultBase
	}
	if out, err := exec.Command("buildah", "inspect", "--type", "image", base).CombinedOutput(); err != nil {
		t.Skipf("no base image %s in buildah's storage (set %s to another, or make it as CONTRIBUTING.md says): %v\n%s", base, BaseEnv, err, out)
	}
	netns.Require(t)
	return base
}

// buildImage runs the release tool for this machine's Linux target into a
// build context and builds the Containerfile there on base; the image is
// removed when the test ends.
func buildImage(t *testing.T, base string) string {
	t.Helper()
	dist := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rel := exec.CommandContext(ctx, "go", "run", "./tools/release", "-version", testVersion,
		"-targets", "linux/"+runtime.GOARCH, "-archive=false", "-out", dist)
	rel.Dir = hoisttest.RepoRoot()
	if out, err := rel.CombinedOutput(); err != nil {
		t.Fatalf("tools/release: %v\n%s", err, out)
	}
	image := "localhost/hoist-test-" + randomHex(t) + ":" + testVersion
	buildah(t, "build", "--isolation", "chroot", "--pull=never", "--layers=false",
		"-f", filepath.Join(hoisttest.RepoRoot(), "deploy", "container", "Containerfile"),
		"--build-arg", "BASE="+base, "--build-arg", "VERSION="+testVersion, "-t", image, dist)
	t.Cleanup(func() { _, _ = exec.Command("buildah", "rmi", image).CombinedOutput() })
	return image
}

// ociConfig is the part of an image's OCI configuration the test reads.
type ociConfig struct {
	User       string
	Env        []string
	Entrypoint []string
	Cmd        []string
	WorkingDir string
	Volumes    map[string]struct{}
}

// command is what a runtime runs: the entrypoint followed by the command.
func (c ociConfig) command() []string { return append(slices.Clone(c.Entrypoint), c.Cmd...) }

// imageConfig reads an image's OCI configuration.
func imageConfig(t *testing.T, image string) ociConfig {
	t.Helper()
	var info struct {
		OCIv1 struct {
			Config ociConfig `json:"config"`
		}
	}
	out := buildah(t, "inspect", "--type", "image", image)
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("buildah inspect %s: %v\n%s", image, err, out)
	}
	return info.OCIv1.Config
}

// serveInNamespace runs the image's command with credentials in a network
// namespace the test creates, the volume a directory of the test's, and
// calls it from outside the namespace.
func serveInNamespace(t *testing.T, ctr string, cfg ociConfig) {
	t.Helper()
	host := netns.New(t, 1).Hosts[0]
	vol := t.TempDir()
	if err := os.Chown(vol, imageUID, imageUID); err != nil {
		t.Fatal(err)
	}
	args := []string{"netns", "exec", host.Name, "buildah", "run", "--isolation", "chroot",
		"-v", vol + ":/var/lib/hoist", "-e", hoisttest.CredentialsEnv()[0],
		"-e", hoisttest.ReadyEnv + "=/var/lib/hoist/ready.json", ctr, "--"}
	p, err := hoisttest.Launch("hoist in the container", "ip", append(args, cfg.command()...), nil, vol)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	}()
	if p.URL != "http://[::]:9080" {
		t.Errorf("the image's Hoist listens on %s, want every address, port 9080", p.URL)
	}
	endpoint := "http://" + host.Addr.String() + ":9080"
	ctx := hoisttest.Context(t, time.Minute)
	client := hoisttest.NewV2(endpoint, hoisttest.AccessKeyID, hoisttest.SecretAccessKey)
	if _, err := client.ListFleets(ctx, &gl.ListFleetsInput{}); err != nil {
		t.Errorf("ListFleets from outside the namespace, signed: %v\n%s", err, p.LogTail(20))
	}
	wrong := hoisttest.NewV2(endpoint, hoisttest.AccessKeyID, "not-the-secret")
	_, err = wrong.ListFleets(ctx, &gl.ListFleetsInput{})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Errorf("ListFleets with a wrong secret: %v, want refused", err)
	}
	noProxy := &http.Client{Timeout: time.Minute, Transport: &http.Transport{Proxy: nil}}
	if resp, err := noProxy.Get(endpoint + "/hoist/ready"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /hoist/ready: %v, %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if st, err := os.Stat(filepath.Join(vol, "store")); err != nil || st.Sys().(*syscall.Stat_t).Uid != imageUID {
		t.Errorf("the volume's store/: %v; want it made by UID %d", err, imageUID)
	}
}

// buildah runs buildah with args and returns its output, trimmed; an
// error fails the test.
func buildah(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "buildah", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("buildah %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// randomHex is 8 random hex digits, to name what the test makes.
func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
