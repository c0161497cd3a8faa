package journal

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync flushes f's data and the metadata needed to read it back (its
// size): fdatasync, which skips the timestamps fsync would also write.
func datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// openDirect opens path for direct, synchronous writes: O_DIRECT|O_DSYNC.
// It fails where the file system does not take O_DIRECT.
func openDirect(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|unix.O_DIRECT|unix.O_DSYNC, 0)
}

// errInvalid is what a direct write whose alignment the device refuses
// fails with.
var errInvalid error = unix.EINVAL
