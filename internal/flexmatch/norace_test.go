//go:build !race

package flexmatch

const raceEnabled = false
