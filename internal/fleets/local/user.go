package local

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// User is an unprivileged account server processes run as when Hoist runs
// as root (Config.Users).
type User struct {
	Name     string
	UID, GID int
}

// Accounts are the unprivileged accounts server processes run as, one per
// instance running at one time (Config.Users): slot 0 is the account
// named by --process-user, slot n that name followed by "-n" (created with
// useradd when first needed, and kept for reuse).
type Accounts struct {
	base string
	log  *slog.Logger

	mu    sync.Mutex
	cache map[int]*User
}

// User returns the account of a slot, creating it if it is missing.
func (a *Accounts) User(slot int) (*User, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if u := a.cache[slot]; u != nil {
		return u, nil
	}
	name := a.base
	if slot > 0 {
		name = fmt.Sprintf("%s-%d", a.base, slot)
	}
	u, err := lookupOrCreate(name, a.log)
	if err != nil {
		return nil, err
	}
	if u.UID == 0 || u.GID == 0 {
		return nil, fmt.Errorf("--process-user: the account %s has UID %d and GID %d; it must be unprivileged (not 0)", name, u.UID, u.GID)
	}
	a.cache[slot] = u
	return u, nil
}

// SetupUser prepares running server processes as unprivileged accounts,
// and returns them, when Hoist runs as root; otherwise, or with name
// empty, it logs a warning that they run as Hoist's own user and returns
// nil.
//
// As root it looks the account name up and creates it (useradd --system)
// when it is missing; it refuses an account with UID 0. It then makes
// what Hoist creates from now on private to root (umask 077), makes the
// data directory and its instances directory traversable only (0711: an
// account reaches its instance directories by name and can list
// neither), and takes group and other permissions from everything else at
// the top of the data directory (the store, the CA key, builds, logs), so
// that none of it is readable by the accounts.
func SetupUser(name, dataDir string, log *slog.Logger) (*Accounts, error) {
	return setupUser(name, dataDir, log, os.Geteuid())
}

func setupUser(name, dataDir string, log *slog.Logger, euid int) (*Accounts, error) {
	if euid != 0 {
		log.Warn("Hoist does not run as root: server processes run as Hoist's own user and can read everything Hoist can (its data directory, CA key, store, every fleet's files); run Hoist as root with --process-user to confine them (see docs/fleets.md)",
			"uid", euid)
		return nil, nil
	}
	if name == "" {
		log.Warn("--process-user is empty: server processes run as root, with everything Hoist can do (see docs/fleets.md)")
		return nil, nil
	}
	a := &Accounts{base: name, log: log, cache: map[int]*User{}}
	u, err := a.User(0)
	if err != nil {
		return nil, err
	}
	setUmask(0o077)
	if err := confineDataDir(dataDir); err != nil {
		return nil, fmt.Errorf("--process-user: making the data directory private: %w", err)
	}
	if dir := unreachable(dataDir); dir != "" {
		log.Error("the process user cannot reach the data directory: server processes will fail to start; make it traversable (chmod o+x), choose another --data-dir, or set --process-user to empty",
			"user", name, "directory", dir)
	}
	log.Info("server processes run as unprivileged users, one per running instance", "user", name, "uid", u.UID, "gid", u.GID)
	return a, nil
}

// lookupOrCreate returns the account name, creating it with useradd when
// it does not exist.
func lookupOrCreate(name string, log *slog.Logger) (*User, error) {
	acc, err := user.Lookup(name)
	var unknown user.UnknownUserError
	// Another Hoist starting at the same time may create it first, or hold
	// the lock of /etc/passwd: look again, and try a few times.
	for attempt := 1; errors.As(err, &unknown); attempt++ {
		out, cerr := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
		if cerr == nil {
			log.Info("created the account server processes run as", "user", name)
		}
		if acc, err = user.Lookup(name); err == nil || !errors.As(err, &unknown) {
			break
		}
		if attempt == 5 {
			return nil, fmt.Errorf("--process-user %s: the account does not exist and useradd failed: %v: %s", name, cerr, out)
		}
		time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("--process-user %s: %w", name, err)
	}
	uid, err1 := strconv.Atoi(acc.Uid)
	gid, err2 := strconv.Atoi(acc.Gid)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("--process-user %s: UID %q or GID %q is not a number", name, acc.Uid, acc.Gid)
	}
	return &User{Name: name, UID: uid, GID: gid}, nil
}

// instancesDirName is the data directory's subdirectory of instances (the
// provider's Config.Dir in hoist serve).
const instancesDirName = "instances"

// confineDataDir makes the data directory and its instances directory
// traversable only, and everything else at its top private to its owner.
func confineDataDir(dataDir string) error {
	inst := filepath.Join(dataDir, instancesDirName)
	if err := os.MkdirAll(inst, 0o711); err != nil {
		return err
	}
	for _, d := range []string{dataDir, inst} {
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == instancesDirName || e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		p := filepath.Join(dataDir, e.Name())
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if perm := st.Mode().Perm(); perm&0o077 != 0 {
			if err := os.Chmod(p, perm&^0o077); err != nil {
				return err
			}
		}
	}
	return nil
}

// unreachable returns the first directory on the way to dir (dir
// included) that others cannot traverse, or "".
func unreachable(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for d := abs; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// chownTree gives the tree at root, links included (not followed), to u.
func chownTree(root string, u *User) error {
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, u.UID, u.GID)
	})
}
