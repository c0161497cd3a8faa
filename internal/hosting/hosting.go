// Package hosting is the shared data model of managed hosting: the records that
// builds, fleets, computes (instances), server processes, game sessions and
// player sessions are stored as, and the contracts between the packages that
// own them.
//
// Ownership (each record kind is written by one package; others only read it,
// or change it through the owner's exported functions):
//
//	Build, UploadObject          internal/builds    (builds, the S3 upload endpoint)
//	Fleet, FleetEvent, Location,
//	ScalingPolicy, Compute,
//	ComputeAuthToken             internal/fleets    (fleets, locations, scaling, computes,
//	                                                 and the local compute provider that
//	                                                 launches server processes)
//	Process, GameSession,
//	PlayerSession                internal/sessions  (server processes' state as they report it
//	                                                 over the SDK, game sessions, player sessions)
//
// internal/sdkconn carries the Server SDK 5 WebSocket protocol and calls
// sessions through the ProcessAPI interface below (and FlexMatch, for match
// backfill requests, through Backfiller); sessions sends messages to
// processes through a Messenger. fleets launches and stops OS processes and
// tells sessions when one exits (ProcessExited).
//
// Every record is JSON in the store (see internal/store); the api types used
// inside records marshal as they do on the AWS JSON 1.1 wire.
package hosting

import (
	"context"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// Record kinds of managed hosting.
const (
	KindBuild            store.Kind = "Build"
	KindFleet            store.Kind = "Fleet"
	KindFleetEvent       store.Kind = "FleetEvent"
	KindLocation         store.Kind = "Location"
	KindScalingPolicy    store.Kind = "ScalingPolicy"
	KindCompute          store.Kind = "Compute"
	KindComputeAuthToken store.Kind = "ComputeAuthToken"
	KindProcess          store.Kind = "Process"
	KindGameSession      store.Kind = "GameSession"
	KindPlayerSession    store.Kind = "PlayerSession"
)

// Fleet is a fleet's stored state. Record: Kind Fleet, ID = fleet ID,
// Key = string(Attributes.Status).
type Fleet struct {
	Attributes           api.FleetAttributes      `json:"attributes"`
	RuntimeConfiguration api.RuntimeConfiguration `json:"runtimeConfiguration"`
	PortSettings         []api.IpPermission       `json:"portSettings,omitempty"`
	// Locations holds the home location first, then remote/custom ones.
	Locations []FleetLocation `json:"locations"`
	// HomeLocation is the fleet's home Region (or first custom location for
	// Anywhere fleets).
	HomeLocation string `json:"homeLocation"`
	// CA is the PEM of the certificate authority of a GENERATED fleet
	// created by an earlier Hoist (one CA per fleet). No longer written or
	// read: fleet certificates now come from Hoist's one CA (internal/fleets).
	CA string `json:"ca,omitempty"`
}

// FleetLocation is one location of a fleet with its capacity settings.
type FleetLocation struct {
	Location string                   `json:"location"`
	Status   api.FleetStatus          `json:"status"`
	Desired  int32                    `json:"desired"`
	Min      int32                    `json:"min"`
	Max      int32                    `json:"max"`
	Stopped  []api.FleetAction        `json:"stopped,omitempty"`
	Update   api.LocationUpdateStatus `json:"update,omitempty"`
}

// Compute is an instance of a managed fleet or a registered Anywhere compute.
// Record: Kind Compute, ID = FleetID + "/" + ComputeName, Parent = fleet ID,
// Key = location.
type Compute struct {
	FleetID     string            `json:"fleetId"`
	ComputeName string            `json:"computeName"` // the instance ID on managed fleets
	Location    string            `json:"location"`
	Status      api.ComputeStatus `json:"status"` // PENDING | ACTIVE | TERMINATING
	// InstanceStatus is the DescribeInstances status of a managed instance.
	InstanceStatus api.InstanceStatus `json:"instanceStatus,omitempty"`
	IPAddress      string             `json:"ipAddress"`
	DNSName        string             `json:"dnsName,omitempty"`
	CreationTime   time.Time          `json:"creationTime"`
	// Host is the host that runs this instance's processes (managed
	// fleets only; "" for Anywhere computes): a Hoist replica's ID for its
	// in-process provider, else a pool host's ID (internal/hosts).
	Host string `json:"host,omitempty"`
	// Draining: the instance's host drains; sessions places no new game
	// session on it (fleets replaces it and stops it once it hosts none).
	Draining bool `json:"draining,omitempty"`
	// StopReason, set when Status is TERMINATING, says why it stops (a
	// host that reconnects is told it with the instance).
	StopReason string `json:"stopReason,omitempty"`
	// Dir is the instance's directory on Host (managed fleets only).
	Dir string `json:"dir,omitempty"`
	// CertificatePath, when the fleet's certificates are GENERATED, is where
	// the instance's certificate chain and key were written.
	CertificatePath string `json:"certificatePath,omitempty"`
	// GameRoot is the directory on Host that the game's /local/game maps to
	// (managed fleets only). sessions collects the log paths a process gives
	// in ProcessReady from under it when the process's game session ends.
	GameRoot string `json:"gameRoot,omitempty"`
}

// ComputeAuthToken authorizes server processes on a compute to connect to the
// SDK endpoint. Record: Kind ComputeAuthToken, ID = SHA-256 hex of the token
// (the token itself is never stored), Parent = FleetID + "/" + ComputeName.
type ComputeAuthToken struct {
	FleetID     string    `json:"fleetId"`
	ComputeName string    `json:"computeName"`
	Expires     time.Time `json:"expires"`
}

// ProcessState is a server process's lifecycle state as Hoist tracks it.
type ProcessState string

const (
	// ProcessLaunching: started (or, on Anywhere, connected) but not ready.
	ProcessLaunching ProcessState = "LAUNCHING"
	// ProcessActive: called ProcessReady (ActivateServerProcess).
	ProcessActive ProcessState = "ACTIVE"
	// ProcessTerminating: asked to end or ending (ProcessEnding called, or
	// TerminateProcess sent).
	ProcessTerminating ProcessState = "TERMINATING"
	// ProcessTerminated: exited or gone.
	ProcessTerminated ProcessState = "TERMINATED"
)

// Process is one server process. Record: Kind Process, ID = process ID,
// Parent = fleet ID, Key = ProcessKey(location, state, idle), Rank = the
// Unix millisecond at which sessions' background sweep must next look at it
// (a heartbeat, readiness or termination deadline; math.MaxInt64 for none).
type Process struct {
	ID          string       `json:"id"`
	FleetID     string       `json:"fleetId"`
	ComputeName string       `json:"computeName"`
	Location    string       `json:"location"`
	State       ProcessState `json:"state"`
	LaunchPath  string       `json:"launchPath,omitempty"`
	Parameters  string       `json:"parameters,omitempty"`
	Port        int32        `json:"port,omitempty"`
	LogPaths    []string     `json:"logPaths,omitempty"`
	SDKVersion  string       `json:"sdkVersion,omitempty"`
	SDKLanguage string       `json:"sdkLanguage,omitempty"`
	// GameSessionID is the game session the process hosts ("" when idle).
	GameSessionID string    `json:"gameSessionId,omitempty"`
	LaunchedAt    time.Time `json:"launchedAt"`
	ReadyAt       time.Time `json:"readyAt,omitempty"`
	// LastHeartbeat and UnhealthyReports track SDK health reports.
	LastHeartbeat    time.Time `json:"lastHeartbeat,omitempty"`
	UnhealthyReports int       `json:"unhealthyReports,omitempty"`
	// ConnectedTo is the replica holding the process's WebSocket ("" when
	// not connected).
	ConnectedTo string `json:"connectedTo,omitempty"`
	// ConnID is the Conn.ConnID of the process's current WebSocket; a
	// Disconnected for any other (older) socket is ignored.
	ConnID string `json:"connId,omitempty"`
	// DisconnectedAt is when the last WebSocket closed (zero while connected).
	DisconnectedAt time.Time `json:"disconnectedAt,omitempty"`
	// TerminatingAt is when the process entered TERMINATING.
	TerminatingAt time.Time `json:"terminatingAt,omitempty"`
	// OutputPath, set by fleets at launch, is the file on the compute's Host
	// holding the process's captured stdout and stderr; sessions adds it to
	// the game session's collected logs.
	OutputPath string    `json:"outputPath,omitempty"`
	EndedAt    time.Time `json:"endedAt,omitempty"`
	EndReason  string    `json:"endReason,omitempty"`
}

// ProcessKey is the store Key of a process record: placement finds an idle
// ready process of a fleet location with one List(Parent=fleet,
// Key=ProcessKey(loc, ProcessActive, true), Limit=1). sessions files a
// process as idle only while it hosts no game session and its WebSocket is
// connected (a process hosts at most one game session in its life).
func ProcessKey(location string, state ProcessState, idle bool) string {
	k := location + "/" + string(state)
	if state == ProcessActive && idle {
		k += "/IDLE"
	}
	return k
}

// GameSession is a game session's stored state. Record: Kind GameSession,
// ID = the game session ID (its ARN, as GameLift uses), Parent = fleet ID,
// Key = string(Session.Status), Rank = the Unix millisecond at which
// sessions' sweep must next look at it (activation deadline, termination
// grace, or retention end).
type GameSession struct {
	Session api.GameSession `json:"session"`
	// ProcessID hosts the session.
	ProcessID        string               `json:"processId"`
	IdempotencyToken string               `json:"idempotencyToken,omitempty"`
	ProtectionPolicy api.ProtectionPolicy `json:"protectionPolicy,omitempty"`
	// ActivationDeadline is when an ACTIVATING session goes to ERROR.
	ActivationDeadline time.Time `json:"activationDeadline,omitempty"`
	LogPaths           []string  `json:"logPaths,omitempty"`
	// LogDir is where Hoist collected the process's logs when the session ended.
	LogDir string `json:"logDir,omitempty"`
	// LogReplica is the replica whose data directory holds LogDir.
	LogReplica string `json:"logReplica,omitempty"`
	// RequestHash fingerprints the CreateGameSession request, so a repeat
	// with the same idempotency token and different parameters is refused.
	RequestHash string `json:"requestHash,omitempty"`
	// TerminatingAt is when the session entered TERMINATING.
	TerminatingAt time.Time `json:"terminatingAt,omitempty"`
	// PlacementID is the queue placement this game session is an attempt
	// of ("" for CreateGameSession): its activation fulfils the placement.
	PlacementID string `json:"placementId,omitempty"`
	// PlacementQueue is that placement's queue, so that the activation
	// reads the placement and its queue together ("" in the records of a
	// Hoist before it: they are read one after the other).
	PlacementQueue string `json:"placementQueue,omitempty"`
}

// PlayerSession is a player session's stored state. Record: Kind
// PlayerSession, ID = player session ID, Parent = game session ID,
// Key = string(Session.Status), Rank = ReservedUntil (Unix ms) while
// RESERVED, else the termination time.
type PlayerSession struct {
	Session api.PlayerSession `json:"session"`
	// ReservedUntil is when a RESERVED session times out.
	ReservedUntil time.Time `json:"reservedUntil,omitempty"`
}

// FleetEvent is one fleet event. Record: Kind FleetEvent, ID = event ID,
// Parent = fleet ID (listed in creation order).
type FleetEvent struct {
	Event api.Event `json:"event"`
	// SetupLog names the instance whose setup log the event's
	// PreSignedLogUrl serves ("" for none).
	SetupLog string `json:"setupLog,omitempty"`
	// ProcessLog names the server process (of the event's fleet) whose
	// kept output the event's PreSignedLogUrl serves ("" for none).
	ProcessLog string `json:"processLog,omitempty"`
}

// Message is a message from Hoist to a server process (section 3 of the
// Server SDK 5 protocol notes): a JSON object whose Action names it. sdkconn
// adds StatusCode 200 and a RequestId.
type Message map[string]any

// Messenger delivers messages to connected server processes. sdkconn
// implements it for processes connected to this replica; a multi-replica
// deployment routes to the replica named by Process.ConnectedTo.
type Messenger interface {
	// SendToProcess delivers msg to the process, or returns an error if it is
	// not connected.
	SendToProcess(ctx context.Context, processID string, msg Message) error
}

// AgentMessenger delivers messages to the GameLift Agents of Anywhere
// computes (the agent endpoint, internal/agentconn, implements it for the
// agents connected to this replica; a deployment of several replicas routes
// to the one holding the compute's socket). msg is a message of the agent
// protocol (internal/agentproto): its Action and fields.
type AgentMessenger interface {
	// SendToCompute delivers msg to the compute's agent, or returns an
	// error if it has none connected.
	SendToCompute(ctx context.Context, fleetID, computeName string, msg Message) error
}

// ComputeAgents is what sessions needs of the agents of Anywhere computes:
// whether a compute has one (so that Hoist can have its processes killed),
// and a way to message it.
type ComputeAgents interface {
	AgentMessenger
	// HasAgent reports, reading tx, whether an agent serves the compute:
	// it sends heartbeats and has not been declared lost.
	HasAgent(ctx context.Context, tx store.Tx, fleetID, computeName string) (bool, error)
	// AgentHolder returns, reading tx, the replica holding the compute's
	// agent connection ("" for none), so that a message for it is routed
	// there.
	AgentHolder(ctx context.Context, tx store.Tx, fleetID, computeName string) (string, error)
}

// Conn identifies an authenticated SDK connection.
type Conn struct {
	// ConnID is unique per WebSocket (sdkconn assigns it), so that when a
	// process moves to a new socket (RefreshConnection, reconnect) the old
	// socket's Disconnected does not mark it disconnected.
	ConnID      string
	ProcessID   string
	FleetID     string
	ComputeName string
	SDKVersion  string
	SDKLanguage string
}

// SDKError is an error answered to a server process: Status is the reply's
// StatusCode (400 bad request, 401/403 not allowed, 404 not found, 409
// conflict, 429 throttled, 500 internal).
type SDKError struct {
	Status  int
	Message string
}

func (e *SDKError) Error() string { return e.Message }

// ProcessAPI is what server processes call over the SDK (section 2 of the
// protocol notes). sessions implements it; sdkconn calls it for each request
// after authenticating the connection, and answers with the returned result
// fields (merged at the top level of the reply) or error (an *SDKError, or
// 500).
type ProcessAPI interface {
	// Connected is called when a process's WebSocket is established (again).
	Connected(ctx context.Context, c Conn) error
	// Disconnected is called when it closes; normal is true for close codes
	// 1000/1001 or a drop after ProcessEnding.
	Disconnected(ctx context.Context, c Conn, normal bool)
	ProcessReady(ctx context.Context, c Conn, port int32, logPaths []string) error
	Heartbeat(ctx context.Context, c Conn, healthy bool) error
	ActivateGameSession(ctx context.Context, c Conn, gameSessionID string) error
	AcceptPlayerSession(ctx context.Context, c Conn, gameSessionID, playerSessionID string) error
	RemovePlayerSession(ctx context.Context, c Conn, gameSessionID, playerSessionID string) error
	UpdatePlayerSessionCreationPolicy(ctx context.Context, c Conn, gameSessionID string, policy api.PlayerSessionCreationPolicy) error
	DescribePlayerSessions(ctx context.Context, c Conn, req DescribePlayerSessionsRequest) (map[string]any, error)
	ProcessEnding(ctx context.Context, c Conn) error
	GetComputeCertificate(ctx context.Context, c Conn) (map[string]any, error)
	GetFleetRoleCredentials(ctx context.Context, c Conn, roleArn, roleSessionName string) (map[string]any, error)
	// CheckGameSessionHost answers nil when the process hosts game session
	// gameSessionID and it is ACTIVE; else an *SDKError: 403 when the
	// process does not host it, 400 when it is not ACTIVE. sdkconn asks it
	// before a backfill request reaches the Backfiller.
	CheckGameSessionHost(ctx context.Context, c Conn, gameSessionID string) error
}

// BackfillRequest is a StartMatchBackfill request of a server process: it
// asks FlexMatch to find players for the open slots of its game session.
// sdkconn has checked that the process hosts GameSessionArn.
type BackfillRequest struct {
	// TicketID is the process's choice of ticket ID ("" for one generated).
	TicketID, GameSessionArn, ConfigurationArn string
	// Players are the game session's current players (PlayerId,
	// PlayerAttributes, Team, LatencyInMs).
	Players []api.Player
}

// Backfiller serves the match backfill requests of server processes
// (internal/matchmaking implements it). Errors are answered as
// ProcessAPI's are (an *SDKError, or 500).
type Backfiller interface {
	// StartMatchBackfill starts a backfill ticket and returns its ID.
	StartMatchBackfill(ctx context.Context, c Conn, req BackfillRequest) (ticketID string, err error)
	// StopMatchBackfill cancels a backfill ticket.
	StopMatchBackfill(ctx context.Context, c Conn, gameSessionArn, configurationArn, ticketID string) error
}

// DescribePlayerSessionsRequest is the SDK's DescribePlayerSessions request.
type DescribePlayerSessionsRequest struct {
	GameSessionID, PlayerID, PlayerSessionID, StatusFilter, NextToken string
	Limit                                                             int
}

// TokenVerifier authenticates an SDK connection: it returns the fleet and
// compute a token was issued for (fleets implements it over
// ComputeAuthToken records), or an error when the token is unknown or
// expired.
type TokenVerifier interface {
	VerifyComputeToken(ctx context.Context, token string) (fleetID, computeName string, err error)
}

// ProcessVerifier says whether a process may connect with the credentials
// of a compute (fleets implements it): on an instance of a managed fleet
// only the processes Hoist launched there and that still run may (a
// token taken from one cannot be used to speak for another process); an
// Anywhere compute's game servers register their own process IDs.
type ProcessVerifier interface {
	VerifyProcess(ctx context.Context, fleetID, computeName, processID string) error
}

// TokenIssuer issues compute auth tokens to connected server processes:
// sdkconn sends a fresh one in a RefreshConnection message before the
// credential a process connected with (a token, or a SigV4-signed URL)
// expires, so that the process's reconnects keep working, as GameLift does.
// fleets implements it.
type TokenIssuer interface {
	// ComputeTokenExpiry returns when a token stops working (the zero time
	// when it lasts as long as its compute).
	ComputeTokenExpiry(ctx context.Context, token string) (time.Time, error)
	// IssueComputeToken issues a new token for a compute.
	IssueComputeToken(ctx context.Context, fleetID, computeName string) (token string, expires time.Time, err error)
}

// ProcessHost starts and stops OS processes of managed fleets; fleets
// implements it with its local compute provider. sessions calls it to end a
// process that broke the rules (3 unhealthy heartbeats): the process is sent
// TerminateProcess, then killed after grace, then replaced.
type ProcessHost interface {
	TerminateProcess(ctx context.Context, processID, reason string) error
	// KillProcess ends a process at once, without the shutdown sequence
	// (no TerminateProcess message, no grace), and replaces it
	// (TerminateGameSession FORCE_TERMINATE).
	KillProcess(ctx context.Context, processID, reason string) error
}

// ProcessReadyFunc is called by sessions inside the transaction that records
// a process's ProcessReady (on every one, so it must be cheap when there is
// nothing to do). fleets provides it to move a fleet location that is
// ACTIVATING to ACTIVE as soon as one server process is ready.
type ProcessReadyFunc func(ctx context.Context, tx store.Tx, fleetID, location string) error

// ProcessEvents is how fleets tells sessions about OS-level process events.
type ProcessEvents interface {
	// ProcessLaunched records a new process (state LAUNCHING).
	ProcessLaunched(ctx context.Context, p Process) error
	// ProcessExited records that the OS process ended; its game session goes
	// to TERMINATED (or ERROR) and its player sessions to COMPLETED.
	ProcessExited(ctx context.Context, processID string, exitCode int, reason string) error
}

// ProcessLosses is implemented by ProcessEvents that end the game sessions
// of processes lost with their host the way GameLift ends those of an
// instance it loses (sessions: TERMINATED with StatusReason INTERRUPTED).
type ProcessLosses interface {
	// ProcessLost records that the process is gone with its host.
	ProcessLost(ctx context.Context, processID, reason string) error
}

// LogRequest asks for the logs of a game session that ended on a compute
// whose Host is not this replica.
type LogRequest struct {
	GameSessionID, ProcessID, FleetID, ComputeName, Host string
	// LogPaths are the paths its process gave in ProcessReady.
	LogPaths []string
}

// RemoteLogCollector collects the logs of game sessions hosted on other
// machines (internal/hosts asks the host to upload them); failures are
// logged, the game session then has no logs.
type RemoteLogCollector interface {
	CollectRemoteLogs(ctx context.Context, req LogRequest)
}
