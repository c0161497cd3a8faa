package fleetiq

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/tags"
)

// The seed documents' sample names.
const (
	seedGroup    = "MegaFrogServers_NA"
	seedServer   = "mega-frog-game-12345678"
	seedInstance = "i-1234567890abcdef0"
)

// t0 is the fake clock's start: the seed sample's RegistrationTime.
var t0 = time.UnixMilli(1580218197293).UTC()

// harness is a Service over a real SQLite store with a fake clock.
type harness struct {
	t     testing.TB
	ctx   context.Context
	st    store.Store
	clock *clocktest.Clock
	tags  *tags.Service
	svc   *Service
}

// newHarness returns a harness; edit adjusts the Config before New.
func newHarness(t testing.TB, edit func(*Config)) *harness {
	t.Helper()
	st, err := journal.Open(filepath.Join(t.TempDir(), "store"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{t: t, ctx: context.Background(), st: st, clock: clocktest.New(t0), tags: tags.New(st)}
	cfg := Config{Store: st, Region: "us-west-2", Account: "123456789012",
		Tags: h.tags, Now: h.clock.Now}
	if edit != nil {
		edit(&cfg)
	}
	h.svc = New(cfg)
	return h
}

func (h *harness) createInput(name string) *api.CreateGameServerGroupInput {
	return &api.CreateGameServerGroupInput{
		GameServerGroupName: api.String(name),
		RoleArn:             api.String("arn:aws:iam::123456789012:role/gamelift-fleetiq"),
		MinSize:             api.Int32(1),
		MaxSize:             api.Int32(10),
		LaunchTemplate:      &api.LaunchTemplateSpecification{LaunchTemplateName: api.String("frog-template"), Version: api.String("1")},
		InstanceDefinitions: []api.InstanceDefinition{{InstanceType: "c5.large"}, {InstanceType: "c5a.large", WeightedCapacity: api.String("2")}},
	}
}

// group creates a group named name with the usual inputs.
func (h *harness) group(name string) *api.GameServerGroup {
	h.t.Helper()
	out, err := h.svc.CreateGameServerGroup(h.ctx, h.createInput(name))
	if err != nil {
		h.t.Fatalf("CreateGameServerGroup %s: %v", name, err)
	}
	return out.GameServerGroup
}

// register registers game server id on instance in group.
func (h *harness) register(group, id, instance string) *api.GameServer {
	h.t.Helper()
	out, err := h.svc.RegisterGameServer(h.ctx, &api.RegisterGameServerInput{
		GameServerGroupName: api.String(group), GameServerId: api.String(id), InstanceId: api.String(instance),
		ConnectionInfo: api.String("192.0.2.0:80")})
	if err != nil {
		h.t.Fatalf("RegisterGameServer %s: %v", id, err)
	}
	return out.GameServer
}

// claim claims in group (a specific game server when id != "").
func (h *harness) claim(group, id string, statuses ...api.FilterInstanceStatus) (*api.GameServer, error) {
	in := &api.ClaimGameServerInput{GameServerGroupName: api.String(group)}
	if id != "" {
		in.GameServerId = api.String(id)
	}
	if statuses != nil {
		in.FilterOption = &api.ClaimFilterOption{InstanceStatuses: statuses}
	}
	out, err := h.svc.ClaimGameServer(h.ctx, in)
	if err != nil {
		return nil, err
	}
	return out.GameServer, nil
}

// mustClaim claims and fails the test on an error.
func (h *harness) mustClaim(group, id string, statuses ...api.FilterInstanceStatus) *api.GameServer {
	h.t.Helper()
	g, err := h.claim(group, id, statuses...)
	if err != nil {
		h.t.Fatalf("ClaimGameServer %s %s: %v", group, id, err)
	}
	return g
}

// utilization sets a game server's utilization status.
func (h *harness) utilization(group, id string, status api.GameServerUtilizationStatus) *api.GameServer {
	h.t.Helper()
	out, err := h.svc.UpdateGameServer(h.ctx, &api.UpdateGameServerInput{
		GameServerGroupName: api.String(group), GameServerId: api.String(id), UtilizationStatus: status})
	if err != nil {
		h.t.Fatalf("UpdateGameServer %s %s: %v", id, status, err)
	}
	return out.GameServer
}

// describe returns a game server, or nil when it is not found.
func (h *harness) describe(group, id string) *api.GameServer {
	h.t.Helper()
	out, err := h.svc.DescribeGameServer(h.ctx, &api.DescribeGameServerInput{
		GameServerGroupName: api.String(group), GameServerId: api.String(id)})
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		h.t.Fatalf("DescribeGameServer %s: %v", id, err)
	}
	return out.GameServer
}

// groupStatus returns a group's status ("" when not found).
func (h *harness) groupStatus(name string) api.GameServerGroupStatus {
	h.t.Helper()
	out, err := h.svc.DescribeGameServerGroup(h.ctx, &api.DescribeGameServerGroupInput{GameServerGroupName: api.String(name)})
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return ""
	}
	if err != nil {
		h.t.Fatalf("DescribeGameServerGroup %s: %v", name, err)
	}
	return out.GameServerGroup.Status
}

// instances returns a group's instances as "id=STATUS".
func (h *harness) instances(group string) []string {
	h.t.Helper()
	out, err := h.svc.DescribeGameServerInstances(h.ctx, &api.DescribeGameServerInstancesInput{GameServerGroupName: api.String(group)})
	if err != nil {
		h.t.Fatalf("DescribeGameServerInstances: %v", err)
	}
	var got []string
	for _, i := range out.GameServerInstances {
		got = append(got, *i.InstanceId+"="+string(i.InstanceStatus))
	}
	return got
}

// keys returns the stored Key of every game server record, by ID.
func (h *harness) keys() map[string]string {
	h.t.Helper()
	out := map[string]string{}
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		recs, _, err := tx.List(h.ctx, store.Query{Kind: kindServer})
		for _, r := range recs {
			out[r.ID] = r.Key
		}
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// checkCounts verifies that every instance's counters match its game
// servers as stored.
func (h *harness) checkCounts() {
	h.t.Helper()
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		servers, _, err := tx.List(h.ctx, store.Query{Kind: kindServer})
		if err != nil {
			return err
		}
		type counts struct{ a, b int }
		want := map[string]counts{}
		for _, rec := range servers {
			g, err := decode[serverRec](rec)
			if err != nil {
				return err
			}
			c := want[instanceID(g.Group, g.Instance)]
			if g.busy() {
				c.b++
			} else {
				c.a++
			}
			want[instanceID(g.Group, g.Instance)] = c
		}
		insts, _, err := tx.List(h.ctx, store.Query{Kind: kindInstance})
		if err != nil {
			return err
		}
		if len(insts) != len(want) {
			return fmt.Errorf("%d instance records, %d instances with game servers", len(insts), len(want))
		}
		for _, rec := range insts {
			i, err := decode[instanceRec](rec)
			if err != nil {
				return err
			}
			if c := want[rec.ID]; c.a != i.Available || c.b != i.Busy {
				return fmt.Errorf("instance %s counts %d/%d, has %d/%d", rec.ID, i.Available, i.Busy, c.a, c.b)
			}
			if rec.Key != instanceKey(i.Status, i.Available > 0) || rec.Rank != instanceRank(i.Busy) {
				return fmt.Errorf("instance %s indexed as %q/%d", rec.ID, rec.Key, rec.Rank)
			}
		}
		return nil
	})
	if err != nil {
		h.t.Fatalf("instance counters: %v", err)
	}
}

// isErr reports whether err is (wraps) an error of target's type.
func isErr[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// instanceN returns a valid 19-character instance ID numbered n.
func instanceN(n int) string { return fmt.Sprintf("i-%017d", n) }
