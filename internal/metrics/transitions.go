package metrics

import (
	"encoding/json"
	"strings"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/fleetiq"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/matchmaking"
	"github.com/hoistgg/hoist/internal/placement"
	"github.com/hoistgg/hoist/internal/store"
)

// GameLift's event metrics of records whose Key is their status are
// counted from the store's writes: a record whose Key a committed
// transaction changed made a transition (Store's countingTx finds the Key
// before and after). A record's Key is its status for these kinds:
//
//	GameSession           Key status, Parent fleet ID
//	PlayerSession         Key status, Parent game session ARN
//	Process               Key location/STATE[/IDLE], Parent fleet ID
//	GameSessionPlacement  Key status, Parent queue name
//	GameServerInstance    Key STATUS/0|1, Parent game server group
//
// Other records are counted when inserted (placements, tickets).

// watched reports whether transitions of kind's records are counted.
func watched(kind store.Kind) bool {
	switch kind {
	case hosting.KindGameSession, hosting.KindPlayerSession, hosting.KindProcess,
		placement.KindPlacement, fleetiq.KindInstance:
		return true
	}
	return false
}

// countedInsert reports whether inserting a record of kind is counted.
func countedInsert(kind store.Kind) bool {
	return kind == placement.KindPlacement || kind == matchmaking.KindTicket
}

// inserted counts a record inserted in t (once t commits), unless t
// deleted it first.
func inserted(t *countingTx, rec store.Record) {
	switch rec.Kind {
	case placement.KindPlacement:
		t.count(func(m *Metrics) { m.gl.placementsStarted.WithLabelValues(rec.Parent).Inc() })
	case matchmaking.KindTicket:
		players := ticketPlayers(rec.Data)
		t.count(func(m *Metrics) {
			m.gl.ticketsStarted.WithLabelValues(rec.Parent).Inc()
			m.gl.playersStarted.WithLabelValues(rec.Parent).Add(float64(players))
		})
	}
}

// ticketPlayers returns the number of players of a ticket record's data
// (0 when it cannot be read).
func ticketPlayers(data []byte) int {
	var t struct {
		Ticket struct {
			Players []json.RawMessage `json:"Players"`
		} `json:"ticket"`
	}
	if json.Unmarshal(data, &t) != nil {
		return 0
	}
	return len(t.Ticket.Players)
}

// transition counts a committed change of a watched record's Key from old
// (noRecord: it was inserted) to rec.Key (noRecord: it was deleted).
func (m *Metrics) transition(old string, rec store.Record) {
	if rec.Key == noRecord {
		return
	}
	switch rec.Kind {
	case hosting.KindGameSession:
		m.gameSessionMoved(old, rec)
	case hosting.KindPlayerSession:
		if old == string(api.PlayerSessionStatusReserved) && rec.Key == string(api.PlayerSessionStatusActive) {
			fleet, loc := gameSessionPlace(rec.Parent)
			m.gl.playerSessionActivations.WithLabelValues(fleet, loc).Inc()
		}
	case hosting.KindProcess:
		m.processMoved(old, rec)
	case placement.KindPlacement:
		m.placementEnded(old, rec)
	case fleetiq.KindInstance:
		if !strings.HasPrefix(old, spotTerminating) && strings.HasPrefix(rec.Key, spotTerminating) {
			if n, err := fleetiq.InstanceGameServers(rec.Data); err == nil && n > 0 {
				m.gl.gameServerInterruptions.WithLabelValues(rec.Parent).Add(float64(n))
			}
		}
	}
}

// spotTerminating begins the Key of a SPOT_TERMINATING FleetIQ instance.
const spotTerminating = string(api.GameServerInstanceStatusSpotTerminating) + "/"

// gameSessionMoved counts a game session ended INTERRUPTED.
func (m *Metrics) gameSessionMoved(old string, rec store.Record) {
	if rec.Key != string(api.GameSessionStatusTerminated) ||
		(old != string(api.GameSessionStatusActive) && old != string(api.GameSessionStatusTerminating)) {
		return
	}
	var gs struct {
		Session struct {
			Location     string `json:"Location"`
			StatusReason string `json:"StatusReason"`
		} `json:"session"`
	}
	if json.Unmarshal(rec.Data, &gs) == nil && gs.Session.StatusReason == string(api.GameSessionStatusReasonInterrupted) {
		m.gl.gameSessionInterruptions.WithLabelValues(rec.Parent, gs.Session.Location).Inc()
	}
}

// processMoved counts a server process that became ACTIVE or ended.
func (m *Metrics) processMoved(old string, rec store.Record) {
	loc, state := processState(rec.Key)
	_, was := processState(old)
	if state == was {
		return
	}
	switch state {
	case hosting.ProcessActive:
		if was != hosting.ProcessTerminating && was != hosting.ProcessTerminated {
			m.gl.serverProcessActivations.WithLabelValues(rec.Parent, loc).Inc()
		}
	case hosting.ProcessTerminated:
		m.gl.serverProcessTerminations.WithLabelValues(rec.Parent, loc).Inc()
		var p struct {
			EndReason string `json:"endReason"`
		}
		if json.Unmarshal(rec.Data, &p) == nil && abnormalEnd(p.EndReason) {
			m.gl.serverProcessAbnormalTerminations.WithLabelValues(rec.Parent, loc).Inc()
		}
	}
}

// processState splits a process record's Key (hosting.ProcessKey) into
// its location and state ("" for noRecord).
func processState(key string) (string, hosting.ProcessState) {
	if key == noRecord {
		return "", ""
	}
	key = strings.TrimSuffix(key, "/IDLE")
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", hosting.ProcessState(key)
	}
	return key[:i], hosting.ProcessState(key[i+1:])
}

// abnormalEnd reports whether a process's EndReason (which begins with
// the GameLift event code of its end, as sessions and fleets write it)
// is an abnormal end in GameLift's sense: the process crashed, stopped
// reporting health or reported itself unhealthy, was not ready or did not
// activate its game session in time, or did not exit in time after
// TerminateProcess. A FORCE_TERMINATE is the operator's request, and not
// counted.
func abnormalEnd(reason string) bool {
	code, _, _ := strings.Cut(reason, ": ")
	switch api.EventCode(code) {
	case api.EventCodeServerProcessCrashed, api.EventCodeServerProcessTerminatedUnhealthy,
		api.EventCodeServerProcessProcessReadyTimeout, api.EventCodeServerProcessSdkInitializationTimeout,
		api.EventCodeServerProcessProcessExitTimeout, api.EventCodeGameSessionActivationTimeout:
		return true
	}
	return false
}

// placementEnded counts a placement that left PENDING.
func (m *Metrics) placementEnded(old string, rec store.Record) {
	if old != string(api.GameSessionPlacementStatePending) {
		return
	}
	var c *counterVec
	switch api.GameSessionPlacementState(rec.Key) {
	case api.GameSessionPlacementStateFulfilled:
		c = m.gl.placementsSucceeded
	case api.GameSessionPlacementStateCancelled:
		c = m.gl.placementsCanceled
	case api.GameSessionPlacementStateTimedOut:
		c = m.gl.placementsTimedOut
	case api.GameSessionPlacementStateFailed:
		c = m.gl.placementsFailed
	default:
		return
	}
	c.WithLabelValues(rec.Parent).Inc()
}

// gameSessionPlace returns the fleet ID and location of a game session
// ARN, arn:aws:gamelift:<location>::gamesession/<fleet ID>/<ID> ("" for
// what it does not hold).
func gameSessionPlace(arn string) (fleet, location string) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 {
		return "", ""
	}
	res := strings.TrimPrefix(parts[5], "gamesession/")
	fleet, _, _ = strings.Cut(res, "/")
	return fleet, parts[3]
}
