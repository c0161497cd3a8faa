package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/pki"
	"github.com/hoistgg/hoist/internal/store"
)

// caSecret is the ID of the HoistSecret record holding a cluster's CA
// (PostgreSQL only: the embedded stores keep it in the data directory).
const caSecret = "ca"

// storedCA is the record of a cluster's CA: its certificate and PKCS#8
// private key, as PEM.
type storedCA struct {
	CertPEM, KeyPEM []byte
	Created         time.Time
}

// loadCA returns this replica's CA: the data directory's own (made on
// first start) with an embedded store; on PostgreSQL the cluster's, which
// every replica shares (sharedCA).
func (s *Server) loadCA(ctx context.Context) (*pki.CA, error) {
	dir, c := filepath.Join(s.cfg.DataDir, "pki"), caConstraints(s.cfg)
	if s.cfg.Store != config.StorePostgres {
		return pki.LoadOrCreateCAFor(dir, c)
	}
	return sharedCA(ctx, s.store, dir, c, s.wallNow)
}

// sharedCA returns the cluster's CA, kept in the store, and makes dir hold
// its files. On a store holding none, the first replica offers its own
// (the one in dir, else a new one) and inserts it if still absent, in one
// transaction: a replica that loses the race adopts the winner's. A dir
// holding a CA other than the cluster's is refused, untouched.
func sharedCA(ctx context.Context, st store.Store, dir string, c pki.Constraints, now func() time.Time) (*pki.CA, error) {
	rec, found, err := readStoredCA(ctx, st)
	if err != nil {
		return nil, err
	}
	if !found {
		certPEM, keyPEM, err := candidateCA(dir, c, now)
		if err != nil {
			return nil, err
		}
		if rec, err = insertCA(ctx, st, storedCA{CertPEM: certPEM, KeyPEM: keyPEM, Created: now().UTC()}); err != nil {
			return nil, err
		}
	}
	ca, err := pki.AdoptCA(dir, rec.CertPEM, rec.KeyPEM, c)
	if errors.Is(err, pki.ErrOtherCA) {
		return nil, fmt.Errorf("the CA in %s is not this cluster's (the database holds the CA of the first replica started on it, which every replica uses): "+
			"Hoist never replaces a CA clients may trust; to adopt the cluster's, stop this replica, move %s away and start it again "+
			"(pool hosts enrolled through this replica then enrol again, and clients trusting its ca.pem trust the cluster's); "+
			"to keep this CA for the whole cluster instead, see docs/replicas.md, \"The cluster's CA\"", dir, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("the cluster's CA (kept in the database): %w", err)
	}
	return ca, nil
}

// candidateCA is the CA this replica offers a store holding none: the
// one in dir (checked as on a single replica), else a new one.
func candidateCA(dir string, c pki.Constraints, now func() time.Time) (certPEM, keyPEM []byte, err error) {
	certPEM, keyPEM, ok, err := pki.ReadCAFiles(dir)
	if err != nil || !ok {
		if err == nil {
			certPEM, keyPEM, err = pki.GenerateCA(now(), c)
		}
		return certPEM, keyPEM, err
	}
	if _, err := pki.LoadOrCreateCAFor(dir, c); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// readStoredCA reads the cluster's CA record.
func readStoredCA(ctx context.Context, st store.Store) (storedCA, bool, error) {
	var rec storedCA
	found := false
	err := st.View(ctx, func(tx store.Tx) error {
		r, err := tx.Get(ctx, kindSecret, caSecret)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		return json.Unmarshal(r.Data, &rec)
	})
	if err != nil {
		return storedCA{}, false, fmt.Errorf("reading the cluster's CA from the store: %w", err)
	}
	return rec, found, nil
}

// insertCA stores ca as the cluster's CA unless the store holds one
// already, and returns the one it holds after the transaction.
func insertCA(ctx context.Context, st store.Store, ca storedCA) (storedCA, error) {
	var out storedCA
	err := st.Update(ctx, func(tx store.Tx) error {
		r, err := tx.Get(ctx, kindSecret, caSecret)
		if err == nil {
			return json.Unmarshal(r.Data, &out)
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		data, err := json.Marshal(ca)
		if err != nil {
			return err
		}
		out = ca
		return tx.Insert(ctx, store.Record{Kind: kindSecret, ID: caSecret, Data: data})
	})
	if err != nil {
		return storedCA{}, fmt.Errorf("storing the cluster's CA: %w", err)
	}
	return out, nil
}

// CopyCAToStore puts the CA of the data directory dataDir into st as the
// cluster's CA (hoist migrate-store), so that replicas on st keep the CA
// its hosts and clients trust. A data directory without a CA copies
// nothing; a store already holding another CA is an error.
func CopyCAToStore(ctx context.Context, st store.Store, dataDir string, now time.Time) (bool, error) {
	dir := filepath.Join(dataDir, "pki")
	certPEM, keyPEM, ok, err := pki.ReadCAFiles(dir)
	if err != nil || !ok {
		return false, err
	}
	if _, err := pki.ParseCA(certPEM, keyPEM, now); err != nil {
		return false, fmt.Errorf("the CA in %s: %w", dir, err)
	}
	got, err := insertCA(ctx, st, storedCA{CertPEM: certPEM, KeyPEM: keyPEM, Created: now.UTC()})
	if err != nil {
		return false, err
	}
	if string(got.CertPEM) != string(certPEM) {
		return false, errors.New("the database already holds another cluster CA: give --replace to delete its records first")
	}
	return true, nil
}
