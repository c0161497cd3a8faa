// Package buildstest holds test helpers for build uploads that need a whole
// Hoist: UploadWithCLI runs the real `aws gamelift upload-build` against a
// Hoist base URL (its GameLift API and its S3 upload endpoint both there).
package buildstest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// CLIOptions are the inputs of UploadWithCLI. Empty fields take defaults.
type CLIOptions struct {
	// BuildRoot is the directory to upload (required).
	BuildRoot string
	// Name and Version of the build. Defaults "cli-build" and "1".
	Name, Version string
	// OperatingSystem, when set, is passed as --operating-system.
	OperatingSystem string
	// Region. Default us-west-2.
	Region string
	// AccessKeyID and SecretAccessKey sign the GameLift calls (any pair
	// works against an unauthenticated Hoist). Default a fixed test pair.
	AccessKeyID, SecretAccessKey string
	// Tags, as the CLI's --tags takes them ("Key=Value").
	Tags []string
	// Timeout bounds the CLI run. Default 2 minutes.
	Timeout time.Duration
	// GlobalEndpoint points both the GameLift and the S3 client at baseURL
	// with AWS_ENDPOINT_URL alone, instead of --endpoint-url for GameLift
	// and AWS_ENDPOINT_URL_S3 for S3.
	GlobalEndpoint bool
}

var buildIDLine = regexp.MustCompile(`Build ID: (build-[0-9a-fA-F-]+)`)

// UploadWithCLI runs `aws gamelift upload-build` against the Hoist serving
// baseURL (e.g. http://127.0.0.1:9080): the GameLift calls go to baseURL by
// --endpoint-url, the S3 upload by AWS_ENDPOINT_URL_S3 (or both by
// AWS_ENDPOINT_URL, see CLIOptions.GlobalEndpoint). It returns the
// build ID the CLI printed, and fails t if the CLI fails. It skips t when
// `aws` is not on PATH. The CLI runs with a private HOME and no config
// files, and with the instance metadata service disabled, so it talks only
// to baseURL.
func UploadWithCLI(t testing.TB, baseURL string, o CLIOptions) string {
	t.Helper()
	out, err := RunCLIUpload(t, baseURL, o)
	if err != nil {
		t.Fatalf("aws gamelift upload-build: %v\n%s", err, out)
	}
	m := buildIDLine.FindSubmatch(out)
	if m == nil {
		t.Fatalf("aws gamelift upload-build printed no build ID:\n%s", out)
	}
	return string(m[1])
}

// RunCLIUpload runs `aws gamelift upload-build` like UploadWithCLI and
// returns its combined output and error without judging them (for tests
// that expect a failure, such as a refused archive).
func RunCLIUpload(t testing.TB, baseURL string, o CLIOptions) ([]byte, error) {
	t.Helper()
	aws, err := exec.LookPath("aws")
	if err != nil {
		t.Skip("the aws CLI is not on PATH")
	}
	setDefaults(&o)
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	args := []string{"gamelift", "upload-build", "--region", o.Region,
		"--name", o.Name, "--build-version", o.Version, "--build-root", o.BuildRoot}
	if !o.GlobalEndpoint {
		args = append(args, "--endpoint-url", baseURL)
	}
	if o.OperatingSystem != "" {
		args = append(args, "--operating-system", o.OperatingSystem)
	}
	if len(o.Tags) > 0 {
		args = append(append(args, "--tags"), o.Tags...)
	}
	cmd := exec.CommandContext(ctx, aws, args...)
	cmd.Env = cliEnv(t, baseURL, o)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	return buf.Bytes(), err
}

func setDefaults(o *CLIOptions) {
	if o.Name == "" {
		o.Name = "cli-build"
	}
	if o.Version == "" {
		o.Version = "1"
	}
	if o.Region == "" {
		o.Region = "us-west-2"
	}
	if o.AccessKeyID == "" {
		o.AccessKeyID, o.SecretAccessKey = "AKIAHOISTTESTKEY0001", "hoist-test-secret-key"
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
}

// cliEnv is a minimal environment for the CLI: PATH (to find python),
// a private HOME, credentials, the region and the S3 endpoint.
func cliEnv(t testing.TB, baseURL string, o CLIOptions) []string {
	home := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"AWS_CONFIG_FILE=" + filepath.Join(home, "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "credentials"),
		"AWS_ACCESS_KEY_ID=" + o.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + o.SecretAccessKey,
		"AWS_DEFAULT_REGION=" + o.Region,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_PAGER=",
		"NO_PROXY=127.0.0.1,localhost,::1",
		"PYTHONDONTWRITEBYTECODE=1",
	}
	if o.GlobalEndpoint {
		env = append(env, "AWS_ENDPOINT_URL="+baseURL)
	} else {
		env = append(env, "AWS_ENDPOINT_URL_S3="+baseURL)
	}
	for _, name := range []string{"PYENV_ROOT", "PYENV_VERSION", "LANG", "LC_ALL", "TMPDIR"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}
