package builds

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/builds/s3"
	"github.com/hoistgg/hoist/internal/store"
)

// S3Handler serves the S3 subset build uploads need, path-style, for
// requests under "/" + Bucket() + "/": PutObject, CreateMultipartUpload,
// UploadPart, CompleteMultipartUpload, AbortMultipartUpload, HeadObject
// and DeleteObject. Requests are verified with SigV4 (service s3) against
// the upload credentials Hoist issued (which may write only their build's
// key) or Hoist's API credentials (any key).
func (s *Service) S3Handler() http.Handler { return http.HandlerFunc(s.serveS3) }

func (s *Service) serveS3(w http.ResponseWriter, r *http.Request) {
	reqID := s3.NewRequestID()
	w.Header().Set("x-amz-request-id", reqID)
	w.Header().Set("Server", "Hoist")
	if err := s.dispatchS3(w, r); err != nil {
		s3.DrainRefused(w, r)
		s3.WriteError(w, r, reqID, err, s.log)
	}
}

// s3Handler serves one S3 operation on key.
type s3Handler func(s *Service, w http.ResponseWriter, r *http.Request, a *authResult, key string) error

// s3Handlers are the operations served.
var s3Handlers = map[s3.Operation]s3Handler{
	s3.PutObject:               (*Service).putObject,
	s3.UploadPart:              (*Service).uploadPart,
	s3.CreateMultipartUpload:   (*Service).createMultipart,
	s3.CompleteMultipartUpload: (*Service).completeMultipart,
	s3.AbortMultipartUpload:    (*Service).abortMultipart,
	s3.DeleteObject:            (*Service).deleteObject,
	s3.HeadObject:              (*Service).headObject,
}

func (s *Service) dispatchS3(w http.ResponseWriter, r *http.Request) error {
	key, err := s3.ObjectKey(r, s.bucket)
	if err != nil {
		return err
	}
	name, ok := s3.Classify(r)
	op := s3Handlers[name]
	if !ok || op == nil {
		return s3.ErrNotImplemented(string(name))
	}
	a, err := s.authenticate(r)
	if err != nil {
		return err
	}
	return op(s, w, r, a, key)
}

// target is what an upload to a key writes: a build's archive, or a plain
// object.
type target struct {
	key   string
	build *Record // nil for a plain object
}

// uploadTarget checks that a may upload to key now, before any body is
// read: upload credentials only to their build's key, and a build's key
// only while the build waits for its archive.
func (s *Service) uploadTarget(ctx context.Context, a *authResult, key string) (target, error) {
	if a.cred != nil && key != a.cred.StorageKey {
		return target{}, s3.ErrAccessDenied("These upload credentials may only write %s.", a.cred.StorageKey)
	}
	buildID, isBuildKey := buildIDOfKey(key)
	if !isBuildKey {
		if strings.HasPrefix(key, "builds/") {
			return target{}, s3.ErrAccessDenied("Keys under builds/ are reserved for build archives (builds/<build ID>.zip).")
		}
		return target{key: key}, nil
	}
	r, err := s.get(ctx, buildID)
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return target{}, s3.ErrAccessDenied("Build %s does not exist.", buildID)
	}
	if err != nil {
		return target{}, err
	}
	if err := checkAwaiting(r); err != nil {
		return target{}, err
	}
	return target{key: key, build: r}, nil
}

// checkAwaiting refuses an upload to a build that already has its archive.
func checkAwaiting(r *Record) error {
	if r.Status != api.BuildStatusInitialized || !r.Received.IsZero() {
		return s3.ErrAccessDenied("Build %s already received its archive (status %s); create a new build to upload another.", *r.BuildId, r.Status)
	}
	return nil
}

// buildIDOfKey returns the build whose storage key key is.
func buildIDOfKey(key string) (string, bool) {
	id, ok := strings.CutPrefix(key, "builds/")
	if !ok {
		return "", false
	}
	id, ok = strings.CutSuffix(id, ".zip")
	if !ok || !strings.HasPrefix(id, "build-") || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// storeUpload records a completed upload of blob as t: the build's archive (and
// the build then waits for unpacking), or the plain object (replacing an
// older one). On error the blob is removed.
func (s *Service) storeUpload(ctx context.Context, t target, blob string, size int64, etag string, sums map[string]string) error {
	var old string
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if t.build != nil {
			return receiveArchive(ctx, tx, *t.build.BuildId, blob, s.now())
		}
		var prev objectRecord
		if _, err := store.GetJSON(ctx, tx, KindUploadObject, t.key, &prev); err == nil {
			old = prev.Blob
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		o := objectRecord{Key: t.key, Blob: blob, Host: s.cfg.ReplicaID, Size: size, ETag: etag, Modified: s.now(), Checksums: sums}
		return store.PutJSON(ctx, tx, store.Record{Kind: KindUploadObject, ID: t.key}, o)
	})
	if err != nil {
		s.blobs.remove(blob)
		return err
	}
	s.blobs.remove(old)
	return nil
}

// receiveArchive records that a build's archive arrived as blob.
func receiveArchive(ctx context.Context, tx store.Tx, buildID, blob string, now time.Time) error {
	r, err := Get(ctx, tx, buildID)
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return s3.ErrAccessDenied("Build %s was deleted.", buildID)
	}
	if err != nil {
		return err
	}
	if err := checkAwaiting(r); err != nil {
		return err
	}
	r.Received, r.Archive = now, blob
	return putBuild(ctx, tx, r)
}

// awaitUnpack starts unpacking a build's archive and waits for the outcome
// up to ProcessWait. A refused archive is answered as an error that names
// the reason, so that the uploader (the CLI's upload-build) shows it.
func (s *Service) awaitUnpack(ctx context.Context, buildID string) error {
	done := s.startUnpack(buildID)
	t := time.NewTimer(s.cfg.ProcessWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		return nil
	case <-ctx.Done():
		return nil
	}
	r, err := s.get(ctx, buildID)
	if err != nil || r.Status != api.BuildStatusFailed {
		return nil
	}
	return s3.Errorf(http.StatusBadRequest, "InvalidBuildArchive", "Hoist received the archive but refused it, and build %s is FAILED: %s", buildID, r.StatusReason)
}
