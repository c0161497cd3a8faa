//go:build !unix && !windows

package filelock

import (
	"fmt"
	"os"
)

// Lock only creates the lock file: this platform has no file locking
// Hoist knows of, so a second process is not kept out.
func Lock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("filelock: %w", err)
	}
	return f, nil
}
