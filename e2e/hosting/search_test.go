//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

//go:build linux

package hosting

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"
)

// testSearchGameSessions runs SearchGameSessions through aws-sdk-go-v2 over
// real game sessions: filters on game properties and player counts, a sort,
// pagination with the SDK's paginator, and the messages of bad requests.
func testSearchGameSessions(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "search")
	fleetID := e.newFleet(t, fleetSpec{name: "search", build: buildID, concurrent: 4})
	// Four ACTIVE game sessions: maps dust, nuke, dust, nuke; session i has
	// i reserved players of 3; one more stays out of the search by ending.
	var ids []string
	for i := range 4 {
		out, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetID),
			MaximumPlayerSessionCount: aws.Int32(3), Name: aws.String(fmt.Sprintf("search %d", i)),
			GameProperties: []types.GameProperty{{Key: aws.String("map"), Value: aws.String([]string{"dust", "nuke"}[i%2])},
				{Key: aws.String("skill"), Value: aws.String(fmt.Sprint(i))}}})
		if err != nil {
			t.Fatalf("CreateGameSession: %v", err)
		}
		id := aws.ToString(out.GameSession.GameSessionId)
		e.waitGameSession(t, id, types.GameSessionStatusActive)
		ids = append(ids, id)
		var players []string
		for p := range i {
			players = append(players, fmt.Sprintf("p%d-%d", i, p))
		}
		if len(players) > 0 {
			if _, err := e.gl.CreatePlayerSessions(e.ctx, &gl.CreatePlayerSessionsInput{GameSessionId: aws.String(id), PlayerIds: players}); err != nil {
				t.Fatalf("CreatePlayerSessions: %v", err)
			}
		}
	}
	// The last one ends: search no longer finds it.
	if _, err := e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(ids[3]),
		TerminationMode: types.TerminationModeForceTerminate}); err != nil {
		t.Fatalf("TerminateGameSession: %v", err)
	}
	index := func(sessions []types.GameSession) []int {
		var out []int
		for _, gs := range sessions {
			out = append(out, slices.Index(ids, aws.ToString(gs.GameSessionId)))
		}
		return out
	}
	search := func(filter, sort string) []int {
		t.Helper()
		in := &gl.SearchGameSessionsInput{FleetId: aws.String(fleetID)}
		if filter != "" {
			in.FilterExpression = aws.String(filter)
		}
		if sort != "" {
			in.SortExpression = aws.String(sort)
		}
		out, err := e.gl.SearchGameSessions(e.ctx, in)
		if err != nil {
			t.Fatalf("SearchGameSessions %q %q: %v", filter, sort, err)
		}
		if out.NextToken != nil {
			t.Errorf("SearchGameSessions %q %q: NextToken on a short result", filter, sort)
		}
		return index(out.GameSessions)
	}
	for _, tc := range []struct {
		filter, sort string
		want         []int
	}{
		{`gameSessionProperties.map = 'dust'`, "gameSessionProperties.skill DESC", []int{2, 0}},
		{`hasAvailablePlayerSessions=true AND NOT gameSessionProperties.map = "nuke"`, "playerSessionCount ASC", []int{0, 2}},
		{`playerSessionCount >= 1 OR gameSessionName = 'search 0' AND maximumSessions = 3`, "creationTimeMillis DESC", []int{2, 1, 0}},
		{`gameSessionName = 'search 3'`, "", nil},
		{"", "gameSessionName ASC", []int{0, 1, 2}},
	} {
		if got := search(tc.filter, tc.sort); !slices.Equal(got, tc.want) {
			t.Errorf("search %q sorted %q = %v, want %v", tc.filter, tc.sort, got, tc.want)
		}
	}

	// The same over AWS JSON 1.1, with aws-sdk-go v1 (as the AWS CLI and
	// boto3 speak it).
	v1out, err := e.h.V1().SearchGameSessionsWithContext(e.ctx, &glv1.SearchGameSessionsInput{FleetId: awsv1.String(fleetID),
		FilterExpression: awsv1.String(`gameSessionProperties.map = 'nuke'`), SortExpression: awsv1.String("gameSessionName DESC")})
	if err != nil {
		t.Fatalf("SearchGameSessions (v1): %v", err)
	}
	if len(v1out.GameSessions) != 1 || awsv1.StringValue(v1out.GameSessions[0].GameSessionId) != ids[1] {
		t.Errorf("SearchGameSessions (v1) = %v, want only %s", v1out.GameSessions, ids[1])
	}

	// Pages of one with the SDK's paginator.
	pages := gl.NewSearchGameSessionsPaginator(e.gl, &gl.SearchGameSessionsInput{FleetId: aws.String(fleetID),
		SortExpression: aws.String("playerSessionCount DESC"), Limit: aws.Int32(1)})
	var all []int
	for n := 0; pages.HasMorePages(); n++ {
		out, err := pages.NextPage(e.ctx)
		if err != nil {
			t.Fatalf("page %d: %v", n, err)
		}
		if len(out.GameSessions) > 1 {
			t.Fatalf("page %d holds %d sessions with Limit 1", n, len(out.GameSessions))
		}
		all = append(all, index(out.GameSessions)...)
	}
	if want := []int{2, 1, 0}; !slices.Equal(all, want) {
		t.Errorf("paginated search = %v, want %v", all, want)
	}

	// Bad requests: what is wrong, and where.
	for _, tc := range []struct {
		in   gl.SearchGameSessionsInput
		want string
	}{
		{gl.SearchGameSessionsInput{FleetId: aws.String(fleetID), FilterExpression: aws.String("hasAvailablePlayerSessions > true")},
			`FilterExpression is invalid at position 28: hasAvailablePlayerSessions cannot be compared with ">": boolean values allow only = and <>`},
		{gl.SearchGameSessionsInput{FleetId: aws.String(fleetID), FilterExpression: aws.String("(maximumSessions = 3")},
			`FilterExpression is invalid at position 21: expected AND, OR or ")" to close the "(" at position 1, found the end of the expression`},
		{gl.SearchGameSessionsInput{FleetId: aws.String(fleetID), SortExpression: aws.String("players DESC")},
			`SortExpression is invalid at position 1: unknown operand "players"`},
		{gl.SearchGameSessionsInput{FleetId: aws.String(fleetID), NextToken: aws.String("bogus")},
			"NextToken is not a token this operation returned"},
		{gl.SearchGameSessionsInput{FleetId: aws.String(fleetID), AliasId: aws.String("alias-x")},
			"give exactly one of FleetId or AliasId"},
		{gl.SearchGameSessionsInput{FleetId: aws.String(fleetID), Location: aws.String("eu-central-1")},
			"is not a location of fleet"},
	} {
		_, err := e.gl.SearchGameSessions(e.ctx, &tc.in)
		ire := wantErr[*types.InvalidRequestException](t, "SearchGameSessions with a bad request", err)
		if ire != nil && !strings.Contains(ire.ErrorMessage(), tc.want) {
			t.Errorf("message %q lacks %q", ire.ErrorMessage(), tc.want)
		}
	}
	_, err = e.gl.SearchGameSessions(e.ctx, &gl.SearchGameSessionsInput{FleetId: aws.String("fleet-00000000-0000-4000-8000-000000000000")})
	wantErr[*types.NotFoundException](t, "SearchGameSessions on a fleet that does not exist", err)
}
