package console

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosts"
	"github.com/hoistgg/hoist/internal/matchmaking"
	"github.com/hoistgg/hoist/internal/replicas"
)

// queuesPage lists game session queues.
func (c *Console) queuesPage(r *http.Request, v *view) (string, error) {
	out, err := c.cfg.API.DescribeGameSessionQueues(r.Context(), &api.DescribeGameSessionQueuesInput{Limit: limit(), NextToken: token(r)})
	if err != nil {
		return "", err
	}
	v.Title, v.Nav, v.Data, v.Next = "Game session queues", "queues", out.GameSessionQueues, nextLink(r, api.ToString(out.NextToken))
	return "queues", nil
}

// queueData fills a queue's page.
type queueData struct {
	Queue      api.GameSessionQueue
	Placements []api.GameSessionPlacement
}

// queuePage shows a queue and its placements, newest first, with the
// form that stops a PENDING one.
func (c *Console) queuePage(r *http.Request, v *view) (string, error) {
	ctx, name := r.Context(), r.URL.Query().Get("name")
	out, err := c.cfg.API.DescribeGameSessionQueues(ctx, &api.DescribeGameSessionQueuesInput{Names: []string{name}})
	if err != nil {
		return "", err
	}
	if len(out.GameSessionQueues) == 0 {
		return "", api.NewNotFoundException("game session queue %s does not exist", clip(name))
	}
	d := &queueData{Queue: out.GameSessionQueues[0]}
	ps, next, err := c.cfg.Placements.ListPlacements(ctx, api.ToString(d.Queue.Name), r.URL.Query().Get("next"), pageSize)
	if err != nil {
		return "", err
	}
	d.Placements = ps
	v.Title, v.Nav, v.Data, v.Next = "Queue "+api.ToString(d.Queue.Name), "queues", d, nextLink(r, next)
	return "queue", nil
}

// configurationsPage lists matchmaking configurations.
func (c *Console) configurationsPage(r *http.Request, v *view) (string, error) {
	out, err := c.cfg.API.DescribeMatchmakingConfigurations(r.Context(), &api.DescribeMatchmakingConfigurationsInput{Limit: limit(), NextToken: token(r)})
	if err != nil {
		return "", err
	}
	v.Title, v.Nav, v.Data, v.Next = "Matchmaking configurations", "matchmaking", out.Configurations, nextLink(r, api.ToString(out.NextToken))
	return "configurations", nil
}

// configurationData fills a matchmaking configuration's page.
type configurationData struct {
	Config    api.MatchmakingConfiguration
	Tickets   []matchmaking.TicketView
	Diagnosis *matchmaking.Diagnosis
	// Held maps a ticket to the rules that held it back in the dry pass.
	Held map[string][]string
}

// configurationPage shows a configuration, a dry matcher pass over its
// SEARCHING tickets (on the first page), and its tickets, the most
// recently changed first, with the form that stops one.
func (c *Console) configurationPage(r *http.Request, v *view) (string, error) {
	ctx, name := r.Context(), r.URL.Query().Get("name")
	out, err := c.cfg.API.DescribeMatchmakingConfigurations(ctx, &api.DescribeMatchmakingConfigurationsInput{Names: []string{name}})
	if err != nil {
		return "", err
	}
	if len(out.Configurations) == 0 {
		return "", api.NewNotFoundException("matchmaking configuration %s does not exist", clip(name))
	}
	d := &configurationData{Config: out.Configurations[0], Held: map[string][]string{}}
	name = api.ToString(d.Config.Name)
	if r.URL.Query().Get("next") == "" {
		if d.Diagnosis, err = c.cfg.Tickets.Diagnose(ctx, name, c.cfg.DiagnosePool); err != nil {
			return "", err
		}
		for _, h := range d.Diagnosis.Held {
			d.Held[h.TicketID] = h.Rules
		}
	}
	ts, next, err := c.cfg.Tickets.ListTickets(ctx, name, r.URL.Query().Get("next"), pageSize)
	if err != nil {
		return "", err
	}
	d.Tickets = ts
	v.Title, v.Nav, v.Data, v.Next = "Matchmaking configuration "+name, "matchmaking", d, nextLink(r, next)
	return "configuration", nil
}

// groupsPage lists FleetIQ game server groups.
func (c *Console) groupsPage(r *http.Request, v *view) (string, error) {
	out, err := c.cfg.API.ListGameServerGroups(r.Context(), &api.ListGameServerGroupsInput{Limit: limit(), NextToken: token(r)})
	if err != nil {
		return "", err
	}
	v.Title, v.Nav, v.Data, v.Next = "FleetIQ game server groups", "fleetiq", out.GameServerGroups, nextLink(r, api.ToString(out.NextToken))
	return "groups", nil
}

// groupData fills a game server group's page.
type groupData struct {
	Group     api.GameServerGroup
	Instances []api.GameServerInstance
	Servers   []api.GameServer
	// InstancesNext is the link to the next page of instances (the page's
	// `next` pages the game servers).
	InstancesNext string
}

// groupPage shows a game server group, its instances (with the form that
// drains one) and a page of its game servers.
func (c *Console) groupPage(r *http.Request, v *view) (string, error) {
	ctx, q := r.Context(), r.URL.Query()
	name := q.Get("name")
	g, err := c.cfg.API.DescribeGameServerGroup(ctx, &api.DescribeGameServerGroupInput{GameServerGroupName: &name})
	if err != nil {
		return "", err
	}
	d := &groupData{Group: *g.GameServerGroup}
	in := &api.DescribeGameServerInstancesInput{GameServerGroupName: &name, Limit: limit()}
	if t := q.Get("instances"); t != "" {
		in.NextToken = &t
	}
	insts, err := c.cfg.API.DescribeGameServerInstances(ctx, in)
	if err != nil {
		return "", err
	}
	d.Instances = insts.GameServerInstances
	if t := api.ToString(insts.NextToken); t != "" {
		nq := r.URL.Query()
		nq.Set("instances", t)
		nq.Del("done")
		d.InstancesNext = r.URL.Path + "?" + nq.Encode()
	}
	gs, err := c.cfg.API.ListGameServers(ctx, &api.ListGameServersInput{GameServerGroupName: &name, Limit: limit(), NextToken: token(r)})
	if err != nil {
		return "", err
	}
	d.Servers = gs.GameServers
	v.Title, v.Nav, v.Data, v.Next = "Game server group "+name, "fleetiq", d, nextLink(r, api.ToString(gs.NextToken))
	return "group", nil
}

// hostsPage lists the hosts (this machine's and pool hosts), with the
// forms that drain an ACTIVE one and undrain a DRAINING one.
func (c *Console) hostsPage(r *http.Request, v *view) (string, error) {
	hs, next, err := c.cfg.Hosts.ListHostsPage(r.Context(), r.URL.Query().Get("next"), pageSize)
	if err != nil {
		return "", err
	}
	if hs == nil {
		hs = []hosts.HostInfo{}
	}
	v.Title, v.Nav, v.Data, v.Next = "Hosts", "hosts", hs, nextLink(r, next)
	return "hosts", nil
}

// replicaRow is a replica of the registry (internal/replicas): its
// registration, whether its lease is live, and the other leases (loops,
// shards) it holds. A holder of leases with no registration has only ID
// and Leases.
type replicaRow struct {
	ID         string
	Registered bool
	Addresses  []string
	Version    string
	Started    time.Time
	// Expires is when its registry lease ends unless renewed (the
	// store's clock); zero: not live (expired, or given up).
	Expires time.Time
	// Gone: the janitor found its lease expired and is clearing what
	// names it.
	Gone   bool
	Leases []string
	This   bool
}

// Live reports whether the replica holds its registry lease.
func (r *replicaRow) Live() bool { return !r.Expires.IsZero() }

// replicasPage lists the replicas of the registry (their records, and
// whether each holds its lease), with the leases each holds.
func (c *Console) replicasPage(r *http.Request, v *view) (string, error) {
	regs, err := replicas.List(r.Context(), c.cfg.Store)
	if err != nil {
		return "", err
	}
	gs, err := c.cfg.Store.Leases(r.Context(), "")
	if err != nil {
		return "", err
	}
	rows := map[string]*replicaRow{}
	row := func(id string) *replicaRow {
		if rows[id] == nil {
			rows[id] = &replicaRow{ID: id, This: id == c.cfg.ReplicaID}
		}
		return rows[id]
	}
	for _, rec := range regs {
		rr := row(rec.ID)
		rr.Registered, rr.Addresses, rr.Version, rr.Started = true, rec.Addresses, rec.Version, rec.Started
		rr.Expires, rr.Gone = rec.Expires, rec.Gone
	}
	for _, g := range gs {
		if strings.HasPrefix(g.Name, replicas.LeasePrefix) {
			continue
		}
		if rr := row(g.Holder); len(rr.Leases) < 200 {
			rr.Leases = append(rr.Leases, g.Name)
		}
	}
	out := make([]*replicaRow, 0, len(rows))
	for _, rr := range rows {
		out = append(out, rr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	v.Title, v.Nav, v.Data = "Replicas", "replicas", out
	return "replicas", nil
}

// eventsPage is the live event list: the page itself, filled by
// console.js from the stream (without JavaScript it says so).
func (c *Console) eventsPage(r *http.Request, v *view) (string, error) {
	v.Title, v.Nav, v.Data = "Live events", "events", r.URL.Query().Get("resource")
	return "events", nil
}

// stream serves the live event stream to the console's page, ending it
// when the operator's session ends.
func (c *Console) stream(w http.ResponseWriter, r *http.Request) {
	op := operatorOf(r)
	if !op.expires.IsZero() {
		ctx, cancel := context.WithTimeout(r.Context(), op.expires.Sub(c.cfg.Now()))
		defer cancel()
		r = r.WithContext(ctx)
	}
	c.cfg.Events(w, r, op.AccessKey)
}
