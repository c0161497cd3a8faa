package hosting

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// GameMount is where a game sees its build on GameLift's Linux instances.
const GameMount = "/local/game/"

// GameRelative maps a log path as a game gave it in ProcessReady (relative
// to its build, or under /local/game) to a path relative to the game root;
// false for a path outside it.
func GameRelative(p string) (string, bool) {
	p = filepath.ToSlash(p)
	if strings.HasPrefix(p, GameMount) {
		p = strings.TrimPrefix(p, GameMount)
	} else if path.IsAbs(p) {
		return "", false
	}
	p = path.Clean(p)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

// WalkGameLogs calls visit with each regular file the log paths name (a
// file, or every file of a directory tree) under the game root, as
// "files/<path under the root>", reading through an os.Root so that
// nothing outside the root is reached, symbolic links included. A log
// path outside the game root is reported and skipped, one that does not
// exist is skipped, and other errors (visit's included) are reported and
// end that log path only; visit returns fs.SkipAll to end the whole walk
// (a limit reached).
func WalkGameLogs(root string, logPaths []string, visit func(name string, r io.Reader) error) error {
	if len(logPaths) == 0 {
		return nil
	}
	src, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer src.Close()
	fsys := src.FS()
	var errs []error
	stop := false
	for _, lp := range logPaths {
		rel, ok := GameRelative(lp)
		if !ok {
			errs = append(errs, errors.New("log path "+lp+" is outside the game's directory"))
			continue
		}
		err := fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			f, err := fsys.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			err = visit(path.Join("files", p), f)
			stop = stop || errors.Is(err, fs.SkipAll)
			return err
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		if stop {
			break
		}
	}
	return errors.Join(errs...)
}
