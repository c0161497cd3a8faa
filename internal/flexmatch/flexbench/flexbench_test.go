package flexbench

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestRuleSetFigures: the constants say what bench-5v5.json says.
func TestRuleSetFigures(t *testing.T) {
	var rs struct {
		Teams []struct{ MinPlayers, MaxPlayers int }
		Rules []struct {
			Name, Type  string
			MaxDistance float64
			MaxLatency  int
		}
		Expansions []struct {
			Target string
			Steps  []struct {
				WaitTimeSeconds int
				Value           float64
			}
		}
	}
	if err := json.Unmarshal(RuleSet, &rs); err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, tm := range rs.Teams {
		if tm.MinPlayers != tm.MaxPlayers {
			t.Errorf("team of %d-%d players", tm.MinPlayers, tm.MaxPlayers)
		}
		size += tm.MaxPlayers
	}
	if size != MatchSize || len(rs.Rules) != 2 || rs.Rules[0].Type != "batchDistance" || rs.Rules[0].MaxDistance != FirstDistance ||
		rs.Rules[1].Type != "latency" || rs.Rules[1].MaxLatency != MaxLatency {
		t.Errorf("rule set %+v", rs)
	}
	if len(rs.Expansions) != 1 || rs.Expansions[0].Target != "rules["+rs.Rules[0].Name+"].maxDistance" || len(rs.Expansions[0].Steps) != 1 ||
		rs.Expansions[0].Steps[0].Value != FinalDistance || rs.Expansions[0].Steps[0].WaitTimeSeconds != int(ExpansionAfter.Seconds()) {
		t.Errorf("expansions %+v", rs.Expansions)
	}
}

func TestPlayers(t *testing.T) {
	a, b := Players(2000, 3), Players(2000, 3)
	if c := Players(2000, 4); c[0].Skill == a[0].Skill {
		t.Error("two seeds give the same first player")
	}
	ids := map[string]bool{}
	for i, p := range a {
		if p.ID != b[i].ID || p.Skill != b[i].Skill || len(p.Latencies) != len(b[i].Latencies) {
			t.Fatalf("player %d differs between two draws of one seed", i)
		}
		if ids[p.ID] {
			t.Fatalf("player ID %s twice", p.ID)
		}
		ids[p.ID] = true
		under := 0
		for _, r := range Regions {
			l, ok := p.Latencies[r]
			if !ok || l < 20 || l >= 300 || l != b[i].Latencies[r] {
				t.Fatalf("player %d: latency to %s %d (%v)", i, r, l, ok)
			}
			if l <= MaxLatency {
				under++
			}
		}
		if p.Skill < 0 || p.Skill >= 1000 || under == 0 {
			t.Fatalf("player %d: skill %v, %d regions under %d ms", i, p.Skill, under, MaxLatency)
		}
	}
}

// at is a player with one region's latency (the others over MaxLatency).
func at(region string, skill float64) Player {
	lat := map[string]int{}
	for _, r := range Regions {
		lat[r] = 299
	}
	lat[region] = 60
	return Player{Skill: skill, Latencies: lat}
}

func TestPlaceable(t *testing.T) {
	ten := func(region string, from, step float64) []Player {
		var ps []Player
		for k := range MatchSize {
			ps = append(ps, at(region, from+float64(k)*step))
		}
		return ps
	}
	for _, c := range []struct {
		name string
		ps   []Player
		band float64
		want int
	}{
		{"none", nil, 50, 0},
		{"nine", ten("us-east-1", 0, 1)[:9], 50, 0},
		{"ten in the band", ten("us-east-1", 0, 1), 9, 10},
		{"ten just too wide", ten("us-east-1", 0, 1), 8.9, 0},
		{"ten over two regions", append(ten("us-east-1", 0, 1)[:5], ten("eu-west-1", 0, 1)[5:]...), 50, 0},
		{"twenty in two regions", append(ten("us-east-1", 0, 1), ten("eu-west-1", 500, 1)...), 10, 20},
		{"an outlier left", append(ten("us-east-1", 100, 1), at("us-east-1", 0)), 10, 10},
		{"a slow player left out", append(ten("us-east-1", 0, 1)[:9], Player{Skill: 5, Latencies: map[string]int{"us-east-1": 151}}), 50, 0},
	} {
		got := Placeable(c.ps, c.band)
		if len(got) != c.want || !slices.IsSorted(got) {
			t.Errorf("%s: %v, want %d players", c.name, got, c.want)
		}
	}
	// The generated players are dense enough that nearly all are placeable.
	ps := Players(10_000, 1)
	if n := len(Placeable(ps, FirstDistance)); n < 9_500 {
		t.Errorf("%d of 10,000 generated players placeable", n)
	}
}
