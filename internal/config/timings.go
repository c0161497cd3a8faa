package config

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Timings are the background timers --timings may override. A zero field
// keeps the default of the domain that owns the timer (the defaults follow
// GameLift and are listed in docs/configuration.md).
type Timings struct {
	BuildsRetainedCheck time.Duration

	FleetIQStatusStep       time.Duration
	FleetIQSweep            time.Duration
	FleetIQDeletedRetention time.Duration

	SessionsSweep             time.Duration
	SessionsReservation       time.Duration
	SessionsActivationTimeout time.Duration
	SessionsHeartbeatInterval time.Duration
	SessionsHeartbeatJitter   time.Duration
	SessionsReadyTimeout      time.Duration
	SessionsTerminateGrace    time.Duration

	PlacementInterval time.Duration

	FleetsReconcile         time.Duration
	FleetsPolicyInterval    time.Duration
	FleetsActivationTimeout time.Duration
	FleetsFirstReadyTimeout time.Duration
	FleetsLaunchBackoff     time.Duration
	FleetsTokenTTL          time.Duration

	ProcessesStagger        time.Duration
	ProcessesTerminateGrace time.Duration
	ProcessesShutdownGrace  time.Duration
	ProcessesKillGrace      time.Duration
	ProcessesMinUptime      time.Duration
	ProcessesCrashBackoff   time.Duration

	EventsDeliver   time.Duration
	EventsBackoff   time.Duration
	EventsGiveUp    time.Duration
	EventsRetention time.Duration

	AgentsHeartbeatTimeout time.Duration
	AgentsCheckInterval    time.Duration

	HostsHeartbeat      time.Duration
	HostsHeartbeatGrace time.Duration
	HostsStartGrace     time.Duration
	HostsCheck          time.Duration
}

// Timing declares one timer: its name in --timings, what it is, and its
// field of Timings (TestTimingsTable checks that every field has exactly
// one entry).
type Timing struct {
	Name  string
	Help  string
	field func(*Timings) *time.Duration
}

var timings = []Timing{
	{"builds.retained-check", "how often a deleted build's files kept for its fleets are checked for removal", func(t *Timings) *time.Duration { return &t.BuildsRetainedCheck }},
	{"fleetiq.status-step", "time a game server group spends in each transient status", func(t *Timings) *time.Duration { return &t.FleetIQStatusStep }},
	{"fleetiq.sweep", "how often expired claims and health are swept", func(t *Timings) *time.Duration { return &t.FleetIQSweep }},
	{"fleetiq.deleted-retention", "how long a DELETED game server group stays visible", func(t *Timings) *time.Duration { return &t.FleetIQDeletedRetention }},
	{"sessions.sweep", "how often the session timers are checked", func(t *Timings) *time.Duration { return &t.SessionsSweep }},
	{"sessions.reservation", "how long a player session stays RESERVED", func(t *Timings) *time.Duration { return &t.SessionsReservation }},
	{"sessions.activation-timeout", "game session activation timeout when the fleet sets none", func(t *Timings) *time.Duration { return &t.SessionsActivationTimeout }},
	{"sessions.heartbeat-interval", "the SDK's heartbeat period", func(t *Timings) *time.Duration { return &t.SessionsHeartbeatInterval }},
	{"sessions.heartbeat-jitter", "the SDK's heartbeat jitter", func(t *Timings) *time.Duration { return &t.SessionsHeartbeatJitter }},
	{"sessions.ready-timeout", "how long a process may take to call ProcessReady", func(t *Timings) *time.Duration { return &t.SessionsReadyTimeout }},
	{"sessions.terminate-grace", "how long a TERMINATING process has before Hoist escalates", func(t *Timings) *time.Duration { return &t.SessionsTerminateGrace }},
	{"placement.interval", "how often pending game session placements are retried", func(t *Timings) *time.Duration { return &t.PlacementInterval }},
	{"fleets.reconcile", "how often fleets are reconciled", func(t *Timings) *time.Duration { return &t.FleetsReconcile }},
	{"fleets.policy-interval", "how often scaling policies are evaluated", func(t *Timings) *time.Duration { return &t.FleetsPolicyInterval }},
	{"fleets.activation-timeout", "how long a fleet location may take to become ACTIVE", func(t *Timings) *time.Duration { return &t.FleetsActivationTimeout }},
	{"fleets.first-ready-timeout", "how long a new fleet location may stay ACTIVATING with no server process ready", func(t *Timings) *time.Duration { return &t.FleetsFirstReadyTimeout }},
	{"fleets.launch-backoff", "first wait after an instance failed to start", func(t *Timings) *time.Duration { return &t.FleetsLaunchBackoff }},
	{"fleets.token-ttl", "lifetime of an Anywhere compute auth token", func(t *Timings) *time.Duration { return &t.FleetsTokenTTL }},
	{"processes.stagger", "least time between two process launches on an instance", func(t *Timings) *time.Duration { return &t.ProcessesStagger }},
	{"processes.terminate-grace", "how long a process has after TerminateProcess before it is killed", func(t *Timings) *time.Duration { return &t.ProcessesTerminateGrace }},
	{"processes.shutdown-grace", "the same while Hoist shuts down", func(t *Timings) *time.Duration { return &t.ProcessesShutdownGrace }},
	{"processes.kill-grace", "how long an unreachable process has after SIGTERM", func(t *Timings) *time.Duration { return &t.ProcessesKillGrace }},
	{"processes.min-uptime", "a process ending sooner than this counts as a crash", func(t *Timings) *time.Duration { return &t.ProcessesMinUptime }},
	{"processes.crash-backoff", "first wait before relaunching a crashed process", func(t *Timings) *time.Duration { return &t.ProcessesCrashBackoff }},
	{"events.deliver", "how often webhook deliveries that are due are looked for", func(t *Timings) *time.Duration { return &t.EventsDeliver }},
	{"events.backoff", "first wait after a webhook delivery failed", func(t *Timings) *time.Duration { return &t.EventsBackoff }},
	{"events.give-up", "how long an event is retried before it is dropped", func(t *Timings) *time.Duration { return &t.EventsGiveUp }},
	{"events.retention", "how long an event is kept once delivered (the live stream replays it)", func(t *Timings) *time.Duration { return &t.EventsRetention }},
	{"agents.heartbeat-timeout", "how long a GameLift Agent may send no heartbeat before its Anywhere compute is IMPAIRED", func(t *Timings) *time.Duration { return &t.AgentsHeartbeatTimeout }},
	{"agents.check-interval", "how often lost agents, and deregistered computes whose agent is connected, are looked for", func(t *Timings) *time.Duration { return &t.AgentsCheckInterval }},
	{"hosts.heartbeat", "least heartbeat interval of pool hosts (it grows with their number)", func(t *Timings) *time.Duration { return &t.HostsHeartbeat }},
	{"hosts.heartbeat-grace", "how long past its interval a silent pool host is LOST", func(t *Timings) *time.Duration { return &t.HostsHeartbeatGrace }},
	{"hosts.start-grace", "how long after Hoist starts no pool host is declared LOST", func(t *Timings) *time.Duration { return &t.HostsStartGrace }},
	{"hosts.check", "how often silent pool hosts are looked for", func(t *Timings) *time.Duration { return &t.HostsCheck }},
}

// lookupTiming returns the timer called name.
func lookupTiming(name string) (Timing, bool) {
	for _, t := range timings {
		if t.Name == name {
			return t, true
		}
	}
	return Timing{}, false
}

// ParseTimings reads "name=duration,..." with the names of timings.
func ParseTimings(v string) (Timings, error) {
	var out Timings
	for _, kv := range strings.Split(v, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, dv, ok := strings.Cut(kv, "=")
		if !ok {
			return Timings{}, fmt.Errorf("%q is not name=duration", kv)
		}
		k = strings.TrimSpace(k)
		tm, known := lookupTiming(k)
		if !known {
			return Timings{}, fmt.Errorf("unknown timer %q (see docs/configuration.md)", k)
		}
		d, err := time.ParseDuration(strings.TrimSpace(dv))
		if err != nil || d <= 0 {
			return Timings{}, fmt.Errorf("%s: want a positive duration such as 2s, got %q", k, dv)
		}
		*tm.field(&out) = d
	}
	return out, nil
}

// String writes the overridden timers as ParseTimings reads them.
func (t Timings) String() string {
	var parts []string
	for _, tm := range timings {
		if d := *tm.field(&t); d != 0 {
			parts = append(parts, tm.Name+"="+d.String())
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// timingsValue is --timings.
type timingsValue Timings

func (v *timingsValue) Set(s string) error {
	t, err := ParseTimings(s)
	if err != nil {
		return err
	}
	*v = timingsValue(t)
	return nil
}

func (v *timingsValue) String() string {
	if v == nil {
		return ""
	}
	return Timings(*v).String()
}
