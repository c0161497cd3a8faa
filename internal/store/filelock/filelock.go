// Package filelock keeps a second process off a store's files: an exclusive
// advisory lock on a lock file, which the kernel drops when the process dies.
// Both embedded stores (journal, sqlite) take one at Open.
package filelock

import "errors"

// ErrLocked is returned by Lock when another process (or another open store
// in this process) holds the lock.
var ErrLocked = errors.New("in use by another Hoist process")
