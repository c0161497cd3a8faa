package hosts

import (
	"testing"
	"time"
)

func TestHeartbeatInterval(t *testing.T) {
	tests := []struct {
		hosts int
		want  time.Duration
	}{
		{0, 10 * time.Second},
		{1, 10 * time.Second},
		{500, 10 * time.Second},
		{501, 10020 * time.Millisecond},
		{1000, 20 * time.Second},
		{10000, 200 * time.Second},
	}
	for _, tc := range tests {
		if got := heartbeatInterval(tc.hosts, 10*time.Second, 50); got != tc.want {
			t.Errorf("heartbeatInterval(%d) = %s, want %s", tc.hosts, got, tc.want)
		}
		// The bound: all hosts together send at most 50 a second.
		if rate := float64(tc.hosts) / heartbeatInterval(tc.hosts, 10*time.Second, 50).Seconds(); rate > 50.0001 {
			t.Errorf("%d hosts heartbeat %.1f times a second", tc.hosts, rate)
		}
	}
}

func TestIsLost(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tm := Timings{HeartbeatGrace: 20 * time.Second, StartGrace: 60 * time.Second, HeartbeatMin: 10 * time.Second}
	started := t0.Add(-time.Hour)
	tests := map[string]struct {
		h       Host
		now     time.Time
		started time.Time
		want    bool
	}{
		"heard within interval and grace":   {Host{Status: StatusActive, LastSeen: t0, Interval: 10 * time.Second}, t0.Add(29 * time.Second), started, false},
		"silent for interval plus grace":    {Host{Status: StatusActive, LastSeen: t0, Interval: 10 * time.Second}, t0.Add(30 * time.Second), started, true},
		"the interval it was told counts":   {Host{Status: StatusActive, LastSeen: t0, Interval: 40 * time.Second}, t0.Add(59 * time.Second), started, false},
		"no interval recorded: the minimum": {Host{Status: StatusActive, LastSeen: t0}, t0.Add(30 * time.Second), started, true},
		"draining hosts are lost too":       {Host{Status: StatusDraining, LastSeen: t0, Interval: 10 * time.Second}, t0.Add(time.Minute), started, true},
		"already lost":                      {Host{Status: StatusLost, LastSeen: t0}, t0.Add(time.Hour), started, false},
		"start grace after Hoist started":   {Host{Status: StatusActive, LastSeen: t0.Add(-time.Hour)}, t0.Add(59 * time.Second), t0, false},
		"start grace ends":                  {Host{Status: StatusActive, LastSeen: t0.Add(-time.Hour)}, t0.Add(60 * time.Second), t0, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tm.isLost(&tc.h, tc.now, tc.started); got != tc.want {
				t.Fatalf("isLost = %v, want %v", got, tc.want)
			}
		})
	}
}
