package main

import "testing"

// TestSmallRun runs the measurement with 2,000 sessions and a few requests,
// so that the tool keeps working (the documented figures use the defaults).
func TestSmallRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts Hoist twice")
	}
	if err := run(2000, 20, []int{1, 2}, []int{0, 20}); err != nil {
		t.Fatal(err)
	}
}
