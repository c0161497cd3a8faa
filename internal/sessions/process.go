package sessions

import (
	"context"
	"errors"
	"fmt"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// sdkAPI is the hosting.ProcessAPI of a Service (a separate type because
// the SDK's DescribePlayerSessions and the API's share a name).
type sdkAPI struct{ *Service }

// ProcessAPI returns what internal/sdkconn calls for each SDK message.
func (s *Service) ProcessAPI() hosting.ProcessAPI { return sdkAPI{s} }

// sdkErr returns an *hosting.SDKError.
func sdkErr(status int, format string, a ...any) error {
	return &hosting.SDKError{Status: status, Message: fmt.Sprintf(format, a...)}
}

// maxSDKPlayerSessions is the most player sessions one SDK
// DescribePlayerSessions answer carries.
const maxSDKPlayerSessions = 1024

// connProcess reads the process of an SDK connection and checks that it is
// the one the connection's token was issued for.
func connProcess(ctx context.Context, tx store.Tx, c hosting.Conn) (*hosting.Process, error) {
	p, err := getProcess(ctx, tx, c.ProcessID)
	if errors.Is(err, store.ErrNotFound) {
		p, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return connProcessIs(p, c)
}

// connProcessIs is connProcess's answer for the process read as p (nil:
// none).
func connProcessIs(p *hosting.Process, c hosting.Conn) (*hosting.Process, error) {
	if p == nil {
		return nil, sdkErr(404, "process %s is not known: it must connect first", c.ProcessID)
	}
	if p.FleetID != c.FleetID || p.ComputeName != c.ComputeName {
		return nil, sdkErr(403, "process %s belongs to another fleet or compute", c.ProcessID)
	}
	return p, nil
}

// liveProcess is connProcess for calls a process may make only before it
// has ended.
func liveProcess(ctx context.Context, tx store.Tx, c hosting.Conn) (*hosting.Process, error) {
	p, err := connProcess(ctx, tx, c)
	return liveProcessIs(p, err, c)
}

// liveProcessIs is liveProcess's answer for connProcess's.
func liveProcessIs(p *hosting.Process, err error, c hosting.Conn) (*hosting.Process, error) {
	if err == nil && p.State == hosting.ProcessTerminated {
		return nil, sdkErr(403, "process %s has ended", c.ProcessID)
	}
	return p, err
}

// Connected records a process's new WebSocket. A process Hoist did not
// launch (an Anywhere game server started by hand) gets its record here.
//
// On a shared store it is a Claim holding the process, its compute and
// fleet read unheld (where a process runs never changes, and a compute
// deregistered just then ends the process at its next report, as for a
// heartbeat), so that the processes of a host starting together, or those
// of a replica that died reconnecting elsewhere, do not fail each other. A
// new process's record is inserted with the commit (store.InsertNew):
// when another socket of the same process ID created it meanwhile, the
// connect runs again and finds it.
func (s sdkAPI) Connected(ctx context.Context, c hosting.Conn) error {
	for attempt := 0; ; attempt++ {
		err := s.claim(ctx, func(tx store.Tx, _ *effects, claimed bool) error {
			reads := tx
			if claimed {
				reads = store.Unheld(tx)
			}
			p, err := getProcess(ctx, tx, c.ProcessID)
			created := false
			switch {
			case errors.Is(err, store.ErrNotFound):
				p, err = s.newConnectedProcess(ctx, reads, c)
				created = true
			case err != nil: // returned below
			case p.State == hosting.ProcessTerminated:
				p, err = s.reconnectEnded(ctx, reads, c)
			case p.FleetID != c.FleetID || p.ComputeName != c.ComputeName:
				err = sdkErr(403, "process ID %s is in use by another fleet or compute", c.ProcessID)
			}
			if err != nil {
				return err
			}
			p.ConnectedTo, p.ConnID, p.DisconnectedAt = s.cfg.ReplicaID, c.ConnID, zeroTime
			if c.SDKVersion != "" {
				p.SDKVersion = c.SDKVersion
			}
			if c.SDKLanguage != "" {
				p.SDKLanguage = c.SDKLanguage
			}
			if created {
				return s.insertProcess(ctx, tx, p)
			}
			return s.putProcess(ctx, tx, p)
		})
		if errors.Is(err, store.ErrExists) && attempt == 0 {
			continue
		}
		return err
	}
}

func (s *Service) newConnectedProcess(ctx context.Context, tx store.Tx, c hosting.Conn) (*hosting.Process, error) {
	comp, err := getCompute(ctx, tx, c.FleetID, c.ComputeName)
	if errors.Is(err, store.ErrNotFound) {
		return nil, sdkErr(403, "compute %s is not registered with fleet %s", c.ComputeName, c.FleetID)
	}
	if err != nil {
		return nil, err
	}
	return &hosting.Process{ID: c.ProcessID, FleetID: c.FleetID, ComputeName: c.ComputeName,
		Location: comp.Location, State: hosting.ProcessLaunching, LaunchedAt: s.processNow()}, nil
}

// reconnectEnded handles a connection from a process ID whose process has
// ended: on Anywhere a game server restarted by hand may reuse its ID (on
// any compute) and starts a new life; on managed fleets Hoist never reuses
// an ID, so it is refused.
func (s *Service) reconnectEnded(ctx context.Context, tx store.Tx, c hosting.Conn) (*hosting.Process, error) {
	managed, err := managedFleet(ctx, tx, c.FleetID)
	if err != nil {
		return nil, err
	}
	if managed {
		return nil, sdkErr(403, "process %s has ended", c.ProcessID)
	}
	return s.newConnectedProcess(ctx, tx, c)
}

// Disconnected records that a process's WebSocket closed. An Anywhere
// process that closed normally, or that was ending, is gone; otherwise the
// process is only unreachable until it reconnects (missing heartbeats end it
// if it does not).
//
// On a shared store it is a Claim holding the process (claim), so that the
// disconnects of many processes at once (a host restarting its game
// servers, a replica that died) do not fail each other; one that ends an
// Anywhere process writes more than the process and runs again in an
// Update.
func (s sdkAPI) Disconnected(ctx context.Context, c hosting.Conn, normal bool) {
	err := s.claim(ctx, func(tx store.Tx, fx *effects, claimed bool) error {
		p, err := connProcess(ctx, tx, c)
		if err != nil || p.State == hosting.ProcessTerminated {
			return ignoreSDK404(err)
		}
		if c.ConnID != "" && p.ConnID != "" && c.ConnID != p.ConnID {
			return nil // an older socket of a process that moved on
		}
		return s.disconnectTx(ctx, tx, fx, p, normal, claimed)
	})
	if err != nil {
		s.log.Warn("sessions: recording disconnect failed", "process", c.ProcessID, "err", err)
	}
}

// disconnectTx records that process p's socket closed (normal: 1000/1001,
// or a drop after ProcessEnding), or that the replica holding it died. An
// Anywhere process that closed normally, or that was ending, is gone; in a
// Claim (claimed) that answers ErrRunInUpdate, since ending it writes more
// than the process. The fleet is read unheld: whether it is Anywhere never
// changes.
func (s *Service) disconnectTx(ctx context.Context, tx store.Tx, fx *effects, p *hosting.Process, normal, claimed bool) error {
	managed, err := managedFleet(ctx, store.Unheld(tx), p.FleetID)
	if err != nil {
		return err
	}
	gone := !managed && (normal || p.State == hosting.ProcessTerminating)
	if gone && claimed {
		return ErrRunInUpdate
	}
	p.ConnectedTo, p.ConnID, p.DisconnectedAt = "", "", s.processNow()
	if gone {
		return s.processGoneTx(ctx, tx, fx, p, "disconnected")
	}
	return s.putProcess(ctx, tx, p)
}

func ignoreSDK404(err error) error {
	var se *hosting.SDKError
	if errors.As(err, &se) && se.Status == 404 {
		return nil
	}
	return err
}

// ProcessReady records ActivateServerProcess: the process is ready to host
// a game session on port, and its logs are at logPaths. On a shared store
// it is a Claim holding the process (claim): the processes of a host
// starting together report at once.
func (s sdkAPI) ProcessReady(ctx context.Context, c hosting.Conn, port int32, logPaths []string) error {
	if port < 1 || port > 60000 {
		return sdkErr(400, "Port %d is out of range 1-60000", port)
	}
	return s.claim(ctx, func(tx store.Tx, _ *effects, claimed bool) error {
		p, err := liveProcess(ctx, tx, c)
		if err != nil {
			return err
		}
		switch p.State {
		case hosting.ProcessTerminating:
			return sdkErr(400, "process %s is terminating", p.ID)
		case hosting.ProcessLaunching:
			p.State, p.ReadyAt = hosting.ProcessActive, s.processNow()
		}
		p.Port, p.LogPaths = port, logPaths
		p.LastHeartbeat, p.UnhealthyReports = s.processNow(), 0
		if err := s.putProcess(ctx, tx, p); err != nil {
			return err
		}
		if s.cfg.OnProcessReady == nil {
			return nil
		}
		if claimed {
			// The hook reads the fleet unheld and, when it would change it
			// (the location's first ready process), runs again in an Update.
			return s.cfg.OnProcessReady(ctx, readsOnly{store.Unheld(tx)}, p.FleetID, p.Location)
		}
		return s.cfg.OnProcessReady(ctx, tx, p.FleetID, p.Location)
	})
}

// readsOnly is a Claim's transaction for a hook that reads what the Claim
// does not hold: its reads are unheld, and any write answers
// ErrRunInUpdate, so that the transaction runs again in an Update.
type readsOnly struct{ store.Tx }

func (readsOnly) Insert(context.Context, store.Record) error       { return ErrRunInUpdate }
func (readsOnly) Put(context.Context, store.Record) error          { return ErrRunInUpdate }
func (readsOnly) Delete(context.Context, store.Kind, string) error { return ErrRunInUpdate }

// Heartbeat records a health report. The MaxBadReports-th unhealthy report
// in a row ends the process, and so does any report from an Anywhere
// process whose compute was deregistered (DeregisterCompute, or its fleet
// deleted): such a compute can no longer host game sessions. On a shared
// store it is a Claim holding the process (claim): the compute is read
// unheld, since thousands of processes may share it; a report that ends
// the process runs again in an Update.
func (s sdkAPI) Heartbeat(ctx context.Context, c hosting.Conn, healthy bool) error {
	return s.claim(ctx, func(tx store.Tx, fx *effects, claimed bool) error {
		p, err := liveProcess(ctx, tx, c)
		if err != nil {
			return err
		}
		p.LastHeartbeat = s.processNow()
		if healthy {
			p.UnhealthyReports = 0
		} else {
			p.UnhealthyReports++
		}
		end := ""
		if p.State == hosting.ProcessActive && p.UnhealthyReports >= s.t.MaxBadReports {
			end = "SERVER_PROCESS_TERMINATED_UNHEALTHY"
		} else if p.State != hosting.ProcessTerminating {
			gone, err := deregistered(ctx, store.Unheld(tx), p)
			if err != nil {
				return err
			}
			if gone {
				end = "compute deregistered"
			}
		}
		switch {
		case end == "":
			return s.putProcess(ctx, tx, p)
		case claimed:
			return ErrRunInUpdate // ending it writes more than the process
		}
		return s.endProcessTx(ctx, tx, fx, p, end)
	})
}

// deregistered reports whether p runs on an Anywhere compute that is no
// longer registered. (Managed processes are ended by their ProcessHost
// before their instance's record goes.)
func deregistered(ctx context.Context, tx store.Tx, p *hosting.Process) (bool, error) {
	_, err := getCompute(ctx, tx, p.FleetID, p.ComputeName)
	if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	managed, err := managedFleet(ctx, tx, p.FleetID)
	return !managed, err
}

// ownSession reads game session id for a process acting on it: 404 when it
// does not exist, 403 when another process hosts it.
func ownSession(ctx context.Context, tx store.Tx, c hosting.Conn, id string) (*hosting.Process, *hosting.GameSession, error) {
	// Both in one round trip (store.GetRefs), held in the order reading
	// one after the other held them: the process, then the game session.
	got, err := store.GetRefs(ctx, tx, []store.Ref{{Kind: hosting.KindProcess, ID: c.ProcessID}, {Kind: hosting.KindGameSession, ID: id}})
	if err != nil {
		return nil, nil, err
	}
	p, err := store.GotJSON[hosting.Process](got[0])
	if err != nil {
		return nil, nil, err
	}
	p, err = connProcessIs(p, c)
	if p, err = liveProcessIs(p, err, c); err != nil {
		return nil, nil, err
	}
	gs, err := store.GotJSON[hosting.GameSession](got[1])
	if err != nil {
		return nil, nil, err
	}
	if gs == nil {
		return nil, nil, sdkErr(404, "game session %s does not exist", id)
	}
	if gs.ProcessID != p.ID {
		return nil, nil, sdkErr(403, "game session %s is not hosted by process %s", id, p.ID)
	}
	return p, gs, nil
}

// ActivateGameSession records that the process started its game session;
// a placement's game session fulfils its placement in the same transaction
// (PlacementHook). When the hook fails, the game session is activated
// without it (the failure is logged): the placement loop finds the ACTIVE
// game session in the store and fulfils the placement then.
func (s sdkAPI) ActivateGameSession(ctx context.Context, c hosting.Conn, gameSessionID string) error {
	err := s.activate(ctx, c, gameSessionID, true)
	var he *hookError
	if errors.As(err, &he) {
		s.log.Warn("sessions: fulfilling the placement of an activated game session failed; the placement loop will",
			"gameSession", gameSessionID, "err", he.err)
		err = s.activate(ctx, c, gameSessionID, false)
	}
	return err
}

// hookError is a PlacementHook's error.
type hookError struct{ err error }

func (e *hookError) Error() string { return "placement hook: " + e.err.Error() }

// activate moves the process's game session ACTIVATING -> ACTIVE, telling
// the PlacementHook when withHook. On a shared store it is a Claim (claim)
// holding the process, then the game session, then what the hook reads
// (the placement); a hook that cannot fulfil in a Claim has it run again
// in an Update (ErrRunInUpdate).
func (s *Service) activate(ctx context.Context, c hosting.Conn, gameSessionID string, withHook bool) error {
	return s.claim(ctx, func(tx store.Tx, _ *effects, claimed bool) error {
		_, gs, err := ownSession(ctx, tx, c, gameSessionID)
		if err != nil {
			return err
		}
		switch gs.Session.Status {
		case api.GameSessionStatusActive:
			return nil
		case api.GameSessionStatusActivating:
			gs.Session.Status = api.GameSessionStatusActive
			if err := s.putGameSession(ctx, tx, gs); err != nil || !withHook {
				return err
			}
			err := s.placementActivatedTx(ctx, tx, gs, claimed)
			if err != nil && !errors.Is(err, ErrRunInUpdate) {
				return &hookError{err}
			}
			return err
		}
		return sdkErr(400, "game session %s is %s: only an ACTIVATING game session can be activated", gameSessionID, gs.Session.Status)
	})
}

// AcceptPlayerSession validates a player who connected to the game server:
// the player session must be RESERVED in the process's own game session.
func (s sdkAPI) AcceptPlayerSession(ctx context.Context, c hosting.Conn, gameSessionID, playerSessionID string) error {
	return s.update(ctx, func(tx store.Tx, _ *effects) error {
		ps, err := ownPlayerSession(ctx, tx, c, gameSessionID, playerSessionID)
		if err != nil {
			return err
		}
		if ps.Session.Status != api.PlayerSessionStatusReserved {
			return sdkErr(400, "player session %s is %s: only a RESERVED player session can be accepted", playerSessionID, ps.Session.Status)
		}
		ps.Session.Status, ps.ReservedUntil = api.PlayerSessionStatusActive, zeroTime
		return putPlayerSession(ctx, tx, ps)
	})
}

// RemovePlayerSession records that a player left: the player session is
// COMPLETED and its slot reopens.
func (s sdkAPI) RemovePlayerSession(ctx context.Context, c hosting.Conn, gameSessionID, playerSessionID string) error {
	return s.update(ctx, func(tx store.Tx, _ *effects) error {
		ps, err := ownPlayerSession(ctx, tx, c, gameSessionID, playerSessionID)
		if err != nil {
			return err
		}
		st := ps.Session.Status
		if st != api.PlayerSessionStatusReserved && st != api.PlayerSessionStatusActive {
			return sdkErr(400, "player session %s is already %s", playerSessionID, st)
		}
		return s.closePlayerSessionTx(ctx, tx, ps, api.PlayerSessionStatusCompleted)
	})
}

// closePlayerSessionTx ends one RESERVED or ACTIVE player session and frees
// its slot.
func (s *Service) closePlayerSessionTx(ctx context.Context, tx store.Tx, ps *hosting.PlayerSession, to api.PlayerSessionStatus) error {
	ps.Session.Status, ps.Session.TerminationTime, ps.ReservedUntil = to, api.Time(s.now()), zeroTime
	if err := putPlayerSession(ctx, tx, ps); err != nil {
		return err
	}
	gs, err := getGameSession(ctx, tx, api.ToString(ps.Session.GameSessionId))
	if err != nil || ended(gs.Session.Status) {
		return ignoreNotFound(err)
	}
	gs.Session.CurrentPlayerSessionCount = api.Int32(max(api.ToInt32(gs.Session.CurrentPlayerSessionCount)-1, 0))
	if err := s.putGameSession(ctx, tx, gs); err != nil {
		return err
	}
	return s.playerLeftTx(ctx, tx, gs, api.ToString(ps.Session.PlayerId))
}

func ownPlayerSession(ctx context.Context, tx store.Tx, c hosting.Conn, gameSessionID, playerSessionID string) (*hosting.PlayerSession, error) {
	if _, _, err := ownSession(ctx, tx, c, gameSessionID); err != nil {
		return nil, err
	}
	ps, err := getPlayerSession(ctx, tx, playerSessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, sdkErr(404, "player session %s does not exist", playerSessionID)
	}
	if err != nil {
		return nil, err
	}
	if api.ToString(ps.Session.GameSessionId) != gameSessionID {
		return nil, sdkErr(400, "player session %s belongs to another game session", playerSessionID)
	}
	return ps, nil
}

// UpdatePlayerSessionCreationPolicy lets the process open or close its game
// session to new players.
func (s sdkAPI) UpdatePlayerSessionCreationPolicy(ctx context.Context, c hosting.Conn, gameSessionID string, policy api.PlayerSessionCreationPolicy) error {
	if policy != api.PlayerSessionCreationPolicyAcceptAll && policy != api.PlayerSessionCreationPolicyDenyAll {
		return sdkErr(400, "PlayerSessionPolicy must be ACCEPT_ALL or DENY_ALL, not %q", policy)
	}
	return s.update(ctx, func(tx store.Tx, _ *effects) error {
		_, gs, err := ownSession(ctx, tx, c, gameSessionID)
		if err != nil {
			return err
		}
		if ended(gs.Session.Status) {
			return sdkErr(400, "game session %s has ended", gameSessionID)
		}
		gs.Session.PlayerSessionCreationPolicy = policy
		return s.putGameSession(ctx, tx, gs)
	})
}

// DescribePlayerSessions answers the SDK's DescribePlayerSessions, limited
// to player sessions of the process's fleet.
func (s sdkAPI) DescribePlayerSessions(ctx context.Context, c hosting.Conn, req hosting.DescribePlayerSessionsRequest) (map[string]any, error) {
	limit := req.Limit
	if limit <= 0 || limit > maxSDKPlayerSessions {
		limit = maxSDKPlayerSessions
	}
	list, next, err := s.describePlayerSessions(ctx, playerQuery{gameSessionID: req.GameSessionID, playerID: req.PlayerID,
		playerSessionID: req.PlayerSessionID, status: req.StatusFilter, next: req.NextToken, limit: limit, fleetID: c.FleetID})
	if err != nil {
		return nil, toSDKError(err)
	}
	items := make([]map[string]any, 0, len(list))
	for i := range list {
		items = append(items, sdkPlayerSession(&list[i]))
	}
	out := map[string]any{"PlayerSessions": items}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}

// sdkPlayerSession is a player session as the SDK reads it (times in epoch
// milliseconds, every field present).
func sdkPlayerSession(ps *api.PlayerSession) map[string]any {
	t := func(ts *api.Timestamp) int64 {
		if ts == nil {
			return 0
		}
		return ts.UnixMilli()
	}
	return map[string]any{
		"PlayerId": api.ToString(ps.PlayerId), "PlayerSessionId": api.ToString(ps.PlayerSessionId),
		"GameSessionId": api.ToString(ps.GameSessionId), "FleetId": api.ToString(ps.FleetId),
		"PlayerData": api.ToString(ps.PlayerData), "IpAddress": api.ToString(ps.IpAddress),
		"Port": api.ToInt32(ps.Port), "CreationTime": t(ps.CreationTime), "TerminationTime": t(ps.TerminationTime),
		"DnsName": api.ToString(ps.DnsName), "Status": string(ps.Status),
	}
}

// toSDKError turns an API error into the SDK's status codes.
func toSDKError(err error) error {
	var ae api.Error
	if !errors.As(err, &ae) {
		return err
	}
	status := 400
	switch ae.ErrorCode() {
	case "NotFoundException":
		status = 404
	case "InternalServiceException":
		status = 500
	}
	return &hosting.SDKError{Status: status, Message: ae.ErrorMessage()}
}

// ProcessEnding records TerminateServerProcess: the process is ending, so
// its game session is TERMINATED and its player sessions COMPLETED.
func (s sdkAPI) ProcessEnding(ctx context.Context, c hosting.Conn) error {
	return s.update(ctx, func(tx store.Tx, fx *effects) error {
		p, err := liveProcess(ctx, tx, c)
		if err != nil {
			return err
		}
		if p.State != hosting.ProcessTerminating {
			p.State, p.TerminatingAt = hosting.ProcessTerminating, s.processNow()
		}
		if p.EndReason == "" {
			p.EndReason = "ProcessEnding"
		}
		if err := s.putProcess(ctx, tx, p); err != nil {
			return err
		}
		if p.GameSessionID == "" {
			return nil
		}
		gs, err := getGameSession(ctx, tx, p.GameSessionID)
		if err != nil || ended(gs.Session.Status) {
			return ignoreNotFound(err)
		}
		var reason api.GameSessionStatusReason
		if gs.Session.Status != api.GameSessionStatusActivating {
			if reason, err = s.endReasonTx(ctx, tx, p); err != nil {
				return err
			}
		}
		return s.finishSessionTx(ctx, tx, gs, api.GameSessionStatusTerminated, reason)
	})
}

// GetComputeCertificate returns where the compute's TLS certificate is.
func (s sdkAPI) GetComputeCertificate(ctx context.Context, c hosting.Conn) (map[string]any, error) {
	var comp *hosting.Compute
	err := s.view(ctx, func(tx store.Tx) error {
		if _, err := liveProcess(ctx, tx, c); err != nil {
			return err
		}
		var err error
		comp, err = getCompute(ctx, tx, c.FleetID, c.ComputeName)
		if errors.Is(err, store.ErrNotFound) {
			return sdkErr(404, "compute %s of fleet %s does not exist", c.ComputeName, c.FleetID)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if comp.CertificatePath == "" {
		return nil, sdkErr(400, "compute %s has no certificate: fleet %s does not generate TLS certificates (CertificateConfiguration DISABLED) and none was registered",
			c.ComputeName, c.FleetID)
	}
	return map[string]any{"CertificatePath": comp.CertificatePath, "ComputeName": comp.ComputeName}, nil
}

// GetFleetRoleCredentials is refused: Hoist has no IAM and issues no AWS
// credentials.
func (s sdkAPI) GetFleetRoleCredentials(ctx context.Context, c hosting.Conn, roleArn, roleSessionName string) (map[string]any, error) {
	return nil, sdkErr(400, "Hoist does not issue AWS credentials: GetFleetRoleCredentials is not available on fleet %s", c.FleetID)
}

// CheckGameSessionHost answers whether the process hosts game session
// gameSessionID and it is ACTIVE (a match backfill request is allowed only
// then): 404 for an unknown game session, 403 for another process's, 400
// for one that is not ACTIVE.
func (s sdkAPI) CheckGameSessionHost(ctx context.Context, c hosting.Conn, gameSessionID string) error {
	return s.view(ctx, func(tx store.Tx) error {
		_, gs, err := ownSession(ctx, tx, c, gameSessionID)
		if err != nil {
			return err
		}
		if st := gs.Session.Status; st != api.GameSessionStatusActive {
			return sdkErr(400, "game session %s is %s: match backfill needs an ACTIVE game session", gameSessionID, st)
		}
		return nil
	})
}
