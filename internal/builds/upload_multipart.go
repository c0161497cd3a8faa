package builds

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/hoistgg/hoist/internal/builds/s3"
	"github.com/hoistgg/hoist/internal/store"
)

// maxParts is S3's largest part number.
const maxParts = 10_000

// createMultipart starts a multipart upload.
func (s *Service) createMultipart(w http.ResponseWriter, r *http.Request, a *authResult, key string) error {
	ctx := r.Context()
	t, err := s.uploadTarget(ctx, a, key)
	if err != nil {
		return err
	}
	up := uploadRecord{
		UploadID:          newBlobName() + newBlobName(),
		Key:               key,
		AccessKeyID:       a.accessKeyID,
		Host:              s.cfg.ReplicaID,
		Created:           s.now(),
		ChecksumAlgorithm: strings.ToUpper(r.Header.Get("x-amz-checksum-algorithm")),
	}
	if t.build != nil {
		up.BuildID = *t.build.BuildId
	}
	err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if err := s.checkOpenUploads(ctx, tx, key); err != nil {
			return err
		}
		return store.PutJSON(ctx, tx, store.Record{Kind: KindMultipartUpload, ID: up.UploadID, Parent: key}, up)
	})
	if err != nil {
		return err
	}
	if up.ChecksumAlgorithm != "" {
		w.Header().Set("x-amz-checksum-algorithm", up.ChecksumAlgorithm)
	}
	s3.WriteXML(w, http.StatusOK, s3.InitiateResult{Xmlns: s3.Namespace, Bucket: s.bucket, Key: key, UploadID: up.UploadID})
	return nil
}

// checkOpenUploads refuses a new multipart upload of key when
// Limits.MaxOpenUploads of its uploads are unfinished (each may hold up to
// the archive size limit in parts).
func (s *Service) checkOpenUploads(ctx context.Context, tx store.Tx, key string) error {
	open := 0
	err := store.Each(ctx, tx, store.Query{Kind: KindMultipartUpload, Parent: key, HasParent: true}, func(store.Record) error {
		open++
		return nil
	})
	if err != nil || open < s.lim.MaxOpenUploads {
		return err
	}
	return s3.Errorf(http.StatusBadRequest, "InvalidRequest",
		"%s already has %d unfinished multipart uploads (the limit); complete or abort one (AbortMultipartUpload) first.", key, open)
}

// getUpload reads a multipart upload of key that a may act on.
func (s *Service) getUpload(ctx context.Context, tx store.Tx, a *authResult, key, uploadID string) (*uploadRecord, error) {
	var up uploadRecord
	_, err := store.GetJSON(ctx, tx, KindMultipartUpload, uploadID, &up)
	if errors.Is(err, store.ErrNotFound) || err == nil && up.Key != key {
		return nil, s3.ErrNoSuchUpload()
	}
	if err != nil {
		return nil, err
	}
	if a.cred != nil && a.cred.BuildID != up.BuildID {
		return nil, s3.ErrAccessDenied("These upload credentials may only write %s.", a.cred.StorageKey)
	}
	if up.Host != s.cfg.ReplicaID {
		return nil, s3.Errorf(http.StatusServiceUnavailable, "ServiceUnavailable", "This multipart upload is held by another Hoist replica.")
	}
	return &up, nil
}

// uploadPart stores one part.
func (s *Service) uploadPart(w http.ResponseWriter, r *http.Request, a *authResult, key string) error {
	ctx := r.Context()
	q := r.URL.Query()
	n, err := strconv.Atoi(q.Get("partNumber"))
	if err != nil || n < 1 || n > maxParts {
		return s3.ErrInvalidArgument("Part number must be an integer between 1 and %d, inclusive.", maxParts)
	}
	uploadID := q.Get("uploadId")
	var others int64 // bytes of the upload's other parts
	err = s.cfg.Store.View(ctx, func(tx store.Tx) error {
		if _, err := s.getUpload(ctx, tx, a, key, uploadID); err != nil {
			return err
		}
		return store.Each(ctx, tx, store.Query{Kind: KindUploadPart, Parent: uploadID, HasParent: true}, func(rec store.Record) error {
			var p partRecord
			if err := store.Decode(rec, &p); err != nil || p.Number == n {
				return err
			}
			others += p.Size
			return nil
		})
	})
	if err != nil {
		return err
	}
	got, err := s.receiveBody(r, a, max(s.lim.MaxArchiveSize-others, 0))
	if err != nil {
		return err
	}
	part := partRecord{Number: n, Blob: got.blob, Size: got.size, ETag: got.d.ETag(), Checksums: got.d.Sums()}
	old, err := s.putPart(ctx, a, key, uploadID, part)
	if err != nil {
		s.blobs.remove(got.blob)
		return err
	}
	s.blobs.remove(old)
	w.Header().Set("ETag", part.ETag)
	s3.SetChecksumHeaders(w, part.Checksums)
	w.WriteHeader(http.StatusOK)
	return nil
}

// putPart records a part (replacing one of the same number) and returns
// the blob of the part it replaced.
func (s *Service) putPart(ctx context.Context, a *authResult, key, uploadID string, part partRecord) (string, error) {
	var old string
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if _, err := s.getUpload(ctx, tx, a, key, uploadID); err != nil {
			return err
		}
		id := partID(uploadID, part.Number)
		var prev partRecord
		if _, err := store.GetJSON(ctx, tx, KindUploadPart, id, &prev); err == nil {
			old = prev.Blob
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return store.PutJSON(ctx, tx, store.Record{Kind: KindUploadPart, ID: id, Parent: uploadID}, part)
	})
	return old, err
}

// abortMultipart discards an upload and its parts.
func (s *Service) abortMultipart(w http.ResponseWriter, r *http.Request, a *authResult, key string) error {
	ctx := r.Context()
	uploadID := r.URL.Query().Get("uploadId")
	var blobs []string
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if _, err := s.getUpload(ctx, tx, a, key, uploadID); err != nil {
			return err
		}
		if err := tx.Delete(ctx, KindMultipartUpload, uploadID); err != nil {
			return err
		}
		var err error
		blobs, err = deleteParts(ctx, tx, uploadID)
		return err
	})
	if err != nil {
		return err
	}
	s.blobs.remove(blobs...)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// completeMultipart joins the listed parts into the object.
func (s *Service) completeMultipart(w http.ResponseWriter, r *http.Request, a *authResult, key string) error {
	ctx := r.Context()
	uploadID := r.URL.Query().Get("uploadId")
	req, err := s3.ReadCompleteRequest(r, a.payloadHash)
	if err != nil {
		return err
	}
	up, parts, err := s.completeParts(ctx, a, key, uploadID, req)
	if err != nil {
		return err
	}
	t, err := s.uploadTarget(ctx, a, key)
	if err != nil {
		return err
	}
	joined, err := s.joinParts(parts, r.Header)
	if err != nil {
		return err
	}
	etag := multipartETag(parts)
	if err := s.finishMultipart(ctx, a, t, up, joined, etag); err != nil {
		return err
	}
	if t.build != nil {
		s.log.Info("build archive received", "build", *t.build.BuildId, "bytes", joined.size, "parts", len(parts))
		if err := s.awaitUnpack(ctx, *t.build.BuildId); err != nil {
			return err
		}
	}
	s3.SetChecksumHeaders(w, joined.sums)
	s3.WriteXML(w, http.StatusOK, s3.CompleteResult{
		Xmlns: s3.Namespace, Location: strings.TrimSuffix(s.cfg.PublicURL, "/") + "/" + s.bucket + "/" + key,
		Bucket: s.bucket, Key: key, ETag: etag,
	})
	return nil
}

// completeParts checks the listed parts against the stored ones and
// returns them in order.
func (s *Service) completeParts(ctx context.Context, a *authResult, key, uploadID string, req *s3.CompleteRequest) (*uploadRecord, []partRecord, error) {
	var up *uploadRecord
	var parts []partRecord
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		if up, err = s.getUpload(ctx, tx, a, key, uploadID); err != nil {
			return err
		}
		parts, err = listedParts(ctx, tx, uploadID, req.Parts)
		return err
	})
	return up, parts, err
}

func listedParts(ctx context.Context, tx store.Tx, uploadID string, listed []s3.CompletePart) ([]partRecord, error) {
	parts := make([]partRecord, 0, len(listed))
	for i, lp := range listed {
		if i > 0 && lp.PartNumber <= listed[i-1].PartNumber {
			return nil, s3.Errorf(http.StatusBadRequest, "InvalidPartOrder", "The list of parts was not in ascending order. Parts must be ordered by part number.")
		}
		var p partRecord
		_, err := store.GetJSON(ctx, tx, KindUploadPart, partID(uploadID, lp.PartNumber), &p)
		if errors.Is(err, store.ErrNotFound) || err == nil && !s3.SameETag(p.ETag, lp.ETag) {
			return nil, s3.Errorf(http.StatusBadRequest, "InvalidPart", "Part %d was not uploaded, or its ETag does not match.", lp.PartNumber)
		}
		if err != nil {
			return nil, err
		}
		if err := checkPartChecksums(p, lp); err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// checkPartChecksums compares the checksums a Complete request lists for a
// part with the ones computed when the part arrived.
func checkPartChecksums(p partRecord, lp s3.CompletePart) error {
	for algo, v := range map[string]string{
		"crc32": lp.ChecksumCRC32, "crc32c": lp.ChecksumCRC32C, "crc64nvme": lp.ChecksumCRC64NVME,
		"sha1": lp.ChecksumSHA1, "sha256": lp.ChecksumSHA256,
	} {
		if got, ok := p.Checksums[algo]; v != "" && ok && got != v {
			return s3.Errorf(http.StatusBadRequest, "InvalidPart", "Part %d's %s does not match the part uploaded.", p.Number, strings.ToUpper(algo))
		}
	}
	return nil
}

// multipartETag is S3's ETag of a multipart object (see s3.MultipartETag).
func multipartETag(parts []partRecord) string {
	etags := make([]string, len(parts))
	for i, p := range parts {
		etags[i] = p.ETag
	}
	return s3.MultipartETag(etags)
}
