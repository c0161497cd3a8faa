package builds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/hoistgg/hoist/internal/builds/s3"
	"github.com/hoistgg/hoist/internal/store"
)

// joined is a completed multipart object written as one blob.
type joined struct {
	blob string
	size int64
	sums map[string]string
}

// joinParts concatenates the parts into a new durable blob. A whole-object
// checksum header on the Complete request is verified: a full-object one
// by hashing the bytes as they are copied, a composite one ("<b64>-<n>")
// from the parts' checksums.
func (s *Service) joinParts(parts []partRecord, h http.Header) (*joined, error) {
	var total int64
	for _, p := range parts {
		total += p.Size
	}
	if total > s.lim.MaxArchiveSize {
		return nil, s3.ErrTooLarge(s.lim.MaxArchiveSize)
	}
	algo, want := s3.ObjectChecksum(h)
	var full *s3.Digester
	if algo != "" && !s3.IsComposite(want, h) {
		full = s3.NewObjectDigester(algo, want)
	}
	if algo != "" && full == nil {
		if err := checkComposite(parts, algo, want); err != nil {
			return nil, err
		}
	}
	w, err := s.blobs.create()
	if err != nil {
		return nil, err
	}
	if err := copyParts(s.blobs, w, parts, full); err != nil {
		w.abort()
		return nil, err
	}
	if full != nil {
		if err := full.Verify("", http.Header{}, nil); err != nil {
			w.abort()
			return nil, err
		}
	}
	if err := w.commit(); err != nil {
		return nil, err
	}
	j := &joined{blob: w.name, size: total}
	if algo != "" {
		j.sums = map[string]string{algo: want}
	}
	return j, nil
}

// checkComposite verifies a composite checksum over the parts' checksums.
func checkComposite(parts []partRecord, algo, want string) error {
	numbers, sums := make([]int, len(parts)), make([]string, len(parts))
	for i, p := range parts {
		numbers[i], sums[i] = p.Number, p.Checksums[algo]
	}
	return s3.CheckComposite(algo, want, numbers, sums)
}

// copyParts appends each part's blob to w, through d when set.
func copyParts(bs blobStore, w io.Writer, parts []partRecord, d *s3.Digester) error {
	if d != nil {
		w = io.MultiWriter(w, d)
	}
	for _, p := range parts {
		f, err := bs.open(p.Blob)
		if err != nil {
			return fmt.Errorf("part %d: %w", p.Number, err)
		}
		n, err := io.Copy(w, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("part %d: %w", p.Number, err)
		}
		if n != p.Size {
			return fmt.Errorf("part %d: %d bytes on disk, %d recorded", p.Number, n, p.Size)
		}
	}
	return nil
}

// finishMultipart records the joined object and deletes the upload.
func (s *Service) finishMultipart(ctx context.Context, a *authResult, t target, up *uploadRecord, j *joined, etag string) error {
	var garbage []string
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		garbage = nil
		if _, err := s.getUpload(ctx, tx, a, t.key, up.UploadID); err != nil {
			return err
		}
		if err := tx.Delete(ctx, KindMultipartUpload, up.UploadID); err != nil {
			return err
		}
		blobs, err := deleteParts(ctx, tx, up.UploadID)
		if err != nil {
			return err
		}
		garbage = blobs
		if t.build != nil {
			return receiveArchive(ctx, tx, *t.build.BuildId, j.blob, s.now())
		}
		var prev objectRecord
		if _, err := store.GetJSON(ctx, tx, KindUploadObject, t.key, &prev); err == nil {
			garbage = append(garbage, prev.Blob)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		o := objectRecord{Key: t.key, Blob: j.blob, Host: s.cfg.ReplicaID, Size: j.size, ETag: etag, Modified: s.now(), Checksums: j.sums}
		return store.PutJSON(ctx, tx, store.Record{Kind: KindUploadObject, ID: t.key}, o)
	})
	if err != nil {
		s.blobs.remove(j.blob)
		return err
	}
	s.blobs.remove(garbage...)
	return nil
}
