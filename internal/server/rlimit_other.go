//go:build !unix

package server

// openFileLimit returns 0: no open-file limit is read on this system.
func openFileLimit() uint64 { return 0 }
