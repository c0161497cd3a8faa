package hosts

import (
	"testing"
)

// load is a host for the chooser: ACTIVE, connected, in loc, holding cap
// instances of any type, running used (fleet of them of the fleet).
func load(id, loc string, cap, used, fleet int, mod ...func(*Host)) hostLoad {
	h := &Host{HostID: id, Location: loc, Status: StatusActive, ConnectedTo: "r1", Capacity: map[string]int{"*": cap}}
	for _, m := range mod {
		m(h)
	}
	return hostLoad{Host: h, Used: map[string]int{"*": used}, Fleet: fleet}
}

func status(st Status) func(*Host) { return func(h *Host) { h.Status = st } }
func disconnected(h *Host)         { h.ConnectedTo = "" }
func localHost(h *Host)            { h.Local = true }
func types(c map[string]int) func(*Host) {
	return func(h *Host) { h.Capacity = c }
}

func TestChoose(t *testing.T) {
	tests := map[string]struct {
		loads []hostLoad
		loc   string
		want  choice
	}{
		"no host at all: this replica hosts": {
			loc: "us-west-2", want: choice{InProcess: true},
		},
		"no host in the location: this replica hosts": {
			loads: []hostLoad{load("a", "eu-west-1", 4, 0, 0)},
			loc:   "us-west-2", want: choice{InProcess: true},
		},
		"a local host serves locations no other host serves": {
			loads: []hostLoad{load("a", "eu-west-1", 4, 0, 0), load("l", "us-west-2", 4, 0, 0, localHost)},
			loc:   "sa-east-1", want: choice{HostID: "l"},
		},
		"a location's own hosts win over the local host": {
			loads: []hostLoad{load("a", "eu-west-1", 4, 3, 0), load("l", "eu-west-1", 4, 0, 0, localHost)},
			loc:   "eu-west-1", want: choice{HostID: "a"},
		},
		"spread: fewest instances of the fleet first": {
			loads: []hostLoad{load("a", "us-west-2", 4, 1, 1), load("b", "us-west-2", 4, 3, 0)},
			loc:   "us-west-2", want: choice{HostID: "b"},
		},
		"then fewest instances in all": {
			loads: []hostLoad{load("a", "us-west-2", 4, 2, 0), load("b", "us-west-2", 4, 1, 0)},
			loc:   "us-west-2", want: choice{HostID: "b"},
		},
		"then most free slots": {
			loads: []hostLoad{load("a", "us-west-2", 2, 1, 0), load("b", "us-west-2", 8, 1, 0)},
			loc:   "us-west-2", want: choice{HostID: "b"},
		},
		"then the lowest ID": {
			loads: []hostLoad{load("b", "us-west-2", 4, 0, 0), load("a", "us-west-2", 4, 0, 0)},
			loc:   "us-west-2", want: choice{HostID: "a"},
		},
		"full, lost, draining and disconnected hosts take nothing": {
			loads: []hostLoad{load("full", "us-west-2", 2, 2, 0), load("lost", "us-west-2", 4, 0, 0, status(StatusLost)),
				load("drain", "us-west-2", 4, 0, 0, status(StatusDraining)), load("gone", "us-west-2", 4, 0, 0, disconnected),
				load("other", "us-west-2", 1, 0, 0, types(map[string]int{"c5.xlarge": 1}))},
			loc: "us-west-2",
			want: choice{NoCapacity: "the 5 hosts enrolled in us-west-2 cannot take a c5.large instance " +
				"(1 full, 1 run no c5.large, 1 draining, 1 lost, 1 disconnected)"},
		},
		"a type's own slots before *": {
			loads: []hostLoad{{Host: &Host{HostID: "a", Location: "us-west-2", Status: StatusActive, ConnectedTo: "r1",
				Capacity: map[string]int{"c5.large": 1, "*": 4}}, Used: map[string]int{"c5.large": 1}}},
			loc:  "us-west-2",
			want: choice{NoCapacity: "the 1 hosts enrolled in us-west-2 cannot take a c5.large instance (1 full)"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := choose(tc.loads, tc.loc, "c5.large"); got != tc.want {
				t.Fatalf("choose = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestChooseSpreads places instances one by one, as the reconciler does in
// one transaction, and checks they spread evenly.
func TestChooseSpreads(t *testing.T) {
	loads := []hostLoad{load("a", "us-west-2", 4, 0, 0), load("b", "us-west-2", 4, 0, 0), load("c", "us-west-2", 4, 0, 0)}
	count := map[string]int{}
	for range 6 {
		ch := choose(loads, "us-west-2", "c5.large")
		for i := range loads {
			if loads[i].Host.HostID == ch.HostID {
				loads[i].Used["*"]++
				loads[i].Fleet++
			}
		}
		count[ch.HostID]++
	}
	if count["a"] != 2 || count["b"] != 2 || count["c"] != 2 {
		t.Fatalf("6 instances over 3 hosts: %v, want 2 each", count)
	}
}
