package builds

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ArchiveError is an archive Hoist refuses to unpack. Reason is written for
// the person who uploaded it: it is the build's failure reason.
type ArchiveError struct{ Reason string }

func (e *ArchiveError) Error() string { return "build archive rejected: " + e.Reason }

func archiveErrorf(format string, a ...any) error {
	return &ArchiveError{Reason: fmt.Sprintf(format, a...)}
}

// maxSymlinkTarget bounds the length of a symlink entry's target.
const maxSymlinkTarget = 4096

// Name limits of Linux file systems (NAME_MAX, and PATH_MAX less room for
// the build directory's own path): a longer entry name is the archive's
// fault, refused before anything is created.
const (
	maxNameElement = 255
	maxEntryPath   = 3072
)

// unpackLimits bound what one archive may unpack to.
type unpackLimits struct {
	maxBytes   int64 // total bytes of the files
	maxEntries int   // entries in the archive
}

// entryKind is what an archive entry creates.
type entryKind int

const (
	kindDir entryKind = iota + 1
	kindFile
	kindSymlink
)

// entry is one archive member that passed the name and type checks.
type entry struct {
	f    *zip.File
	path string // slash-separated, local, cleaned
	kind entryKind
}

// Unpack extracts the zip archive in r (size bytes long) into dir, which
// must be an existing empty directory, and returns the total size of the
// files it wrote. It refuses (with an *ArchiveError) an archive that is not
// a zip, has an entry whose name is absolute or contains "..", holds a
// device, pipe or socket, is encrypted or uses a compression method other
// than store and deflate, names the same path twice (or a file and a
// directory alike), has a symlink whose target is absolute or resolves
// outside dir (or to nothing), or exceeds maxBytes of content or maxEntries
// entries. Its central directory is read only within the bytes its end
// record declares, and counted before it is parsed (openArchive).
//
// Directories and files are created first, through an os.Root on dir, with
// O_EXCL; symlinks last, so no file is ever written through a link. Files
// keep their executable bits (any x bit in the archive gives 0755, else
// 0644; directories are 0755) and are fsynced. Backslashes in names are read
// as separators (archives made by some Windows tools use them). On error dir
// may hold a partial tree; the caller removes it.
func Unpack(r io.ReaderAt, size int64, dir string, maxBytes int64, maxEntries int) (int64, error) {
	zr, size, err := openArchive(r, size, maxEntries)
	if err != nil {
		return 0, err
	}
	entries, err := checkEntries(zr.File, unpackLimits{maxBytes: maxBytes, maxEntries: maxEntries})
	if err != nil {
		return 0, err
	}
	if err := checkSpans(zr.File, size); err != nil {
		return 0, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	x := &extractor{root: root, left: maxBytes}
	if err := x.extractAll(entries); err != nil {
		if cerr := clearRoot(root); cerr != nil {
			return 0, errors.Join(err, cerr)
		}
		return 0, err
	}
	return x.written, nil
}

// checkSpans refuses entries whose data overlaps (see checkOverlaps) in an
// archive of size bytes.
func checkSpans(files []*zip.File, size int64) error {
	spans := make([]span, 0, len(files))
	for _, f := range files {
		off, err := f.DataOffset()
		if err != nil {
			return archiveErrorf("entry %q cannot be read: %v", f.Name, err)
		}
		if f.CompressedSize64 > uint64(size) {
			return archiveErrorf("entry %q reaches past the end of the archive", f.Name)
		}
		spans = append(spans, span{start: off, end: off + int64(f.CompressedSize64), name: f.Name})
	}
	return checkOverlaps(spans, size)
}

// clearRoot removes everything under root (never following links).
func clearRoot(root *os.Root) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, root.RemoveAll(n))
	}
	return errors.Join(errs...)
}

// checkEntries validates every entry's name, type and flags, the entry count
// and the declared total size, and returns the entries in extraction order:
// directories and files in archive order, then symlinks.
func checkEntries(files []*zip.File, lim unpackLimits) ([]entry, error) {
	if len(files) > lim.maxEntries {
		return nil, archiveErrorf("the archive has %d entries; the limit is %d", len(files), lim.maxEntries)
	}
	var declared uint64
	out := make([]entry, 0, len(files))
	seen := make(map[string]entryKind, len(files))
	for _, f := range files {
		e, err := checkEntry(f)
		if err != nil {
			return nil, err
		}
		if e.path == "" {
			continue // "./" or "/"-only names: the root itself
		}
		declared += f.UncompressedSize64
		if declared > uint64(lim.maxBytes) {
			return nil, archiveErrorf("the archive unpacks to more than %d bytes (the limit)", lim.maxBytes)
		}
		if err := claimPath(seen, e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, archiveErrorf("the archive holds no files")
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].kind != kindSymlink && out[j].kind == kindSymlink
	})
	return out, nil
}

// checkEntry classifies one entry and validates its name.
func checkEntry(f *zip.File) (entry, error) {
	p, isDir, err := localPath(f.Name)
	if err != nil {
		return entry{}, err
	}
	if f.Flags&0x1 != 0 {
		return entry{}, archiveErrorf("entry %q is encrypted", f.Name)
	}
	if f.Method != zip.Store && f.Method != zip.Deflate {
		return entry{}, archiveErrorf("entry %q uses compression method %d; Hoist reads store and deflate", f.Name, f.Method)
	}
	mode := f.Mode()
	e := entry{f: f, path: p}
	switch {
	case mode&fs.ModeSymlink != 0:
		e.kind = kindSymlink
	case isDir || mode.IsDir():
		e.kind = kindDir
	case mode.IsRegular():
		e.kind = kindFile
	default:
		return entry{}, archiveErrorf("entry %q is a %v, not a file, directory or symlink", f.Name, mode.Type())
	}
	if e.kind != kindDir && p == "" {
		return entry{}, archiveErrorf("entry %q has no file name", f.Name)
	}
	return e, nil
}

// localPath turns an entry name into a cleaned slash-separated path inside
// the build directory ("" for the directory itself), and says whether the
// name denotes a directory (trailing slash).
func localPath(name string) (string, bool, error) {
	n := strings.ReplaceAll(name, `\`, "/")
	switch {
	case name == "" || strings.ContainsRune(n, 0):
		return "", false, archiveErrorf("an entry has an empty or invalid name %q", name)
	case strings.HasPrefix(n, "/"):
		return "", false, archiveErrorf("entry %q has an absolute path", name)
	case len(n) >= 2 && n[1] == ':':
		return "", false, archiveErrorf("entry %q starts with a drive letter", name)
	}
	isDir := strings.HasSuffix(n, "/")
	var kept []string
	for _, seg := range strings.Split(n, "/") {
		switch seg {
		case "..":
			return "", false, archiveErrorf("entry %q has a \"..\" path element", name)
		case "", ".":
		default:
			if len(seg) > maxNameElement {
				return "", false, archiveErrorf("entry %q has a path element of %d bytes; file systems allow %d", name, len(seg), maxNameElement)
			}
			kept = append(kept, seg)
		}
	}
	p := strings.Join(kept, "/")
	if len(p) > maxEntryPath {
		return "", false, archiveErrorf("entry %q has a path of %d bytes; Hoist allows %d", name, len(p), maxEntryPath)
	}
	if p != "" && !filepath.IsLocal(filepath.FromSlash(p)) {
		return "", false, archiveErrorf("entry %q is not a local path", name)
	}
	return p, isDir, nil
}

// claimPath records e's path and its parent directories in seen, refusing
// a path named twice (directories excepted) or used as both a directory and
// something else.
func claimPath(seen map[string]entryKind, e entry) error {
	for dir := path.Dir(e.path); dir != "."; dir = path.Dir(dir) {
		switch seen[dir] {
		case 0:
			seen[dir] = kindDir
		case kindDir:
		default:
			return archiveErrorf("%q is used both as a directory and as a file or symlink", dir)
		}
	}
	switch k := seen[e.path]; {
	case k == 0:
		seen[e.path] = e.kind
	case k == kindDir && e.kind == kindDir:
	default:
		return archiveErrorf("the archive names %q twice", e.path)
	}
	return nil
}

// extractor writes entries under root.
type extractor struct {
	root    *os.Root
	left    int64 // bytes the remaining files may still write
	written int64
	links   []string
}

// extractAll writes the entries in order, then checks the symlinks.
func (x *extractor) extractAll(entries []entry) error {
	for _, e := range entries {
		if err := x.extract(e); err != nil {
			return err
		}
	}
	return x.checkLinks()
}

func (x *extractor) extract(e entry) error {
	name := filepath.FromSlash(e.path)
	switch e.kind {
	case kindDir:
		return x.root.MkdirAll(name, 0o755)
	case kindFile:
		if err := x.mkParent(name); err != nil {
			return err
		}
		return x.writeFile(e.f, name)
	default:
		if err := x.mkParent(name); err != nil {
			return err
		}
		return x.symlink(e.f, name)
	}
}

func (x *extractor) mkParent(name string) error {
	if dir := filepath.Dir(name); dir != "." {
		return x.root.MkdirAll(dir, 0o755)
	}
	return nil
}

// writeFile copies one file entry, counting its real (not declared) size
// against the limit.
func (x *extractor) writeFile(f *zip.File, name string) error {
	perm := os.FileMode(0o644)
	if f.Mode()&0o111 != 0 {
		perm = 0o755
	}
	rc, err := f.Open()
	if err != nil {
		return archiveErrorf("entry %q cannot be read: %v", f.Name, err)
	}
	defer rc.Close()
	out, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	n, err := io.Copy(out, io.LimitReader(rc, x.left+1))
	x.written += n
	x.left -= n
	if err == nil && x.left < 0 {
		err = archiveErrorf("the archive unpacks to more than the size limit")
	}
	if err != nil {
		out.Close()
		return entryReadError(f.Name, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("sync %s: %w", name, err)
	}
	return out.Close()
}

// entryReadError classifies a copy error: a broken entry (bad data, wrong
// checksum or size) is the archive's fault; a write failure is Hoist's.
func entryReadError(entryName string, err error) error {
	var ae *ArchiveError
	var pe *fs.PathError
	switch {
	case errors.As(err, &ae):
		return err
	case errors.As(err, &pe):
		return fmt.Errorf("unpack %q: %w", entryName, err)
	default:
		return archiveErrorf("entry %q is corrupt: %v", entryName, err)
	}
}

// symlink creates a link entry after checking its target's form; where it
// leads is checked once every link exists (checkLinks).
func (x *extractor) symlink(f *zip.File, name string) error {
	if f.UncompressedSize64 > maxSymlinkTarget {
		return archiveErrorf("symlink %q has a target longer than %d bytes", f.Name, maxSymlinkTarget)
	}
	rc, err := f.Open()
	if err != nil {
		return archiveErrorf("entry %q cannot be read: %v", f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxSymlinkTarget+1))
	if err != nil {
		return archiveErrorf("entry %q is corrupt: %v", f.Name, err)
	}
	target := string(b)
	switch {
	case target == "" || len(b) > maxSymlinkTarget || strings.ContainsRune(target, 0):
		return archiveErrorf("symlink %q has an empty or invalid target", f.Name)
	case strings.HasPrefix(target, "/") || strings.HasPrefix(target, `\`) || (len(target) >= 2 && target[1] == ':'):
		return archiveErrorf("symlink %q points to the absolute path %q; only relative links inside the build are allowed", f.Name, target)
	}
	if err := x.root.Symlink(target, name); err != nil {
		return fmt.Errorf("symlink %s: %w", name, err)
	}
	x.links = append(x.links, name)
	return nil
}

// checkLinks resolves every symlink through the root, which refuses any
// resolution that leaves it (however the links chain), and refuses links
// that lead nowhere.
func (x *extractor) checkLinks() error {
	for _, name := range x.links {
		if _, err := x.root.Stat(name); err != nil {
			target, _ := x.root.Readlink(name)
			return archiveErrorf("symlink %q -> %q does not lead to a file or directory inside the build", filepath.ToSlash(name), target)
		}
	}
	return nil
}
