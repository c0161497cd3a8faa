package loadreport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// Hoist is a `hoist serve` a load tool started: the e2e credentials set
// (every signature verified), a new data directory.
type Hoist struct {
	*hoisttest.Process
	// DataDir is Hoist's data directory.
	DataDir string
	dir     string // the temporary directory Stop removes
}

// StartHoist runs bin serve (hoisttest.ServeArgs, tls saying whether the
// TLS listener is on, then extra) with a new data directory in a
// directory named prefix* under parentDir, and waits until it serves.
func StartHoist(bin, parentDir, prefix string, tls bool, extra ...string) (*Hoist, error) {
	dir, err := os.MkdirTemp(parentDir, prefix)
	if err != nil {
		return nil, err
	}
	// Run as root, Hoist and its agents run game servers as an
	// unprivileged user, which must pass through this directory (0700) to
	// reach its instance directory (and through parentDir's parents).
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	h := &Hoist{DataDir: filepath.Join(dir, "data"), dir: dir}
	p, err := hoisttest.Launch("hoist", bin, append(hoisttest.ServeArgs(h.DataDir, tls), extra...), hoisttest.CredentialsEnv(), dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	h.Process = p
	return h, nil
}

// Stop sends SIGINT (which retires the local agent: its game servers end
// with Hoist), waits for Hoist to exit (SIGKILL to its group after 2
// minutes), ends a local agent left over, and removes Hoist's data.
func (h *Hoist) Stop() error {
	err := errors.Join(h.StopWith(syscall.SIGINT, 2*time.Minute), hoisttest.StopLocalAgent(h.DataDir, time.Minute))
	_ = os.RemoveAll(h.dir)
	return err
}

// InstanceLogDirs returns the log directories of a fleet's instances
// (where each game server's output goes) on Hoist's machine (under the
// local agent's directory, with --local-hosting agent, the default, or
// hoist serve's) and under more instances directories (a pool agent's
// <dir>/instances). It fails when it finds none.
func (h *Hoist) InstanceLogDirs(fleetID string, more ...string) ([]string, error) {
	roots := append([]string{filepath.Join(h.DataDir, "local-host", "instances"), filepath.Join(h.DataDir, "instances")}, more...)
	var out []string
	var errs []error
	for _, root := range roots {
		entries, err := os.ReadDir(filepath.Join(root, fleetID))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, filepath.Join(root, fleetID, e.Name(), "logs"))
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// UploadBuild creates a build named name through c (a client of Hoist at
// endpoint), uploads archive with the upload credentials CreateBuild
// returns and waits until the build is READY.
func UploadBuild(ctx context.Context, c *gl.Client, endpoint, name string, archive []byte) (string, error) {
	out, err := c.CreateBuild(ctx, &gl.CreateBuildInput{Name: aws.String(name), Version: aws.String("1"),
		OperatingSystem: types.OperatingSystemAmazonLinux2023})
	if err != nil {
		return "", fmt.Errorf("CreateBuild: %w", err)
	}
	id, up := aws.ToString(out.Build.BuildId), out.UploadCredentials
	s3c := s3.New(s3.Options{Region: hoisttest.Region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(aws.ToString(up.AccessKeyId), aws.ToString(up.SecretAccessKey),
			aws.ToString(up.SessionToken)), RetryMaxAttempts: 1})
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: out.StorageLocation.Bucket, Key: out.StorageLocation.Key,
		Body: bytes.NewReader(archive)}); err != nil {
		return "", fmt.Errorf("uploading the build: %w", err)
	}
	return id, WaitFor(ctx, time.Minute, "build "+id+" READY", func() (bool, string, error) {
		b, err := c.DescribeBuild(ctx, &gl.DescribeBuildInput{BuildId: aws.String(id)})
		if err != nil {
			return false, "", err
		}
		if b.Build.Status == types.BuildStatusFailed {
			return false, "", errors.New("the build FAILED")
		}
		return b.Build.Status == types.BuildStatusReady, string(b.Build.Status), nil
	})
}
