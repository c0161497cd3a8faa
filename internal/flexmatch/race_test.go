//go:build race

package flexmatch

// raceEnabled: the race detector makes sync.Pool drop items, so
// allocation counts do not hold.
const raceEnabled = true
