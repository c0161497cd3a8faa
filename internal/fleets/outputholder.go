package fleets

import (
	"context"
	"errors"

	"github.com/hoistgg/hoist/internal/store"
)

// kindProcessOutput: one per server process whose output a replica kept
// (ID <fleet ID>/<process ID>, parent the fleet): the replica whose data
// directory holds the copy, so that a PreSignedLogUrl opened on another
// replica is answered from there (as a game session's logs are).
const kindProcessOutput store.Kind = "FleetProcessOutput"

// processOutputHolder names the replica holding a process's kept output.
type processOutputHolder struct {
	Replica string `json:"replica"`
}

// recordOutputHolder records what takeOutput did with a process's output:
// this replica holds the copy (when out.Kept), and no longer holds the
// copies it pruned (their records, when they name it, are deleted).
func (s *Service) recordOutputHolder(ctx context.Context, tx store.Tx, fleetID, processID string, out processOutput) error {
	for _, id := range out.Pruned {
		holder, err := outputHolder(ctx, tx, fleetID, id)
		if err != nil {
			return err
		}
		if holder != s.cfg.ReplicaID {
			continue
		}
		if err := tx.Delete(ctx, kindProcessOutput, computeID(fleetID, id)); ignoreNotFound(err) != nil {
			return err
		}
	}
	if !out.Kept {
		return nil
	}
	return store.PutJSON(ctx, tx, store.Record{Kind: kindProcessOutput, ID: computeID(fleetID, processID), Parent: fleetID},
		&processOutputHolder{Replica: s.cfg.ReplicaID})
}

// outputHolder returns the replica holding processID's kept output ("":
// no record, the copy, if any, is in this replica's data directory).
func outputHolder(ctx context.Context, tx store.Tx, fleetID, processID string) (string, error) {
	var h processOutputHolder
	_, err := store.GetJSON(ctx, tx, kindProcessOutput, computeID(fleetID, processID), &h)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return h.Replica, err
}

// deleteOutputHolders forgets the holder records of a purged fleet.
func deleteOutputHolders(ctx context.Context, tx store.Tx, fleetID string) error {
	var ids []string
	q := store.Query{Kind: kindProcessOutput, Parent: fleetID, HasParent: true}
	if err := store.Each(ctx, tx, q, func(r store.Record) error { ids = append(ids, r.ID); return nil }); err != nil {
		return err
	}
	for _, id := range ids {
		if err := tx.Delete(ctx, kindProcessOutput, id); ignoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
