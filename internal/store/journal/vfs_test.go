package journal

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
)

// memFS is an in-memory vfs that is strict about durability: the power can
// go at any point, and then only what was made durable is left.
//
//   - A file's data is durable once Sync or Datasync returned, or as it is
//     written when the file was opened with OpenDirect (O_DSYNC). Writes not
//     yet synced are lost, all of them (the strictest outcome a disk allows
//     short of tearing a synced write).
//   - A name (a file created, renamed or removed) is durable once SyncDir
//     of its directory returned.
//
// With cutAt > 0, the power goes just before the cutAt-th operation that
// changes something: from then on every operation fails with errPowerCut,
// and image returns what a machine would find when it is back. fail, when
// set, makes every write and sync fail with it (a failing disk).
type memFS struct {
	mu      sync.Mutex
	names   map[string]*memInode // the names as the running system sees them
	durable map[string]*memInode // the names as of each directory's last SyncDir
	dirs    map[string]bool
	ops     int
	cutAt   int
	cut     bool
	cutNow  bool // the power went at the operation running
	fail    error
	// tornWrite, when set, decides which 512-byte sectors of a direct
	// write the power cut interrupted reached the disk: a write in flight
	// when the power goes may land in part, in any order.
	tornWrite func() bool
	// stall, when set, is called (without the lock) before each write
	// and sync of a file: a disk that takes its time.
	stall func(path string)
}

var errPowerCut = errors.New("memfs: the power went")

type memInode struct {
	data    []byte     // what reads return
	synced  []byte     // what is on stable storage
	pending []memWrite // changes to data not yet in synced, in order
}

// memWrite is a write of b at off, or a truncation to off when b is nil.
type memWrite struct {
	off int64
	b   []byte
}

func apply(data []byte, w memWrite) []byte {
	if w.b == nil {
		return data[:min(int64(len(data)), w.off)]
	}
	if end := w.off + int64(len(w.b)); end > int64(len(data)) {
		data = append(data, make([]byte, end-int64(len(data)))...)
	}
	copy(data[w.off:], w.b)
	return data
}

func (ino *memInode) write(w memWrite, direct bool) {
	ino.data = apply(ino.data, w)
	if direct {
		ino.synced = apply(ino.synced, w)
		return
	}
	ino.pending = append(ino.pending, w)
}

func (ino *memInode) sync() {
	for _, w := range ino.pending {
		ino.synced = apply(ino.synced, w)
	}
	ino.pending = nil
}

func newMemFS() *memFS {
	return &memFS{names: map[string]*memInode{}, durable: map[string]*memInode{}, dirs: map[string]bool{}}
}

// change counts an operation that changes something; it fails once the
// power is out.
func (m *memFS) change() error {
	m.cutNow = false
	if m.cut {
		return errPowerCut
	}
	m.ops++
	if m.cutAt > 0 && m.ops >= m.cutAt {
		m.cut, m.cutNow = true, true
		return errPowerCut
	}
	return nil
}

// image returns a new memFS holding what was durable: the machine after
// the power came back. With tear, the disk also got some of the writes
// not yet synced: each 512-byte sector of them lands or not, in any order
// (as a disk's volatile cache may leave them), each with the same
// probability, drawn from tear for the whole image.
func (m *memFS) image(tear *rand.Rand) *memFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := newMemFS()
	for d := range m.dirs {
		n.dirs[d] = true
	}
	var keep func() bool
	if tear != nil {
		p := tear.Float64()
		keep = func() bool { return tear.Float64() < p }
	}
	for name, ino := range m.durable {
		data := slices.Clone(ino.synced)
		if keep != nil {
			for _, w := range ino.pending {
				for _, part := range sectors(w, keep) {
					data = apply(data, part)
				}
			}
		}
		c := &memInode{data: data, synced: slices.Clone(data)}
		n.names[name], n.durable[name] = c, c
	}
	return n
}

// sectors splits w at 512-byte boundaries of the file and returns the
// parts keep chooses (a truncation always).
func sectors(w memWrite, keep func() bool) []memWrite {
	if w.b == nil {
		return []memWrite{w}
	}
	var out []memWrite
	for off, b := w.off, w.b; len(b) > 0; {
		n := min(int64(len(b)), (off|511)+1-off)
		if keep() {
			out = append(out, memWrite{off: off, b: b[:n]})
		}
		off, b = off+n, b[n:]
	}
	return out
}

func (m *memFS) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dirs[dir] = true // directories are taken as durable
	return nil
}

func (m *memFS) Lock(string) (io.Closer, error) { return io.NopCloser(nil), nil }

func (m *memFS) ReadDir(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for name := range m.names {
		if filepath.Dir(name) == dir {
			out = append(out, filepath.Base(name))
		}
	}
	slices.Sort(out)
	return out, nil
}

func (m *memFS) ReadFile(path string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ino, ok := m.names[path]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	return slices.Clone(ino.data), nil
}

func (m *memFS) Create(path string) (vfsFile, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.change(); err != nil {
		return nil, err
	}
	ino, ok := m.names[path]
	if ok {
		ino.write(memWrite{off: 0}, false)
	} else {
		ino = &memInode{}
		m.names[path] = ino
	}
	return &memFile{m: m, name: path, ino: ino}, nil
}

func (m *memFS) open(path string, direct bool) (vfsFile, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cut {
		return nil, errPowerCut
	}
	ino, ok := m.names[path]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	return &memFile{m: m, name: path, ino: ino, direct: direct}, nil
}

func (m *memFS) OpenRW(path string) (vfsFile, error)     { return m.open(path, false) }
func (m *memFS) OpenDirect(path string) (vfsFile, error) { return m.open(path, true) }

func (m *memFS) Remove(path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.change(); err != nil {
		return err
	}
	if _, ok := m.names[path]; !ok {
		return &fs.PathError{Op: "remove", Path: path, Err: fs.ErrNotExist}
	}
	delete(m.names, path)
	return nil
}

func (m *memFS) Rename(from, to string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.change(); err != nil {
		return err
	}
	ino, ok := m.names[from]
	if !ok {
		return &fs.PathError{Op: "rename", Path: from, Err: fs.ErrNotExist}
	}
	m.names[to] = ino
	delete(m.names, from)
	return nil
}

func (m *memFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.change(); err != nil {
		return err
	}
	if m.fail != nil {
		return m.fail
	}
	for name := range m.durable {
		if filepath.Dir(name) == dir {
			delete(m.durable, name)
		}
	}
	for name, ino := range m.names {
		if filepath.Dir(name) == dir {
			m.durable[name] = ino
		}
	}
	return nil
}

// memFile is an open file of a memFS.
type memFile struct {
	m      *memFS
	name   string
	ino    *memInode
	direct bool
	off    int64 // for Write
	closed bool
}

func (f *memFile) WriteAt(b []byte, off int64) (int, error) {
	if f.m.stall != nil {
		f.m.stall(f.name)
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return 0, fs.ErrClosed
	}
	if err := f.m.change(); err != nil {
		if f.m.cutNow && f.direct && f.m.tornWrite != nil {
			for _, part := range sectors(memWrite{off: off, b: slices.Clone(b)}, f.m.tornWrite) {
				f.ino.write(part, true)
			}
		}
		return 0, err
	}
	if f.m.fail != nil {
		return 0, f.m.fail
	}
	f.ino.write(memWrite{off: off, b: slices.Clone(b)}, f.direct)
	return len(b), nil
}

func (f *memFile) Write(b []byte) (int, error) {
	n, err := f.WriteAt(b, f.off)
	f.off += int64(n)
	return n, err
}

func (f *memFile) Sync() error {
	if f.m.stall != nil {
		f.m.stall(f.name)
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return fs.ErrClosed
	}
	if err := f.m.change(); err != nil {
		return err
	}
	if f.m.fail != nil {
		return f.m.fail
	}
	f.ino.sync()
	return nil
}

func (f *memFile) Datasync() error { return f.Sync() }

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return fs.ErrClosed
	}
	f.closed = true
	return nil
}

func (f *memFile) Name() string { return f.name }

var _ vfs = (*memFS)(nil)
