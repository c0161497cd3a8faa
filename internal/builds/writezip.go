package builds

import (
	"archive/zip"
	"io"
	"io/fs"
	"os"
)

// WriteZip writes the tree at dir as a zip archive: directories, regular
// files (their mode kept) and symbolic links, read through an os.Root so
// nothing outside dir is reached.
func WriteZip(w io.Writer, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	zw := zip.NewWriter(w)
	fsys := root.FS()
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return addZipEntry(zw, root, fsys, p, info)
	})
	if err != nil {
		return err
	}
	return zw.Close()
}

// addZipEntry adds one file, directory or link to a zip archive.
func addZipEntry(zw *zip.Writer, root *os.Root, fsys fs.FS, p string, info fs.FileInfo) error {
	hdr, err := zip.FileInfoHeader(info)
	if err != nil {
		return err
	}
	hdr.Name, hdr.Method = p, zip.Store
	switch mode := info.Mode(); {
	case mode.IsDir():
		hdr.Name += "/"
		_, err = zw.CreateHeader(hdr)
		return err
	case mode&fs.ModeSymlink != 0:
		target, err := root.Readlink(p)
		if err != nil {
			return err
		}
		fw, err := zw.CreateHeader(hdr)
		if err == nil {
			_, err = io.WriteString(fw, target)
		}
		return err
	case mode.IsRegular():
		f, err := fsys.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fw, err := zw.CreateHeader(hdr)
		if err == nil {
			_, err = io.Copy(fw, f)
		}
		return err
	}
	return nil // devices, pipes: a build never holds them
}
