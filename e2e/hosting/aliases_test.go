//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

//go:build linux

package hosting

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"
)

// testAliases routes game sessions through an alias onto a fleet running
// the real game server (by alias ID over CBOR, by alias ARN over JSON),
// finds them by the alias, then makes the alias TERMINAL: creating a game
// session through it answers TerminalRoutingStrategyException with the
// alias's message and places nothing.
func testAliases(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "aliases")
	fleetID := e.newFleet(t, fleetSpec{name: "aliases", build: buildID, concurrent: 3})
	out, err := e.gl.CreateAlias(e.ctx, &gl.CreateAliasInput{Name: aws.String("aliases-live"),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeSimple, FleetId: aws.String(fleetID)}})
	if err != nil {
		t.Fatalf("CreateAlias: %v", err)
	}
	aliasID, aliasARN := aws.ToString(out.Alias.AliasId), aws.ToString(out.Alias.AliasArn)

	// By alias ID, aws-sdk-go-v2.
	cout, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{AliasId: aws.String(aliasID),
		MaximumPlayerSessionCount: aws.Int32(4), Name: aws.String("via-alias")})
	if err != nil {
		t.Fatalf("CreateGameSession by AliasId: %v", err)
	}
	if got := aws.ToString(cout.GameSession.FleetId); got != fleetID {
		t.Errorf("game session created through the alias is on fleet %s, want %s", got, fleetID)
	}
	gs1 := e.waitGameSession(t, aws.ToString(cout.GameSession.GameSessionId), types.GameSessionStatusActive)
	if aws.ToInt32(gs1.Port) == 0 || aws.ToString(gs1.IpAddress) == "" {
		t.Errorf("ACTIVE game session without an address: %+v", gs1)
	}

	// By alias ARN, aws-sdk-go v1 (JSON 1.1).
	v1 := e.h.V1()
	lout, err := v1.CreateGameSessionWithContext(e.ctx, &glv1.CreateGameSessionInput{AliasId: awsv1.String(aliasARN),
		MaximumPlayerSessionCount: awsv1.Int64(4)})
	if err != nil {
		t.Fatalf("CreateGameSession (v1) by alias ARN: %v", err)
	}
	if got := awsv1.StringValue(lout.GameSession.FleetId); got != fleetID {
		t.Errorf("game session created through the alias ARN is on fleet %s, want %s", got, fleetID)
	}
	e.waitGameSession(t, awsv1.StringValue(lout.GameSession.GameSessionId), types.GameSessionStatusActive)

	// Both are found through the alias.
	dout, err := e.gl.DescribeGameSessions(e.ctx, &gl.DescribeGameSessionsInput{AliasId: aws.String(aliasID)})
	if err != nil || len(dout.GameSessions) != 2 {
		t.Fatalf("DescribeGameSessions by AliasId: %v, %d sessions, want 2", err, len(dout.GameSessions))
	}
	details, err := v1.DescribeGameSessionDetailsWithContext(e.ctx, &glv1.DescribeGameSessionDetailsInput{AliasId: awsv1.String(aliasARN),
		StatusFilter: awsv1.String("ACTIVE")})
	if err != nil || len(details.GameSessionDetails) != 2 {
		t.Fatalf("DescribeGameSessionDetails (v1) by alias ARN: %v %+v", err, details)
	}
	sout, err := e.gl.SearchGameSessions(e.ctx, &gl.SearchGameSessionsInput{AliasId: aws.String(aliasARN),
		FilterExpression: aws.String("gameSessionName = 'via-alias'")})
	if err != nil || len(sout.GameSessions) != 1 || aws.ToString(sout.GameSessions[0].GameSessionId) != aws.ToString(gs1.GameSessionId) {
		t.Fatalf("SearchGameSessions by alias ARN: %v %+v, want %s", err, sout, aws.ToString(gs1.GameSessionId))
	}

	// TERMINAL: the message reaches the client and no game session is made.
	const msg = "Servers for this version are closed; please update"
	if _, err := e.gl.UpdateAlias(e.ctx, &gl.UpdateAliasInput{AliasId: aws.String(aliasID),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeTerminal, Message: aws.String(msg)}}); err != nil {
		t.Fatalf("UpdateAlias to TERMINAL: %v", err)
	}
	_, err = e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{AliasId: aws.String(aliasID), MaximumPlayerSessionCount: aws.Int32(4)})
	if te := wantErr[*types.TerminalRoutingStrategyException](t, "CreateGameSession through a TERMINAL alias", err); te.ErrorMessage() != msg {
		t.Errorf("TerminalRoutingStrategyException message %q, want %q", te.ErrorMessage(), msg)
	}
	_, err = e.gl.SearchGameSessions(e.ctx, &gl.SearchGameSessionsInput{AliasId: aws.String(aliasID)})
	if te := wantErr[*types.TerminalRoutingStrategyException](t, "SearchGameSessions through a TERMINAL alias", err); te.ErrorMessage() != msg {
		t.Errorf("TerminalRoutingStrategyException message %q, want %q", te.ErrorMessage(), msg)
	}
	fout, err := e.gl.DescribeGameSessions(e.ctx, &gl.DescribeGameSessionsInput{FleetId: aws.String(fleetID)})
	if err != nil || len(fout.GameSessions) != 2 {
		t.Errorf("the fleet's game sessions after the terminal attempt: %v, %d, want 2", err, len(fout.GameSessions))
	}
	e.waitIdleProcesses(t, fleetID, 1)
}
