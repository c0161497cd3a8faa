package agentconn

import (
	"context"
	"log/slog"
	"time"

	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/hosting"
)

// notifyTimeout bounds a notification to an agent.
const notifyTimeout = 10 * time.Second

// NotifyAgents returns the SDK's ProcessAPI with notifications for the
// agents of Anywhere computes: once a process's ProcessReady or
// ActivateGameSession succeeded, its compute's agent is sent
// NotifyProcessRegistered (with the process's log paths) or
// NotifyGameSessionActivated. The notification goes in the background: the
// process's reply never waits for it, and a compute without an agent (or
// an agent on another replica) gets none.
func NotifyAgents(next hosting.ProcessAPI, agents hosting.AgentMessenger, log *slog.Logger) hosting.ProcessAPI {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return notifyingAPI{ProcessAPI: next, agents: agents, log: log}
}

type notifyingAPI struct {
	hosting.ProcessAPI
	agents hosting.AgentMessenger
	log    *slog.Logger
}

// ProcessReady records ProcessReady, then notifies the compute's agent.
func (n notifyingAPI) ProcessReady(ctx context.Context, c hosting.Conn, port int32, logPaths []string) error {
	err := n.ProcessAPI.ProcessReady(ctx, c, port, logPaths)
	if err == nil {
		if logPaths == nil {
			logPaths = []string{}
		}
		n.notify(c, hosting.Message{"Action": agentproto.ActionNotifyProcessRegistered, "ProcessId": c.ProcessID, "LogPaths": logPaths})
	}
	return err
}

// ActivateGameSession records the activation, then notifies the
// compute's agent.
func (n notifyingAPI) ActivateGameSession(ctx context.Context, c hosting.Conn, gameSessionID string) error {
	err := n.ProcessAPI.ActivateGameSession(ctx, c, gameSessionID)
	if err == nil {
		n.notify(c, hosting.Message{"Action": agentproto.ActionNotifyGameSessionActivated, "ProcessId": c.ProcessID, "GameSessionId": gameSessionID})
	}
	return err
}

// notify sends a message (of agentproto's NotifyProcessRegisteredMessage
// or NotifyGameSessionActivatedMessage fields) to the process's compute's
// agent, in the background.
func (n notifyingAPI) notify(c hosting.Conn, msg hosting.Message) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		defer cancel()
		if err := n.agents.SendToCompute(ctx, c.FleetID, c.ComputeName, msg); err != nil {
			n.log.Debug("agent: notification not sent", "action", msg["Action"], "process", c.ProcessID, "err", err)
		}
	}()
}
