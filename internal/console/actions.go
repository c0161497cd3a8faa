package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/hoistgg/hoist/internal/api"
)

// action is one write action: the form fields it needs, and what it does
// (through the same service code as the API or the admin endpoint).
type action struct {
	fields []string
	do     func(ctx context.Context, c *Console, f url.Values) (string, error)
}

// actions are the console's write actions, by the last element of their
// path (POST /console/actions/<name>).
var actions = map[string]action{
	"drain-instance": {fields: []string{"group", "instance"}, do: func(ctx context.Context, c *Console, f url.Values) (string, error) {
		err := c.cfg.SetInstanceStatus(ctx, f.Get("group"), f.Get("instance"), string(api.GameServerInstanceStatusDraining))
		return "instance " + f.Get("instance") + " is DRAINING", err
	}},
	"drain-host": {fields: []string{"host"}, do: func(ctx context.Context, c *Console, f url.Values) (string, error) {
		_, err := c.cfg.Hosts.DrainHost(ctx, f.Get("host"))
		return "host " + f.Get("host") + " is DRAINING", err
	}},
	"undrain-host": {fields: []string{"host"}, do: func(ctx context.Context, c *Console, f url.Values) (string, error) {
		h, err := c.cfg.Hosts.UndrainHost(ctx, f.Get("host"))
		return "host " + f.Get("host") + " is " + h.Status + " (no longer drained)", err
	}},
	"terminate-game-session": {fields: []string{"gameSession"}, do: func(ctx context.Context, c *Console, f url.Values) (string, error) {
		mode := api.TerminationModeTriggerOnProcessTerminate
		if f.Get("mode") == string(api.TerminationModeForceTerminate) {
			mode = api.TerminationModeForceTerminate
		}
		id := f.Get("gameSession")
		_, err := c.cfg.API.TerminateGameSession(ctx, &api.TerminateGameSessionInput{GameSessionId: &id, TerminationMode: mode})
		return "game session terminating (" + string(mode) + ")", err
	}},
	"stop-placement": {fields: []string{"placement"}, do: func(ctx context.Context, c *Console, f url.Values) (string, error) {
		id := f.Get("placement")
		_, err := c.cfg.API.StopGameSessionPlacement(ctx, &api.StopGameSessionPlacementInput{PlacementId: &id})
		return "placement " + id + " stopped", err
	}},
	"stop-ticket": {fields: []string{"ticket"}, do: func(ctx context.Context, c *Console, f url.Values) (string, error) {
		id := f.Get("ticket")
		_, err := c.cfg.API.StopMatchmaking(ctx, &api.StopMatchmakingInput{TicketId: &id})
		return "ticket " + id + " stopped", err
	}},
}

// act serves a write action: the CSRF token checked first, then the
// fields, then the action; it goes back to the page it came from (the
// form's `back`) with what was done, or answers the error as a page.
func (c *Console) act(w http.ResponseWriter, r *http.Request) {
	op := operatorOf(r)
	if !c.checkCSRF(w, r, op) {
		return
	}
	a, ok := actions[r.PathValue("action")]
	if !ok {
		c.fail(w, r, nil, http.StatusNotFound, "no such action")
		return
	}
	for _, f := range a.fields {
		if v := r.PostForm.Get(f); v == "" || len(v) > 2048 {
			c.fail(w, r, nil, http.StatusBadRequest, "the form's field "+f+" is required (at most 2048 bytes)")
			return
		}
	}
	msg, err := a.do(r.Context(), c, r.PostForm)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	c.cfg.Logger.Info("console: action", "action", r.PathValue("action"), "operator", op.AccessKey, "done", msg)
	back := localPath(r.PostForm.Get("back"))
	if back == "" {
		back = Prefix + "/"
	}
	http.Redirect(w, r, withDone(back, msg), http.StatusSeeOther)
}

// withDone returns the console path p with its `done` parameter set to
// msg.
func withDone(p, msg string) string {
	path, query, _ := strings.Cut(p, "?")
	q, _ := url.ParseQuery(query)
	q.Set("done", msg)
	return path + "?" + q.Encode()
}
