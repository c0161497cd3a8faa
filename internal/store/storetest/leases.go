package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

var leasesTests = []test{
	{"ByPrefix", testLeasesByPrefix},
	{"Expired", testLeasesExpired},
	{"GivenUp", plain(testLeasesGivenUp)},
}

// leases calls Leases and fails the test on an error.
func leases(t *testing.T, s store.Store, prefix string) []store.Grant {
	t.Helper()
	gs, err := s.Leases(t.Context(), prefix)
	if err != nil {
		t.Fatalf("Leases(%q): %v", prefix, err)
	}
	return gs
}

// describeGrants lists name=holder/term of grants.
func describeGrants(gs []store.Grant) string {
	out := ""
	for _, g := range gs {
		out += fmt.Sprintf("%s=%s/%d ", g.Name, g.Holder, g.Term)
	}
	return out
}

// testLeasesByPrefix: Leases returns the held leases whose names begin
// with the prefix, in name order, as AcquireLease granted them.
func testLeasesByPrefix(t *testing.T, s store.Store, clock *Clock) {
	want := map[string]store.Grant{}
	for _, l := range []struct{ name, holder string }{
		{"shard/placement/q2", "B"}, {"shard/placement/q1", "A"}, {"shard/matchmaking/c1", "A"},
		{"shard/placementX", "C"}, {"replica/A", "A"},
	} {
		g, ok := acquire(t, s, l.name, l.holder, time.Minute)
		if !ok {
			t.Fatalf("%s: not granted", l.name)
		}
		want[l.name] = g
	}
	got := leases(t, s, "shard/placement/")
	if d := describeGrants(got); d != "shard/placement/q1=A/1 shard/placement/q2=B/1 " {
		t.Fatalf("Leases(shard/placement/) = %s", d)
	}
	for _, g := range got {
		w := want[g.Name]
		if g.Holder != w.Holder || g.Term != w.Term || g.Expires.Sub(w.Expires).Abs() > time.Millisecond {
			t.Errorf("%s: %+v, granted %+v", g.Name, g, w)
		}
		if !g.Expires.After(clock.Now().Add(59 * time.Second)) {
			t.Errorf("%s expires %v, want about a minute after %v", g.Name, g.Expires, clock.Now())
		}
	}
	if n := len(leases(t, s, "")); n != 5 {
		t.Errorf("Leases(\"\") returned %d leases, want all 5", n)
	}
	if gs := leases(t, s, "shard/fleets/"); len(gs) != 0 {
		t.Errorf("Leases of an unused prefix: %s", describeGrants(gs))
	}
}

// testLeasesExpired: an expired lease is not listed; taken again, it is,
// with its new holder and term.
func testLeasesExpired(t *testing.T, s store.Store, clock *Clock) {
	acquire(t, s, "shard/x/1", "A", 10*time.Second)
	acquire(t, s, "shard/x/2", "A", 30*time.Second)
	clock.Advance(15 * time.Second)
	if d := describeGrants(leases(t, s, "shard/x/")); d != "shard/x/2=A/1 " {
		t.Fatalf("after shard/x/1 expired: %s, want shard/x/2 alone", d)
	}
	acquire(t, s, "shard/x/1", "B", 10*time.Second)
	if d := describeGrants(leases(t, s, "shard/x/")); d != "shard/x/1=B/2 shard/x/2=A/1 " {
		t.Fatalf("after B took shard/x/1: %s", d)
	}
}

// testLeasesGivenUp: a lease given up (ttl 0) is not listed.
func testLeasesGivenUp(t *testing.T, s store.Store) {
	acquire(t, s, "shard/y/1", "A", time.Minute)
	acquire(t, s, "shard/y/1", "A", 0)
	if gs := leases(t, s, "shard/y/"); len(gs) != 0 {
		t.Fatalf("a lease given up is listed: %s", describeGrants(gs))
	}
}
