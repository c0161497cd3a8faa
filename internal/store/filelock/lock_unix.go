//go:build unix

package filelock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Lock takes an exclusive advisory lock (flock) on the file at path,
// creating it, and writes this process's ID into it for the error message of
// whoever comes second. The lock is released when the file is closed, also
// when the process dies.
func Lock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("filelock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := readHolder(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by process %s", ErrLocked, path, holder)
		}
		return nil, fmt.Errorf("filelock: lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func readHolder(f *os.File) string {
	b, err := io.ReadAll(io.LimitReader(f, 32))
	if s := strings.TrimSpace(string(b)); err == nil && s != "" {
		return s
	}
	return "(unknown)"
}
