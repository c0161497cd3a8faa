package local

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// copyTree copies the build at src to dst: directories, regular files
// (keeping their permission bits) and symbolic links that stay inside the
// tree; anything else is skipped. With link, files are hard-linked when the
// file system allows (copied otherwise). It stops early when ctx ends.
func copyTree(ctx context.Context, src, dst string, link bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			return os.MkdirAll(to, mode.Perm()|0o700)
		case mode.IsRegular():
			if link && os.Link(p, to) == nil {
				return nil
			}
			return copyFile(p, to, mode.Perm())
		case mode&fs.ModeSymlink != 0:
			return copyLink(src, p, to)
		}
		return nil
	})
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyLink recreates a relative symbolic link whose target stays inside
// root; other links are skipped.
func copyLink(root, p, to string) error {
	target, err := os.Readlink(p)
	if err != nil {
		return err
	}
	if filepath.IsAbs(target) {
		return nil
	}
	rel, err := filepath.Rel(root, filepath.Join(filepath.Dir(p), target))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	return os.Symlink(target, to)
}
