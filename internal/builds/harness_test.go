package builds

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/sigv4"
	"github.com/hoistgg/hoist/internal/store/journal"
)

// harness is a Service over a fresh SQLite store in a temporary data
// directory, with a fake clock and sequential build IDs.
type harness struct {
	*Service
	clock   *clocktest.Clock
	dataDir string
	ctx     context.Context
}

func newHarness(t testing.TB, mod ...func(*Config)) *harness {
	t.Helper()
	dir := t.TempDir()
	st, err := journal.Open(filepath.Join(dir, "store"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// The clock starts at the real time: the S3 SDK signs with the real
	// time, and signatures are checked against this clock.
	clock := clocktest.New(time.Now().UTC().Truncate(time.Millisecond))
	var mu sync.Mutex
	n := 0
	cfg := Config{
		Store:     st,
		DataDir:   dir,
		Region:    "us-west-2",
		PublicURL: "http://127.0.0.1:9080",
		Now:       clock.Now,
		// Hoist's API authenticator in unauthenticated mode, as
		// internal/server passes it without credentials.
		Operators: sigv4.NewAuthenticator(nil, clock.Now),
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
		},
	}
	for _, m := range mod {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &harness{Service: s, clock: clock, dataDir: dir, ctx: context.Background()}
}

// deliver stores archive bytes as an upload to key (as PutObject does
// after reading the body) and, for a build's key, waits for the unpack
// outcome as the handler does.
func (h *harness) deliver(t testing.TB, key string, archive []byte) error {
	t.Helper()
	w, err := h.blobs.create()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(archive); err != nil {
		t.Fatal(err)
	}
	if err := w.commit(); err != nil {
		t.Fatal(err)
	}
	tg, err := h.uploadTarget(h.ctx, &authResult{}, key)
	if err != nil {
		h.blobs.remove(w.name)
		return err
	}
	if err := h.storeUpload(h.ctx, tg, w.name, int64(len(archive)), `"etag"`, nil); err != nil {
		return err
	}
	if tg.build != nil {
		return h.awaitUnpack(h.ctx, *tg.build.BuildId)
	}
	return nil
}
