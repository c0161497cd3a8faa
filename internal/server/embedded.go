package server

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/store"
)

// OpenEmbeddedStore opens the embedded store of the data directory dataDir
// as hoist serve would (choice is --store: journal, sqlite, or "" to
// choose by what the directory holds), holding the data directory's lock
// so that no Hoist runs on it meanwhile (hoist migrate-store). release
// closes the store and drops the lock.
func OpenEmbeddedStore(dataDir, choice string, log *slog.Logger) (st store.Store, release func() error, err error) {
	if choice == config.StorePostgres {
		return nil, nil, errors.New("--store postgres is not an embedded store")
	}
	if !exists(filepath.Join(dataDir, "store")) && !exists(filepath.Join(dataDir, "hoist.db")) {
		return nil, nil, fmt.Errorf("--data-dir %s holds no store (neither store/ nor hoist.db)", dataDir)
	}
	lock, err := lockDataDir(dataDir)
	if err != nil {
		return nil, nil, err
	}
	st, err = openStore(&config.Config{DataDir: dataDir, Store: choice}, log)
	if err != nil {
		_ = lock.Close()
		return nil, nil, dataDirError(dataDir, err)
	}
	return st, func() error { return errors.Join(st.Close(), lock.Close()) }, nil
}
