package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

// soloAfterTen is a rule set whose one team needs two players, one once
// a candidate match is 10 s old (an expansion of minPlayers).
const soloAfterTen = `{"name":"solo-after-ten","ruleLanguageVersion":"1.0",
 "teams":[{"name":"duo","minPlayers":2,"maxPlayers":2}],
 "expansions":[{"target":"teams[duo].minPlayers","steps":[{"waitTimeSeconds":10,"value":1}]}]}`

// TestExpansionOnAdvance: a lone player's ticket cannot match before the
// expansion at 10 s; it is still searching at 9 s of manual time, and
// COMPLETED within a second of wall time of the advance to 10 s; from
// StartMatchmaking to COMPLETED seen, less than a second passes.
func TestExpansionOnAdvance(t *testing.T) {
	h, c := startManual(t)
	ctx := t.Context()
	soloConfiguration(t, c)
	began := time.Now()
	if _, err := c.StartMatchmaking(ctx, &gl.StartMatchmakingInput{ConfigurationName: aws.String("solo"),
		TicketId: aws.String("lone"), Players: []types.Player{{PlayerId: aws.String("p1")}}}); err != nil {
		t.Fatalf("StartMatchmaking: %v", err)
	}
	status := func(ctx context.Context) (types.MatchmakingConfigurationStatus, error) {
		out, err := c.DescribeMatchmaking(ctx, &gl.DescribeMatchmakingInput{TicketIds: []string{"lone"}})
		if err != nil || len(out.TicketList) != 1 {
			return "", err
		}
		return out.TicketList[0].Status, nil
	}
	// The matchmaker takes the ticket up (SEARCHING) with no time passing.
	within(t, advance(t, h, "9s"), "the ticket SEARCHING at 9 s", func(ctx context.Context) (bool, error) {
		st, err := status(ctx)
		return err == nil && st == types.MatchmakingConfigurationStatusSearching, err
	})
	start := advance(t, h, "1s")
	within(t, start, "the ticket COMPLETED", func(ctx context.Context) (bool, error) {
		st, err := status(ctx)
		return err == nil && st == types.MatchmakingConfigurationStatusCompleted, err
	})
	passedWithin(t, began, "the 10 s expansion")
}

// TestTicketRetentionOnAdvance: an ended ticket stays an hour of Hoist's
// time (DescribeMatchmaking shows it at 59 min), and is gone within a
// second of wall time of the advance past its retention.
func TestTicketRetentionOnAdvance(t *testing.T) {
	h, c := startManual(t)
	ctx := t.Context()
	soloConfiguration(t, c)
	if _, err := c.StartMatchmaking(ctx, &gl.StartMatchmakingInput{ConfigurationName: aws.String("solo"),
		TicketId: aws.String("kept"), Players: []types.Player{{PlayerId: aws.String("p1")}}}); err != nil {
		t.Fatalf("StartMatchmaking: %v", err)
	}
	if _, err := c.StopMatchmaking(ctx, &gl.StopMatchmakingInput{TicketId: aws.String("kept")}); err != nil {
		t.Fatalf("StopMatchmaking: %v", err)
	}
	tickets := func(ctx context.Context) (int, error) {
		out, err := c.DescribeMatchmaking(ctx, &gl.DescribeMatchmakingInput{TicketIds: []string{"kept"}})
		if err != nil {
			return -1, err
		}
		return len(out.TicketList), nil
	}
	advance(t, h, "59m")
	if n, err := tickets(ctx); n != 1 || err != nil {
		t.Fatalf("59 min after it ended, DescribeMatchmaking shows %d tickets (%v), want the ticket", n, err)
	}
	within(t, advance(t, h, "2m"), "the ticket removed", func(ctx context.Context) (bool, error) {
		n, err := tickets(ctx)
		return n == 0, err
	})
}

// soloConfiguration creates the rule set soloAfterTen and the standalone
// configuration "solo" on it (no acceptance, 60 s request timeout).
func soloConfiguration(t *testing.T, c *gl.Client) {
	t.Helper()
	ctx := t.Context()
	if _, err := c.CreateMatchmakingRuleSet(ctx, &gl.CreateMatchmakingRuleSetInput{Name: aws.String("solo-rules"),
		RuleSetBody: aws.String(soloAfterTen)}); err != nil {
		t.Fatalf("CreateMatchmakingRuleSet: %v", err)
	}
	if _, err := c.CreateMatchmakingConfiguration(ctx, &gl.CreateMatchmakingConfigurationInput{Name: aws.String("solo"),
		RuleSetName: aws.String("solo-rules"), RequestTimeoutSeconds: aws.Int32(60), AcceptanceRequired: aws.Bool(false),
		FlexMatchMode: types.FlexMatchModeStandalone}); err != nil {
		t.Fatalf("CreateMatchmakingConfiguration: %v", err)
	}
}
