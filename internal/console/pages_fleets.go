package console

import (
	"net/http"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
)

// overview is the console's first page: what each section shows.
func (c *Console) overview(r *http.Request, v *view) (string, error) {
	v.Title, v.Nav = "Overview", "overview"
	return "overview", nil
}

// fleetsPage lists fleets, a page at a time.
func (c *Console) fleetsPage(r *http.Request, v *view) (string, error) {
	out, err := c.cfg.API.DescribeFleetAttributes(r.Context(), &api.DescribeFleetAttributesInput{Limit: limit(), NextToken: token(r)})
	if err != nil {
		return "", err
	}
	v.Title, v.Nav, v.Data, v.Next = "Fleets", "fleets", out.FleetAttributes, nextLink(r, api.ToString(out.NextToken))
	return "fleets", nil
}

// fleetData fills a fleet's page.
type fleetData struct {
	Fleet     api.FleetAttributes
	Locations []api.LocationAttributes
	Capacity  []api.FleetCapacity
	Instances []instanceRow
	// Computes are an Anywhere fleet's (it has no instances).
	Computes []api.Compute
	Events   []api.Event
}

// instanceRow is an instance with the link to its setup log.
type instanceRow struct {
	api.Instance
	SetupLog string
}

// fleetPage shows a fleet: its attributes, locations, capacity, a page of
// its instances and its latest events.
func (c *Console) fleetPage(r *http.Request, v *view) (string, error) {
	ctx, id := r.Context(), r.URL.Query().Get("id")
	attrs, err := c.cfg.API.DescribeFleetAttributes(ctx, &api.DescribeFleetAttributesInput{FleetIds: []string{id}})
	if err != nil {
		return "", err
	}
	if len(attrs.FleetAttributes) == 0 {
		return "", api.NewNotFoundException("fleet %s does not exist", clip(id))
	}
	d := &fleetData{Fleet: attrs.FleetAttributes[0]}
	id = api.ToString(d.Fleet.FleetId)
	locs, err := c.cfg.API.DescribeFleetLocationAttributes(ctx, &api.DescribeFleetLocationAttributesInput{FleetId: &id, Limit: limit()})
	if err != nil {
		return "", err
	}
	d.Locations = locs.LocationAttributes
	capa, err := c.cfg.API.DescribeFleetCapacity(ctx, &api.DescribeFleetCapacityInput{FleetIds: []string{id}})
	if err != nil {
		return "", err
	}
	d.Capacity = capa.FleetCapacity
	next, err := c.fleetMachines(r, d)
	if err != nil {
		return "", err
	}
	ten := int32(10)
	evs, err := c.cfg.API.DescribeFleetEvents(ctx, &api.DescribeFleetEventsInput{FleetId: &id, Limit: &ten})
	if err != nil {
		return "", err
	}
	d.Events = evs.Events
	v.Title, v.Nav, v.Data, v.Next = "Fleet "+id, "fleets", d, nextLink(r, next)
	return "fleet", nil
}

// fleetMachines fills a page of the fleet's instances, or of its computes
// for an Anywhere fleet, and returns the next page's token.
func (c *Console) fleetMachines(r *http.Request, d *fleetData) (string, error) {
	ctx, id := r.Context(), api.ToString(d.Fleet.FleetId)
	if d.Fleet.ComputeType == api.ComputeTypeAnywhere {
		cs, err := c.cfg.API.ListCompute(ctx, &api.ListComputeInput{FleetId: &id, Limit: limit(), NextToken: token(r)})
		if err != nil {
			return "", err
		}
		d.Computes = cs.ComputeList
		return api.ToString(cs.NextToken), nil
	}
	insts, err := c.cfg.API.DescribeInstances(ctx, &api.DescribeInstancesInput{FleetId: &id, Limit: limit(), NextToken: token(r)})
	if err != nil {
		return "", err
	}
	for _, in := range insts.Instances {
		d.Instances = append(d.Instances, instanceRow{Instance: in, SetupLog: localURL(c.cfg.SetupLogURL(id, api.ToString(in.InstanceId)))})
	}
	return api.ToString(insts.NextToken), nil
}

// processesData fills a fleet's server processes page.
type processesData struct {
	FleetID   string
	Processes []processRow
}

// processRow is a server process with the link to its kept output (""
// when none is kept).
type processRow struct {
	hosting.Process
	Log string
}

// processesPage lists a fleet's server processes, newest first, from the
// store (GameLift has no operation listing them).
func (c *Console) processesPage(r *http.Request, v *view) (string, error) {
	ctx, fleet := r.Context(), r.URL.Query().Get("fleet")
	d := &processesData{FleetID: fleet}
	var next string
	err := c.cfg.Store.View(ctx, func(tx store.Tx) error {
		q := store.Query{Kind: hosting.KindProcess, Parent: fleet, HasParent: true, Order: store.OrderCreated, Desc: true}
		recs, n, err := paging.Records(ctx, tx, q, r.URL.Query().Get("next"), pageSize, nil)
		if err != nil {
			return err
		}
		next = n
		for _, rec := range recs {
			var p hosting.Process
			if err := store.Decode(rec, &p); err != nil {
				return err
			}
			d.Processes = append(d.Processes, processRow{Process: p})
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	ids := make([]string, len(d.Processes))
	for i := range d.Processes {
		ids[i] = d.Processes[i].ID
	}
	kept := c.cfg.OutputKept(fleet, ids)
	for i := range d.Processes {
		if kept[ids[i]] {
			d.Processes[i].Log = localURL(c.cfg.ProcessLogURL(fleet, ids[i]))
		}
	}
	v.Title, v.Nav, v.Data, v.Next = "Server processes of "+fleet, "fleets", d, nextLink(r, next)
	return "processes", nil
}

// gameSessionsData fills the game sessions page: a fleet's, or the
// fleets to choose from.
type gameSessionsData struct {
	FleetID  string
	Status   string
	Sessions []api.GameSession
	Fleets   []api.FleetAttributes
}

// gameSessionsPage lists a fleet's game sessions (optionally of one
// status), or, without a fleet, the fleets.
func (c *Console) gameSessionsPage(r *http.Request, v *view) (string, error) {
	ctx, q := r.Context(), r.URL.Query()
	d := &gameSessionsData{FleetID: q.Get("fleet"), Status: q.Get("status")}
	v.Title, v.Nav, v.Data = "Game sessions", "gamesessions", d
	if d.FleetID == "" {
		out, err := c.cfg.API.DescribeFleetAttributes(ctx, &api.DescribeFleetAttributesInput{Limit: limit(), NextToken: token(r)})
		if err != nil {
			return "", err
		}
		d.Fleets, v.Next = out.FleetAttributes, nextLink(r, api.ToString(out.NextToken))
		return "gamesessions", nil
	}
	in := &api.DescribeGameSessionsInput{FleetId: &d.FleetID, Limit: limit(), NextToken: token(r)}
	if d.Status != "" {
		in.StatusFilter = &d.Status
	}
	out, err := c.cfg.API.DescribeGameSessions(ctx, in)
	if err != nil {
		return "", err
	}
	d.Sessions, v.Next = out.GameSessions, nextLink(r, api.ToString(out.NextToken))
	v.Title = "Game sessions of " + d.FleetID
	return "gamesessions", nil
}

// gameSessionData fills a game session's page.
type gameSessionData struct {
	Detail  api.GameSessionDetail
	Players []api.PlayerSession
	// Ended: the session cannot be terminated any more.
	Ended bool
}

// gameSessionPage shows a game session and a page of its player
// sessions, with the form that terminates it.
func (c *Console) gameSessionPage(r *http.Request, v *view) (string, error) {
	ctx, id := r.Context(), r.URL.Query().Get("id")
	out, err := c.cfg.API.DescribeGameSessionDetails(ctx, &api.DescribeGameSessionDetailsInput{GameSessionId: &id})
	if err != nil {
		return "", err
	}
	if len(out.GameSessionDetails) == 0 || out.GameSessionDetails[0].GameSession == nil {
		return "", api.NewNotFoundException("game session %s does not exist", clip(id))
	}
	d := &gameSessionData{Detail: out.GameSessionDetails[0]}
	st := d.Detail.GameSession.Status
	d.Ended = st == api.GameSessionStatusTerminated || st == api.GameSessionStatusTerminating || st == api.GameSessionStatusError
	ps, err := c.cfg.API.DescribePlayerSessions(ctx, &api.DescribePlayerSessionsInput{GameSessionId: &id, Limit: limit(), NextToken: token(r)})
	if err != nil {
		return "", err
	}
	d.Players = ps.PlayerSessions
	v.Title, v.Nav, v.Data, v.Next = "Game session", "gamesessions", d, nextLink(r, api.ToString(ps.NextToken))
	return "gamesession", nil
}
