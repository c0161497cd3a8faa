package aliases

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
	"github.com/hoistgg/hoist/internal/store/sqlite"
	"github.com/hoistgg/hoist/internal/tags"
)

func TestCheckRouting(t *testing.T) {
	fleet, msg, empty := api.String("fleet-1"), api.String("gone"), api.String("")
	tests := map[string]struct {
		in      *api.RoutingStrategy
		wantErr bool
		want    api.RoutingStrategy
	}{
		"simple":                   {in: &api.RoutingStrategy{Type: api.RoutingStrategyTypeSimple, FleetId: fleet}, want: api.RoutingStrategy{Type: "SIMPLE", FleetId: fleet}},
		"simple keeps a message":   {in: &api.RoutingStrategy{Type: api.RoutingStrategyTypeSimple, FleetId: fleet, Message: msg}, want: api.RoutingStrategy{Type: "SIMPLE", FleetId: fleet, Message: msg}},
		"simple without fleet":     {in: &api.RoutingStrategy{Type: api.RoutingStrategyTypeSimple}, wantErr: true},
		"simple with empty fleet":  {in: &api.RoutingStrategy{Type: api.RoutingStrategyTypeSimple, FleetId: empty}, wantErr: true},
		"terminal":                 {in: &api.RoutingStrategy{Type: api.RoutingStrategyTypeTerminal, Message: msg}, want: api.RoutingStrategy{Type: "TERMINAL", Message: msg}},
		"terminal without message": {in: &api.RoutingStrategy{Type: api.RoutingStrategyTypeTerminal}, want: api.RoutingStrategy{Type: "TERMINAL"}},
		"terminal empty message":   {in: &api.RoutingStrategy{Type: api.RoutingStrategyTypeTerminal, Message: empty}, want: api.RoutingStrategy{Type: "TERMINAL"}},
		"terminal with a fleet":    {in: &api.RoutingStrategy{Type: api.RoutingStrategyTypeTerminal, FleetId: fleet}, wantErr: true},
		"no type":                  {in: &api.RoutingStrategy{FleetId: fleet}, wantErr: true},
		"unknown type":             {in: &api.RoutingStrategy{Type: "WEIGHTED", FleetId: fleet}, wantErr: true},
		"no strategy":              {in: nil, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := checkRouting(tc.in)
			if tc.wantErr {
				var ire *api.InvalidRequestException
				if !errors.As(err, &ire) {
					t.Fatalf("got %v, want InvalidRequestException", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Type != tc.want.Type || api.ToString(got.FleetId) != api.ToString(tc.want.FleetId) ||
				(got.Message == nil) != (tc.want.Message == nil) || api.ToString(got.Message) != api.ToString(tc.want.Message) {
				t.Errorf("got %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestRoute(t *testing.T) {
	tests := map[string]struct {
		a        api.Alias
		fleet    string
		terminal string // the exception's message; "" when it routes
	}{
		"simple":                {a: api.Alias{RoutingStrategy: &api.RoutingStrategy{Type: "SIMPLE", FleetId: api.String("fleet-9")}}, fleet: "fleet-9"},
		"terminal with message": {a: api.Alias{AliasId: api.String("alias-1"), RoutingStrategy: &api.RoutingStrategy{Type: "TERMINAL", Message: api.String("Update your game")}}, terminal: "Update your game"},
		"terminal, no message":  {a: api.Alias{AliasId: api.String("alias-1"), RoutingStrategy: &api.RoutingStrategy{Type: "TERMINAL"}}, terminal: "alias alias-1 has a TERMINAL routing strategy and routes to no fleet"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fleet, err := route(&tc.a)
			if tc.terminal == "" {
				if err != nil || fleet != tc.fleet {
					t.Fatalf("route = %q, %v; want %q", fleet, err, tc.fleet)
				}
				return
			}
			var te *api.TerminalRoutingStrategyException
			if !errors.As(err, &te) || te.Message != tc.terminal {
				t.Fatalf("route error %v, want TerminalRoutingStrategyException %q", err, tc.terminal)
			}
		})
	}
}

// harness is a Service over a real (journal) store with a fake clock, a
// tags service and a fixed set of existing fleets.
type harness struct {
	s     *Service
	st    store.Store
	tags  *tags.Service
	clock *clocktest.Clock
	ctx   context.Context
}

func newHarness(t *testing.T, fleets ...string) *harness {
	t.Helper()
	st, err := journal.Open(filepath.Join(t.TempDir(), "store"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return newHarnessOn(t, st, fleets...)
}

// newHarnessOn is newHarness on a given store (closed when the test ends).
func newHarnessOn(t *testing.T, st store.Store, fleets ...string) *harness {
	t.Helper()
	t.Cleanup(func() { st.Close() })
	clock := clocktest.New(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	n := 0
	exists := map[string]bool{}
	for _, f := range fleets {
		exists[f] = true
	}
	tg := tags.New(st)
	s := New(Config{Store: st, Region: "us-west-2", Account: "123456789012", Tags: tg, Now: clock.Now,
		NewID:       func() string { n++; return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) },
		FleetExists: func(_ context.Context, _ store.Tx, id string) (bool, error) { return exists[id], nil }})
	return &harness{s: s, st: st, tags: tg, clock: clock, ctx: context.Background()}
}

func (h *harness) create(t *testing.T, name string, rs api.RoutingStrategy) *api.Alias {
	t.Helper()
	out, err := h.s.CreateAlias(h.ctx, &api.CreateAliasInput{Name: api.String(name), RoutingStrategy: &rs})
	if err != nil {
		t.Fatalf("CreateAlias %s: %v", name, err)
	}
	return out.Alias
}

func simple(fleet string) api.RoutingStrategy {
	return api.RoutingStrategy{Type: api.RoutingStrategyTypeSimple, FleetId: api.String(fleet)}
}

func terminalTo(msg string) api.RoutingStrategy {
	return api.RoutingStrategy{Type: api.RoutingStrategyTypeTerminal, Message: api.String(msg)}
}

func TestLifecycle(t *testing.T) {
	h := newHarness(t, "fleet-a", "fleet-b")
	a := h.create(t, "live", simple("fleet-a"))
	id := api.ToString(a.AliasId)
	if id != "alias-00000000-0000-4000-8000-000000000001" {
		t.Errorf("AliasId %s", id)
	}
	if want := "arn:aws:gamelift:us-west-2:123456789012:alias/" + id; api.ToString(a.AliasArn) != want {
		t.Errorf("AliasArn %s, want %s", api.ToString(a.AliasArn), want)
	}
	if !a.CreationTime.Equal(h.clock.Now()) || !a.LastUpdatedTime.Equal(h.clock.Now()) {
		t.Errorf("times %v %v", a.CreationTime, a.LastUpdatedTime)
	}
	// Describe by ID and by ARN; resolve.
	for _, ref := range []string{id, api.ToString(a.AliasArn)} {
		d, err := h.s.DescribeAlias(h.ctx, &api.DescribeAliasInput{AliasId: api.String(ref)})
		if err != nil || api.ToString(d.Alias.Name) != "live" {
			t.Fatalf("DescribeAlias %s: %v %+v", ref, err, d)
		}
		r, err := h.s.ResolveAlias(h.ctx, &api.ResolveAliasInput{AliasId: api.String(ref)})
		if err != nil || api.ToString(r.FleetId) != "fleet-a" ||
			api.ToString(r.FleetArn) != "arn:aws:gamelift:us-west-2:123456789012:fleet/fleet-a" {
			t.Fatalf("ResolveAlias %s: %v %+v", ref, err, r)
		}
	}
	// Update to TERMINAL: the resolver answers the message.
	h.clock.Advance(time.Minute)
	rs := terminalTo("Version 1 is retired")
	u, err := h.s.UpdateAlias(h.ctx, &api.UpdateAliasInput{AliasId: api.String(id), RoutingStrategy: &rs, Description: api.String("old")})
	if err != nil {
		t.Fatal(err)
	}
	if api.ToString(u.Alias.Name) != "live" || api.ToString(u.Alias.Description) != "old" || !u.Alias.LastUpdatedTime.Equal(h.clock.Now()) ||
		!u.Alias.CreationTime.Equal(a.CreationTime.Time) {
		t.Errorf("updated alias %+v", u.Alias)
	}
	_, err = h.s.ResolveAlias(h.ctx, &api.ResolveAliasInput{AliasId: api.String(id)})
	var te *api.TerminalRoutingStrategyException
	if !errors.As(err, &te) || te.Message != "Version 1 is retired" {
		t.Fatalf("ResolveAlias of a terminal alias: %v", err)
	}
	// The package resolver, as sessions uses it, in a transaction.
	err = h.st.View(h.ctx, func(tx store.Tx) error { _, err := ResolveFleet(h.ctx, tx, id); return err })
	if !errors.As(err, &te) {
		t.Fatalf("ResolveFleet of a terminal alias: %v", err)
	}
	// Back to SIMPLE on another fleet, renamed.
	rs = simple("fleet-b")
	if _, err := h.s.UpdateAlias(h.ctx, &api.UpdateAliasInput{AliasId: api.String(id), RoutingStrategy: &rs, Name: api.String("next")}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.s.ResolveAlias(h.ctx, &api.ResolveAliasInput{AliasId: api.String(id)}); err != nil || api.ToString(r.FleetId) != "fleet-b" {
		t.Fatalf("ResolveAlias after update: %v %+v", err, r)
	}
	// Delete; everything after answers NotFound.
	if err := h.s.DeleteAlias(h.ctx, &api.DeleteAliasInput{AliasId: api.String(id)}); err != nil {
		t.Fatal(err)
	}
	var nf *api.NotFoundException
	if err := h.s.DeleteAlias(h.ctx, &api.DeleteAliasInput{AliasId: api.String(id)}); !errors.As(err, &nf) {
		t.Errorf("DeleteAlias twice: %v", err)
	}
	if _, err := h.s.DescribeAlias(h.ctx, &api.DescribeAliasInput{AliasId: api.String(id)}); !errors.As(err, &nf) {
		t.Errorf("DescribeAlias of a deleted alias: %v", err)
	}
	if _, err := h.s.ResolveAlias(h.ctx, &api.ResolveAliasInput{AliasId: api.String(id)}); !errors.As(err, &nf) {
		t.Errorf("ResolveAlias of a deleted alias: %v", err)
	}
	if _, err := h.s.UpdateAlias(h.ctx, &api.UpdateAliasInput{AliasId: api.String(id), Name: api.String("x")}); !errors.As(err, &nf) {
		t.Errorf("UpdateAlias of a deleted alias: %v", err)
	}
}

func TestFleetMustExist(t *testing.T) {
	h := newHarness(t, "fleet-a")
	rs := simple("fleet-missing")
	_, err := h.s.CreateAlias(h.ctx, &api.CreateAliasInput{Name: api.String("x"), RoutingStrategy: &rs})
	var ire *api.InvalidRequestException
	if !errors.As(err, &ire) {
		t.Fatalf("CreateAlias on a missing fleet: %v", err)
	}
	a := h.create(t, "x", simple("fleet-a"))
	_, err = h.s.UpdateAlias(h.ctx, &api.UpdateAliasInput{AliasId: a.AliasId, RoutingStrategy: &rs})
	if !errors.As(err, &ire) {
		t.Fatalf("UpdateAlias onto a missing fleet: %v", err)
	}
	// A refused update changes nothing.
	d, _ := h.s.DescribeAlias(h.ctx, &api.DescribeAliasInput{AliasId: a.AliasId})
	if api.ToString(d.Alias.RoutingStrategy.FleetId) != "fleet-a" {
		t.Errorf("alias after a refused update: %+v", d.Alias.RoutingStrategy)
	}
}

// TestList runs on both embedded stores: the filters are index queries
// (Parent and Key with creation order), which each backend must answer.
func TestList(t *testing.T) {
	t.Run("journal", func(t *testing.T) { testList(t, newHarness(t, "fleet-a")) })
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(filepath.Join(t.TempDir(), "hoist.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		testList(t, newHarnessOn(t, st, "fleet-a"))
	})
}

func testList(t *testing.T, h *harness) {
	var all []string
	for i := range 7 {
		name, rs := "blue", simple("fleet-a")
		if i%2 == 1 {
			name, rs = "red", terminalTo("no")
		}
		all = append(all, api.ToString(h.create(t, name, rs).AliasId))
	}
	list := func(in api.ListAliasesInput) []string {
		t.Helper()
		var ids []string
		for page := 0; ; page++ {
			out, err := h.s.ListAliases(h.ctx, &in)
			if err != nil {
				t.Fatal(err)
			}
			if in.Limit != nil && len(out.Aliases) > int(*in.Limit) {
				t.Fatalf("page of %d with Limit %d", len(out.Aliases), *in.Limit)
			}
			for _, a := range out.Aliases {
				ids = append(ids, api.ToString(a.AliasId))
			}
			if out.NextToken == nil {
				return ids
			}
			in.NextToken = out.NextToken
		}
	}
	eq := func(what string, got, want []string) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", what, got, want)
		}
	}
	eq("all", list(api.ListAliasesInput{}), all)
	eq("all, pages of 2", list(api.ListAliasesInput{Limit: api.Int32(2)}), all)
	eq("SIMPLE", list(api.ListAliasesInput{RoutingStrategyType: "SIMPLE", Limit: api.Int32(3)}), []string{all[0], all[2], all[4], all[6]})
	eq("TERMINAL", list(api.ListAliasesInput{RoutingStrategyType: "TERMINAL"}), []string{all[1], all[3], all[5]})
	eq("Name red", list(api.ListAliasesInput{Name: api.String("red"), Limit: api.Int32(1)}), []string{all[1], all[3], all[5]})
	eq("Name is exact", list(api.ListAliasesInput{Name: api.String("re")}), nil)
	eq("Name and type", list(api.ListAliasesInput{Name: api.String("blue"), RoutingStrategyType: "TERMINAL"}), nil)
	eq("Name and type match", list(api.ListAliasesInput{Name: api.String("red"), RoutingStrategyType: "TERMINAL", Limit: api.Int32(2)}),
		[]string{all[1], all[3], all[5]})

	// A renamed alias is found under its new name.
	if _, err := h.s.UpdateAlias(h.ctx, &api.UpdateAliasInput{AliasId: api.String(all[0]), Name: api.String("green")}); err != nil {
		t.Fatal(err)
	}
	eq("renamed", list(api.ListAliasesInput{Name: api.String("green")}), []string{all[0]})

	_, err := h.s.ListAliases(h.ctx, &api.ListAliasesInput{NextToken: api.String("bogus")})
	var ire *api.InvalidRequestException
	if !errors.As(err, &ire) {
		t.Errorf("ListAliases with a bogus NextToken: %v", err)
	}
}

func TestTags(t *testing.T) {
	h := newHarness(t, "fleet-a")
	rs := simple("fleet-a")
	out, err := h.s.CreateAlias(h.ctx, &api.CreateAliasInput{Name: api.String("t"), RoutingStrategy: &rs,
		Tags: []api.Tag{{Key: api.String("team"), Value: api.String("red")}}})
	if err != nil {
		t.Fatal(err)
	}
	arnOf := out.Alias.AliasArn
	got, err := h.tags.ListTagsForResource(h.ctx, &api.ListTagsForResourceRequest{ResourceARN: arnOf})
	if err != nil || len(got.Tags) != 1 || api.ToString(got.Tags[0].Key) != "team" {
		t.Fatalf("ListTagsForResource: %v %+v", err, got)
	}
	if err := h.s.DeleteAlias(h.ctx, &api.DeleteAliasInput{AliasId: out.Alias.AliasId}); err != nil {
		t.Fatal(err)
	}
	var nf *api.NotFoundException
	if _, err := h.tags.ListTagsForResource(h.ctx, &api.ListTagsForResourceRequest{ResourceARN: arnOf}); !errors.As(err, &nf) {
		t.Errorf("ListTagsForResource of a deleted alias: %v", err)
	}
	// Its tag record went with it.
	err = h.st.View(h.ctx, func(tx store.Tx) error {
		list, err := tags.Get(h.ctx, tx, api.ToString(arnOf))
		if len(list) != 0 {
			t.Errorf("tags left after DeleteAlias: %+v", list)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
