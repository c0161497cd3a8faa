package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/flexmatch"
)

// The documented example (docs/flexmatch-simulate.md).
var (
	exampleRules   = filepath.Join("..", "..", "docs", "examples", "flexmatch-simulate", "rules.json")
	exampleTickets = filepath.Join("..", "..", "docs", "examples", "flexmatch-simulate", "tickets.json")
)

// writeFile writes content to a new file in the test's directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// simulateJSON runs hoist match simulate --json and decodes the report.
func simulateJSON(t *testing.T, args ...string) *simReport {
	t.Helper()
	code, stdout, stderr := runArgs(t, append([]string{"match", "simulate", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("hoist match simulate %v: status %d: %s", args, code, stderr)
	}
	var rep simReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	return &rep
}

// teamBounds reads the teams of a rule set body (quantity expanded, as the
// matcher names them) for the tests' own checks.
func teamBounds(t *testing.T, body []byte) map[string][2]int {
	t.Helper()
	var raw struct {
		Teams []struct {
			Name                 string
			MinPlayers           int
			MaxPlayers, Quantity int
		}
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	b := map[string][2]int{}
	for _, tm := range raw.Teams {
		if tm.Quantity <= 1 {
			b[tm.Name] = [2]int{tm.MinPlayers, tm.MaxPlayers}
			continue
		}
		for k := 1; k <= tm.Quantity; k++ {
			b[fmt.Sprintf("%s_%d", tm.Name, k)] = [2]int{tm.MinPlayers, tm.MaxPlayers}
		}
	}
	return b
}

// checkReport checks what holds for any correct matcher: every ticket
// ends once, matched at a pass time inside its search window or timed out
// exactly at its deadline; every match's teams are the rule set's, within
// their sizes, hold exactly its tickets' players with each party on one
// team; no ticket is in two matches; waits and the summary add up.
func checkReport(t *testing.T, rulesBody []byte, tickets []simTicket, o simOptions, rep *simReport) {
	t.Helper()
	bounds := teamBounds(t, rulesBody)
	byID := map[string]simTicket{}
	for _, tk := range tickets {
		byID[tk.ID] = tk
	}
	if len(rep.Tickets) != len(tickets) {
		t.Fatalf("%d ticket outcomes for %d tickets", len(rep.Tickets), len(tickets))
	}
	sec := func(d time.Duration) float64 { return d.Seconds() }
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	inMatch := map[string]int{}
	for k, m := range rep.Matches {
		if m.Number != k+1 {
			t.Errorf("match %d is numbered %d", k+1, m.Number)
		}
		at := time.Duration(math.Round(m.At * 1e9))
		if at%o.Tick != 0 {
			t.Errorf("match %d at %vs, not a pass time (tick %v)", m.Number, m.At, o.Tick)
		}
		players := map[string]string{} // player -> team
		for _, team := range m.Teams {
			b, ok := bounds[team.Name]
			if !ok {
				t.Errorf("match %d: team %q is not the rule set's", m.Number, team.Name)
			}
			if n := len(team.Players); n < b[0] || n > b[1] {
				t.Errorf("match %d: team %s has %d players, want %d to %d", m.Number, team.Name, n, b[0], b[1])
			}
			for _, p := range team.Players {
				if _, dup := players[p]; dup {
					t.Errorf("match %d: player %s twice", m.Number, p)
				}
				players[p] = team.Name
			}
		}
		if len(m.Teams) != len(bounds) {
			t.Errorf("match %d has %d teams, the rule set %d", m.Number, len(m.Teams), len(bounds))
		}
		n := 0
		for _, id := range m.Tickets {
			if prev, dup := inMatch[id]; dup {
				t.Errorf("ticket %s in matches %d and %d", id, prev, m.Number)
			}
			inMatch[id] = m.Number
			tk, ok := byID[id]
			if !ok {
				t.Errorf("match %d: unknown ticket %s", m.Number, id)
				continue
			}
			if at < tk.Submitted || at >= tk.Submitted+o.RequestTimeout {
				t.Errorf("match %d at %v holds ticket %s, searching from %v to %v", m.Number, at, id, tk.Submitted, tk.Submitted+o.RequestTimeout)
			}
			team := players[tk.Players[0].ID]
			for _, p := range tk.Players {
				n++
				if got, ok := players[p.ID]; !ok || got != team {
					t.Errorf("match %d: player %s of ticket %s on team %q, its party on %q", m.Number, p.ID, id, got, team)
				}
			}
		}
		if n != len(players) {
			t.Errorf("match %d: %d players in teams, %d on its tickets", m.Number, len(players), n)
		}
	}
	var waits []float64
	matched, timedOut := 0, 0
	for _, out := range rep.Tickets {
		tk, ok := byID[out.TicketID]
		if !ok {
			t.Errorf("outcome of unknown ticket %s", out.TicketID)
			continue
		}
		if !near(out.Submitted, sec(tk.Submitted)) {
			t.Errorf("%s: submitted %v, want %v", tk.ID, out.Submitted, sec(tk.Submitted))
		}
		if !near(out.Wait, out.Ended-out.Submitted) {
			t.Errorf("%s: wait %v, ended %v - submitted %v", tk.ID, out.Wait, out.Ended, out.Submitted)
		}
		switch out.Status {
		case statusCompleted:
			matched++
			waits = append(waits, out.Wait)
			m := inMatch[tk.ID]
			if m == 0 || out.Match != m || !near(out.Ended, rep.Matches[m-1].At) {
				t.Errorf("%s: COMPLETED in match %d at %v, but in match %d", tk.ID, out.Match, out.Ended, m)
			}
		case statusTimedOut:
			timedOut++
			if !near(out.Ended, sec(tk.Submitted+o.RequestTimeout)) || !near(out.Wait, sec(o.RequestTimeout)) {
				t.Errorf("%s: timed out at %v (wait %v), want %v", tk.ID, out.Ended, out.Wait, sec(tk.Submitted+o.RequestTimeout))
			}
			if inMatch[tk.ID] != 0 || out.Match != 0 {
				t.Errorf("%s: timed out but in match %d", tk.ID, inMatch[tk.ID])
			}
		default:
			t.Errorf("%s: status %q", tk.ID, out.Status)
		}
		for _, h := range out.HeldBy {
			if h.Passes < 1 || h.Seconds < 0 || h.Seconds > out.Wait+1e-9 {
				t.Errorf("%s: held by %s for %vs in %d passes (wait %vs)", tk.ID, h.Rule, h.Seconds, h.Passes, out.Wait)
			}
		}
	}
	s := rep.Summary
	if s.Tickets != len(tickets) || s.Matched != matched || s.TimedOut != timedOut || s.Matches != len(rep.Matches) {
		t.Errorf("summary %+v; counted %d matched, %d timed out, %d matches", s, matched, timedOut, len(rep.Matches))
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		rank := func(p float64) float64 { return waits[int(math.Ceil(p*float64(len(waits))))-1] }
		if !near(s.WaitP50, rank(0.5)) || !near(s.WaitP99, rank(0.99)) || !near(s.WaitMax, waits[len(waits)-1]) {
			t.Errorf("summary waits p50 %v p99 %v max %v; want %v %v %v", s.WaitP50, s.WaitP99, s.WaitMax, rank(0.5), rank(0.99), waits[len(waits)-1])
		}
	}
}

// scenario runs a simulation through the command line (--json) and checks
// it.
func scenario(t *testing.T, rules, tickets string, o simOptions) *simReport {
	t.Helper()
	rp, tp := writeFile(t, "rules.json", rules), writeFile(t, "tickets.json", tickets)
	rep := simulateJSON(t, "--rule-set", rp, "--tickets", tp, "--tick", o.Tick.String(),
		"--request-timeout", o.RequestTimeout.String(), "--seed", fmt.Sprint(o.Seed))
	rs, err := flexmatch.Parse([]byte(rules))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := parseTickets([]byte(tickets), rs)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, []byte(rules), ts, o, rep)
	return rep
}

const rules1v1 = `{"name": "duel", "ruleLanguageVersion": "1.0",
	"playerAttributes": [{"name": "skill", "type": "number"}],
	"teams": [{"name": "a", "minPlayers": 1, "maxPlayers": 1}, {"name": "b", "minPlayers": 1, "maxPlayers": 1}]}`

// ticketsJSON writes a tickets file of single players (ID = player ID)
// submitted at the given seconds.
func ticketsJSON(at map[string]float64) string {
	var ts []string
	for _, id := range sortedKeys(at) {
		ts = append(ts, fmt.Sprintf(`{"ticketId": %q, "submittedAt": %v, "players": [{"playerId": %q, "attributes": {"skill": 10}}]}`, id, at[id], id))
	}
	return `{"tickets": [` + strings.Join(ts, ",") + `]}`
}

func outcome(t *testing.T, rep *simReport, id string) simOutcome {
	t.Helper()
	for _, o := range rep.Tickets {
		if o.TicketID == id {
			return o
		}
	}
	t.Fatalf("no outcome for %s", id)
	return simOutcome{}
}

func TestSimulateLoneTicketTimesOut(t *testing.T) {
	o := simOptions{RequestTimeout: 10 * time.Second, Tick: time.Second}
	rep := scenario(t, rules1v1, ticketsJSON(map[string]float64{"solo": 2.5}), o)
	got := outcome(t, rep, "solo")
	if got.Status != statusTimedOut || got.Ended != 12.5 || got.Wait != 10 || len(rep.Matches) != 0 {
		t.Errorf("lone ticket: %+v, %d matches", got, len(rep.Matches))
	}
	// Passes at 3s..12s see it (a pass at 12.5s would not).
	if rep.Passes != 10 {
		t.Errorf("%d passes, want 10 (3s to 12s)", rep.Passes)
	}
}

func TestSimulateTimeoutBetweenPasses(t *testing.T) {
	// Submitted at 0.5s with a 1s timeout and a pass every 5s: no pass
	// sees it, and it times out at 1.5s.
	o := simOptions{RequestTimeout: time.Second, Tick: 5 * time.Second}
	rep := scenario(t, rules1v1, ticketsJSON(map[string]float64{"x": 0.5, "y": 0.7}), o)
	if x := outcome(t, rep, "x"); x.Status != statusTimedOut || x.Ended != 1.5 {
		t.Errorf("x: %+v", x)
	}
	if y := outcome(t, rep, "y"); y.Status != statusTimedOut || y.Ended != 1.7 {
		t.Errorf("y: %+v", y)
	}
	if rep.Passes != 0 || rep.Summary.TimedOut != 2 {
		t.Errorf("%d passes, summary %+v", rep.Passes, rep.Summary)
	}
}

func TestSimulatePairMatchesAtFirstPassWithBoth(t *testing.T) {
	// No rules: any matcher matches two lone players of a 1v1 at the first
	// pass that sees both (1s).
	o := simOptions{RequestTimeout: 30 * time.Second, Tick: time.Second}
	rep := scenario(t, rules1v1, ticketsJSON(map[string]float64{"p": 0, "q": 0.5}), o)
	p, q := outcome(t, rep, "p"), outcome(t, rep, "q")
	if p.Status != statusCompleted || p.Ended != 1 || p.Wait != 1 || q.Ended != 1 || q.Wait != 0.5 {
		t.Errorf("p %+v, q %+v", p, q)
	}
	if s := rep.Summary; s.Matched != 2 || s.WaitP50 != 0.5 || s.WaitP99 != 1 || s.WaitMax != 1 {
		t.Errorf("summary %+v", s)
	}
}

func TestSimulateRandomPools(t *testing.T) {
	rules := `{"name": "squads", "ruleLanguageVersion": "1.0",
		"playerAttributes": [{"name": "skill", "type": "number"}],
		"teams": [{"name": "red", "minPlayers": 3, "maxPlayers": 5}, {"name": "blue", "minPlayers": 3, "maxPlayers": 5}]}`
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			var ts []string
			player := 0
			for i := range 40 {
				var ps []string
				for range 1 + rng.IntN(3) {
					player++
					ps = append(ps, fmt.Sprintf(`{"playerId": "p%d", "attributes": {"skill": %d}, "latencies": {"r1": %d}}`, player, rng.IntN(100), 1+rng.IntN(200)))
				}
				ts = append(ts, fmt.Sprintf(`{"ticketId": "t%d", "submittedAt": %.3f, "players": [%s]}`, i, rng.Float64()*60, strings.Join(ps, ",")))
			}
			o := simOptions{RequestTimeout: time.Duration(5+rng.IntN(30)) * time.Second, Tick: []time.Duration{time.Second, 250 * time.Millisecond, 3 * time.Second}[seed%3], Seed: seed}
			rep := scenario(t, rules, `{"tickets": [`+strings.Join(ts, ",")+`]}`, o)
			t.Logf("%d matches, summary %+v", len(rep.Matches), rep.Summary)
		})
	}
}

func TestSimulateExample(t *testing.T) {
	body, err := os.ReadFile(exampleRules)
	if err != nil {
		t.Fatal(err)
	}
	tickets, err := os.ReadFile(exampleTickets)
	if err != nil {
		t.Fatal(err)
	}
	o := simOptions{RequestTimeout: 30 * time.Second, Tick: time.Second}
	rep := scenario(t, string(body), string(tickets), o)
	// The same seed gives the same result.
	if again := scenario(t, string(body), string(tickets), o); !equalJSON(t, rep, again) {
		t.Error("two runs with the same seed differ")
	}
	// The text form names every ticket and the summary.
	code, stdout, stderr := runArgs(t, "match", "simulate", "--rule-set", exampleRules, "--tickets", exampleTickets, "--request-timeout", "30s")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	for _, want := range []string{"rule set arena-2v2", "matches (", "held back by rules", "summary: 8 tickets", "carol-dave"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return string(ja) == string(jb)
}

// fakeMatcher replays scripted results, one per pass, for what the real
// matcher's results cannot be made to show.
type fakeMatcher struct {
	results []flexmatch.Result
	pools   [][]string
	nows    []time.Time
}

func (f *fakeMatcher) Name() string { return "fake" }

func (f *fakeMatcher) Match(pool []flexmatch.Ticket, now time.Time, _ uint64) flexmatch.Result {
	var ids []string
	for _, t := range pool {
		ids = append(ids, t.ID)
	}
	f.pools, f.nows = append(f.pools, ids), append(f.nows, now)
	if n := len(f.pools) - 1; n < len(f.results) {
		return f.results[n]
	}
	return flexmatch.Result{}
}

func TestSimulateHeldSummary(t *testing.T) {
	tickets := []simTicket{
		{ID: "a", Submitted: 0, Players: []flexmatch.Player{{ID: "a"}}},
		{ID: "b", Submitted: 0, Players: []flexmatch.Player{{ID: "b"}}},
	}
	held := func(m map[string][]string) flexmatch.Result { return flexmatch.Result{Held: m} }
	f := &fakeMatcher{results: []flexmatch.Result{
		held(map[string][]string{"a": {"skill"}, "b": {"skill", "latency"}}),                                                 // 0s
		held(map[string][]string{"a": {"skill"}, "b": {"latency"}}),                                                          // 1s
		held(map[string][]string{"a": {}}),                                                                                   // 2s: only the lack of tickets
		held(map[string][]string{"a": {"skill"}, "b": {"skill"}}),                                                            // 3s
		{Matches: []flexmatch.Match{{Tickets: []string{"b"}, Teams: []flexmatch.Team{{Name: "x", Players: []string{"b"}}}}}}, // 4s
	}}
	rep, err := simulate(f, tickets, simOptions{RequestTimeout: 6 * time.Second, Tick: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// a: skill from 0s to 2s and from 3s to 4s (the pass at 4s no longer
	// names it), in the passes at 0s, 1s and 3s. b: skill from 0s to 1s and
	// from 3s to its match at 4s; latency from 0s to 2s.
	a, b := outcome(t, rep, "a"), outcome(t, rep, "b")
	wantA := []simHeld{{Rule: "skill", Seconds: 3, Passes: 3}}
	wantB := []simHeld{{Rule: "skill", Seconds: 2, Passes: 2}, {Rule: "latency", Seconds: 2, Passes: 2}}
	for _, c := range []struct {
		got, want []simHeld
		id        string
	}{{a.HeldBy, wantA, "a"}, {b.HeldBy, wantB, "b"}} {
		if len(c.got) != len(c.want) {
			t.Errorf("%s held by %+v, want %+v", c.id, c.got, c.want)
			continue
		}
		for i := range c.got {
			if c.got[i].Rule != c.want[i].Rule || c.got[i].Seconds != c.want[i].Seconds || c.got[i].Passes != c.want[i].Passes {
				t.Errorf("%s held by %+v, want %+v", c.id, c.got, c.want)
			}
		}
	}
	if a.Status != statusTimedOut || a.Ended != 6 || b.Status != statusCompleted || b.Ended != 4 || b.Match != 1 {
		t.Errorf("a %+v, b %+v", a, b)
	}
	// Passes see the pool at simulated times from the origin.
	if len(f.nows) != 6 || !f.nows[5].Equal(simOrigin.Add(5*time.Second)) || len(f.pools[4]) != 2 || len(f.pools[5]) != 1 {
		t.Errorf("passes at %v with pools %v", f.nows, f.pools)
	}
	var buf strings.Builder
	rep.print(&buf)
	if !strings.Contains(buf.String(), "a: skill for 3s (3 passes)") || !strings.Contains(buf.String(), "b: skill for 2s (2 passes), latency for 2s (2 passes)") {
		t.Errorf("held section:\n%s", buf.String())
	}
}

func TestSimulateMatcherContractBroken(t *testing.T) {
	tickets := []simTicket{{ID: "a", Players: []flexmatch.Player{{ID: "a"}}}, {ID: "b", Players: []flexmatch.Player{{ID: "b"}}}}
	for name, res := range map[string]flexmatch.Result{
		"twice":   {Matches: []flexmatch.Match{{Tickets: []string{"a", "b"}}, {Tickets: []string{"a"}}}},
		"unknown": {Matches: []flexmatch.Match{{Tickets: []string{"a", "zz"}}}},
		"empty":   {Matches: []flexmatch.Match{{}}},
	} {
		_, err := simulate(&fakeMatcher{results: []flexmatch.Result{res}}, tickets, simOptions{RequestTimeout: time.Minute, Tick: time.Second})
		if _, ok := err.(*invariantError); !ok {
			t.Errorf("%s: err %v, want an invariantError", name, err)
		}
	}
}

func TestMatchCommandLine(t *testing.T) {
	rules := writeFile(t, "rules.json", rules1v1)
	badRules := writeFile(t, "bad.json", `{"ruleLanguageVersion": "2.0", "teams": [{"name": "a", "maxPlayers": 1}]}`)
	tickets := writeFile(t, "tickets.json", ticketsJSON(map[string]float64{"p": 0}))
	badTickets := writeFile(t, "badtickets.json", `{"tickets": [{"ticketId": "t1", "submittedAt": -1, "players": [{"playerId": "p"}]}]}`)
	wrongType := writeFile(t, "wrongtype.json", `{"tickets": [{"ticketId": "t1", "submittedAt": 0, "players": [{"playerId": "p", "attributes": {"skill": "high"}}]}]}`)
	late := writeFile(t, "late.json", ticketsJSON(map[string]float64{"p": 1e6}))
	missing := filepath.Join(t.TempDir(), "missing.json")
	for _, c := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"match"}, 0, "simulate", ""},
		{[]string{"match", "--help"}, 0, "validate", ""},
		{[]string{"match", "frobnicate"}, 2, "", "unknown command"},
		{[]string{"match", "validate", "--rule-set", rules}, 0, "valid\n", ""},
		{[]string{"match", "validate", "--rule-set", badRules}, 1, "", "ruleLanguageVersion: "},
		{[]string{"match", "validate", "--rule-set", missing}, 1, "", "missing.json"},
		{[]string{"match", "validate"}, 2, "", "--rule-set is required"},
		{[]string{"match", "validate", "--rule-set", rules, "extra"}, 2, "", "--rule-set is required"},
		{[]string{"match", "validate", "--bogus"}, 2, "", "bogus"},
		{[]string{"match", "simulate", "--rule-set", rules}, 2, "", "--tickets are required"},
		{[]string{"match", "simulate", "--rule-set", rules, "--tickets", tickets, "--tick", "0s"}, 2, "", "--tick must be at least"},
		{[]string{"match", "simulate", "--rule-set", rules, "--tickets", tickets, "--request-timeout", "0s"}, 2, "", "--request-timeout must be"},
		{[]string{"match", "simulate", "--rule-set", rules, "--tickets", tickets, "--request-timeout", "13h"}, 2, "", "--request-timeout must be"},
		{[]string{"match", "simulate", "--rule-set", rules, "--tickets", tickets, "more"}, 2, "", `unexpected argument "more"`},
		{[]string{"match", "simulate", "--rule-set", rules, "--tickets", late, "--tick", "1ms", "--request-timeout", "12h"}, 2, "", "more than 10000000 passes"},
		{[]string{"match", "simulate", "--rule-set", badRules, "--tickets", tickets}, 1, "", "ruleLanguageVersion: "},
		{[]string{"match", "simulate", "--rule-set", rules, "--tickets", badTickets}, 1, "", "t1: submittedAt: must be"},
		{[]string{"match", "simulate", "--rule-set", rules, "--tickets", wrongType}, 1, "", "t1: Players[0].PlayerAttributes[skill]"},
		{[]string{"match", "simulate", "--rule-set", rules, "--tickets", missing}, 1, "", "missing.json"},
		{[]string{"match", "simulate", "--rule-set", rules, "--tickets", tickets}, 0, "summary: 1 tickets, 0 matched in 0 matches, 1 timed out", ""},
		{[]string{"match", "simulate", "-h"}, 0, "", "-request-timeout"},
	} {
		code, stdout, stderr := runArgs(t, c.args...)
		if code != c.code || !strings.Contains(stdout, c.out) || !strings.Contains(stderr, c.err) {
			t.Errorf("hoist %s: status %d (want %d)\nstdout: %s\nstderr: %s\nwant stdout with %q, stderr with %q",
				strings.Join(c.args, " "), code, c.code, stdout, stderr, c.out, c.err)
		}
	}
	if _, stdout, _ := runArgs(t, "help"); !strings.Contains(stdout, "  match ") {
		t.Errorf("hoist help does not list match:\n%s", stdout)
	}
}

// documentedCommands returns the one-line `hoist match` commands of
// docs/flexmatch-simulate.md that use the example files, as arguments
// (after "hoist"), with the paths made relative to this package.
func documentedCommands(t *testing.T) [][]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "flexmatch-simulate.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for line := range strings.Lines(string(doc)) {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "go run ./cmd/hoist match ")
		if !ok || !strings.Contains(line, "docs/examples/") || strings.HasSuffix(line, `\`) {
			continue
		}
		out = append(out, append([]string{"match"}, strings.Fields(strings.ReplaceAll(rest, "docs/examples/", "../../docs/examples/"))...))
	}
	return out
}

// TestDocumentedCommands runs every one-line `hoist match` command of
// docs/flexmatch-simulate.md that uses the example files.
func TestDocumentedCommands(t *testing.T) {
	cmds := documentedCommands(t)
	for _, args := range cmds {
		if code, _, stderr := runArgs(t, args...); code != 0 {
			t.Errorf("%s: status %d: %s", strings.Join(args, " "), code, stderr)
		}
	}
	if len(cmds) < 3 {
		t.Errorf("found %d documented commands, want 3", len(cmds))
	}
}

// TestDocumentedJSONExcerpt checks that the --json excerpt of
// docs/flexmatch-simulate.md is what the example gives: its summary, and
// each match and ticket it shows, rule metrics included.
func TestDocumentedJSONExcerpt(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "flexmatch-simulate.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n{\n  \"ruleSet\"")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no --json excerpt in the doc")
	}
	var want simReport
	if err := json.Unmarshal([]byte("{\"ruleSet\""+block), &want); err != nil {
		t.Fatalf("the excerpt: %v", err)
	}
	var command []string // the documented command that prints JSON
	for _, args := range documentedCommands(t) {
		if slices.Contains(args, "--json") {
			command = args
		}
	}
	if command == nil {
		t.Fatal("the doc shows no --json command")
	}
	code, stdout, stderr := runArgs(t, command...)
	got := new(simReport)
	if err := json.Unmarshal([]byte(stdout), got); code != 0 || err != nil {
		t.Fatalf("%s: status %d, %v: %s", strings.Join(command, " "), code, err, stderr)
	}
	if len(got.Matches) == 0 || len(got.Matches[0].Metrics) == 0 {
		t.Fatalf("the example forms %d matches, the first with no rule metrics", len(got.Matches))
	}
	if !equalJSON(t, got.Summary, want.Summary) || got.Passes != want.Passes || got.RuleSet != want.RuleSet {
		t.Errorf("summary %+v, %d passes; the doc shows %+v, %d passes", got.Summary, got.Passes, want.Summary, want.Passes)
	}
	for _, m := range want.Matches {
		if m.Number > len(got.Matches) || !equalJSON(t, got.Matches[m.Number-1], m) {
			t.Errorf("the doc shows match %+v, the example does not form it", m)
		}
	}
	for _, w := range want.Tickets {
		if g := outcome(t, got, w.TicketID); !equalJSON(t, g, w) {
			t.Errorf("ticket %s: %+v; the doc shows %+v", w.TicketID, g, w)
		}
	}
}
