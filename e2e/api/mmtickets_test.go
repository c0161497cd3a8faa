package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/smithy-go"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/events"
)

// mmTeamsBody is a 5v5 rule set.
const mmTeamsBody = `{"name":"five","ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"number","default":10}],
 "teams":[{"name":"red","minPlayers":5,"maxPlayers":5},{"name":"blue","minPlayers":5,"maxPlayers":5}]}`

// mmSetup creates a rule set and a STANDALONE configuration of it.
func mmSetup(t *testing.T, ctx context.Context, v2 *glv2.Client, name, body string, mod func(*glv2.CreateMatchmakingConfigurationInput)) {
	t.Helper()
	if _, err := v2.CreateMatchmakingRuleSet(ctx, &glv2.CreateMatchmakingRuleSetInput{Name: awsv2.String(name + "-rules"), RuleSetBody: awsv2.String(body)}); err != nil {
		t.Fatal(err)
	}
	in := &glv2.CreateMatchmakingConfigurationInput{Name: awsv2.String(name), RuleSetName: awsv2.String(name + "-rules"),
		RequestTimeoutSeconds: awsv2.Int32(60), AcceptanceRequired: awsv2.Bool(false), FlexMatchMode: types.FlexMatchModeStandalone,
		CustomEventData: awsv2.String("ced-" + name)}
	if mod != nil {
		mod(in)
	}
	if _, err := v2.CreateMatchmakingConfiguration(ctx, in); err != nil {
		t.Fatal(err)
	}
}

func mmStart(t *testing.T, ctx context.Context, v2 *glv2.Client, config, id string, players ...string) {
	t.Helper()
	in := &glv2.StartMatchmakingInput{ConfigurationName: awsv2.String(config), TicketId: awsv2.String(id)}
	for _, p := range players {
		in.Players = append(in.Players, types.Player{PlayerId: awsv2.String(p),
			PlayerAttributes: map[string]types.AttributeValue{"skill": {N: awsv2.Float64(20)}}})
	}
	out, err := v2.StartMatchmaking(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.MatchmakingTicket.Status != types.MatchmakingConfigurationStatusQueued {
		t.Fatalf("started %+v", out.MatchmakingTicket)
	}
}

// mmWait polls DescribeMatchmaking until every ticket has the status.
func mmWait(t *testing.T, ctx context.Context, v2 *glv2.Client, st types.MatchmakingConfigurationStatus, ids ...string) []types.MatchmakingTicket {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := v2.DescribeMatchmaking(ctx, &glv2.DescribeMatchmakingInput{TicketIds: ids})
		if err != nil {
			t.Fatal(err)
		}
		done := len(out.TicketList) == len(ids)
		var have []string
		for _, tk := range out.TicketList {
			have = append(have, awsv2.ToString(tk.TicketId)+"="+string(tk.Status))
			if tk.Status != st {
				done = false
			}
		}
		if done {
			return out.TicketList
		}
		if time.Now().After(deadline) {
			t.Fatalf("tickets %v, want all %s", have, st)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for time to pass
	}
}

// mmEvents opens the live event stream of a configuration and returns a
// function that reads the next event's detail.
func mmEvents(t *testing.T, h *hoisttest.Hoist, config string) func() map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.URL+"/hoist/events?resource="+config, nil)
	signRequest(t, req, nil, hoisttest.AccessKeyID, hoisttest.SecretAccessKey)
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	return func() map[string]any {
		t.Helper()
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var env events.Envelope
			var d map[string]any
			if err := json.Unmarshal([]byte(data), &env); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(env.Detail, &d); err != nil {
				t.Fatal(err)
			}
			if env.DetailType != "GameLift Matchmaking Event" || len(env.Resources) != 1 || !strings.HasSuffix(env.Resources[0], ":matchmakingconfiguration/"+config) {
				t.Fatalf("envelope %s", data)
			}
			return d
		}
		t.Fatalf("event stream ended: %v", sc.Err())
		return nil
	}
}

// mmWantEvents reads events until it has seen each type of want in order
// (other types between them are skipped) and returns those.
func mmWantEvents(t *testing.T, next func() map[string]any, want ...string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, w := range want {
		for {
			d := next()
			if d["type"] == w {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

func TestMatchmakingStandalone1v1(t *testing.T) {
	h := startHoist(t)
	ctx := hoisttest.Context(t, 2*time.Minute)
	v2 := newV2(h)
	mmSetup(t, ctx, v2, "duel", mmDuelBody, nil)
	next := mmEvents(t, h, "duel")
	mmStart(t, ctx, v2, "duel", "t1", "alice")
	mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusSearching, "t1")
	mmStart(t, ctx, v2, "duel", "t2", "bob")
	ts := mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusCompleted, "t1", "t2")
	teams := []string{awsv2.ToString(ts[0].Players[0].Team), awsv2.ToString(ts[1].Players[0].Team)}
	slices.Sort(teams)
	if strings.Join(teams, ",") != "blue,red" || ts[0].EndTime == nil {
		t.Fatalf("tickets %+v", ts)
	}
	evs := mmWantEvents(t, next, "MatchmakingSearching", "PotentialMatchCreated", "MatchmakingSucceeded")
	pm := evs[1]
	if pm["matchId"] == "" || pm["acceptanceRequired"] != false || pm["customEventData"] != "ced-duel" || len(pm["tickets"].([]any)) != 2 {
		t.Fatalf("PotentialMatchCreated %v", pm)
	}
	if evs[2]["matchId"] != pm["matchId"] {
		t.Fatalf("MatchmakingSucceeded %v", evs[2])
	}
}

func TestMatchmakingStandalone5v5(t *testing.T) {
	h := startHoist(t)
	ctx := hoisttest.Context(t, 2*time.Minute)
	v2 := newV2(h)
	mmSetup(t, ctx, v2, "five", mmTeamsBody, nil)
	// A party of two, a party of three and five solo players.
	mmStart(t, ctx, v2, "five", "party2", "p0", "p1")
	mmStart(t, ctx, v2, "five", "party3", "p2", "p3", "p4")
	ids := []string{"party2", "party3"}
	for i := 5; i < 10; i++ {
		id := fmt.Sprint("solo", i)
		mmStart(t, ctx, v2, "five", id, fmt.Sprint("p", i))
		ids = append(ids, id)
	}
	var ts []types.MatchmakingTicket
	for i := 0; i < len(ids); i += 10 {
		ts = append(ts, mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusCompleted, ids[i:min(i+10, len(ids))]...)...)
	}
	count := map[string]int{}
	for _, tk := range ts {
		team := awsv2.ToString(tk.Players[0].Team)
		for _, p := range tk.Players {
			if awsv2.ToString(p.Team) != team {
				t.Fatalf("a party split: %+v", tk)
			}
			count[team]++
		}
	}
	if count["red"] != 5 || count["blue"] != 5 {
		t.Fatalf("teams %v", count)
	}
}

func TestMatchmakingAcceptance(t *testing.T) {
	h := startHoist(t)
	ctx := hoisttest.Context(t, 2*time.Minute)
	v2 := newV2(h)
	mmSetup(t, ctx, v2, "duel", mmDuelBody, func(in *glv2.CreateMatchmakingConfigurationInput) {
		in.AcceptanceRequired, in.AcceptanceTimeoutSeconds = awsv2.Bool(true), awsv2.Int32(60)
	})
	next := mmEvents(t, h, "duel")
	accept := func(id, player string, typ types.AcceptanceType) error {
		_, err := v2.AcceptMatch(ctx, &glv2.AcceptMatchInput{TicketId: awsv2.String(id), PlayerIds: []string{player}, AcceptanceType: typ})
		return err
	}
	wantInvalid := func(what string, err error, has string) {
		t.Helper()
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidRequestException" || !strings.Contains(ae.ErrorMessage(), has) {
			t.Fatalf("%s: %v, want InvalidRequestException saying %q", what, err, has)
		}
	}

	// All accept.
	mmStart(t, ctx, v2, "duel", "a1", "alice")
	wantInvalid("accept while not matched", accept("a1", "alice", types.AcceptanceTypeAccept), "REQUIRES_ACCEPTANCE")
	mmStart(t, ctx, v2, "duel", "b1", "bob")
	mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusRequiresAcceptance, "a1", "b1")
	pm := mmWantEvents(t, next, "PotentialMatchCreated")[0]
	if pm["acceptanceRequired"] != true || pm["acceptanceTimeout"] != float64(60) {
		t.Fatalf("PotentialMatchCreated %v", pm)
	}
	wantInvalid("another ticket's player", accept("a1", "bob", types.AcceptanceTypeAccept), "PlayerIds[0]")
	if err := accept("a1", "alice", types.AcceptanceTypeAccept); err != nil {
		t.Fatal(err)
	}
	if err := accept("b1", "bob", types.AcceptanceTypeAccept); err != nil {
		t.Fatal(err)
	}
	mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusCompleted, "a1", "b1")
	if d := mmWantEvents(t, next, "AcceptMatchCompleted")[0]; d["acceptance"] != "Accepted" {
		t.Fatalf("AcceptMatchCompleted %v", d)
	}

	// One rejects: the other goes back to searching.
	mmStart(t, ctx, v2, "duel", "a2", "alice")
	mmStart(t, ctx, v2, "duel", "b2", "bob")
	mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusRequiresAcceptance, "a2", "b2")
	if err := accept("a2", "alice", types.AcceptanceTypeAccept); err != nil {
		t.Fatal(err)
	}
	// AcceptMatch says who answered, and only them.
	if got := mmAnswers(mmWantEvents(t, next, "AcceptMatch")[0]); got != "alice=true bob=-" {
		t.Fatalf("AcceptMatch after alice accepted: %s", got)
	}
	if err := accept("b2", "bob", types.AcceptanceTypeReject); err != nil {
		t.Fatal(err)
	}
	if got := mmAnswers(mmWantEvents(t, next, "AcceptMatch")[0]); got != "alice=true bob=false" {
		t.Fatalf("AcceptMatch after bob rejected: %s", got)
	}
	// The ticket searching again says why.
	if tk := mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusSearching, "a2")[0]; awsv2.ToString(tk.StatusReason) != "ACCEPTANCE_REJECTED" ||
		awsv2.ToString(tk.StatusMessage) == "" {
		t.Fatalf("searching again: %q %q", awsv2.ToString(tk.StatusReason), awsv2.ToString(tk.StatusMessage))
	}
	mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusCancelled, "b2")
	if d := mmWantEvents(t, next, "AcceptMatchCompleted")[0]; d["acceptance"] != "Rejected" {
		t.Fatalf("AcceptMatchCompleted %v", d)
	}

	// Acceptance times out (1 s, for matches formed from now on): the
	// ticket that accepted searches again, the other is cancelled.
	if _, err := v2.UpdateMatchmakingConfiguration(ctx, &glv2.UpdateMatchmakingConfigurationInput{Name: awsv2.String("duel"),
		AcceptanceTimeoutSeconds: awsv2.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	mmStart(t, ctx, v2, "duel", "c2", "carol")
	mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusRequiresAcceptance, "a2", "c2")
	if err := accept("c2", "carol", types.AcceptanceTypeAccept); err != nil {
		t.Fatal(err)
	}
	mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusCancelled, "a2")
	mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusSearching, "c2")
	if d := mmWantEvents(t, next, "AcceptMatchCompleted")[0]; d["acceptance"] != "TimedOut" {
		t.Fatalf("AcceptMatchCompleted %v", d)
	}
}

// mmAnswers is "player=accepted ..." of an AcceptMatch event's tickets in
// player order ("-" when the event has no accepted for the player).
func mmAnswers(d map[string]any) string {
	var out []string
	for _, tk := range d["tickets"].([]any) {
		for _, p := range tk.(map[string]any)["players"].([]any) {
			pm := p.(map[string]any)
			a := "-"
			if v, ok := pm["accepted"]; ok {
				a = fmt.Sprint(v)
			}
			out = append(out, fmt.Sprint(pm["playerId"])+"="+a)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func TestMatchmakingTimeoutAndStop(t *testing.T) {
	h := startHoist(t)
	ctx := hoisttest.Context(t, 2*time.Minute)
	v2 := newV2(h)
	mmSetup(t, ctx, v2, "duel", mmDuelBody, func(in *glv2.CreateMatchmakingConfigurationInput) { in.RequestTimeoutSeconds = awsv2.Int32(1) })
	next := mmEvents(t, h, "duel")
	mmStart(t, ctx, v2, "duel", "lonely", "alice")
	tk := mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusTimedOut, "lonely")[0]
	if tk.EndTime == nil || tk.StatusReason == nil {
		t.Fatalf("timed out %+v", tk)
	}
	if d := mmWantEvents(t, next, "MatchmakingTimedOut")[0]; d["reason"] != "TimedOut" {
		t.Fatalf("MatchmakingTimedOut %v", d)
	}
	var ae smithy.APIError
	_, err := v2.StartMatchmaking(ctx, &glv2.StartMatchmakingInput{ConfigurationName: awsv2.String("duel"), TicketId: awsv2.String("lonely"),
		Players: []types.Player{{PlayerId: awsv2.String("alice")}}})
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidRequestException" {
		t.Fatalf("reused ticket ID: %v", err)
	}

	// Stop, with a generated ticket ID (on a longer timeout, which only
	// tickets started after the update get).
	if _, err := v2.UpdateMatchmakingConfiguration(ctx, &glv2.UpdateMatchmakingConfigurationInput{Name: awsv2.String("duel"),
		RequestTimeoutSeconds: awsv2.Int32(600)}); err != nil {
		t.Fatal(err)
	}
	out, err := v2.StartMatchmaking(ctx, &glv2.StartMatchmakingInput{ConfigurationName: awsv2.String("duel"),
		Players: []types.Player{{PlayerId: awsv2.String("bob")}}})
	if err != nil {
		t.Fatal(err)
	}
	id := awsv2.ToString(out.MatchmakingTicket.TicketId)
	if len(id) != 36 {
		t.Fatalf("generated ticket ID %q", id)
	}
	_, err = v2.DeleteMatchmakingConfiguration(ctx, &glv2.DeleteMatchmakingConfigurationInput{Name: awsv2.String("duel")})
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidRequestException" {
		t.Fatalf("delete with an active ticket: %v", err)
	}
	if _, err := v2.StopMatchmaking(ctx, &glv2.StopMatchmakingInput{TicketId: awsv2.String(id)}); err != nil {
		t.Fatal(err)
	}
	mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusCancelled, id)
	if d := mmWantEvents(t, next, "MatchmakingCancelled")[0]; d["reason"] != "Cancelled" {
		t.Fatalf("MatchmakingCancelled %v", d)
	}
	_, err = v2.StopMatchmaking(ctx, &glv2.StopMatchmakingInput{TicketId: awsv2.String(id)})
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidRequestException" {
		t.Fatalf("stop twice: %v", err)
	}
	// Refusals of StartMatchmaking and DescribeMatchmaking.
	_, err = v2.StartMatchmaking(ctx, &glv2.StartMatchmakingInput{ConfigurationName: awsv2.String("nope"),
		Players: []types.Player{{PlayerId: awsv2.String("bob")}}})
	if !errors.As(err, &ae) || ae.ErrorCode() != "NotFoundException" {
		t.Fatalf("unknown configuration: %v", err)
	}
	_, err = v2.StartMatchmaking(ctx, &glv2.StartMatchmakingInput{ConfigurationName: awsv2.String("duel"),
		Players: []types.Player{{PlayerId: awsv2.String("bob"), PlayerAttributes: map[string]types.AttributeValue{"skill": {S: awsv2.String("x")}}}}})
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidRequestException" || !strings.Contains(ae.ErrorMessage(), "Players[0].PlayerAttributes[skill]") {
		t.Fatalf("attribute of the wrong type: %v", err)
	}
	d, err := v2.DescribeMatchmaking(ctx, &glv2.DescribeMatchmakingInput{TicketIds: []string{"nope", id}})
	if err != nil || len(d.TicketList) != 1 {
		t.Fatalf("describe with an unknown ID: %+v %v", d, err)
	}
	if _, err := v2.DeleteMatchmakingConfiguration(ctx, &glv2.DeleteMatchmakingConfigurationInput{Name: awsv2.String("duel")}); err != nil {
		t.Fatal(err)
	}
}

// TestMatchmakingBackfillStandalone: a STANDALONE backfill ticket (a
// player already on red) is matched with a new ticket, which takes blue;
// a backfill request without teams is refused.
func TestMatchmakingBackfillStandalone(t *testing.T) {
	h := startHoist(t)
	ctx := hoisttest.Context(t, 2*time.Minute)
	v2 := newV2(h)
	mmSetup(t, ctx, v2, "duel", mmDuelBody, nil)
	out, err := v2.StartMatchBackfill(ctx, &glv2.StartMatchBackfillInput{ConfigurationName: awsv2.String("duel"), TicketId: awsv2.String("bf"),
		Players: []types.Player{{PlayerId: awsv2.String("alice"), Team: awsv2.String("red"),
			PlayerAttributes: map[string]types.AttributeValue{"skill": {N: awsv2.Float64(20)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.MatchmakingTicket.Status != types.MatchmakingConfigurationStatusQueued {
		t.Fatalf("backfill ticket %+v", out.MatchmakingTicket)
	}
	mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusSearching, "bf")
	mmStart(t, ctx, v2, "duel", "newcomer", "bob")
	ts := mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusCompleted, "bf", "newcomer")
	if awsv2.ToString(ts[0].Players[0].Team) != "red" || awsv2.ToString(ts[1].Players[0].Team) != "blue" {
		t.Fatalf("teams %+v %+v", ts[0].Players, ts[1].Players)
	}
	_, err = v2.StartMatchBackfill(ctx, &glv2.StartMatchBackfillInput{ConfigurationName: awsv2.String("duel"),
		Players: []types.Player{{PlayerId: awsv2.String("alice")}}})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidRequestException" || !strings.Contains(ae.ErrorMessage(), "Players[0].Team") {
		t.Fatalf("backfill without a team: %v", err)
	}
}
