package fleets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// kindSetupLog: one per instance of an EC2 fleet that recorded a setup
// event (ID <fleet ID>/<instance ID>, parent the fleet): the instance's
// setup log, which the PreSignedLogUrl of its creation events serves.
const kindSetupLog store.Kind = "FleetSetupLog"

// setupLog is an instance's setup log: one line per event about it.
type setupLog struct {
	Lines []string `json:"lines"`
}

// hasSetupLog reports whether events with code carry a PreSignedLogUrl:
// the creation steps GameLift gives one (FLEET_CREATION_EXTRACTING_BUILD,
// _RUNNING_INSTALLER, _VALIDATING_RUNTIME_CONFIG) and, where GameLift's
// documents are silent, the installer's end and the failures of the setup
// steps.
func hasSetupLog(code api.EventCode) bool {
	switch code {
	case api.EventCodeFleetCreationExtractingBuild, api.EventCodeFleetCreationRunningInstaller,
		api.EventCodeFleetCreationValidatingRuntimeConfig, api.EventCodeFleetCreationCompletedInstaller,
		api.EventCodeFleetBinaryDownloadFailed, api.EventCodeFleetCreationFailedInstaller,
		api.EventCodeFleetValidationLaunchPathNotFound, api.EventCodeFleetValidationExecutableRuntimeFailure,
		api.EventCodeFleetValidationTimedOut, api.EventCodeFleetActivationFailed, api.EventCodeFleetInitializationFailed:
		return true
	}
	return false
}

// addInstanceEvent records an event about an instance and appends it to
// the instance's setup log; events hasSetupLog names point at that log.
func (s *Service) addInstanceEvent(ctx context.Context, tx store.Tx, fleetID, instanceID string, code api.EventCode, now time.Time, msg string) error {
	ev := s.newEvent(fleetID, code, now, msg)
	if hasSetupLog(code) {
		ev.SetupLog = instanceID
	}
	if err := putEvent(ctx, tx, ev); err != nil {
		return err
	}
	var l setupLog
	logID := computeID(fleetID, instanceID)
	if _, err := store.GetJSON(ctx, tx, kindSetupLog, logID, &l); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	l.Lines = append(l.Lines, fmt.Sprintf("%s %s %s", now.UTC().Format(time.RFC3339Nano), code, msg))
	return store.PutJSON(ctx, tx, store.Record{Kind: kindSetupLog, ID: logID, Parent: fleetID}, &l)
}

// WriteSetupLog writes an instance's setup log as text (what an event's
// PreSignedLogUrl serves); NotFoundException when there is none.
func (s *Service) WriteSetupLog(ctx context.Context, w io.Writer, fleetID, instanceID string) error {
	var l setupLog
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		_, err := store.GetJSON(ctx, tx, kindSetupLog, computeID(fleetID, instanceID), &l)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return api.NewNotFoundException("instance %s of fleet %s has no setup log", instanceID, fleetID)
	}
	if err != nil {
		return err
	}
	for _, line := range l.Lines {
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// deleteSetupLogs forgets the setup logs of a purged fleet.
func deleteSetupLogs(ctx context.Context, tx store.Tx, fleetID string) error {
	var ids []string
	q := store.Query{Kind: kindSetupLog, Parent: fleetID, HasParent: true}
	if err := store.Each(ctx, tx, q, func(r store.Record) error { ids = append(ids, r.ID); return nil }); err != nil {
		return err
	}
	for _, id := range ids {
		if err := tx.Delete(ctx, kindSetupLog, id); ignoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
