package server

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/pki"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// openClusterStore opens a PostgreSQL store on a schema of the test's own
// (skipped without HOIST_TEST_DATABASE_URL).
func openClusterStore(t *testing.T) store.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), pgtest.URL(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestSharedCAFirstStart: eight replicas starting at once on an empty
// database, each on an empty data directory, end with one CA, the one the
// database holds, written into every data directory; one started later
// adopts it too.
func TestSharedCAFirstStart(t *testing.T) {
	st := openClusterStore(t)
	ctx := context.Background()
	base := t.TempDir()
	certs := make([][]byte, 9)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			ca, err := sharedCA(ctx, st, filepath.Join(base, string(rune('a'+i))), pki.Constraints{}, time.Now)
			if err != nil {
				t.Error(err)
				return
			}
			certs[i] = ca.CertPEM
		})
	}
	wg.Wait()
	ca, err := sharedCA(ctx, st, filepath.Join(base, "late"), pki.Constraints{}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	certs[8] = ca.CertPEM
	rec, found, err := readStoredCA(ctx, st)
	if err != nil || !found {
		t.Fatalf("the stored CA: %v, found %v", err, found)
	}
	for i, c := range certs {
		if !bytes.Equal(c, rec.CertPEM) {
			t.Errorf("replica %d has a CA other than the database's", i)
		}
	}
	if got, err := os.ReadFile(filepath.Join(base, "late", pki.CertFileName)); err != nil || !bytes.Equal(got, rec.CertPEM) {
		t.Errorf("the late replica's ca.pem: %v", err)
	}
}

// TestSharedCAKeepsTheFirstReplicasOwn: the first replica on an empty
// database offers the CA its data directory holds (its hosts pinned it),
// and a replica whose data directory holds another CA is refused with a
// message saying what to do, its files untouched.
func TestSharedCAKeepsTheFirstReplicasOwn(t *testing.T) {
	st := openClusterStore(t)
	ctx := context.Background()
	a, b := t.TempDir(), t.TempDir()
	own, err := pki.LoadOrCreateCA(a)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sharedCA(ctx, st, a, pki.Constraints{}, time.Now)
	if err != nil || !bytes.Equal(got.CertPEM, own.CertPEM) {
		t.Fatalf("the first replica's CA: %v", err)
	}
	other, err := pki.LoadOrCreateCA(b)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sharedCA(ctx, st, b, pki.Constraints{}, time.Now)
	if err == nil || !strings.Contains(err.Error(), "is not this cluster's") || !strings.Contains(err.Error(), "move "+b) {
		t.Fatalf("a replica with another CA: %v, want a refusal naming its directory", err)
	}
	if kept, _ := os.ReadFile(filepath.Join(b, pki.CertFileName)); !bytes.Equal(kept, other.CertPEM) {
		t.Error("the refused replica's ca.pem was changed")
	}
	if err := os.RemoveAll(b); err != nil {
		t.Fatal(err)
	}
	if got, err := sharedCA(ctx, st, b, pki.Constraints{}, time.Now); err != nil || !bytes.Equal(got.CertPEM, own.CertPEM) {
		t.Fatalf("once its pki/ moved away: %v", err)
	}
}

// TestCopyCAToStore: migrate-store's copy of a data directory's CA is the
// one every replica then uses; a database holding another is refused.
func TestCopyCAToStore(t *testing.T) {
	st := openClusterStore(t)
	ctx := context.Background()
	data := t.TempDir()
	if ok, err := CopyCAToStore(ctx, st, data, time.Now()); ok || err != nil {
		t.Fatalf("a data directory without a CA: %v, %v", ok, err)
	}
	own, err := pki.LoadOrCreateCA(filepath.Join(data, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := CopyCAToStore(ctx, st, data, time.Now()); !ok || err != nil {
		t.Fatalf("copying: %v, %v", ok, err)
	}
	got, err := sharedCA(ctx, st, t.TempDir(), pki.Constraints{}, time.Now)
	if err != nil || !bytes.Equal(got.CertPEM, own.CertPEM) {
		t.Fatalf("a replica on the database: %v", err)
	}
	other := t.TempDir()
	if _, err := pki.LoadOrCreateCA(filepath.Join(other, "pki")); err != nil {
		t.Fatal(err)
	}
	if _, err := CopyCAToStore(ctx, st, other, time.Now()); err == nil || !strings.Contains(err.Error(), "--replace") {
		t.Errorf("another CA: %v, want a refusal", err)
	}
}
