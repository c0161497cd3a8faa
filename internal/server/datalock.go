package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hoistgg/hoist/internal/store/filelock"
)

// dataLockFile is the lock of the whole data directory, held by the
// running Hoist from before it touches anything in the directory (the
// store, instance leftovers, blobs, the CA) until Close.
const dataLockFile = "LOCK"

// lockDataDir creates the data directory if it does not exist and takes its
// lock. A second Hoist on the same directory, whatever its --store, gets an
// error naming the directory and the flag, and touches nothing else.
func lockDataDir(dir string) (*os.File, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, dataDirError(abs, err)
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, dataDirError(abs, err)
	}
	f, err := filelock.Lock(filepath.Join(abs, dataLockFile))
	if errors.Is(err, filelock.ErrLocked) {
		return nil, fmt.Errorf("--data-dir %s: %w; stop that Hoist, or give this one another --data-dir", abs, err)
	}
	if err != nil {
		return nil, dataDirError(abs, err)
	}
	return f, nil
}
