package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// GameLift's dimensions, as label names.
const (
	labelFleet    = "FleetId"
	labelLocation = "Location"
	labelQueue    = "QueueName"
	labelConfig   = "ConfigurationName"
	labelGroup    = "GameServerGroup"
)

// gameliftPrefix begins the name of every GameLift metric: gamelift_ then
// the CloudWatch metric's own name.
const gameliftPrefix = "gamelift_"

// waitBuckets are the buckets of GameLift's time metrics (seconds): from a
// second to GameLift's longest request timeout (43,200 s).
var waitBuckets = []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 43200}

// gameliftCounters are GameLift's event metrics, this replica's.
type gameliftCounters struct {
	// Fleets (FleetId, Location).
	playerSessionActivations, serverProcessActivations, serverProcessTerminations,
	serverProcessAbnormalTerminations, gameSessionInterruptions *prometheus.CounterVec
	// Queues (QueueName).
	placementsStarted, placementsSucceeded, placementsCanceled, placementsFailed,
	placementsTimedOut *prometheus.CounterVec
	// Matchmaking configurations (ConfigurationName).
	ticketsStarted, playersStarted, matchesCreated, matchesAccepted, matchesRejected,
	matchAcceptancesTimedOut, matchesPlaced, ticketsFailed, ticketsTimedOut, ticketsCanceled *prometheus.CounterVec
	timeToMatch, timeToTicketSuccess, timeToTicketCancel *prometheus.HistogramVec
	// FleetIQ (GameServerGroup).
	gameServerInterruptions *prometheus.CounterVec
}

// newGameliftCounters registers GameLift's event metrics with reg.
func newGameliftCounters(reg prometheus.Registerer) gameliftCounters {
	fleet := func(name, help string) *prometheus.CounterVec {
		return counter(reg, gameliftPrefix+name, help, labelFleet, labelLocation)
	}
	queue := func(name, help string) *prometheus.CounterVec {
		return counter(reg, gameliftPrefix+name, help, labelQueue)
	}
	config := func(name, help string) *prometheus.CounterVec {
		return counter(reg, gameliftPrefix+name, help, labelConfig)
	}
	configTime := func(name, help string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: gameliftPrefix + name, Help: help, Buckets: waitBuckets}, []string{labelConfig})
		reg.MustRegister(h)
		return h
	}
	return gameliftCounters{
		playerSessionActivations:          fleet("PlayerSessionActivations", "Player sessions that went from RESERVED to ACTIVE (the game server accepted the player)."),
		serverProcessActivations:          fleet("ServerProcessActivations", "Server processes that became ACTIVE (called ProcessReady)."),
		serverProcessTerminations:         fleet("ServerProcessTerminations", "Server processes that ended (TERMINATED), for any reason."),
		serverProcessAbnormalTerminations: fleet("ServerProcessAbnormalTerminations", "Server processes that ended abnormally: crashed, unhealthy, not ready or not activating in time, or not exiting in time after TerminateProcess."),
		gameSessionInterruptions:          fleet("GameSessionInterruptions", "Game sessions that ended TERMINATED with StatusReason INTERRUPTED (their instance's host was lost)."),

		placementsStarted:   queue("PlacementsStarted", "Game session placement requests added to the queue (StartGameSessionPlacement, and FlexMatch's placements of matches)."),
		placementsSucceeded: queue("PlacementsSucceeded", "Game session placements that ended FULFILLED."),
		placementsCanceled:  queue("PlacementsCanceled", "Game session placements that ended CANCELLED."),
		placementsFailed:    queue("PlacementsFailed", "Game session placements that ended FAILED."),
		placementsTimedOut:  queue("PlacementsTimedOut", "Game session placements that ended TIMED_OUT."),

		ticketsStarted:           config("TicketsStarted", "Matchmaking tickets created (StartMatchmaking, StartMatchBackfill)."),
		playersStarted:           config("PlayersStarted", "Players in the matchmaking tickets created."),
		matchesCreated:           config("MatchesCreated", "Potential matches created."),
		matchesAccepted:          config("MatchesAccepted", "Potential matches every player accepted."),
		matchesRejected:          config("MatchesRejected", "Potential matches at least one player rejected."),
		matchAcceptancesTimedOut: config("MatchAcceptancesTimedOut", "Potential matches whose acceptance timed out."),
		matchesPlaced:            config("MatchesPlaced", "Matches placed in a game session (MatchmakingSucceeded)."),
		ticketsFailed:            config("TicketsFailed", "Matchmaking tickets that ended FAILED."),
		ticketsTimedOut:          config("TicketsTimedOut", "Matchmaking tickets that ended TIMED_OUT."),
		ticketsCanceled:          config("TicketsCanceled", "Matchmaking tickets that ended CANCELLED (not a GameLift metric; GameLift has TimeToTicketCancel only)."),
		timeToMatch:              configTime("TimeToMatch", "Seconds from a ticket's creation to its potential match's creation."),
		timeToTicketSuccess:      configTime("TimeToTicketSuccess", "Seconds from a ticket's creation to its match's placement (MatchmakingSucceeded)."),
		timeToTicketCancel:       configTime("TimeToTicketCancel", "Seconds from a ticket's creation to its cancellation."),

		gameServerInterruptions: counter(reg, gameliftPrefix+"GameServerInterruptions", "Game servers on instances set to SPOT_TERMINATING (Hoist's stand-in for a Spot interruption).", labelGroup),
	}
}

// counter registers a counter vector with reg.
func counter(reg prometheus.Registerer, name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	reg.MustRegister(c)
	return c
}
