package sessions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// searchFixture is a fleet with game sessions in two locations: five ACTIVE
// in us-west-2 (maps dust, nuke, dust, nuke, dust; 0..4 players of 4), one
// ACTIVE in us-east-1 and one still ACTIVATING.
func searchFixture(t *testing.T) (*harness, []string) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	h.addCompute("fleet-1", "i-2", "us-east-1")
	var ids []string
	for i := range 7 {
		compute, loc := "i-1", "us-west-2"
		if i == 5 {
			compute, loc = "i-2", "us-east-1"
		}
		pid := fmt.Sprintf("proc-%d", i)
		c := h.readyProcess("fleet-1", compute, loc, pid, int32(7000+i))
		gs, err := h.create("fleet-1", func(in *api.CreateGameSessionInput) {
			in.Name = api.String(fmt.Sprintf("game %d", i))
			in.Location = api.String(loc)
			in.GameProperties = []api.GameProperty{{Key: api.String("map"), Value: api.String([]string{"dust", "nuke"}[i%2])}}
		})
		h.must(err)
		id := api.ToString(gs.GameSessionId)
		ids = append(ids, id)
		if i < 6 {
			h.must(h.sdk.ActivateGameSession(h.ctx, c, id))
		}
		if i < 5 && i > 0 {
			var players []string
			for p := range i {
				players = append(players, fmt.Sprintf("player-%d", p))
			}
			_, err := h.svc.CreatePlayerSessions(h.ctx, &api.CreatePlayerSessionsInput{GameSessionId: api.String(id), PlayerIds: players})
			h.must(err)
		}
		h.clock.Advance(time.Second)
	}
	return h, ids
}

// searchIDs runs a search and returns the indexes (into ids) of the
// sessions found, and the NextToken.
func searchIDs(t *testing.T, h *harness, ids []string, in *api.SearchGameSessionsInput) ([]int, string) {
	t.Helper()
	if in.FleetId == nil && in.AliasId == nil {
		in.FleetId = api.String("fleet-1")
	}
	out, err := h.svc.SearchGameSessions(h.ctx, in)
	h.must(err)
	var got []int
	for _, gs := range out.GameSessions {
		got = append(got, slices.Index(ids, api.ToString(gs.GameSessionId)))
	}
	return got, api.ToString(out.NextToken)
}

func TestSearchGameSessions(t *testing.T) {
	h, ids := searchFixture(t)
	tests := map[string]struct {
		filter, sort, location string
		want                   []int // nil: any order of wantSet
	}{
		"all active, by ID":    {want: sortedByID(ids, 0, 1, 2, 3, 4, 5)},
		"property and players": {filter: `gameSessionProperties.map = 'dust' AND playerSessionCount >= 2`, sort: "playerSessionCount DESC", want: []int{4, 2}},
		"available sorted":     {filter: "hasAvailablePlayerSessions=true", sort: "creationTimeMillis DESC", want: []int{5, 3, 2, 1, 0}},
		"location":             {location: "us-east-1", want: []int{5}},
		"name":                 {filter: `gameSessionName = "game 3"`, want: []int{3}},
		"not":                  {filter: `NOT (gameSessionProperties.map = 'dust' OR playerSessionCount = 0)`, sort: "gameSessionName ASC", want: []int{1, 3}},
		"missing property":     {filter: `gameSessionProperties.mode <> 'x'`, sort: "gameSessionProperties.mode ASC", want: sortedByID(ids, 0, 1, 2, 3, 4, 5)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := &api.SearchGameSessionsInput{}
			if tc.filter != "" {
				in.FilterExpression = api.String(tc.filter)
			}
			if tc.sort != "" {
				in.SortExpression = api.String(tc.sort)
			}
			if tc.location != "" {
				in.Location = api.String(tc.location)
			}
			got, next := searchIDs(t, h, ids, in)
			if !slices.Equal(got, tc.want) || next != "" {
				t.Errorf("found %v (next %q), want %v", got, next, tc.want)
			}
		})
	}
}

func sortedByID(ids []string, idx ...int) []int {
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	return idx
}

// TestSearchPages walks the pages of a sorted search, with the index
// changing between pages.
func TestSearchPages(t *testing.T) {
	h, ids := searchFixture(t)
	in := &api.SearchGameSessionsInput{SortExpression: api.String("creationTimeMillis ASC"), Limit: api.Int32(2)}
	var all []int
	for range 10 {
		got, next := searchIDs(t, h, ids, in)
		all = append(all, got...)
		if next == "" {
			break
		}
		in.NextToken = api.String(next)
	}
	if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(all, want) {
		t.Fatalf("pages gave %v, want %v", all, want)
	}

	// A token belongs to its request: another filter, sort or fleet refuses it.
	in = &api.SearchGameSessionsInput{SortExpression: api.String("creationTimeMillis ASC"), Limit: api.Int32(2)}
	_, next := searchIDs(t, h, ids, in)
	for name, mod := range map[string]func(*api.SearchGameSessionsInput){
		"other sort":   func(in *api.SearchGameSessionsInput) { in.SortExpression = api.String("creationTimeMillis DESC") },
		"other filter": func(in *api.SearchGameSessionsInput) { in.FilterExpression = api.String("maximumSessions = 4") },
		"garbage":      func(in *api.SearchGameSessionsInput) { in.NextToken = api.String("not-a-token") },
		"json garbage": func(in *api.SearchGameSessionsInput) { in.NextToken = api.String("eyJ2IjoxfQ") },
	} {
		req := &api.SearchGameSessionsInput{FleetId: api.String("fleet-1"), SortExpression: in.SortExpression,
			Limit: in.Limit, NextToken: api.String(next)}
		mod(req)
		_, err := h.svc.SearchGameSessions(h.ctx, req)
		wantCode(t, err, "InvalidRequestException")
		if !strings.Contains(err.Error(), badTokenMessage) {
			t.Errorf("%s: %v, want %q", name, err, badTokenMessage)
		}
	}
	// Spacing does not matter: the same expression, written differently.
	req := &api.SearchGameSessionsInput{FleetId: api.String("fleet-1"), SortExpression: api.String("  creationTimeMillis   asc"),
		Limit: api.Int32(2), NextToken: api.String(next)}
	got, _ := searchIDs(t, h, ids, req)
	if !slices.Equal(got, []int{2, 3}) {
		t.Errorf("second page with a respaced sort = %v, want [2 3]", got)
	}
}

// TestSearchFollowsWrites checks that a search sees every write that
// committed before it: new ACTIVE sessions, changed properties and player
// counts, sessions that ended.
func TestSearchFollowsWrites(t *testing.T) {
	h, ids := searchFixture(t)
	filter := &api.SearchGameSessionsInput{FilterExpression: api.String("gameSessionProperties.map = 'nuke'"), SortExpression: api.String("gameSessionName ASC")}
	if got, _ := searchIDs(t, h, ids, filter); !slices.Equal(got, []int{1, 3, 5}) {
		t.Fatalf("before: %v", got)
	}
	// Session 0 changes map; session 3 ends; session 6 becomes ACTIVE.
	_, err := h.svc.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: api.String(ids[0]),
		GameProperties: []api.GameProperty{{Key: api.String("map"), Value: api.String("nuke")}}})
	h.must(err)
	_, err = h.svc.TerminateGameSession(h.ctx, &api.TerminateGameSessionInput{GameSessionId: api.String(ids[3]),
		TerminationMode: api.TerminationModeForceTerminate})
	h.must(err)
	h.must(h.sdk.ActivateGameSession(h.ctx, conn("fleet-1", "i-1", "proc-6"), ids[6]))
	want := []int{0, 1, 5}
	if got, _ := searchIDs(t, h, ids, filter); !slices.Equal(got, want) {
		t.Fatalf("after: %v, want %v", got, want)
	}
	// Player counts: session 0 fills up.
	_, err = h.svc.CreatePlayerSessions(h.ctx, &api.CreatePlayerSessionsInput{GameSessionId: api.String(ids[0]),
		PlayerIds: []string{"a", "b", "c", "d"}})
	h.must(err)
	avail := &api.SearchGameSessionsInput{FilterExpression: api.String("hasAvailablePlayerSessions = false")}
	if got, _ := searchIDs(t, h, ids, avail); !slices.Equal(got, sortedByID(ids, 0, 4)) {
		t.Fatalf("full sessions: %v, want %v", got, sortedByID(ids, 0, 4))
	}
}

func TestSearchErrors(t *testing.T) {
	h, _ := searchFixture(t)
	tests := map[string]struct {
		in        api.SearchGameSessionsInput
		code, msg string
	}{
		"no fleet":      {api.SearchGameSessionsInput{}, "InvalidRequestException", "exactly one of FleetId or AliasId"},
		"both":          {api.SearchGameSessionsInput{FleetId: api.String("fleet-1"), AliasId: api.String("alias-1")}, "InvalidRequestException", "exactly one"},
		"unknown fleet": {api.SearchGameSessionsInput{FleetId: api.String("fleet-9")}, "NotFoundException", "fleet-9"},
		"bad filter": {api.SearchGameSessionsInput{FleetId: api.String("fleet-1"), FilterExpression: api.String("maximumSessions >=")},
			"InvalidRequestException", "FilterExpression is invalid at position 19: expected a number after maximumSessions >=, found the end of the expression"},
		"bad sort": {api.SearchGameSessionsInput{FleetId: api.String("fleet-1"), SortExpression: api.String("creationTimeMillis")},
			"InvalidRequestException", "SortExpression is invalid at position 19: expected ASC or DESC"},
		"other location": {api.SearchGameSessionsInput{FleetId: api.String("fleet-1"), Location: api.String("eu-west-1")},
			"InvalidRequestException", "eu-west-1 is not a location of fleet fleet-1"},
		"alias without hook": {api.SearchGameSessionsInput{AliasId: api.String("alias-1")}, "InvalidRequestException", "AliasId"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := h.svc.SearchGameSessions(h.ctx, &tc.in)
			wantCode(t, err, tc.code)
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q lacks %q", err, tc.msg)
			}
		})
	}
}

// TestSearchByAlias resolves AliasId through Config.ResolveAlias.
func TestSearchByAlias(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.ResolveAlias = func(_ context.Context, _ store.Tx, alias string) (string, error) {
			if alias == "alias-1" {
				return "fleet-1", nil
			}
			return "", api.NewNotFoundException("alias %s does not exist", alias)
		}
	})
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7000)
	gs, err := h.create("fleet-1")
	h.must(err)
	h.must(h.sdk.ActivateGameSession(h.ctx, c, api.ToString(gs.GameSessionId)))
	out, err := h.svc.SearchGameSessions(h.ctx, &api.SearchGameSessionsInput{AliasId: api.String("alias-1")})
	h.must(err)
	if len(out.GameSessions) != 1 || api.ToString(out.GameSessions[0].GameSessionId) != api.ToString(gs.GameSessionId) {
		t.Fatalf("search by alias = %+v", out.GameSessions)
	}
	_, err = h.svc.SearchGameSessions(h.ctx, &api.SearchGameSessionsInput{AliasId: api.String("alias-2")})
	wantCode(t, err, "NotFoundException")
}

// TestSearchIndexUnderConcurrentWrites searches while other goroutines
// change game properties and end sessions, then checks that a search
// agrees with the store: every page of the final search is what filtering
// the store's ACTIVE records gives.
func TestSearchIndexUnderConcurrentWrites(t *testing.T) {
	const n = 400
	h := newHarness(t)
	h.addFleet("fleet-1")
	seedActive(t, h.st, "fleet-1", n)
	in := func() *api.SearchGameSessionsInput {
		return &api.SearchGameSessionsInput{FleetId: api.String("fleet-1"),
			FilterExpression: api.String("gameSessionProperties.mode = 'ctf'"), SortExpression: api.String("gameSessionProperties.skill ASC")}
	}
	if _, err := h.svc.SearchGameSessions(h.ctx, in()); err != nil {
		t.Fatal(err)
	}
	id := func(i int) string {
		return fmt.Sprintf("arn:aws:gamelift:us-west-2::gamesession/fleet-1/gsess-%08d", i)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				var err error
				if i%7 == 0 {
					_, err = h.svc.TerminateGameSession(h.ctx, &api.TerminateGameSessionInput{GameSessionId: api.String(id(i)),
						TerminationMode: api.TerminationModeForceTerminate})
				} else {
					_, err = h.svc.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: api.String(id(i)),
						GameProperties: []api.GameProperty{{Key: api.String("mode"), Value: api.String([]string{"ctf", "dm"}[i%2])}}})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 50 {
				if _, err := h.svc.SearchGameSessions(h.ctx, in()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// The truth, from the store.
	var want []string
	h.must(h.st.View(h.ctx, func(tx store.Tx) error {
		list, err := listActive(h.ctx, tx, "fleet-1")
		for _, gs := range list {
			for _, p := range gs.Session.GameProperties {
				if api.ToString(p.Key) == "mode" && api.ToString(p.Value) == "ctf" {
					want = append(want, api.ToString(gs.Session.GameSessionId))
				}
			}
		}
		return err
	}))
	var got []string
	req := in()
	for {
		out, err := h.svc.SearchGameSessions(h.ctx, req)
		h.must(err)
		for _, gs := range out.GameSessions {
			got = append(got, api.ToString(gs.GameSessionId))
		}
		if out.NextToken == nil {
			break
		}
		req.NextToken = out.NextToken
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || len(want) == 0 {
		t.Fatalf("search found %d sessions, the store has %d ACTIVE ctf sessions", len(got), len(want))
	}
}
