//go:build linux

package hosting

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

// consoleRules makes two tickets of players whose skills differ by more
// than 5 search on: the rule close-skill holds them back, and the
// console's dry matcher pass says so.
const consoleRules = `{"name":"console-duel","ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"number","default":10}],
 "teams":[{"name":"red","minPlayers":1,"maxPlayers":1},{"name":"blue","minPlayers":1,"maxPlayers":1}],
 "rules":[{"name":"close-skill","type":"distance","measurements":"flatten(teams[*].players.attributes[skill])","maxDistance":5}]}`

// consoleWorld is what the console's browser test shows: a fleet of real
// game servers with a game session and a player session, a queue with a
// fulfilled placement, a matchmaking configuration with two searching
// tickets, and a FleetIQ group with a game server.
type consoleWorld struct {
	fleet, gameSession, queue, config, group, instance string
	tickets                                            []string
}

// newConsoleWorld creates the console test's resources through the API.
func newConsoleWorld(t *testing.T, e *env) *consoleWorld {
	t.Helper()
	w := &consoleWorld{queue: "console-queue", config: "console-duel", group: "console-group",
		instance: "i-0123456789abcdef0", tickets: []string{"ticket-low", "ticket-high"}}
	build := e.uploadGameServer(t, "console")
	w.fleet = e.newFleet(t, fleetSpec{name: "console", build: build, params: "-accept-players", concurrent: 3})
	gs := e.createGameSession(t, w.fleet, 4)
	w.gameSession = aws.ToString(gs.GameSessionId)
	if _, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: gs.GameSessionId,
		PlayerId: aws.String("player-1")}); err != nil {
		t.Fatalf("CreatePlayerSession: %v", err)
	}
	e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String(w.queue), TimeoutInSeconds: aws.Int32(60),
		Destinations: dests(fleetARNOf(t, e, w.fleet))})
	e.place(t, w.queue, "console-placement-1", nil)
	e.waitPlacement(t, "console-placement-1", types.GameSessionPlacementStateFulfilled)

	if _, err := e.gl.CreateMatchmakingRuleSet(e.ctx, &gl.CreateMatchmakingRuleSetInput{Name: aws.String("console-duel"),
		RuleSetBody: aws.String(consoleRules)}); err != nil {
		t.Fatalf("CreateMatchmakingRuleSet: %v", err)
	}
	if _, err := e.gl.CreateMatchmakingConfiguration(e.ctx, &gl.CreateMatchmakingConfigurationInput{Name: aws.String(w.config),
		RuleSetName: aws.String("console-duel"), RequestTimeoutSeconds: aws.Int32(600), AcceptanceRequired: aws.Bool(false),
		FlexMatchMode: types.FlexMatchModeStandalone}); err != nil {
		t.Fatalf("CreateMatchmakingConfiguration: %v", err)
	}
	for i, skill := range []float64{10, 50} {
		_, err := e.gl.StartMatchmaking(e.ctx, &gl.StartMatchmakingInput{ConfigurationName: aws.String(w.config),
			TicketId: aws.String(w.tickets[i]), Players: []types.Player{{PlayerId: aws.String(w.tickets[i] + "-player"),
				PlayerAttributes: map[string]types.AttributeValue{"skill": {N: aws.Float64(skill)}}}}})
		if err != nil {
			t.Fatalf("StartMatchmaking: %v", err)
		}
	}
	for _, id := range w.tickets {
		e.waitTicket(t, id, types.MatchmakingConfigurationStatusSearching)
	}

	if _, err := e.gl.CreateGameServerGroup(e.ctx, &gl.CreateGameServerGroupInput{GameServerGroupName: aws.String(w.group),
		RoleArn: aws.String("arn:aws:iam::123456789012:role/gamelift"), MinSize: aws.Int32(1), MaxSize: aws.Int32(2),
		LaunchTemplate: &types.LaunchTemplateSpecification{LaunchTemplateId: aws.String("lt-0123456789abcdef0")},
		InstanceDefinitions: []types.InstanceDefinition{{InstanceType: types.GameServerGroupInstanceTypeC5Large},
			{InstanceType: types.GameServerGroupInstanceTypeC5Xlarge}}}); err != nil {
		t.Fatalf("CreateGameServerGroup: %v", err)
	}
	if _, err := e.gl.RegisterGameServer(e.ctx, &gl.RegisterGameServerInput{GameServerGroupName: aws.String(w.group),
		GameServerId: aws.String("console-game-server"), InstanceId: aws.String(w.instance),
		ConnectionInfo: aws.String("192.0.2.0:7777")}); err != nil {
		t.Fatalf("RegisterGameServer: %v", err)
	}
	return w
}
