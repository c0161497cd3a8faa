package fleets

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// outputKeptTimeout bounds ProcessOutputKept's read of the store.
const outputKeptTimeout = 5 * time.Second

// ProcessOutputKept reports which of a fleet's processes have their
// output kept (those that ended abnormally, the newest outputKeepCount
// per fleet on the replica that kept each: what WriteProcessOutput
// serves, from this replica or from the one holding it), so that the
// console links only the outputs its log URLs can serve.
func (s *Service) ProcessOutputKept(fleetID string, processIDs []string) map[string]bool {
	out := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), outputKeptTimeout)
	defer cancel()
	holders := map[string]string{}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		for _, id := range processIDs {
			h, err := outputHolder(ctx, tx, fleetID, id)
			if err != nil {
				return err
			}
			holders[id] = h
		}
		return nil
	})
	if err != nil {
		s.log.Warn("fleets: reading which processes' output is kept", "fleet", fleetID, "err", err)
	}
	dir := s.fleetDir(fleetID)
	for _, id := range processIDs {
		h := holders[id]
		switch {
		case h != "" && h != s.cfg.ReplicaID:
			out[id] = true
		case dir != "" && validName(id):
			fi, err := os.Stat(filepath.Join(dir, outputDirName, id+".log"))
			out[id] = err == nil && fi.Mode().IsRegular()
		}
	}
	return out
}
