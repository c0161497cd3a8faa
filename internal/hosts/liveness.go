package hosts

import (
	"time"
)

// Heartbeats: an agent heartbeats every heartbeatInterval, which grows
// with the number of hosts so that all of them together send at most
// MaxRate heartbeats a second (as Nomad scales its heartbeat TTL), and
// never less than MinInterval apart. A host is lost once it has been
// silent for its interval plus Grace; after Hoist starts, every host has
// StartGrace to reconnect first.

// heartbeatInterval is the interval of n hosts: n / rate seconds, at least
// min.
func heartbeatInterval(n int, min time.Duration, rate float64) time.Duration {
	if rate <= 0 {
		return min
	}
	d := time.Duration(float64(n) / rate * float64(time.Second))
	return max(d, min).Round(time.Millisecond)
}

// lostAt is when a host that was last seen at lastSeen, told to heartbeat
// every interval, is declared lost: after interval plus grace of silence,
// and never before startedAt plus startGrace (the replica judging it
// started then).
func lostAt(lastSeen time.Time, interval, grace time.Duration, startedAt time.Time, startGrace time.Duration) time.Time {
	t := lastSeen.Add(interval + grace)
	if s := startedAt.Add(startGrace); s.After(t) {
		t = s
	}
	return t
}

// isLost reports whether host h is lost at now.
func (t Timings) isLost(h *Host, now, startedAt time.Time) bool {
	if h.Status == StatusLost {
		return false
	}
	interval := h.Interval
	if interval <= 0 {
		interval = t.HeartbeatMin
	}
	return !now.Before(lostAt(h.LastSeen, interval, t.HeartbeatGrace, startedAt, t.StartGrace))
}
