package builds

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

func TestSweep(t *testing.T) {
	h := newHarness(t) // unauthenticated: any key not issued by Hoist is the operator
	srv := startHoist(t, h)
	c := s3Client(srv, "AKIAANYONE", "any", "")
	bucket, key := aws.String(h.Bucket()), aws.String("games/stale.zip")
	cr, err := c.CreateMultipartUpload(h.ctx, &s3.CreateMultipartUploadInput{Bucket: bucket, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(h.ctx, &s3.UploadPartInput{Bucket: bucket, Key: key, UploadId: cr.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("part"))}); err != nil {
		t.Fatal(err)
	}
	out, _ := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	count := func(kind store.Kind) int {
		var n int
		_ = h.cfg.Store.View(h.ctx, func(tx store.Tx) error {
			n, err = tx.Count(h.ctx, store.Query{Kind: kind})
			return err
		})
		return n
	}
	tests := []struct {
		advance               time.Duration
		creds, uploads, blobs int
	}{
		{advance: 0, creds: 1, uploads: 1, blobs: 1},
		{advance: DefaultCredentialsTTL, creds: 0, uploads: 1, blobs: 1},
		{advance: DefaultUploadRetention, creds: 0, uploads: 0, blobs: 0},
	}
	for _, tc := range tests {
		h.clock.Advance(tc.advance)
		if err := h.sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		names, _ := h.blobs.list()
		if c, u := count(KindUploadCredentials), count(KindMultipartUpload); c != tc.creds || u != tc.uploads || len(names) != tc.blobs {
			t.Errorf("after +%v: %d credentials, %d uploads, %d blobs; want %d, %d, %d", tc.advance, c, u, len(names), tc.creds, tc.uploads, tc.blobs)
		}
	}
	if _, _, err := h.lookupCredentials(h.ctx, *out.UploadCredentials.AccessKeyId, *out.UploadCredentials.SessionToken); !errors.Is(err, errUnknownKey) {
		t.Errorf("expired credentials not deleted: %v", err)
	}
}
