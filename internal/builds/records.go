package builds

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// Record kinds private to builds (hosting.KindBuild is the shared one).
const (
	// KindUploadCredentials: temporary upload credentials. ID = access key
	// ID, Parent = build ID. See credRecord.
	KindUploadCredentials store.Kind = "BuildUploadCredentials"
	// KindUploadObject: a completed object in Hoist's bucket that is not a
	// build's own archive (uploaded with Hoist's API credentials for
	// CreateBuild with a StorageLocation). ID = object key. See objectRecord.
	KindUploadObject store.Kind = "UploadObject"
	// KindMultipartUpload: a multipart upload in progress. ID = upload ID,
	// Parent = object key. See uploadRecord.
	KindMultipartUpload store.Kind = "MultipartUpload"
	// KindUploadPart: one uploaded part. ID = upload ID + "/" + the part
	// number as 5 digits, Parent = upload ID. See partRecord.
	KindUploadPart store.Kind = "MultipartUploadPart"
)

// Record is a build as stored: Kind hosting.KindBuild, ID = build ID,
// Key = string(Status). Its JSON is the api.Build as on the AWS JSON 1.1
// wire (BuildId, BuildArn, Name, Version, Status, SizeOnDisk,
// OperatingSystem, ServerSdkVersion, CreationTime) with Hoist's own fields,
// all prefixed "hoist", beside them: decoding the record's Data into an
// api.Build reads the build, and Get reads the whole Record.
type Record struct {
	api.Build
	// StorageKey is the key of the build's archive in Hoist's bucket.
	StorageKey string `json:"hoistStorageKey"`
	// StatusReason says why a FAILED build failed (GameLift's Build has no
	// such field; fleets put it in the error for CreateFleet on the build).
	StatusReason string `json:"hoistStatusReason,omitempty"`
	// Received is when the archive arrived; once set, the build takes no
	// other upload.
	Received time.Time `json:"hoistReceived,omitzero"`
	// Archive is the blob holding the received archive until it is
	// unpacked.
	Archive string `json:"hoistArchive,omitempty"`
	// Host is the replica whose data directory holds the archive and the
	// unpacked build.
	Host string `json:"hoistHost,omitempty"`
	// Dir is the unpacked build's directory on Host (READY builds).
	Dir string `json:"hoistDir,omitempty"`
	// FromObject: the build was created from a StorageLocation. Its
	// SizeOnDisk stays 0, as on GameLift.
	FromObject bool `json:"hoistFromObject,omitempty"`
}

// Get reads a build record in tx; fleets call it to check a build in the
// transaction that creates a fleet. It returns an *api.NotFoundException
// for an unknown build ID (or ARN).
func Get(ctx context.Context, tx store.Tx, buildID string) (*Record, error) {
	id := buildIDOf(buildID)
	r := new(Record)
	if _, err := store.GetJSON(ctx, tx, hosting.KindBuild, id, r); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, api.NewNotFoundException("Build %s not found", buildID)
		}
		return nil, err
	}
	return r, nil
}

func putBuild(ctx context.Context, tx store.Tx, r *Record) error {
	return store.PutJSON(ctx, tx, store.Record{Kind: hosting.KindBuild, ID: *r.BuildId, Key: string(r.Status)}, r)
}

// credRecord holds one set of upload credentials. The session token is
// never stored: TokenHash is its SHA-256, and the secret access key is
// sealed (AES-256-GCM) under a key derived from the token, so neither a
// copy of the store nor a captured request alone lets anyone sign uploads.
type credRecord struct {
	BuildID    string    `json:"buildId"`
	TokenHash  string    `json:"tokenHash"`
	SealedKey  []byte    `json:"sealedKey"`
	Expires    time.Time `json:"expires"`
	StorageKey string    `json:"storageKey"`
}

// objectRecord is a completed object in Hoist's bucket.
type objectRecord struct {
	Key       string            `json:"key"`
	Blob      string            `json:"blob"`
	Host      string            `json:"host"`
	Size      int64             `json:"size"`
	ETag      string            `json:"etag"`
	Modified  time.Time         `json:"modified"`
	Checksums map[string]string `json:"checksums,omitempty"`
}

// uploadRecord is a multipart upload in progress.
type uploadRecord struct {
	UploadID string `json:"uploadId"`
	Key      string `json:"key"`
	// BuildID is set when Key is a build's storage key.
	BuildID string `json:"buildId,omitempty"`
	// AccessKeyID started the upload; parts and completion must come from
	// credentials of the same build (or from Hoist's API credentials).
	AccessKeyID string    `json:"accessKeyId"`
	Host        string    `json:"host"`
	Created     time.Time `json:"created"`
	// ChecksumAlgorithm is the x-amz-checksum-algorithm given at creation.
	ChecksumAlgorithm string `json:"checksumAlgorithm,omitempty"`
}

// partRecord is one uploaded part of a multipart upload.
type partRecord struct {
	Number    int               `json:"number"`
	Blob      string            `json:"blob"`
	Size      int64             `json:"size"`
	ETag      string            `json:"etag"`
	Checksums map[string]string `json:"checksums,omitempty"`
}

func partID(uploadID string, n int) string { return fmt.Sprintf("%s/%05d", uploadID, n) }

// deleteChildren deletes every record of kind whose Parent is parent and
// returns them.
func deleteChildren(ctx context.Context, tx store.Tx, kind store.Kind, parent string) ([]store.Record, error) {
	recs, _, err := tx.List(ctx, store.Query{Kind: kind, Parent: parent, HasParent: true})
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if err := tx.Delete(ctx, kind, r.ID); err != nil {
			return nil, err
		}
	}
	return recs, nil
}
