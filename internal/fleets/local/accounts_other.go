//go:build !linux

package local

import (
	"io"
	"log/slog"
)

// Elsewhere than Linux, accounts are not locked, and no process is looked
// for by UID (there is no /proc to read).

// lockAccount locks nothing.
func lockAccount(string, int) (io.Closer, error) { return nil, nil }

// endLeftoverAccounts does nothing.
func endLeftoverAccounts(string, *slog.Logger) {}

// endProcessesOf finds nothing.
func endProcessesOf(int) (int, error) { return 0, nil }
