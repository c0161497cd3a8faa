package builds

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/hoistgg/hoist/internal/builds/s3"
	"github.com/hoistgg/hoist/internal/store"
)

// received is an upload body stored as a durable blob.
type received struct {
	blob string
	size int64
	d    *s3.Digester
}

// receiveBody streams a request's payload into a new blob, at most max
// bytes, decoding aws-chunked bodies and checking every digest the request
// declares; the blob is durable (fsynced) when it returns.
func (s *Service) receiveBody(r *http.Request, a *authResult, max int64) (*received, error) {
	body, err := s3.NewPayloadReader(r, a.payloadHash)
	if err != nil {
		return nil, err
	}
	if body.Length > max {
		return nil, s3.ErrTooLarge(max)
	}
	d, err := s3.NewDigester(r.Header, s3.IsSHA256Hex(a.payloadHash), r.Header.Get("x-amz-trailer"))
	if err != nil {
		return nil, err
	}
	w, err := s.blobs.create()
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(io.MultiWriter(w, d), io.LimitReader(body, max+1))
	if err == nil {
		err = s3.CheckLength(n, max, body.Length)
	}
	if err == nil {
		err = d.Verify(a.payloadHash, r.Header, body.Trailers())
	}
	if err != nil {
		w.abort()
		return nil, err
	}
	if err := w.commit(); err != nil {
		return nil, err
	}
	return &received{blob: w.name, size: n, d: d}, nil
}

// putObject stores a whole object in one request.
func (s *Service) putObject(w http.ResponseWriter, r *http.Request, a *authResult, key string) error {
	ctx := r.Context()
	t, err := s.uploadTarget(ctx, a, key)
	if err != nil {
		return err
	}
	got, err := s.receiveBody(r, a, s.lim.MaxArchiveSize)
	if err != nil {
		return err
	}
	etag, sums := got.d.ETag(), got.d.Sums()
	if err := s.storeUpload(ctx, t, got.blob, got.size, etag, sums); err != nil {
		return err
	}
	if t.build != nil {
		s.log.Info("build archive received", "build", *t.build.BuildId, "bytes", got.size)
		if err := s.awaitUnpack(ctx, *t.build.BuildId); err != nil {
			return err
		}
	}
	w.Header().Set("ETag", etag)
	s3.SetChecksumHeaders(w, sums)
	w.WriteHeader(http.StatusOK)
	return nil
}

// headObject reports an object's size and ETag.
func (s *Service) headObject(w http.ResponseWriter, r *http.Request, a *authResult, key string) error {
	if a.cred != nil && key != a.cred.StorageKey {
		return s3.ErrAccessDenied("These upload credentials may only access %s.", a.cred.StorageKey)
	}
	var o objectRecord
	err := s.cfg.Store.View(r.Context(), func(tx store.Tx) error {
		_, err := store.GetJSON(r.Context(), tx, KindUploadObject, key, &o)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return s3.ErrNoSuchKey(key)
	}
	if err != nil {
		return err
	}
	w.Header().Set("ETag", o.ETag)
	w.Header().Set("Content-Length", strconv.FormatInt(o.Size, 10))
	w.Header().Set("Last-Modified", o.Modified.UTC().Format(http.TimeFormat))
	w.Header().Set("Content-Type", "binary/octet-stream")
	s3.SetChecksumHeaders(w, o.Checksums)
	w.WriteHeader(http.StatusOK)
	return nil
}

// deleteObject removes a plain object (Hoist's API credentials only).
func (s *Service) deleteObject(w http.ResponseWriter, r *http.Request, a *authResult, key string) error {
	if a.cred != nil {
		return s3.ErrAccessDenied("Upload credentials cannot delete objects.")
	}
	var blob string
	err := s.cfg.Store.Update(r.Context(), func(tx store.Tx) error {
		var o objectRecord
		_, err := store.GetJSON(r.Context(), tx, KindUploadObject, key, &o)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		blob = o.Blob
		return tx.Delete(r.Context(), KindUploadObject, key)
	})
	if err != nil {
		return err
	}
	s.blobs.remove(blob)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
