package journal

import (
	"io"
	"os"

	"github.com/hoistgg/hoist/internal/store/filelock"
)

// vfs is every file operation of the journal store, so that tests can put
// a file system under it that loses what was not synced when "the power
// goes", or that fails (see vfs_test.go). osFS is the real one.
type vfs interface {
	MkdirAll(dir string) error
	// Lock takes the store directory's lock file.
	Lock(path string) (io.Closer, error)
	// ReadDir returns the names in dir.
	ReadDir(dir string) ([]string, error)
	ReadFile(path string) ([]byte, error)
	// Create creates or truncates path, for reading and writing.
	Create(path string) (vfsFile, error)
	// OpenRW opens an existing path for reading and writing.
	OpenRW(path string) (vfsFile, error)
	// OpenDirect opens an existing path for direct, synchronous writes
	// (each WriteAt returns once its data is on stable storage), or fails
	// where that is not available.
	OpenDirect(path string) (vfsFile, error)
	Remove(path string) error
	Rename(from, to string) error
	// SyncDir makes the names created, renamed and removed in dir durable.
	SyncDir(dir string) error
}

// vfsFile is an open file of a vfs.
type vfsFile interface {
	io.Writer
	io.WriterAt
	// Sync flushes the file's data and metadata to stable storage.
	Sync() error
	// Datasync flushes its data and the metadata needed to read it back.
	Datasync() error
	Close() error
	Name() string
}

// osFS is the operating system's file system.
type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Datasync() error { return datasync(f.File) }

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o750) }

func (osFS) Lock(path string) (io.Closer, error) { return filelock.Lock(path) }

func (osFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}

func (osFS) ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

func (osFS) Create(path string) (vfsFile, error) {
	return wrap(os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600))
}

func (osFS) OpenRW(path string) (vfsFile, error) { return wrap(os.OpenFile(path, os.O_RDWR, 0o600)) }

func (osFS) OpenDirect(path string) (vfsFile, error) { return wrap(openDirect(path)) }

func (osFS) Remove(path string) error { return os.Remove(path) }

func (osFS) Rename(from, to string) error { return os.Rename(from, to) }

func (osFS) SyncDir(dir string) error { return syncDir(dir) }

func wrap(f *os.File, err error) (vfsFile, error) {
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}
