package builds

import (
	"bytes"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hoistgg/hoist/internal/api"
)

// TestS3RefusedLargeBody: aws-sdk-go-v2 sends a large PutObject body
// without waiting for 100 Continue; a refusal must still reach it as the
// S3 error, not as a connection reset (Hoist reads the body it refuses
// before answering).
func TestS3RefusedLargeBody(t *testing.T) {
	h := newHarness(t)
	srv := startHoist(t, h)
	out, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	if err != nil {
		t.Fatal(err)
	}
	c := uploadClient(srv, out.UploadCredentials)
	body := bytes.Repeat([]byte("x"), 4<<20)
	for i := range 15 {
		_, err := c.PutObject(h.ctx, &s3.PutObjectInput{Bucket: aws.String(h.Bucket()),
			Key: aws.String("games/not-this-build.zip"), Body: bytes.NewReader(body)})
		if code := s3Code(err); code != "AccessDenied" {
			t.Fatalf("try %d: %s, want AccessDenied", i, code)
		}
	}
}
