package journal

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"

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

// writeHoldingP writes b to f at off with pwrite as a raw system call: the
// calling goroutine keeps its P (the runtime's right to run Go code) while
// the kernel writes. A direct, synchronous write lasts as long as the
// device takes to store it (0.1-1 ms); through the runtime's system call
// path, the P is handed to other goroutines meanwhile and, on a busy
// process, the syncer then waits for one to come free before it can
// acknowledge the batch (docs/performance.md). Holding it instead costs the
// process that P for the write's duration, which is why Hoist runs with one
// P more than the runtime would choose (internal/server). Used for direct
// writes only; a write through the page cache can block on memory and goes
// the usual way. On 32-bit systems, where pwrite64 takes its offset in two
// registers, it is an ordinary WriteAt.
func writeHoldingP(f *os.File, b []byte, off int64) error {
	if unsafe.Sizeof(uintptr(0)) < 8 {
		_, err := f.WriteAt(b, off)
		return err
	}
	fd := f.Fd()
	for len(b) > 0 {
		n, _, errno := syscall.RawSyscall6(syscall.SYS_PWRITE64, fd,
			uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(off), 0, 0)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			return &os.PathError{Op: "write", Path: f.Name(), Err: errno}
		case n == 0:
			return &os.PathError{Op: "write", Path: f.Name(), Err: syscall.EIO}
		}
		b, off = b[n:], off+int64(n)
	}
	runtime.KeepAlive(f)
	return nil
}
