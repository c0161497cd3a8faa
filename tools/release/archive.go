package main

import (
	"archive/tar"
	"archive/zip"
	"compress/flate"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// entry is one file of a release archive.
type entry struct {
	name string // in the archive, below its top directory, with forward slashes
	src  string // on disk
	mode fs.FileMode
}

// archiveEntries lists what a target's archive holds: the binary, the
// LICENSE and the README, and for Linux the systemd units and their
// settings files (deploy/systemd/, under systemd/).
func archiveEntries(root string, t target, bin string) ([]entry, error) {
	es := []entry{
		{t.exe(), bin, 0o755},
		{"LICENSE", filepath.Join(root, "LICENSE"), 0o644},
		{"README.md", filepath.Join(root, "README.md"), 0o644},
	}
	if t.OS != "linux" {
		return es, nil
	}
	units, err := filepath.Glob(filepath.Join(root, "deploy", "systemd", "*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(units)
	for _, u := range units {
		es = append(es, entry{"systemd/" + filepath.Base(u), u, 0o644})
	}
	return es, nil
}

// writeTarGz writes a gzip-compressed tar archive of entries under the
// directory top to dst: owned by root, with the given modes and mtime, so
// that the same files make the same bytes.
func writeTarGz(dst, top string, entries []entry, mtime time.Time) error {
	return writeAtomically(dst, func(w io.Writer) error {
		gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
		if err != nil {
			return err
		}
		tw := tar.NewWriter(gz)
		dir := &tar.Header{Typeflag: tar.TypeDir, Name: top + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(dir); err != nil {
			return err
		}
		for _, e := range entries {
			if err := addTar(tw, top, e, mtime); err != nil {
				return err
			}
		}
		if err := tw.Close(); err != nil {
			return err
		}
		return gz.Close()
	})
}

// addTar adds one file to a tar archive.
func addTar(tw *tar.Writer, top string, e entry, mtime time.Time) error {
	f, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h := &tar.Header{
		Typeflag: tar.TypeReg, Name: top + "/" + e.name, Mode: int64(e.mode), Size: st.Size(),
		ModTime: mtime, Format: tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// writeZip writes a zip archive of entries under the directory top to
// dst, deflated, with the given modes and mtime.
func writeZip(dst, top string, entries []entry, mtime time.Time) error {
	return writeAtomically(dst, func(w io.Writer) error {
		zw := zip.NewWriter(w)
		zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
			return flate.NewWriter(w, flate.BestCompression)
		})
		dir := &zip.FileHeader{Name: top + "/", Modified: mtime}
		dir.SetMode(fs.ModeDir | 0o755)
		if _, err := zw.CreateHeader(dir); err != nil {
			return err
		}
		for _, e := range entries {
			if err := addZip(zw, top, e, mtime); err != nil {
				return err
			}
		}
		return zw.Close()
	})
}

// addZip adds one file to a zip archive.
func addZip(zw *zip.Writer, top string, e entry, mtime time.Time) error {
	f, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer f.Close()
	h := &zip.FileHeader{Name: top + "/" + e.name, Method: zip.Deflate, Modified: mtime}
	h.SetMode(e.mode)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, f)
	return err
}

// writeAtomically writes dst through write: to a temporary file beside it,
// renamed over dst once complete.
func writeAtomically(dst string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(dst), ".tmp-"+filepath.Base(dst)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), dst)
}
