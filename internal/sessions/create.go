package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// MaxPlayers is the most player sessions a game session can hold (GameLift's
// fixed limit of 200 players per game session).
const MaxPlayers = 200

// createRequest is a validated CreateGameSession request.
type createRequest struct {
	in    *api.CreateGameSessionInput
	token string // IdempotencyToken, else the deprecated GameSessionId
	genID string // the ID used when there is no token
}

// CreateGameSession places a new game session on an idle ready server
// process of the fleet location, then sends the process CreateGameSession.
func (s *Service) CreateGameSession(ctx context.Context, in *api.CreateGameSessionInput) (*api.CreateGameSessionOutput, error) {
	req, err := s.checkCreate(in)
	if err != nil {
		return nil, err
	}
	var gs *hosting.GameSession
	var proc *hosting.Process
	err = s.update(ctx, func(tx store.Tx, fx *effects) error {
		var err error
		gs, proc, err = s.createTx(ctx, tx, req)
		if err != nil || proc == nil || s.remoteHolder(proc) == "" {
			return err
		}
		// Its connection is on another replica: CreateGameSession goes
		// through that replica's inbox, written with the game session.
		to, err := s.postTx(ctx, tx, proc, createMessage(&gs.Session))
		fx.wake, proc = append(fx.wake, to), nil
		return err
	})
	if err != nil {
		return nil, err
	}
	if proc != nil {
		gs = s.startOnProcess(ctx, gs, proc)
	}
	return &api.CreateGameSessionOutput{GameSession: &gs.Session}, nil
}

func (s *Service) checkCreate(in *api.CreateGameSessionInput) (*createRequest, error) {
	fleet, alias := api.ToString(in.FleetId), api.ToString(in.AliasId)
	switch {
	case fleet == "" && alias == "":
		return nil, api.NewInvalidRequestException("FleetId or AliasId is required")
	case fleet != "" && alias != "":
		return nil, api.NewInvalidRequestException("give FleetId or AliasId, not both")
	case in.MaximumPlayerSessionCount == nil:
		return nil, api.NewInvalidRequestException("MaximumPlayerSessionCount is required")
	case *in.MaximumPlayerSessionCount < 0 || *in.MaximumPlayerSessionCount > MaxPlayers:
		return nil, api.NewInvalidRequestException("MaximumPlayerSessionCount %d is out of range: a game session holds 0 to %d players",
			*in.MaximumPlayerSessionCount, MaxPlayers)
	}
	tok, old := api.ToString(in.IdempotencyToken), api.ToString(in.GameSessionId)
	if tok != "" && old != "" && tok != old {
		return nil, api.NewInvalidRequestException("IdempotencyToken %q and the deprecated GameSessionId %q differ: give one of them", tok, old)
	}
	if tok == "" {
		tok = old
	}
	if err := checkProperties(in.GameProperties); err != nil {
		return nil, err
	}
	return &createRequest{in: in, token: tok, genID: "gsess-" + s.cfg.NewID()}, nil
}

// checkProperties refuses game properties without a key or with a key given
// twice (they reach the process as a flat object).
func checkProperties(props []api.GameProperty) error {
	seen := make(map[string]bool, len(props))
	for i, p := range props {
		k := api.ToString(p.Key)
		switch {
		case p.Key == nil || p.Value == nil:
			return api.NewInvalidRequestException("GameProperties[%d] needs both Key and Value", i)
		case seen[k]:
			return api.NewInvalidRequestException("GameProperties has the key %q more than once", k)
		}
		seen[k] = true
	}
	return nil
}

// gameSessionARN is the ID of game session id of fleet f in location loc:
// arn:aws:gamelift:<location>::gamesession/<fleet ID>/<id>, as GameLift
// documents it. The location is the AWS location the session runs in (a
// remote location or the home Region); custom locations of Anywhere fleets
// are not Regions, and their sessions carry Hoist's Region.
func (s *Service) gameSessionARN(f *hosting.Fleet, loc, id string) string {
	region := loc
	if region == "" || f.Attributes.ComputeType == api.ComputeTypeAnywhere {
		region = s.cfg.Region
	}
	return gameSessionARNIn(region, api.ToString(f.Attributes.FleetId), id)
}

func gameSessionARNIn(region, fleetID, id string) string {
	return "arn:aws:gamelift:" + region + "::gamesession/" + fleetID + "/" + id
}

// tokenUsedElsewhere refuses an idempotency token that already named a game
// session of fleet f in another location (whose ARN carries that location).
func (s *Service) tokenUsedElsewhere(ctx context.Context, tx store.Tx, f *hosting.Fleet, loc, token string) error {
	id := s.gameSessionARN(f, loc, token)
	for _, l := range f.Locations {
		other := s.gameSessionARN(f, l.Location, token)
		if other == id {
			continue
		}
		_, err := getGameSession(ctx, tx, other)
		if err == nil {
			return api.NewIdempotentParameterMismatchException(
				"IdempotencyToken %s was used for game session %s in location %s", token, other, l.Location)
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// createTx creates the session record and reserves its process; proc is nil
// when an earlier request with the same idempotency token already did.
func (s *Service) createTx(ctx context.Context, tx store.Tx, req *createRequest) (*hosting.GameSession, *hosting.Process, error) {
	in := req.in
	f, err := s.resolveFleet(ctx, tx, api.ToString(in.FleetId), api.ToString(in.AliasId))
	if err != nil {
		return nil, nil, err
	}
	fid := api.ToString(f.Attributes.FleetId)
	loc, err := createLocation(f, api.ToString(in.Location))
	if err != nil {
		return nil, nil, err
	}
	hash := requestHash(fid, loc.Location, in)
	id := s.gameSessionARN(f, loc.Location, req.genID)
	if req.token != "" {
		id = s.gameSessionARN(f, loc.Location, req.token)
		prev, err := getGameSession(ctx, tx, id)
		if err == nil {
			if prev.RequestHash != hash {
				return nil, nil, api.NewIdempotentParameterMismatchException(
					"IdempotencyToken %s was used for game session %s with different parameters", req.token, id)
			}
			return prev, nil, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, nil, err
		}
		if err := s.tokenUsedElsewhere(ctx, tx, f, loc.Location, req.token); err != nil {
			return nil, nil, err
		}
	}
	if err := checkFleetStatus(f, loc); err != nil {
		return nil, nil, err
	}
	now := s.now()
	if err := s.checkCreatorTx(ctx, tx, f, api.ToString(in.CreatorId), now); err != nil {
		return nil, nil, err
	}
	proc, comp, err := s.placeTx(ctx, tx, f, loc.Location, false)
	if err != nil {
		return nil, nil, err
	}
	gs := s.newGameSession(f, id, req, proc, comp, now)
	gs.RequestHash = hash
	if err := s.putGameSession(ctx, tx, gs); err != nil {
		return nil, nil, err
	}
	proc.GameSessionID = id
	if err := s.putProcess(ctx, tx, proc); err != nil {
		return nil, nil, err
	}
	if c := api.ToString(in.CreatorId); c != "" {
		rec := store.Record{Kind: kindCreation, ID: id, Parent: fid + "/" + c, Rank: ms(now), Data: []byte("{}")}
		if err := tx.Put(ctx, rec); err != nil {
			return nil, nil, err
		}
	}
	return gs, proc, nil
}

// resolveFleet reads the fleet of a FleetId, or of an AliasId through
// Config.ResolveAlias.
func (s *Service) resolveFleet(ctx context.Context, tx store.Tx, fleet, alias string) (*hosting.Fleet, error) {
	if alias != "" {
		if s.cfg.ResolveAlias == nil {
			return nil, api.NewInvalidRequestException("AliasId is not supported by this Hoist yet: give FleetId")
		}
		id, err := s.cfg.ResolveAlias(ctx, tx, alias)
		if err != nil {
			return nil, err
		}
		fleet = id
	}
	return findFleet(ctx, tx, fleet)
}

// createLocation picks the location a new game session goes to: the named
// one, else the home location (Anywhere fleets must name theirs, as in
// GameLift).
func createLocation(f *hosting.Fleet, name string) (*hosting.FleetLocation, error) {
	fid := api.ToString(f.Attributes.FleetId)
	if name == "" && f.Attributes.ComputeType == api.ComputeTypeAnywhere {
		return nil, api.NewInvalidRequestException("Location is required for a game session on Anywhere fleet %s: give one of its custom locations", fid)
	}
	loc, ok := fleetLocation(f, name)
	if !ok {
		return nil, api.NewInvalidRequestException("Location %s is not a location of fleet %s", name, fid)
	}
	return loc, nil
}

func checkFleetStatus(f *hosting.Fleet, loc *hosting.FleetLocation) error {
	fid := api.ToString(f.Attributes.FleetId)
	if st := f.Attributes.Status; st != api.FleetStatusActive {
		return api.NewInvalidFleetStatusException("fleet %s is %s: game sessions can be created only in an ACTIVE fleet", fid, st)
	}
	if loc.Status != "" && loc.Status != api.FleetStatusActive {
		return api.NewInvalidFleetStatusException("location %s of fleet %s is %s: game sessions can be created only in an ACTIVE location",
			loc.Location, fid, loc.Status)
	}
	return nil
}

// requestHash fingerprints the parameters an idempotent repeat must match.
func requestHash(fleetID, location string, in *api.CreateGameSessionInput) string {
	b, _ := json.Marshal(struct {
		Fleet, Location, Name, Data, Creator string
		Max                                  int32
		Props                                []api.GameProperty
	}{fleetID, location, api.ToString(in.Name), api.ToString(in.GameSessionData), api.ToString(in.CreatorId),
		api.ToInt32(in.MaximumPlayerSessionCount), in.GameProperties})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// checkCreatorTx applies the fleet's ResourceCreationLimitPolicy to
// creator; without a policy a CreatorId may create one game session per
// CreatorRateWindow (GameLift: one request per CreatorId per second).
func (s *Service) checkCreatorTx(ctx context.Context, tx store.Tx, f *hosting.Fleet, creator string, now time.Time) error {
	fid := api.ToString(f.Attributes.FleetId)
	limit, period := 1, s.t.CreatorRateWindow
	pol := f.Attributes.ResourceCreationLimitPolicy
	hasPolicy := pol != nil && api.ToInt32(pol.NewGameSessionsPerCreator) > 0 && api.ToInt32(pol.PolicyPeriodInMinutes) > 0
	if hasPolicy {
		limit, period = int(*pol.NewGameSessionsPerCreator), time.Duration(*pol.PolicyPeriodInMinutes)*time.Minute
	}
	if creator == "" {
		if hasPolicy {
			return api.NewInvalidRequestException("CreatorId is required: fleet %s has a resource creation limit policy", fid)
		}
		return nil
	}
	q := store.Query{Kind: kindCreation, Parent: fid + "/" + creator, HasParent: true}
	all, err := tx.Count(ctx, q)
	if err != nil {
		return err
	}
	q.RankMax, q.HasRankMax = ms(now.Add(-period)), true
	old, err := tx.Count(ctx, q)
	if err != nil {
		return err
	}
	if n := all - old; n >= limit {
		if hasPolicy {
			return api.NewLimitExceededException("CreatorId %s has created %d game sessions on fleet %s in the last %s; the fleet's resource creation limit policy allows %d",
				creator, n, fid, period, limit)
		}
		return api.NewLimitExceededException("CreatorId %s may create one game session per %s on fleet %s (it has no resource creation limit policy)",
			creator, period, fid)
	}
	return nil
}

func (s *Service) newGameSession(f *hosting.Fleet, id string, req *createRequest, p *hosting.Process, c *hosting.Compute, now time.Time) *hosting.GameSession {
	in := req.in
	timeout := s.t.ActivationTimeout
	if v := api.ToInt32(f.RuntimeConfiguration.GameSessionActivationTimeoutSeconds); v > 0 {
		timeout = time.Duration(v) * time.Second
	}
	prot := f.Attributes.NewGameSessionProtectionPolicy
	if prot == "" {
		prot = api.ProtectionPolicyNoprotection
	}
	sess := api.GameSession{
		GameSessionId:               api.String(id),
		Name:                        in.Name,
		FleetId:                     f.Attributes.FleetId,
		FleetArn:                    f.Attributes.FleetArn,
		CreationTime:                api.Time(now),
		CurrentPlayerSessionCount:   api.Int32(0),
		MaximumPlayerSessionCount:   in.MaximumPlayerSessionCount,
		Status:                      api.GameSessionStatusActivating,
		GameProperties:              in.GameProperties,
		IpAddress:                   api.String(c.IPAddress),
		Port:                        api.Int32(p.Port),
		PlayerSessionCreationPolicy: api.PlayerSessionCreationPolicyAcceptAll,
		CreatorId:                   in.CreatorId,
		GameSessionData:             in.GameSessionData,
		Location:                    api.String(p.Location),
		ComputeName:                 api.String(p.ComputeName),
	}
	if c.DNSName != "" {
		sess.DnsName = api.String(c.DNSName)
	}
	return &hosting.GameSession{Session: sess, ProcessID: p.ID, IdempotencyToken: req.token,
		ProtectionPolicy: prot, ActivationDeadline: now.Add(timeout), LogPaths: p.LogPaths}
}

// createMessage is the CreateGameSession message to the process.
func createMessage(gs *api.GameSession) hosting.Message {
	props := make(map[string]string, len(gs.GameProperties))
	for _, p := range gs.GameProperties {
		props[api.ToString(p.Key)] = api.ToString(p.Value)
	}
	return hosting.Message{
		"Action":                    "CreateGameSession",
		"GameSessionId":             api.ToString(gs.GameSessionId),
		"GameSessionName":           api.ToString(gs.Name),
		"GameSessionData":           api.ToString(gs.GameSessionData),
		"MatchmakerData":            api.ToString(gs.MatchmakerData),
		"MaximumPlayerSessionCount": api.ToInt32(gs.MaximumPlayerSessionCount),
		"Port":                      api.ToInt32(gs.Port),
		"IpAddress":                 api.ToString(gs.IpAddress),
		"DnsName":                   api.ToString(gs.DnsName),
		"GameProperties":            props,
	}
}

// startOnProcess sends the committed session to its process. When the
// message cannot be delivered the session goes to ERROR and the process is
// released (it never heard of the session).
func (s *Service) startOnProcess(ctx context.Context, gs *hosting.GameSession, p *hosting.Process) *hosting.GameSession {
	var err error
	if s.cfg.Messenger == nil {
		err = errors.New("no messenger configured")
	} else {
		err = s.cfg.Messenger.SendToProcess(ctx, p.ID, createMessage(&gs.Session))
	}
	if err == nil {
		return gs
	}
	id := api.ToString(gs.Session.GameSessionId)
	s.log.Warn("sessions: CreateGameSession not delivered", "gameSession", id, "process", p.ID, "err", err)
	// The caller's context may be ending; the failure must still be recorded.
	ctx = context.WithoutCancel(ctx)
	if uerr := s.createUndelivered(ctx, id, p.ID); uerr != nil {
		s.log.Error("sessions: recording undelivered CreateGameSession failed", "gameSession", id, "err", uerr)
	}
	if err := s.view(ctx, func(tx store.Tx) error {
		cur, err := getGameSession(ctx, tx, id)
		if err == nil {
			gs = cur
		}
		return err
	}); err != nil {
		s.log.Warn("sessions: reading the undelivered game session", "gameSession", id, "err", err)
	}
	return gs
}

func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
