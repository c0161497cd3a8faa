//go:build linux

package hosting

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

// mmBody is a 1v1 to 2v2 rule set: two tickets make a match with two open
// slots, which backfill fills.
const mmBody = `{"name":"duo","ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"number","default":10}],
 "teams":[{"name":"red","minPlayers":1,"maxPlayers":2},{"name":"blue","minPlayers":1,"maxPlayers":2}]}`

// matchData is a game session's MatchmakerData.
type matchData struct {
	MatchID          string `json:"matchId"`
	ConfigurationArn string `json:"matchmakingConfigurationArn"`
	Teams            []struct {
		Name    string `json:"name"`
		Players []struct {
			PlayerID   string `json:"playerId"`
			Attributes map[string]struct {
				Type  string `json:"attributeType"`
				Value any    `json:"valueAttribute"`
			} `json:"attributes"`
		} `json:"players"`
	} `json:"teams"`
	AutoBackfillTicketID string `json:"autoBackfillTicketId"`
	AutoBackfillMode     string `json:"autoBackfillMode"`
}

func parseMatchData(t *testing.T, s string) matchData {
	t.Helper()
	var d matchData
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		t.Fatalf("MatchmakerData %q: %v", s, err)
	}
	return d
}

// teamsOf lists "team:player" of match data, sorted.
func (d matchData) teamsOf() []string {
	var out []string
	for _, tm := range d.Teams {
		for _, p := range tm.Players {
			out = append(out, tm.Name+":"+p.PlayerID)
		}
	}
	slices.Sort(out)
	return out
}

// gameMatchData is what the game server's MATCHDATA command answers.
type gameMatchData struct {
	MatchmakerData string
	Updates        []struct{ UpdateReason, BackfillTicketId, MatchmakerData string }
}

func (p *player) matchData(t *testing.T) gameMatchData {
	t.Helper()
	var g gameMatchData
	a := p.must("MATCHDATA")
	if err := json.Unmarshal([]byte(strings.TrimPrefix(a, "OK ")), &g); err != nil {
		t.Fatalf("MATCHDATA %q: %v", a, err)
	}
	return g
}

// mmSetup creates the rule set, a queue over fleetARN and a WITH_QUEUE
// configuration with that backfill mode; it returns the configuration ARN.
func (e *env) mmConfig(t *testing.T, name, queue string, mode types.BackfillMode) string {
	t.Helper()
	out, err := e.gl.CreateMatchmakingConfiguration(e.ctx, &gl.CreateMatchmakingConfigurationInput{Name: aws.String(name),
		RuleSetName: aws.String("duo"), RequestTimeoutSeconds: aws.Int32(120), AcceptanceRequired: aws.Bool(false),
		FlexMatchMode: types.FlexMatchModeWithQueue, GameSessionQueueArns: []string{queue}, BackfillMode: mode,
		GameProperties: []types.GameProperty{{Key: aws.String("mode"), Value: aws.String("duo")}}})
	if err != nil {
		t.Fatalf("CreateMatchmakingConfiguration %s: %v", name, err)
	}
	return aws.ToString(out.Configuration.ConfigurationArn)
}

func (e *env) startTicket(t *testing.T, config, id string, players ...string) {
	t.Helper()
	in := &gl.StartMatchmakingInput{ConfigurationName: aws.String(config), TicketId: aws.String(id)}
	for _, p := range players {
		in.Players = append(in.Players, types.Player{PlayerId: aws.String(p),
			PlayerAttributes: map[string]types.AttributeValue{"skill": {N: aws.Float64(10)}}})
	}
	if _, err := e.gl.StartMatchmaking(e.ctx, in); err != nil {
		t.Fatalf("StartMatchmaking %s: %v", id, err)
	}
}

func (e *env) ticket(t *testing.T, id string) types.MatchmakingTicket {
	t.Helper()
	out, err := e.gl.DescribeMatchmaking(e.ctx, &gl.DescribeMatchmakingInput{TicketIds: []string{id}})
	if err != nil || len(out.TicketList) != 1 {
		t.Fatalf("DescribeMatchmaking %s: %+v, %v", id, out, err)
	}
	return out.TicketList[0]
}

// waitTicket waits for a ticket's status, failing at once when it reaches
// another terminal one.
func (e *env) waitTicket(t *testing.T, id string, want types.MatchmakingConfigurationStatus) types.MatchmakingTicket {
	t.Helper()
	var tk types.MatchmakingTicket
	eventually(t, waitLong, "ticket "+id+" "+string(want), func() (bool, string) {
		tk = e.ticket(t, id)
		switch tk.Status {
		case want:
			return true, ""
		case types.MatchmakingConfigurationStatusCompleted, types.MatchmakingConfigurationStatusFailed,
			types.MatchmakingConfigurationStatusCancelled, types.MatchmakingConfigurationStatusTimedOut:
			t.Fatalf("ticket %s is %s (%s: %s), want %s", id, tk.Status, aws.ToString(tk.StatusReason), aws.ToString(tk.StatusMessage), want)
		}
		return false, string(tk.Status)
	})
	return tk
}

// checkConnection checks a COMPLETED ticket's connection information: the
// game session's address and a player session for each of players.
func checkConnection(t *testing.T, tk types.MatchmakingTicket, gs types.GameSession, players ...string) map[string]string {
	t.Helper()
	ci := tk.GameSessionConnectionInfo
	if ci == nil || aws.ToString(ci.GameSessionArn) != aws.ToString(gs.GameSessionId) || aws.ToString(ci.IpAddress) != aws.ToString(gs.IpAddress) ||
		aws.ToString(ci.DnsName) != aws.ToString(gs.DnsName) || aws.ToInt32(ci.Port) != aws.ToInt32(gs.Port) || aws.ToInt32(ci.Port) == 0 {
		t.Fatalf("ticket %s connection info %+v, game session %+v", aws.ToString(tk.TicketId), ci, gs)
	}
	got := map[string]string{}
	for _, m := range ci.MatchedPlayerSessions {
		got[aws.ToString(m.PlayerId)] = aws.ToString(m.PlayerSessionId)
	}
	for _, p := range players {
		if !strings.HasPrefix(got[p], "psess-") {
			t.Fatalf("ticket %s: no player session for %s: %+v", aws.ToString(tk.TicketId), p, ci.MatchedPlayerSessions)
		}
	}
	if len(got) != len(players) {
		t.Fatalf("ticket %s: player sessions %v, want %v", aws.ToString(tk.TicketId), got, players)
	}
	return got
}

// mmFleet uploads the game server, creates a fleet of n processes, the
// rule set and a queue over the fleet; it returns the queue's ARN.
func mmFleet(t *testing.T, e *env, n int32) string {
	t.Helper()
	buildID := e.uploadGameServer(t, "matchmaking")
	fleet := e.newFleet(t, fleetSpec{name: "mm", build: buildID, params: "-accept-players", concurrent: n})
	if _, err := e.gl.CreateMatchmakingRuleSet(e.ctx, &gl.CreateMatchmakingRuleSetInput{Name: aws.String("duo"),
		RuleSetBody: aws.String(mmBody)}); err != nil {
		t.Fatalf("CreateMatchmakingRuleSet: %v", err)
	}
	q := e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String("mm"), TimeoutInSeconds: aws.Int32(60),
		Destinations: dests(fleetARNOf(t, e, fleet))})
	return aws.ToString(q.GameSessionQueueArn)
}

// TestMatchmakingWithQueue runs FlexMatch WITH_QUEUE onto a real fleet:
// a 1v1 placed as a game session whose game server gets the match data,
// manual backfill from the API and from the Server SDK, and a match
// whose queue cannot place it.
func TestMatchmakingWithQueue(t *testing.T) {
	e := startHoist(t, "placement.interval=100ms")
	e.dumpOnFailure(t)
	queue := mmFleet(t, e, 1)
	conf := e.mmConfig(t, "mm-manual", queue, types.BackfillModeManual)

	// The match: PLACING, then COMPLETED with the game session.
	e.startTicket(t, "mm-manual", "t-alice", "alice")
	e.startTicket(t, "mm-manual", "t-bob", "bob")
	tk := e.waitTicket(t, "t-alice", types.MatchmakingConfigurationStatusCompleted)
	bob := e.waitTicket(t, "t-bob", types.MatchmakingConfigurationStatusCompleted)
	gsArn := aws.ToString(tk.GameSessionConnectionInfo.GameSessionArn)
	gs := e.waitGameSession(t, gsArn, types.GameSessionStatusActive)
	alice := checkConnection(t, tk, gs, "alice")
	checkConnection(t, bob, gs, "bob")
	if aws.ToInt32(gs.MaximumPlayerSessionCount) != 4 || aws.ToInt32(gs.CurrentPlayerSessionCount) != 2 ||
		len(gs.GameProperties) != 1 || aws.ToString(gs.GameProperties[0].Value) != "duo" {
		t.Fatalf("match game session: %+v", gs)
	}
	d := parseMatchData(t, aws.ToString(gs.MatchmakerData))
	if d.MatchID == "" || d.ConfigurationArn != conf || d.AutoBackfillMode != "" ||
		!slices.Equal(d.teamsOf(), []string{"blue:bob", "red:alice"}) && !slices.Equal(d.teamsOf(), []string{"blue:alice", "red:bob"}) {
		t.Fatalf("MatchmakerData: %+v", d)
	}
	if a := d.Teams[0].Players[0].Attributes["skill"]; a.Type != "DOUBLE" || a.Value != 10.0 {
		t.Fatalf("MatchmakerData attributes: %+v", d.Teams[0].Players[0].Attributes)
	}
	team := map[string]string{}
	for _, tp := range d.teamsOf() {
		n, p, _ := strings.Cut(tp, ":")
		team[p] = n
	}

	// The game server has the match data; alice connects with her player
	// session.
	pl := dialPlayer(t, aws.ToString(gs.IpAddress), aws.ToInt32(gs.Port))
	defer pl.close()
	if g := pl.matchData(t); g.MatchmakerData != aws.ToString(gs.MatchmakerData) || len(g.Updates) != 0 {
		t.Fatalf("game server match data: %+v", g)
	}
	pl.must("ACCEPT " + alice["alice"])
	e.waitPlayerSession(t, alice["alice"], types.PlayerSessionStatusActive)

	// Manual backfill from the API: carol joins the game session.
	e.startTicket(t, "mm-manual", "t-carol", "carol")
	bf, err := e.gl.StartMatchBackfill(e.ctx, &gl.StartMatchBackfillInput{ConfigurationName: aws.String(conf),
		GameSessionArn: aws.String(gsArn), TicketId: aws.String("bf-api"), Players: []types.Player{
			{PlayerId: aws.String("alice"), Team: aws.String(team["alice"])},
			{PlayerId: aws.String("bob"), Team: aws.String(team["bob"])}}})
	if err != nil || bf.MatchmakingTicket.Status != types.MatchmakingConfigurationStatusQueued {
		t.Fatalf("StartMatchBackfill: %+v, %v", bf, err)
	}
	carol := checkConnection(t, e.waitTicket(t, "t-carol", types.MatchmakingConfigurationStatusCompleted), gs, "carol")
	e.waitTicket(t, "bf-api", types.MatchmakingConfigurationStatusCompleted)
	gs = e.gameSession(t, gsArn)
	d2 := parseMatchData(t, aws.ToString(gs.MatchmakerData))
	if n := aws.ToInt32(gs.CurrentPlayerSessionCount); n != 3 || d2.MatchID == "" || d2.ConfigurationArn != conf || len(d2.teamsOf()) != 3 {
		t.Fatalf("game session after the API backfill: %d players, match data %+v (before: %+v)", n, d2, d)
	}
	if ps := e.playerSession(t, carol["carol"]); ps.Status != types.PlayerSessionStatusReserved || aws.ToString(ps.GameSessionId) != gsArn {
		t.Fatalf("carol's player session: %+v", ps)
	}
	var g gameMatchData
	eventually(t, waitShort, "UpdateGameSession after the API backfill", func() (bool, string) {
		g = pl.matchData(t)
		return len(g.Updates) == 1, fmt.Sprintf("%+v", g)
	})
	if u := g.Updates[0]; u.UpdateReason != "MATCHMAKING_DATA_UPDATED" || u.BackfillTicketId != "bf-api" ||
		u.MatchmakerData != aws.ToString(gs.MatchmakerData) || g.MatchmakerData != u.MatchmakerData {
		t.Fatalf("game server after the API backfill: %+v", g)
	}
	dialPlayer(t, aws.ToString(gs.IpAddress), aws.ToInt32(gs.Port)).must("ACCEPT " + carol["carol"])
	e.waitPlayerSession(t, carol["carol"], types.PlayerSessionStatusActive)
	for _, tp := range d2.teamsOf() {
		n, p, _ := strings.Cut(tp, ":")
		team[p] = n
	}

	// Backfill from the Server SDK: dave joins.
	players := func(ids ...string) string {
		var ps []string
		for _, id := range ids {
			ps = append(ps, fmt.Sprintf(`{"PlayerId":%q,"Team":%q,"PlayerAttributes":{"skill":{"AttrType":"DOUBLE","N":10}}}`, id, team[id]))
		}
		return "[" + strings.Join(ps, ",") + "]"
	}
	e.startTicket(t, "mm-manual", "t-dave", "dave")
	if a := pl.must(`BACKFILL {"MatchmakingConfigurationArn":"` + conf + `","TicketId":"bf-sdk","Players":` + players("alice", "bob", "carol") + `}`); a != `OK {"TicketId":"bf-sdk"}` {
		t.Fatalf("BACKFILL: %s", a)
	}
	dave := checkConnection(t, e.waitTicket(t, "t-dave", types.MatchmakingConfigurationStatusCompleted), gs, "dave")
	e.waitTicket(t, "bf-sdk", types.MatchmakingConfigurationStatusCompleted)
	eventually(t, waitShort, "UpdateGameSession after the SDK backfill", func() (bool, string) {
		g = pl.matchData(t)
		return len(g.Updates) == 2, fmt.Sprintf("%+v", g)
	})
	gs = e.gameSession(t, gsArn)
	if u := g.Updates[1]; u.UpdateReason != "MATCHMAKING_DATA_UPDATED" || u.BackfillTicketId != "bf-sdk" ||
		len(parseMatchData(t, u.MatchmakerData).teamsOf()) != 4 || u.MatchmakerData != aws.ToString(gs.MatchmakerData) {
		t.Fatalf("game server after the SDK backfill: %+v", g)
	}
	if e.playerSession(t, dave["dave"]).Status != types.PlayerSessionStatusReserved {
		t.Fatalf("dave's player session: %+v", e.playerSession(t, dave["dave"]))
	}

	// StopMatchBackfill from the SDK: the game server hears
	// BACKFILL_CANCELLED.
	pl.must(`BACKFILL {"MatchmakingConfigurationArn":"` + conf + `","TicketId":"bf-stop","Players":` + players("alice", "bob") + `}`)
	pl.must("STOPBACKFILL " + conf + " bf-stop")
	e.waitTicket(t, "bf-stop", types.MatchmakingConfigurationStatusCancelled)
	eventually(t, waitShort, "UpdateGameSession BACKFILL_CANCELLED", func() (bool, string) {
		g = pl.matchData(t)
		return len(g.Updates) == 3, fmt.Sprintf("%+v", g)
	})
	if u := g.Updates[2]; u.UpdateReason != "BACKFILL_CANCELLED" || u.BackfillTicketId != "bf-stop" {
		t.Fatalf("game server after StopMatchBackfill: %+v", g)
	}
	if a := pl.do("STOPBACKFILL " + conf + " bf-stop"); !strings.HasPrefix(a, "ERROR 400") {
		t.Fatalf("STOPBACKFILL of a cancelled ticket: %s", a)
	}
	if a := pl.do("STOPBACKFILL " + conf + " t-dave"); !strings.HasPrefix(a, "ERROR 404") {
		t.Fatalf("STOPBACKFILL of a ticket that is no backfill of the session: %s", a)
	}

	// The fleet's one process is busy: a queue that gives up after 10 s
	// (its shortest timeout) cannot place a match, whose tickets FAIL.
	short := e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String("mm-short"), TimeoutInSeconds: aws.Int32(10),
		Destinations: e.queueDests(t, "mm")})
	e.mmConfig(t, "mm-fail", aws.ToString(short.GameSessionQueueArn), types.BackfillModeManual)
	e.startTicket(t, "mm-fail", "t-erin", "erin")
	e.startTicket(t, "mm-fail", "t-frank", "frank")
	for _, id := range []string{"t-erin", "t-frank"} {
		if tk := e.waitTicket(t, id, types.MatchmakingConfigurationStatusFailed); tk.GameSessionConnectionInfo != nil ||
			aws.ToString(tk.StatusReason) != "FAILED" || !strings.Contains(aws.ToString(tk.StatusMessage), "TIMED_OUT") {
			t.Fatalf("failed ticket %s: %+v", id, tk)
		}
	}
}

// queueDests returns a queue's destinations.
func (e *env) queueDests(t *testing.T, name string) []types.GameSessionQueueDestination {
	t.Helper()
	out, err := e.gl.DescribeGameSessionQueues(e.ctx, &gl.DescribeGameSessionQueuesInput{Names: []string{name}})
	if err != nil || len(out.GameSessionQueues) != 1 {
		t.Fatalf("DescribeGameSessionQueues %s: %+v, %v", name, out, err)
	}
	return out.GameSessionQueues[0].Destinations
}

// TestMatchmakingAutomaticBackfill runs BackfillMode AUTOMATIC on a real
// fleet: a 1v1 placed with two open slots gets the backfill ticket its
// match data names, a new player joins through it, a player who leaves
// opens a slot that the next player fills, and the ticket of a game
// session that ends is cancelled.
func TestMatchmakingAutomaticBackfill(t *testing.T) {
	e := startHoist(t, "placement.interval=100ms")
	e.dumpOnFailure(t)
	queue := mmFleet(t, e, 1)
	conf := e.mmConfig(t, "mm-auto", queue, types.BackfillModeAutomatic)

	e.startTicket(t, "mm-auto", "t-alice", "alice")
	e.startTicket(t, "mm-auto", "t-bob", "bob")
	tk := e.waitTicket(t, "t-alice", types.MatchmakingConfigurationStatusCompleted)
	gsArn := aws.ToString(tk.GameSessionConnectionInfo.GameSessionArn)
	gs := e.waitGameSession(t, gsArn, types.GameSessionStatusActive)
	alice := checkConnection(t, tk, gs, "alice")
	d := parseMatchData(t, aws.ToString(gs.MatchmakerData))
	if d.AutoBackfillMode != "AUTOMATIC" || d.AutoBackfillTicketID == "" || d.ConfigurationArn != conf {
		t.Fatalf("MatchmakerData of an AUTOMATIC match with open slots: %+v", d)
	}
	first := d.AutoBackfillTicketID
	e.waitTicket(t, first, types.MatchmakingConfigurationStatusSearching)
	if bf := e.ticket(t, first); len(bf.Players) != 2 || aws.ToString(bf.Players[0].Team) == "" {
		t.Fatalf("automatic backfill ticket: %+v", bf)
	}
	pl := dialPlayer(t, aws.ToString(gs.IpAddress), aws.ToInt32(gs.Port))
	defer pl.close()
	leaving := dialPlayer(t, aws.ToString(gs.IpAddress), aws.ToInt32(gs.Port))
	leaving.must("ACCEPT " + alice["alice"])
	e.waitPlayerSession(t, alice["alice"], types.PlayerSessionStatusActive)

	// carol joins through the automatic ticket; the next one (3 of 4
	// players) is named in the new match data.
	e.startTicket(t, "mm-auto", "t-carol", "carol")
	checkConnection(t, e.waitTicket(t, "t-carol", types.MatchmakingConfigurationStatusCompleted), gs, "carol")
	e.waitTicket(t, first, types.MatchmakingConfigurationStatusCompleted)
	var g gameMatchData
	eventually(t, waitShort, "UpdateGameSession after the automatic backfill", func() (bool, string) {
		g = pl.matchData(t)
		return len(g.Updates) == 1, fmt.Sprintf("%+v", g)
	})
	d = parseMatchData(t, g.MatchmakerData)
	if u := g.Updates[0]; u.UpdateReason != "MATCHMAKING_DATA_UPDATED" || u.BackfillTicketId != first || len(d.teamsOf()) != 3 ||
		d.AutoBackfillTicketID == "" || d.AutoBackfillTicketID == first {
		t.Fatalf("game server after the automatic backfill: %+v", g)
	}
	second := d.AutoBackfillTicketID
	e.waitTicket(t, second, types.MatchmakingConfigurationStatusSearching)

	// alice leaves: a ticket without her replaces the second one, and dave
	// takes her slot.
	leaving.close()
	e.waitPlayerSession(t, alice["alice"], types.PlayerSessionStatusCompleted)
	e.waitTicket(t, second, types.MatchmakingConfigurationStatusCancelled)
	e.startTicket(t, "mm-auto", "t-dave", "dave")
	checkConnection(t, e.waitTicket(t, "t-dave", types.MatchmakingConfigurationStatusCompleted), gs, "dave")
	eventually(t, waitShort, "UpdateGameSession after alice left and dave joined", func() (bool, string) {
		g = pl.matchData(t)
		return len(g.Updates) == 2 && g.Updates[1].UpdateReason == "MATCHMAKING_DATA_UPDATED", fmt.Sprintf("%+v", g)
	})
	d = parseMatchData(t, g.MatchmakerData)
	if got := d.teamsOf(); len(got) != 3 || slices.ContainsFunc(got, func(s string) bool { return strings.HasSuffix(s, ":alice") }) ||
		!slices.ContainsFunc(got, func(s string) bool { return strings.HasSuffix(s, ":dave") }) || d.AutoBackfillTicketID == "" {
		t.Fatalf("match data after alice left and dave joined: %+v", d)
	}
	third := d.AutoBackfillTicketID
	e.waitTicket(t, third, types.MatchmakingConfigurationStatusSearching)
	if gs = e.gameSession(t, gsArn); aws.ToString(gs.MatchmakerData) != g.MatchmakerData {
		t.Fatalf("DescribeGameSessions MatchmakerData %s, game server's %s", aws.ToString(gs.MatchmakerData), g.MatchmakerData)
	}

	// The game ends: its automatic ticket is cancelled.
	pl.must("END")
	e.waitGameSession(t, gsArn, types.GameSessionStatusTerminated)
	e.waitTicket(t, third, types.MatchmakingConfigurationStatusCancelled)
}
