package hosts

import (
	"fmt"
	"sort"
	"strings"
)

// hostLoad is a host with what runs on it, as the chooser sees it.
type hostLoad struct {
	Host *Host
	// Used counts its live instances by capacity key (an instance type,
	// or "*").
	Used map[string]int
	// Fleet counts its live instances of the fleet being placed.
	Fleet int
}

// choice is the chooser's answer: a host, this replica's own provider
// (InProcess: no host serves the location), or why no host can take the
// instance (NoCapacity).
type choice struct {
	HostID     string
	InProcess  bool
	NoCapacity string
}

// capacityKey is the entry of a host's capacity an instance of type
// itype uses: its own type when the host lists it, else "*" ("" when the
// host runs no instance of that type).
func capacityKey(h *Host, itype string) string {
	if _, ok := h.Capacity[itype]; ok {
		return itype
	}
	if _, ok := h.Capacity["*"]; ok {
		return "*"
	}
	return ""
}

// free is how many more instances of type itype the host can take.
func (l hostLoad) free(itype string) int {
	k := capacityKey(l.Host, itype)
	if k == "" {
		return 0
	}
	return l.Host.Capacity[k] - l.Used[k]
}

// choose picks the host of a new instance of type itype in location loc,
// deterministically: the hosts enrolled in loc serve it (if none is, the
// hosts marked Local do; if none of those either, this replica's own
// provider). Among the hosts that serve it, only ACTIVE, connected ones
// with a free slot for the type can take it; of those, the one with the
// fewest instances of the fleet (spreading a fleet over its hosts), then
// the fewest instances in all, then the most free slots, then the lowest
// host ID.
func choose(loads []hostLoad, loc, itype string) choice {
	var serving []hostLoad
	for _, l := range loads {
		if !l.Host.Local && l.Host.Location == loc {
			serving = append(serving, l)
		}
	}
	if len(serving) == 0 {
		for _, l := range loads {
			if l.Host.Local {
				serving = append(serving, l)
			}
		}
	}
	if len(serving) == 0 {
		return choice{InProcess: true}
	}
	var ok []hostLoad
	for _, l := range serving {
		if l.Host.Status == StatusActive && l.Host.ConnectedTo != "" && l.free(itype) > 0 {
			ok = append(ok, l)
		}
	}
	if len(ok) == 0 {
		return choice{NoCapacity: whyFull(serving, loc, itype)}
	}
	sort.Slice(ok, func(i, j int) bool {
		a, b := ok[i], ok[j]
		if a.Fleet != b.Fleet {
			return a.Fleet < b.Fleet
		}
		if ta, tb := total(a.Used), total(b.Used); ta != tb {
			return ta < tb
		}
		if fa, fb := a.free(itype), b.free(itype); fa != fb {
			return fa > fb
		}
		return a.Host.HostID < b.Host.HostID
	})
	return choice{HostID: ok[0].Host.HostID}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// whyFull says why none of the hosts serving a location can take an
// instance: how many are in each state.
func whyFull(serving []hostLoad, loc, itype string) string {
	counts := map[string]int{}
	for _, l := range serving {
		switch {
		case l.Host.Status == StatusLost:
			counts["lost"]++
		case l.Host.Status == StatusDraining:
			counts["draining"]++
		case l.Host.ConnectedTo == "":
			counts["disconnected"]++
		case capacityKey(l.Host, itype) == "":
			counts["run no "+itype]++
		default:
			counts["full"]++
		}
	}
	var parts []string
	for _, k := range []string{"full", "run no " + itype, "draining", "lost", "disconnected"} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return fmt.Sprintf("the %d hosts enrolled in %s cannot take a %s instance (%s)", len(serving), loc, itype, strings.Join(parts, ", "))
}
