package server

import (
	"context"
	"errors"
	"log/slog"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/matchmaking"
	"github.com/hoistgg/hoist/internal/sessions"
	"github.com/hoistgg/hoist/internal/store"
)

// sessionBackfiller applies FlexMatch backfill matches to game sessions
// (matchmaking.SessionBackfiller over sessions).
type sessionBackfiller struct {
	s   *sessions.Service
	log *slog.Logger
}

func (b sessionBackfiller) BackfillTx(ctx context.Context, tx store.Tx, req matchmaking.SessionBackfill) (*matchmaking.SessionBackfilled, error) {
	players := make([]api.DesiredPlayerSession, len(req.Players))
	for i, id := range req.Players {
		players[i] = api.DesiredPlayerSession{PlayerId: api.String(id)}
	}
	got, err := b.s.BackfillTx(ctx, tx, sessions.Backfill{GameSessionID: req.GameSessionArn, TicketID: req.TicketID,
		MatchmakerData: req.MatchmakerData, Players: players})
	if err != nil {
		return nil, err
	}
	gs := &got.GameSession
	out := &matchmaking.SessionBackfilled{GameSessionArn: api.ToString(gs.GameSessionId), IpAddress: api.ToString(gs.IpAddress),
		DnsName: api.ToString(gs.DnsName), Port: api.ToInt32(gs.Port),
		PlayerSessions: make([]api.PlacedPlayerSession, len(got.PlayerSessions))}
	for i, ps := range got.PlayerSessions {
		out.PlayerSessions[i] = api.PlacedPlayerSession{PlayerId: ps.PlayerId, PlayerSessionId: ps.PlayerSessionId}
	}
	out.Notify = func(ctx context.Context) {
		if err := b.s.SendBackfilled(ctx, got); err != nil {
			b.log.Warn("telling a game server about its backfilled players", "gameSession", out.GameSessionArn, "ticket", req.TicketID, "err", err)
		}
	}
	return out, nil
}

func (b sessionBackfiller) BackfillEnded(ctx context.Context, gameSessionArn, ticketID, reason string) {
	if err := b.s.SendBackfillEnded(ctx, gameSessionArn, ticketID, sessions.UpdateReason(reason)); err != nil {
		b.log.Warn("telling a game server that a backfill ended", "gameSession", gameSessionArn, "ticket", ticketID, "reason", reason, "err", err)
	}
}

// sdkBackfiller serves the StartMatchBackfill and StopMatchBackfill
// requests of server processes (hosting.Backfiller over matchmaking).
type sdkBackfiller struct{ m *matchmaking.Service }

func (b sdkBackfiller) StartMatchBackfill(ctx context.Context, _ hosting.Conn, req hosting.BackfillRequest) (string, error) {
	id, err := b.m.StartBackfill(ctx, req.ConfigurationArn, req.GameSessionArn, req.TicketID, req.Players)
	if err != nil {
		return "", sdkError(err)
	}
	return id, nil
}

func (b sdkBackfiller) StopMatchBackfill(ctx context.Context, _ hosting.Conn, gameSessionArn, configurationArn, ticketID string) error {
	return sdkError(b.m.StopBackfill(ctx, configurationArn, gameSessionArn, ticketID))
}

// sdkError answers an API error to a server process with the status the
// SDK expects: 404 for what does not exist, 429 for limits, 500 for
// internal errors, 400 for the rest. Other errors are left as they are
// (answered 500 and logged).
func sdkError(err error) error {
	var ae api.Error
	if err == nil || !errors.As(err, &ae) {
		return err
	}
	status := 400
	switch ae.ErrorCode() {
	case "NotFoundException":
		status = 404
	case "LimitExceededException", "ThrottlingException":
		status = 429
	case "InternalServiceException":
		status = 500
	}
	return &hosting.SDKError{Status: status, Message: ae.ErrorMessage()}
}
