package server

import "testing"

func TestProcsFor(t *testing.T) {
	cases := []struct {
		name                string
		start, current      int
		operatorSet, holdsP bool
		want                int
	}{
		{"direct writes: one more P", 2, 2, false, true, 3},
		{"already raised (a second server in the process)", 2, 3, false, true, 3},
		{"the operator chose", 2, 2, true, true, 2},
		{"buffered writes or another store", 2, 2, false, false, 2},
		{"the operator chose more", 2, 8, false, true, 8},
	}
	for _, c := range cases {
		if got := procsFor(c.start, c.current, c.operatorSet, c.holdsP); got != c.want {
			t.Errorf("%s: procsFor(%d, %d, %v, %v) = %d, want %d", c.name, c.start, c.current, c.operatorSet, c.holdsP, got, c.want)
		}
	}
}
