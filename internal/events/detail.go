package events

// Detail types of GameLift's events (the envelope's "detail-type").
const (
	DetailTypeQueuePlacement = "GameLift Queue Placement Event"
	DetailTypeMatchmaking    = "GameLift Matchmaking Event"
)

// Queue placement event types (the detail's "type").
const (
	PlacementFulfilled = "PlacementFulfilled"
	PlacementCancelled = "PlacementCancelled"
	PlacementTimedOut  = "PlacementTimedOut"
	PlacementFailed    = "PlacementFailed"
)

// QueuePlacementDetail is the "detail" of a queue placement event, in
// GameLift's field names; times are RFC 3339 with milliseconds, and the
// port is a string, as the EventBridge schema of the event types it. Only
// PlacementFulfilled carries the game session's fields.
type QueuePlacementDetail struct {
	Type                 string                `json:"type"`
	PlacementID          string                `json:"placementId"`
	Port                 string                `json:"port,omitempty"`
	GameSessionArn       string                `json:"gameSessionArn,omitempty"`
	IPAddress            string                `json:"ipAddress,omitempty"`
	DNSName              string                `json:"dnsName,omitempty"`
	StartTime            string                `json:"startTime,omitempty"`
	EndTime              string                `json:"endTime,omitempty"`
	GameSessionRegion    string                `json:"gameSessionRegion,omitempty"`
	PlacedPlayerSessions []PlacedPlayerSession `json:"placedPlayerSessions,omitempty"`
	CustomEventData      string                `json:"customEventData,omitempty"`
}

// PlacedPlayerSession is one player session of a fulfilled placement.
type PlacedPlayerSession struct {
	PlayerID        string `json:"playerId"`
	PlayerSessionID string `json:"playerSessionId"`
}
