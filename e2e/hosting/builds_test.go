//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

//go:build linux

package hosting

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"
	"github.com/aws/smithy-go"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/builds/buildstest"
)

// testBuilds: CreateBuild, the upload with the credentials it returns,
// RequestUploadCredentials, DescribeBuild, ListBuilds, UpdateBuild,
// DeleteBuild, and CreateBuild from an object that is not there.
func testBuilds(t *testing.T, e *env) {
	_, archive := gameServer(t)
	first := e.uploadGameServer(t, "builds-first")
	b := e.waitBuild(t, first, types.BuildStatusReady)
	if aws.ToInt64(b.SizeOnDisk) <= 0 || b.OperatingSystem != types.OperatingSystemAmazonLinux2023 || aws.ToString(b.BuildArn) == "" ||
		aws.ToString(b.Name) != "builds-first" || aws.ToString(b.Version) != "1.0" || b.CreationTime == nil {
		t.Errorf("DescribeBuild: %+v", b)
	}
	_, err := e.gl.RequestUploadCredentials(e.ctx, &gl.RequestUploadCredentialsInput{BuildId: aws.String(first)})
	wantErr[*types.InvalidRequestException](t, "RequestUploadCredentials for a READY build", err)

	// Fresh credentials from RequestUploadCredentials upload the archive;
	// another build's credentials cannot.
	created, err := e.gl.CreateBuild(e.ctx, &gl.CreateBuildInput{Name: aws.String("builds-second"), Version: aws.String("7"),
		OperatingSystem: types.OperatingSystemAmazonLinux2023})
	if err != nil {
		t.Fatalf("CreateBuild: %v", err)
	}
	second := aws.ToString(created.Build.BuildId)
	fresh, err := e.gl.RequestUploadCredentials(e.ctx, &gl.RequestUploadCredentialsInput{BuildId: aws.String(second)})
	if err != nil {
		t.Fatalf("RequestUploadCredentials: %v", err)
	}
	if aws.ToString(fresh.UploadCredentials.AccessKeyId) == aws.ToString(created.UploadCredentials.AccessKeyId) {
		t.Errorf("RequestUploadCredentials returned the same access key")
	}
	other, err := e.gl.CreateBuild(e.ctx, &gl.CreateBuildInput{Name: aws.String("builds-other"), OperatingSystem: types.OperatingSystemAmazonLinux2023})
	if err != nil {
		t.Fatal(err)
	}
	oc := other.UploadCredentials
	// A small body: Hoist refuses an upload without reading its body and
	// closes the connection, and aws-sdk-go-v2 sends a body over 2 MiB with
	// Expect: 100-continue yet without waiting for 100 Continue, so such a
	// refusal sometimes reaches it as a connection reset instead of the
	// S3 error.
	_, err = e.s3Client(aws.ToString(oc.AccessKeyId), aws.ToString(oc.SecretAccessKey), aws.ToString(oc.SessionToken)).
		PutObject(e.ctx, &s3.PutObjectInput{Bucket: fresh.StorageLocation.Bucket, Key: fresh.StorageLocation.Key, Body: bytes.NewReader(archive[:1024])})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied" {
		t.Errorf("uploading to a build's key with another build's credentials: %v, want AccessDenied", err)
	}
	c := fresh.UploadCredentials
	if _, err := e.s3Client(aws.ToString(c.AccessKeyId), aws.ToString(c.SecretAccessKey), aws.ToString(c.SessionToken)).
		PutObject(e.ctx, &s3.PutObjectInput{Bucket: fresh.StorageLocation.Bucket, Key: fresh.StorageLocation.Key, Body: bytes.NewReader(archive)}); err != nil {
		t.Fatalf("PutObject with credentials from RequestUploadCredentials: %v", err)
	}
	e.waitBuild(t, second, types.BuildStatusReady)

	// Lists: by status, in pages, and over JSON 1.1 (v1).
	ready, err := e.gl.ListBuilds(e.ctx, &gl.ListBuildsInput{Status: types.BuildStatusReady})
	if err != nil {
		t.Fatal(err)
	}
	ids := buildIDs(ready.Builds)
	if !slices.Contains(ids, first) || !slices.Contains(ids, second) || slices.Contains(ids, aws.ToString(other.Build.BuildId)) {
		t.Errorf("ListBuilds READY: %v", ids)
	}
	p1, err := e.gl.ListBuilds(e.ctx, &gl.ListBuildsInput{Limit: aws.Int32(1)})
	if err != nil || len(p1.Builds) != 1 || p1.NextToken == nil {
		t.Fatalf("ListBuilds Limit 1: %+v, %v", p1, err)
	}
	p2, err := e.gl.ListBuilds(e.ctx, &gl.ListBuildsInput{Limit: aws.Int32(1), NextToken: p1.NextToken})
	if err != nil || len(p2.Builds) != 1 || aws.ToString(p2.Builds[0].BuildId) == aws.ToString(p1.Builds[0].BuildId) {
		t.Errorf("ListBuilds page 2: %+v, %v", p2, err)
	}
	v1, err := e.h.V1().ListBuildsWithContext(e.ctx, &glv1.ListBuildsInput{Status: awsv1.String("INITIALIZED")})
	if err != nil {
		t.Fatalf("ListBuilds (v1): %v", err)
	}
	found := false
	for _, vb := range v1.Builds {
		found = found || awsv1.StringValue(vb.BuildId) == aws.ToString(other.Build.BuildId)
	}
	if !found {
		t.Errorf("ListBuilds INITIALIZED (v1) misses %s", aws.ToString(other.Build.BuildId))
	}

	up, err := e.gl.UpdateBuild(e.ctx, &gl.UpdateBuildInput{BuildId: aws.String(second), Name: aws.String("renamed"), Version: aws.String("8")})
	if err != nil || aws.ToString(up.Build.Name) != "renamed" || aws.ToString(up.Build.Version) != "8" {
		t.Errorf("UpdateBuild: %+v, %v", up, err)
	}
	if got := e.waitBuild(t, second, types.BuildStatusReady); aws.ToString(got.Name) != "renamed" {
		t.Errorf("DescribeBuild after UpdateBuild: name %q", aws.ToString(got.Name))
	}

	for _, id := range []string{second, aws.ToString(other.Build.BuildId)} {
		if _, err := e.gl.DeleteBuild(e.ctx, &gl.DeleteBuildInput{BuildId: aws.String(id)}); err != nil {
			t.Fatalf("DeleteBuild %s: %v", id, err)
		}
		_, err = e.gl.DescribeBuild(e.ctx, &gl.DescribeBuildInput{BuildId: aws.String(id)})
		wantErr[*types.NotFoundException](t, "DescribeBuild of a deleted build", err)
	}
	_, err = e.gl.CreateBuild(e.ctx, &gl.CreateBuildInput{Name: aws.String("nothing"), OperatingSystem: types.OperatingSystemAmazonLinux2023, StorageLocation: &types.S3Location{
		Bucket: aws.String("hoist-builds-" + hoisttest.Region), Key: aws.String("games/none.zip"), RoleArn: aws.String("arn:aws:iam::1:role/x")}})
	wantErr[*types.InvalidRequestException](t, "CreateBuild from an object that does not exist", err)

	// GameLift has no default operating system: CreateBuild without one is
	// refused (Hoist took AMAZON_LINUX_2023 before).
	_, err = e.gl.CreateBuild(e.ctx, &gl.CreateBuildInput{Name: aws.String("no-os")})
	wantErr[*types.InvalidRequestException](t, "CreateBuild without OperatingSystem", err)
}

func buildIDs(bs []types.Build) []string {
	var out []string
	for _, b := range bs {
		out = append(out, aws.ToString(b.BuildId))
	}
	return out
}

// testCLIUpload: the build directory uploaded with `aws gamelift
// upload-build` runs on a fleet (skipped without the aws CLI).
func testCLIUpload(t *testing.T, e *env) {
	dir, _ := gameServer(t)
	id := buildstest.UploadWithCLI(t, e.h.URL, buildstest.CLIOptions{BuildRoot: dir, Name: "cli", Region: hoisttest.Region,
		AccessKeyID: hoisttest.AccessKeyID, SecretAccessKey: hoisttest.SecretAccessKey, OperatingSystem: "AMAZON_LINUX_2023"})
	e.waitBuild(t, id, types.BuildStatusReady)
	fleetID := e.newFleet(t, fleetSpec{name: "cli", build: id})
	e.createGameSession(t, fleetID, 1)
	e.deleteFleet(t, fleetID)
}

// testDeletedBuild: DeleteBuild does not affect a fleet created from the
// build (as on GameLift): the fleet still scales out to 2 instances, and
// the build's files are removed once the fleet is deleted. Before, the
// files went with the build and the fleet stayed at one instance.
func testDeletedBuild(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "deleted-build")
	fleetID := e.newFleet(t, fleetSpec{name: "deleted-build", build: buildID})
	if _, err := e.gl.DeleteBuild(e.ctx, &gl.DeleteBuildInput{BuildId: aws.String(buildID)}); err != nil {
		t.Fatalf("DeleteBuild: %v", err)
	}
	_, err := e.gl.DescribeBuild(e.ctx, &gl.DescribeBuildInput{BuildId: aws.String(buildID)})
	wantErr[*types.NotFoundException](t, "DescribeBuild of a deleted build", err)
	_, err = e.gl.CreateFleet(e.ctx, &gl.CreateFleetInput{Name: aws.String("from-deleted"), BuildId: aws.String(buildID),
		EC2InstanceType: types.EC2InstanceTypeC5Large, RuntimeConfiguration: &types.RuntimeConfiguration{
			ServerProcesses: []types.ServerProcess{{LaunchPath: aws.String(gameServerLaunchPath), ConcurrentExecutions: aws.Int32(1)}}}})
	wantErr[*types.NotFoundException](t, "CreateFleet from a deleted build", err)

	if _, err := e.gl.UpdateFleetCapacity(e.ctx, &gl.UpdateFleetCapacityInput{FleetId: aws.String(fleetID),
		DesiredInstances: aws.Int32(2), MinSize: aws.Int32(0), MaxSize: aws.Int32(2)}); err != nil {
		t.Fatalf("UpdateFleetCapacity: %v", err)
	}
	e.waitInstances(t, fleetID, 2)
	waitPIDs(t, fleetID, 2)

	files := filepath.Join(e.h.DataDir, "builds", buildID)
	if _, err := os.Stat(files); err != nil {
		t.Fatalf("the deleted build's files are gone while its fleet runs: %v", err)
	}
	e.deleteFleet(t, fleetID)
	eventually(t, waitShort, "the deleted build's files removed after its fleet", func() (bool, string) {
		_, err := os.Stat(files)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
}
