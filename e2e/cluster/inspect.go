package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres"
)

// ID returns the replica's ID: the holder its leases and the records it
// owns name (the replica-id file of its data directory, written at its
// first start).
func (r *Replica) ID() (string, error) {
	b, err := os.ReadFile(filepath.Join(r.DataDir, "replica-id"))
	if err != nil {
		return "", fmt.Errorf("replica %s: %w", r.Name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Store returns a store on the cluster's database (its own small pool,
// closed when the test ends) for what a test reads beside the API: who
// holds which lease.
func (c *Cluster) Store(ctx context.Context) (*postgres.Store, error) {
	c.storeOnce.Do(func() {
		c.st, c.stErr = postgres.Open(context.WithoutCancel(ctx), c.DatabaseURL, postgres.Options{MaxConns: 2})
		if c.stErr == nil {
			c.t.Cleanup(func() { _ = c.st.Close() })
		}
	})
	return c.st, c.stErr
}

// Leases returns the leases held now whose names begin with prefix (a
// sharded loop's "shard/<loop>/", or "" for every one), by the
// database's clock.
func (c *Cluster) Leases(ctx context.Context, prefix string) ([]store.Grant, error) {
	st, err := c.Store(ctx)
	if err != nil {
		return nil, err
	}
	return st.Leases(ctx, prefix)
}

// Holder returns the replica holding the lease name now, or nil when no
// replica holds it.
func (c *Cluster) Holder(ctx context.Context, name string) (*Replica, error) {
	gs, err := c.Leases(ctx, name)
	if err != nil {
		return nil, err
	}
	for _, g := range gs {
		if g.Name == name {
			return c.ByID(g.Holder), nil
		}
	}
	return nil, nil
}

// ByID returns the replica whose ID is id, or nil.
func (c *Cluster) ByID(id string) *Replica {
	for _, r := range c.Replicas {
		if rid, err := r.ID(); err == nil && rid == id {
			return r
		}
	}
	return nil
}

// storeState is the cluster's own store (Store), opened once.
type storeState struct {
	storeOnce sync.Once
	st        *postgres.Store
	stErr     error
}

// SDKEndpoint is the replica's Server SDK endpoint on its plain listener
// (ws://127.0.0.1:port/sdk): a game server process that dials it is
// connected to this replica.
func (r *Replica) SDKEndpoint() string {
	return "ws://" + strings.TrimPrefix(r.URL(), "http://") + "/sdk"
}

// Logs returns the last lines of every replica's log (for a failing
// test's message).
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, r := range c.Replicas {
		if p := r.Process(); p != nil {
			fmt.Fprintf(&b, "--- replica %s (tail)\n%s\n", r.Name, p.LogTail(60))
		}
	}
	return b.String()
}
