// Package hostproto is Hoist's host protocol: what a pool host's agent
// (`hoist agent --pool`, internal/hosts/agent) and Hoist (internal/hosts)
// say to each other. It holds the message shapes, the routes, the
// enrolment token's form and the host credential's header, and nothing
// else, so both sides share one definition. docs/hosts.md describes the
// protocol.
//
// Messages travel over one WebSocket (/hoist/host) in internal/wsrpc's
// envelope (Action, RequestId, StatusCode, ErrorMessage) with the fields
// below at the top level. The agent opens it with Hello, then sends
// Heartbeat every HeartbeatIntervalMs; both replies carry the instances
// Hoist wants the host to run (level-triggered: the agent ends what is not
// listed). Hoist sends StartInstance, StopInstance, StopProcess,
// KillProcess, UpdateRuntimeConfiguration and CollectLogs; the agent
// reports what the ComputeProvider contract's Hooks report (StepStarted,
// StepFailed, ProcessStarted, LaunchFailed, ProcessExited, AskToEnd,
// InstanceStopped). Files go over HTTPS beside it: the build download and
// the log uploads.
package hostproto

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// Version is the protocol version this Hoist speaks; Hello carries the
// agent's and a different one is refused.
const Version = 1

// Routes, on Hoist's listeners (the agent uses the TLS one).
const (
	// PathEnrol: POST an EnrolRequest with an enrolment token, get an
	// EnrolReply with the host's credential.
	PathEnrol = "/hoist/hosts/enrol"
	// PathConnect: the WebSocket of the host protocol.
	PathConnect = "/hoist/host"
	// PathBuild + build ID: GET a build as a zip archive (a trailer
	// BuildHashTrailer holds the SHA-256 of the body).
	PathBuild = "/hoist/host/builds/"
	// PathOutput: PUT the end of a server process's output, with query
	// parameters instance and process.
	PathOutput = "/hoist/host/output"
	// PathGameSessionLogs: PUT a game session's logs as a zip archive,
	// with query parameter gamesession.
	PathGameSessionLogs = "/hoist/host/gamesession-logs"
)

// BuildHashTrailer is the HTTP trailer of a build download holding the
// SHA-256 (hex) of the bytes sent.
const BuildHashTrailer = "Hoist-Build-Sha256"

// Bounds both sides keep.
const (
	// MaxMessageBytes is the largest frame either side reads (as /sdk).
	MaxMessageBytes = 1 << 20
	// MaxOutputBytes is the most of a process's output uploaded (its end).
	MaxOutputBytes = 1 << 20
	// MaxGameSessionLogBytes bounds a game session's uploaded logs (the
	// archive), as Hoist bounds the logs it collects on its own machine.
	MaxGameSessionLogBytes = 500 << 20
	// MaxGameSessionLogFiles bounds the files in it.
	MaxGameSessionLogFiles = 1000
)

// Actions of the host protocol.
const (
	// Agent -> Hoist.
	ActionHello           = "Hello"
	ActionHeartbeat       = "Heartbeat"
	ActionStepStarted     = "StepStarted"
	ActionStepFailed      = "StepFailed"
	ActionProcessStarted  = "ProcessStarted"
	ActionLaunchFailed    = "LaunchFailed"
	ActionProcessExited   = "ProcessExited"
	ActionAskToEnd        = "AskToEnd"
	ActionInstanceStopped = "InstanceStopped"
	// Hoist -> agent.
	ActionStartInstance              = "StartInstance"
	ActionStopInstance               = "StopInstance"
	ActionStopProcess                = "StopProcess"
	ActionKillProcess                = "KillProcess"
	ActionUpdateRuntimeConfiguration = "UpdateRuntimeConfiguration"
	ActionCollectLogs                = "CollectLogs"
	// ActionRetire: the local agent (Hoist's own machine as a host) ends
	// every instance it runs and exits; pool agents refuse it.
	ActionRetire = "Retire"
)

// EnrolRequest enrols a host in a pool.
type EnrolRequest struct {
	// Token is the enrolment token `hoist admin create-enrolment-token`
	// printed (its CA pin is not needed by Hoist but may be sent).
	Token string
	Pool  string
	// Location is the fleet location the host serves (an AWS Region name
	// Hoist knows, e.g. us-west-2).
	Location string
	// Address is the IP address of the host's instances, game sessions
	// and player sessions; DnsName its DNS name, if it has one.
	Address string
	DnsName string `json:",omitempty"`
	// Instances is how many instances of each instance type it runs at
	// once ("*": of any type it does not list).
	Instances map[string]int
	// Hostname names the machine, for the operator.
	Hostname string `json:",omitempty"`
}

// EnrolReply is the host's credential and what it must trust.
type EnrolReply struct {
	HostId string
	// HostSecret authenticates the host from now on (Hoist keeps only its
	// SHA-256).
	HostSecret string
	// CACertificate is Hoist's CA certificate (PEM): the agent trusts
	// Hoist's TLS listener and its game servers trust Hoist's SDK
	// endpoint with it.
	CACertificate string
}

// Instance is an instance as the agent runs it.
type Instance struct {
	FleetId    string
	InstanceId string
	Location   string
	// Processes are the IDs of its running server processes.
	Processes []string `json:",omitempty"`
	// Stopping: it is being stopped.
	Stopping bool `json:",omitempty"`
	// RuntimeVersion is the RuntimeVersion of the runtime configuration
	// Hoist last gave it (StartInstance, UpdateRuntimeConfiguration or a
	// Desired).
	RuntimeVersion string `json:",omitempty"`
}

// Hello opens a connection.
type Hello struct {
	ProtocolVersion int
	AgentVersion    string
	// InstancesDir is where the host keeps its instances (their
	// directories are <InstancesDir>/<fleet ID>/<instance ID>).
	InstancesDir string
	Instances    []Instance
}

// Desired is an instance Hoist wants the host to run.
type Desired struct {
	FleetId    string
	InstanceId string
	// Stop, when not "", says it must stop, and why.
	Stop string `json:",omitempty"`
	// Drain: its host drains; it launches no replacement process.
	Drain bool `json:",omitempty"`
	// RuntimeConfiguration is its fleet's runtime configuration, sent only
	// when the host reported another RuntimeVersion for it (an update it
	// missed while disconnected): the agent applies it.
	RuntimeConfiguration *api.RuntimeConfiguration `json:",omitempty"`
}

// HelloReply answers Hello.
type HelloReply struct {
	ProtocolVersion     int
	HostId              string
	HeartbeatIntervalMs int64
	Desired             []Desired
}

// Heartbeat reports what the host runs.
type Heartbeat struct {
	Instances []Instance
}

// HeartbeatReply says when to heartbeat next and what to run.
type HeartbeatReply struct {
	HeartbeatIntervalMs int64
	Desired             []Desired
}

// Certificate holds the PEM files of a fleet's GENERATED certificate
// for an instance.
type Certificate struct {
	Certificate, Chain, PrivateKey, Root string
}

// StartInstance asks the host to run a new instance.
type StartInstance struct {
	FleetId              string
	InstanceId           string
	Location             string
	BuildId              string
	RuntimeConfiguration api.RuntimeConfiguration
	// Env is the environment of its server processes (the GAMELIFT_SDK_*
	// variables and the operator's --process-env); the agent adds
	// SSL_CERT_FILE (Hoist's CA bundle as it wrote it) first and sets
	// GAMELIFT_SDK_WEBSOCKET_URL to Hoist's address as it reaches it.
	Env         []string
	Certificate *Certificate `json:",omitempty"`
}

// StopInstance asks the host to stop an instance.
type StopInstance struct {
	InstanceId string
	Reason     string
}

// StopProcess asks the host to end one server process (StopProcess and
// KillProcess).
type StopProcess struct {
	InstanceId string `json:",omitempty"`
	ProcessId  string
	Reason     string
}

// UpdateRuntimeConfiguration gives an instance its fleet's current
// runtime configuration.
type UpdateRuntimeConfiguration struct {
	InstanceId           string
	RuntimeConfiguration api.RuntimeConfiguration
}

// CollectLogs asks the host to upload a game session's logs (PUT
// PathGameSessionLogs).
type CollectLogs struct {
	GameSessionId string
	InstanceId    string
	ProcessId     string
	// LogPaths are the paths the process gave in ProcessReady.
	LogPaths []string `json:",omitempty"`
}

// StepStarted reports that a setup step began.
type StepStarted struct {
	InstanceId string
	Step       string
}

// StepFailed reports that a setup step failed; LaunchPath is set when the
// error is about a launch path that cannot be run.
type StepFailed struct {
	InstanceId string
	Step       string
	Error      string
	LaunchPath string `json:",omitempty"`
}

// ProcessStarted reports a launched server process.
type ProcessStarted struct {
	InstanceId  string
	ProcessId   string
	LaunchPath  string
	Parameters  string `json:",omitempty"`
	StartedAtMs int64
}

// LaunchFailed reports a server process that could not be started.
type LaunchFailed struct {
	InstanceId string
	LaunchPath string
	Error      string
}

// ProcessExited reports that a server process ended.
type ProcessExited struct {
	InstanceId string
	ProcessId  string
	ExitCode   int
	Signal     string `json:",omitempty"`
	StopReason string `json:",omitempty"`
	Killed     bool   `json:",omitempty"`
	UptimeMs   int64
	// OutputUploaded: the end of its output was PUT to PathOutput first.
	OutputUploaded bool `json:",omitempty"`
}

// AskToEnd asks Hoist to send a server process TerminateProcess.
type AskToEnd struct {
	InstanceId string
	ProcessId  string
	DeadlineMs int64
}

// InstanceStopped reports that every process of an instance is gone and
// it was removed.
type InstanceStopped struct {
	InstanceId string
}

// RuntimeVersion names a runtime configuration's content: the first 16
// hex digits of the SHA-256 of its JSON. Both sides compute it, so a
// host's report says which configuration its instance runs.
func RuntimeVersion(rc api.RuntimeConfiguration) string {
	b, err := json.Marshal(rc)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Retire tells the local agent to end everything and exit.
type Retire struct {
	Reason string
}

// Millis is t in Unix milliseconds (0 for the zero time).
func Millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// FromMillis is the time of Unix milliseconds ms (the zero time for 0).
func FromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
