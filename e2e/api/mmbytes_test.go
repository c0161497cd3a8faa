package api_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// mmElevenBody is a rule set whose one team needs 11 players: parties of
// 10 never match.
const mmElevenBody = `{"name":"eleven","ruleLanguageVersion":"1.0",
 "teams":[{"name":"red","minPlayers":11,"maxPlayers":11}]}`

// TestMatchmakingTicketBytesBound: through aws-sdk-go-v2, a
// configuration takes tickets of 10 players with four lists of 100
// strings of 100 characters each (about 420 KB a ticket) until its active
// tickets hold 64 MiB; the next StartMatchmaking is
// InvalidRequestException naming the bound, and once a ticket is stopped
// another is taken.
func TestMatchmakingTicketBytesBound(t *testing.T) {
	h := startHoist(t)
	ctx := hoisttest.Context(t, 3*time.Minute)
	v2 := newV2(h)
	mmSetup(t, ctx, v2, "eleven", mmElevenBody, func(in *glv2.CreateMatchmakingConfigurationInput) { in.RequestTimeoutSeconds = awsv2.Int32(600) })
	players := make([]types.Player, 10)
	for p := range players {
		attrs := map[string]types.AttributeValue{}
		for a := range 4 {
			list := make([]string, 100)
			for k := range list {
				list[k] = fmt.Sprintf("%d-%d-%d-%s", p, a, k, strings.Repeat("r", 100))[:100]
			}
			attrs[fmt.Sprint("list-", a)] = types.AttributeValue{SL: list}
		}
		players[p] = types.Player{PlayerId: awsv2.String(fmt.Sprint("player-", p)), PlayerAttributes: attrs}
	}
	start := func(id string) error {
		_, err := v2.StartMatchmaking(ctx, &glv2.StartMatchmakingInput{ConfigurationName: awsv2.String("eleven"),
			TicketId: awsv2.String(id), Players: players})
		return err
	}
	taken := 0
	var err error
	for ; taken < 300; taken++ {
		if err = start(fmt.Sprint("t", taken)); err != nil {
			break
		}
	}
	var ir *types.InvalidRequestException
	if !errors.As(err, &ir) || !strings.Contains(ir.ErrorMessage(), "at most 67108864 bytes (64 MiB)") {
		t.Fatalf("after %d tickets: %v, want InvalidRequestException naming the bound", taken, err)
	}
	if taken < 140 || taken > 180 {
		t.Fatalf("%d tickets of about 420 KB taken, want about 160", taken)
	}
	if _, err := v2.StopMatchmaking(ctx, &glv2.StopMatchmakingInput{TicketId: awsv2.String("t0")}); err != nil {
		t.Fatal(err)
	}
	if err := start("after-stop"); err != nil {
		t.Fatalf("a ticket after one stopped: %v", err)
	}
	mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusSearching, "t1", "after-stop")
}
