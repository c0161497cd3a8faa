package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// replicaFile holds this data directory's replica ID.
const replicaFile = "replica-id"

// replicaID returns the ID of the Hoist replica that owns dataDir, creating
// it on first start. It is stable across restarts, so records naming this
// replica (the instances it hosts, the processes connected to it) still do
// after a restart, and unique per data directory, so several replicas
// sharing one database tell their own records apart.
func replicaID(dataDir string) (string, error) {
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return "", err
	}
	path := filepath.Join(dataDir, replicaFile)
	b, err := os.ReadFile(path)
	if err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	id := "hoist-" + hex.EncodeToString(r[:])
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o640); err != nil {
		return "", err
	}
	return id, os.Rename(tmp, path)
}

// kindSecret holds keys every replica shares (in the store, so that a URL
// signed by one replica is accepted by another).
const kindSecret store.Kind = "HoistSecret"

// sharedKey returns the 32-byte key named name, creating it on first use.
func sharedKey(ctx context.Context, st store.Store, name string, now func() time.Time) ([]byte, error) {
	var key []byte
	err := st.Update(ctx, func(tx store.Tx) error {
		rec, err := tx.Get(ctx, kindSecret, name)
		if err == nil {
			var v struct{ Key []byte }
			if err := json.Unmarshal(rec.Data, &v); err != nil || len(v.Key) != 32 {
				return fmt.Errorf("stored key %s is damaged", name)
			}
			key = v.Key
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		key = make([]byte, 32)
		_, _ = rand.Read(key)
		data, _ := json.Marshal(struct {
			Key     []byte
			Created time.Time
		}{key, now().UTC()})
		return tx.Insert(ctx, store.Record{Kind: kindSecret, ID: name, Data: data})
	})
	return key, err
}
