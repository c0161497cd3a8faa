package builds

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// blobStore keeps uploaded bytes (whole objects, parts, build archives) as
// files with random names in one directory. A blob belongs to the record
// that names it; a blob no record names is garbage (an upload in progress,
// or one cut short by a crash) and is removed at start-up.
type blobStore struct{ dir string }

// blobWriter writes a new blob.
type blobWriter struct {
	*os.File
	name string
	bs   blobStore
}

// create starts a new blob.
func (bs blobStore) create() (*blobWriter, error) {
	name := newBlobName()
	f, err := os.OpenFile(bs.path(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return &blobWriter{File: f, name: name, bs: bs}, nil
}

// commit makes the blob durable: its bytes and its directory entry are on
// disk when commit returns nil.
func (w *blobWriter) commit() error {
	if err := w.Sync(); err != nil {
		w.abort()
		return fmt.Errorf("sync upload: %w", err)
	}
	if err := w.Close(); err != nil {
		w.bs.remove(w.name)
		return err
	}
	if err := syncDir(w.bs.dir); err != nil {
		w.bs.remove(w.name)
		return err
	}
	return nil
}

// abort discards the blob.
func (w *blobWriter) abort() {
	w.Close()
	w.bs.remove(w.name)
}

// path returns the file of a blob. Names come from records; one that is
// not a name create made (a damaged record) maps to a path that does not
// exist rather than outside the directory.
func (bs blobStore) path(name string) string {
	if !validBlobName(name) {
		return filepath.Join(bs.dir, "invalid")
	}
	return filepath.Join(bs.dir, name)
}

func (bs blobStore) open(name string) (*os.File, error) { return os.Open(bs.path(name)) }

// link makes a new blob with the same content as name (a hard link, or a
// copy where links are not possible).
func (bs blobStore) link(name string) (string, error) {
	nn := newBlobName()
	err := os.Link(bs.path(name), bs.path(nn))
	if err == nil {
		return nn, syncDir(bs.dir)
	}
	if errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	src, err := bs.open(name)
	if err != nil {
		return "", err
	}
	defer src.Close()
	w, err := bs.create()
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(w, src); err != nil {
		w.abort()
		return "", err
	}
	return w.name, w.commit()
}

// remove deletes blobs; a missing one is not an error.
func (bs blobStore) remove(names ...string) {
	for _, n := range names {
		if n != "" {
			_ = os.Remove(bs.path(n))
		}
	}
}

// list returns every blob's name.
func (bs blobStore) list() ([]string, error) {
	ents, err := os.ReadDir(bs.dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if validBlobName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func newBlobName() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validBlobName(n string) bool {
	if len(n) != 32 {
		return false
	}
	_, err := hex.DecodeString(n)
	return err == nil
}

// syncDir fsyncs a directory so that entries created or renamed in it are
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// makeDirs creates the data directories.
func (s *Service) makeDirs() error {
	for _, d := range []string{s.blobs.dir, s.buildsDir(), filepath.Join(s.buildsDir(), ".tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("builds: %w", err)
		}
	}
	return nil
}
