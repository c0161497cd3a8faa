//go:build !unix && !windows

package sqlite

import (
	"fmt"
	"os"
)

// lockFile only creates the lock file: this platform has no file locking
// Hoist knows of, so a second process is not kept out.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lock file: %w", err)
	}
	return f, nil
}
