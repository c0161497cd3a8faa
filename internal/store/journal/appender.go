package journal

import (
	"errors"
	"io"
	"unsafe"
)

// preallocate is how much a journal file grows by at a time, written as
// zeros: appends into blocks the file already has change no metadata, so
// the flush after each batch writes only data (about half the time and CPU
// of an fdatasync that also commits a new file size, on ext4).
const preallocate = 4 << 20

// dioBlock is the alignment of direct writes: their offset, length and
// memory. 4096 suits disks with 512-byte and 4096-byte sectors alike.
const dioBlock = 4096

// appender writes batches at the end of the journal file being written and
// makes each durable before it returns.
//
// Where the system allows it (Linux, on most file systems), the file is
// written with O_DIRECT|O_DSYNC: one pwrite both writes a batch and flushes
// it, past the page cache, which takes about a third less CPU than a
// buffered pwrite and an fdatasync. Direct writes must cover whole aligned
// blocks, so the appender keeps the file's last, partly written block in
// memory and writes it again with the batch that follows; the rest of that
// block is zeros, as the file is, so the bytes on disk are the same in both
// modes. Elsewhere (or if a direct write is refused) it writes through the
// page cache and calls fdatasync.
//
// Both are ordinary system calls through the Go runtime, which hands the
// writing goroutine's P to other goroutines while the kernel works: a write
// that hangs on a stalled disk blocks the syncer (and the Updates waiting
// for it), never the rest of the process, its garbage collections, signal
// handling, health checks or Views.
type appender struct {
	fs     vfs
	f      vfsFile
	size   int64 // bytes of the file written: header and entries
	alloc  int64 // bytes of the file allocated: size and the zeros after it
	direct bool
	// direct: an aligned buffer; buf[:size%dioBlock] is the file's last
	// partial block.
	buf []byte
}

// open starts appending to f (opened for reading and writing, through the
// page cache) whose first size bytes are written and next alloc-size bytes
// are zeros; tail is the file's content from the last block boundary at or
// before size up to size. It takes f: from now on, close closes it. With
// buffered, it writes through the page cache even where direct writes work.
func (a *appender) open(fs vfs, f vfsFile, size, alloc int64, tail []byte, buffered bool) {
	a.fs, a.f, a.size, a.alloc, a.direct = fs, f, size, alloc, false
	if buffered {
		return
	}
	d, err := fs.OpenDirect(f.Name())
	if err != nil {
		return
	}
	_ = f.Close()
	a.f, a.direct, a.buf = d, true, alignedBuf(2*dioBlock, tail)
}

// close closes the file.
func (a *appender) close() error {
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}

// append writes data after the file's last entry and returns once it is on
// stable storage, growing the file first when data does not fit.
func (a *appender) append(data []byte) error {
	if !a.direct {
		if err := a.grow(a.size + int64(len(data))); err != nil {
			return err
		}
		if _, err := a.f.WriteAt(data, a.size); err != nil {
			return err
		}
		a.size += int64(len(data))
		return a.f.Datasync()
	}
	start := a.size &^ (dioBlock - 1)
	end := alignUp(a.size + int64(len(data)))
	if err := a.grow(end); err != nil {
		if errors.Is(err, errInvalid) {
			return a.fallBack(data) // as below
		}
		return err
	}
	n, head := int(end-start), int(a.size-start)
	if len(a.buf) < n {
		a.buf = alignedBuf(n, a.buf[:head])
	}
	copy(a.buf[head:], data)
	clear(a.buf[head+len(data) : n])
	if _, err := a.f.WriteAt(a.buf[:n], start); err != nil {
		if errors.Is(err, errInvalid) {
			// The file system or device takes no direct writes of this
			// alignment (nothing was written): go on through the page cache.
			return a.fallBack(data)
		}
		return err
	}
	a.size += int64(len(data))
	// Keep the new last partial block at the start of the buffer.
	last := a.size &^ (dioBlock - 1)
	copy(a.buf, a.buf[last-start:a.size-start])
	if cap(a.buf) > keptBuffer {
		a.buf = alignedBuf(2*dioBlock, a.buf[:a.size-last])
	}
	return nil
}

// fallBack reopens the file for buffered writes and appends data so.
func (a *appender) fallBack(data []byte) error {
	f, err := a.fs.OpenRW(a.f.Name())
	if err != nil {
		return err
	}
	_ = a.f.Close()
	a.f, a.direct, a.buf = f, false, nil
	return a.append(data)
}

// grow extends the allocated zeros to cover end, when they do not yet.
// Direct writes of zeros start at the first block boundary at or after
// alloc; the bytes between read as zeros too (a hole).
func (a *appender) grow(end int64) error {
	if end <= a.alloc {
		return nil
	}
	from := a.alloc
	if a.direct {
		from = alignUp(from)
	}
	to := max(from+preallocate, alignUp(end))
	if err := writeZeros(a.f, from, to-from); err != nil {
		return err
	}
	a.alloc = to // durable with the batch: the fdatasync after it, or O_DSYNC
	return nil
}

func alignUp(n int64) int64 { return (n + dioBlock - 1) &^ (dioBlock - 1) }

// alignedBuf returns a buffer of at least n bytes whose memory starts at a
// dioBlock boundary, holding keep at its start.
func alignedBuf(n int, keep []byte) []byte {
	n = int(alignUp(int64(n)))
	raw := make([]byte, n+dioBlock)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(raw))) & (dioBlock - 1))
	b := raw[off : off+n : off+n]
	copy(b, keep)
	return b
}

// zeros is written to grow journal files; its memory is aligned, for
// direct writes, each of which is also a flush: 4 per growth of 4 MiB.
var zeros = alignedBuf(1<<20, nil)

// writeZeros writes n zero bytes to f at off (with f's writes: buffered or
// direct, where off and n must then be block-aligned).
func writeZeros(f io.WriterAt, off, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeros)))
		if _, err := f.WriteAt(zeros[:k], off); err != nil {
			return err
		}
		off, n = off+k, n-k
	}
	return nil
}
