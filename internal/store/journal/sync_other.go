//go:build !linux

package journal

import (
	"errors"
	"os"
)

// datasync flushes f to stable storage.
func datasync(f *os.File) error { return f.Sync() }

var errInvalid = errors.New("journal: direct writes are not supported")

// openDirect: direct writes are used on Linux only.
func openDirect(string) (*os.File, error) { return nil, errInvalid }
