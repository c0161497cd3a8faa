// Package agentproto holds the messages of the GameLift Agent protocol: the
// WebSocket the agent of an Anywhere compute (Amazon's Java GameLift Agent,
// or hoist agent) keeps open to the GameLiftAgentEndpoint RegisterCompute
// names. Every frame is a JSON object in internal/wsrpc's envelope (Action,
// RequestId, StatusCode, ErrorMessage); the types here are the fields beside
// it, named as the Java agent's model classes name them
// (aws/amazon-gamelift-agent v1.0.3). testdata/java-agent-messages.txt lists
// those names, read from the Java classes, and TestFieldsMatchJavaAgent holds
// these types to it.
//
// Agent to service (requests, answered by RequestId; the Java agent sends
// SendHeartbeat without waiting and takes its reply by its Action):
//
//	SendHeartbeat                   the agent's status and processes; the reply says the compute's
//	                                status and which processes to end
//	DescribeRuntimeConfiguration    the fleet's runtime configuration
//	NotifyServerProcessTermination  a process ended (or could not start)
//	GetFleetRoleCredentials         AWS credentials of the fleet's role (Hoist refuses it)
//
// Service to agent (messages, never answered): ForceExitServerProcess,
// StartComputeTermination, RefreshConnection, NotifyProcessRegistered,
// NotifyGameSessionActivated (and the deprecated ForceExitProcess).
package agentproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Actions of the protocol.
const (
	ActionSendHeartbeat                  = "SendHeartbeat"
	ActionDescribeRuntimeConfiguration   = "DescribeRuntimeConfiguration"
	ActionNotifyServerProcessTermination = "NotifyServerProcessTermination"
	ActionGetFleetRoleCredentials        = "GetFleetRoleCredentials"
	ActionForceExitServerProcess         = "ForceExitServerProcess"
	ActionForceExitProcess               = "ForceExitProcess" // deprecated: ForceExitServerProcess
	ActionStartComputeTermination        = "StartComputeTermination"
	ActionRefreshConnection              = "RefreshConnection"
	ActionNotifyProcessRegistered        = "NotifyProcessRegistered"
	ActionNotifyGameSessionActivated     = "NotifyGameSessionActivated"
)

// Query parameters of the agent's connection URL.
const (
	ParamFleetID       = "FleetId"
	ParamComputeName   = "ComputeName"
	ParamAuthorization = "Authorization" // a compute auth token (GetComputeAuthToken)
)

// Compute statuses in the agent's vocabulary: what it reports in
// SendHeartbeat, and what the reply's Status tells it to become.
const (
	StatusInitializing = "Initializing" // started; launches nothing until the service answers Initializing too
	StatusActivating   = "Activating"   // launching processes
	StatusActive       = "Active"       // a process is ready
	StatusTerminating  = "Terminating"  // ending its processes, then exits
	StatusTerminated   = "Terminated"   // ends its processes at once and exits
	StatusInterrupted  = "Interrupted"  // a Spot interruption notice (the Java agent on EC2)
)

// KnownStatus reports whether s is a status the agent may report.
func KnownStatus(s string) bool {
	switch s {
	case StatusInitializing, StatusActivating, StatusActive, StatusTerminating, StatusTerminated, StatusInterrupted:
		return true
	}
	return false
}

// Termination reasons (the Java agent's ProcessTerminationReason): the
// TerminationReason of NotifyServerProcessTermination and
// ForceExitServerProcess. An unknown reason in ForceExitServerProcess is
// NORMAL_TERMINATION to the Java agent.
const (
	ReasonCrashed             = "SERVER_PROCESS_CRASHED"
	ReasonForceTerminated     = "SERVER_PROCESS_FORCE_TERMINATED"
	ReasonInvalidPath         = "SERVER_PROCESS_INVALID_PATH"
	ReasonExitTimeout         = "SERVER_PROCESS_PROCESS_EXIT_TIMEOUT"
	ReasonReadyTimeout        = "SERVER_PROCESS_PROCESS_READY_TIMEOUT"
	ReasonSDKInitTimeout      = "SERVER_PROCESS_SDK_INITIALIZATION_TIMEOUT"
	ReasonTerminatedUnhealthy = "SERVER_PROCESS_TERMINATED_UNHEALTHY"
	ReasonComputeShuttingDown = "COMPUTE_SHUTTING_DOWN"
	ReasonCustomerInitiated   = "CUSTOMER_INITIATED"
	ReasonNormalTermination   = "NORMAL_TERMINATION"
)

// MaxUnregisteredHeartbeats is how many heartbeat replies in a row may
// list a process as unregistered before the agent ends it
// (SERVER_PROCESS_SDK_INITIALIZATION_TIMEOUT).
const MaxUnregisteredHeartbeats = 8

// EventCode returns the fleet event code a termination reason reports
// ("" for COMPUTE_SHUTTING_DOWN, CUSTOMER_INITIATED, NORMAL_TERMINATION and
// unknown reasons, which the Java agent sends with a null EventCode).
func EventCode(reason string) string {
	if strings.HasPrefix(reason, "SERVER_PROCESS_") && KnownReason(reason) {
		return reason
	}
	return ""
}

// KnownReason reports whether reason is one of the Java agent's.
func KnownReason(reason string) bool {
	switch reason {
	case ReasonCrashed, ReasonForceTerminated, ReasonInvalidPath, ReasonExitTimeout, ReasonReadyTimeout,
		ReasonSDKInitTimeout, ReasonTerminatedUnhealthy, ReasonComputeShuttingDown, ReasonCustomerInitiated,
		ReasonNormalTermination:
		return true
	}
	return false
}

// SendHeartbeatRequest is the agent's heartbeat (every minute, and once
// more as it terminates).
type SendHeartbeatRequest struct {
	Status string `json:"Status"`
	// ProcessList names every process the agent runs (its process IDs).
	ProcessList []string `json:"ProcessList"`
	// HeartbeatTimeMillis is the agent's clock, epoch milliseconds.
	HeartbeatTimeMillis int64 `json:"HeartbeatTimeMillis"`
}

// SendHeartbeatResponse is the reply: the compute's status in the agent's
// vocabulary, the processes to end at once (UnhealthyProcesses), and those
// that have not registered with the service (an agent ends one that stays
// so for MaxUnregisteredHeartbeats heartbeats).
type SendHeartbeatResponse struct {
	Status                string   `json:"Status"`
	UnhealthyProcesses    []string `json:"UnhealthyProcesses"`
	UnregisteredProcesses []string `json:"UnregisteredProcesses"`
}

// DescribeRuntimeConfigurationRequest asks for the fleet's runtime
// configuration (no fields).
type DescribeRuntimeConfigurationRequest struct{}

// DescribeRuntimeConfigurationResponse is the fleet's runtime
// configuration.
type DescribeRuntimeConfigurationResponse struct {
	GameSessionActivationTimeoutSeconds *int32          `json:"GameSessionActivationTimeoutSeconds,omitempty"`
	MaxConcurrentGameSessionActivations *int32          `json:"MaxConcurrentGameSessionActivations,omitempty"`
	ServerProcesses                     []ServerProcess `json:"ServerProcesses"`
}

// ServerProcess is one entry of a runtime configuration (the Java agent's
// GameProcessConfiguration). Parameters is left out when empty: the Java
// agent splits it on single spaces, so "" would become one empty argument.
type ServerProcess struct {
	ConcurrentExecutions int32  `json:"ConcurrentExecutions"`
	LaunchPath           string `json:"LaunchPath"`
	Parameters           string `json:"Parameters,omitempty"`
}

// NotifyServerProcessTerminationRequest reports that a process ended, or
// could not be started (ProcessId then names no process that ever ran).
// EventCode is null for the reasons that have none.
type NotifyServerProcessTerminationRequest struct {
	ProcessID         string  `json:"ProcessId"`
	EventCode         *string `json:"EventCode"`
	TerminationReason string  `json:"TerminationReason"`
}

// GetFleetRoleCredentialsRequest asks for credentials of the fleet's IAM
// role (the Java agent uses them to upload logs to S3).
type GetFleetRoleCredentialsRequest struct {
	RoleSessionName string `json:"RoleSessionName"`
}

// GetFleetRoleCredentialsResponse carries role credentials; Hoist never
// sends one (it answers GetFleetRoleCredentials 400).
type GetFleetRoleCredentialsResponse struct {
	AssumedRoleUserArn string `json:"AssumedRoleUserArn"`
	AssumedRoleID      string `json:"AssumedRoleId"`
	AccessKeyID        string `json:"AccessKeyId"`
	SecretAccessKey    string `json:"SecretAccessKey"`
	SessionToken       string `json:"SessionToken"`
	Expiration         int64  `json:"Expiration"`
}

// ForceExitServerProcessMessage tells the agent to kill a process at once;
// TerminationReason is one of the Reason constants.
type ForceExitServerProcessMessage struct {
	ProcessID         string `json:"ProcessId"`
	TerminationReason string `json:"TerminationReason"`
}

// ForceExitProcessMessage is the deprecated ForceExitServerProcess.
type ForceExitProcessMessage struct {
	ProcessID string `json:"ProcessId"`
}

// StartComputeTerminationMessage tells the agent to end its processes and
// exit (no fields).
type StartComputeTerminationMessage struct{}

// RefreshConnectionMessage gives the agent a new endpoint and token: it
// opens a socket there with the token and closes the old one later (the
// Java agent five minutes later). ExpirationTime is when the token expires.
type RefreshConnectionMessage struct {
	RefreshConnectionEndpoint string       `json:"RefreshConnectionEndpoint"`
	AuthToken                 string       `json:"AuthToken"`
	ExpirationTime            EpochSeconds `json:"ExpirationTime"`
}

// NotifyProcessRegisteredMessage tells the agent a process called
// ProcessReady, with the log paths it gave.
type NotifyProcessRegisteredMessage struct {
	ProcessID string   `json:"ProcessId"`
	LogPaths  []string `json:"LogPaths"`
}

// NotifyGameSessionActivatedMessage tells the agent a process activated a
// game session.
type NotifyGameSessionActivatedMessage struct {
	ProcessID     string `json:"ProcessId"`
	GameSessionID string `json:"GameSessionId"`
}

// EpochSeconds is a time sent as whole seconds since the epoch. It is
// written as a JSON string of digits, the form the Java agent's own test of
// RefreshConnectionMessage gives its Instant; a number, and an RFC 3339
// time, are read too (as the Java agent's Jackson reads them).
type EpochSeconds int64

// MarshalJSON writes the seconds as a string of digits.
func (e EpochSeconds) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(e), 10) + `"`), nil
}

// Time returns the time (zero for 0).
func (e EpochSeconds) Time() time.Time {
	if e == 0 {
		return time.Time{}
	}
	return time.Unix(int64(e), 0).UTC()
}

// Seconds returns t as EpochSeconds (0 for the zero time).
func Seconds(t time.Time) EpochSeconds {
	if t.IsZero() {
		return 0
	}
	return EpochSeconds(t.Unix())
}

// UnmarshalJSON reads a number of seconds (a fraction is dropped), a string
// of them, an RFC 3339 time, or null.
func (e *EpochSeconds) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			s = strconv.FormatInt(t.Unix(), 10)
		}
	}
	whole, _, _ := strings.Cut(strings.TrimSpace(s), ".")
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || n < 0 || n > maxEpochSeconds {
		return fmt.Errorf("agentproto: ExpirationTime %.40q is not a time", s)
	}
	*e = EpochSeconds(n)
	return nil
}

// maxEpochSeconds is the year 9999.
const maxEpochSeconds = 253402300799

// Bounds of what an agent may send.
const (
	// MaxProcesses is the most process IDs a heartbeat may list (a
	// GameLift compute runs at most 50 processes).
	MaxProcesses = 1000
	// MaxIDLength bounds a process ID (as the SDK endpoint does).
	MaxIDLength = 1024
	// MaxReasonLength bounds a TerminationReason or EventCode.
	MaxReasonLength = 128
)

// ErrInvalid marks a message that breaks the protocol's rules; the text
// names the field.
var ErrInvalid = errors.New("invalid")

// invalid returns an ErrInvalid error with a message.
func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

// Validate checks a heartbeat: a known Status, at most MaxProcesses
// process IDs, each a valid ID, none twice.
func (r *SendHeartbeatRequest) Validate() error {
	if !KnownStatus(r.Status) {
		return invalid("Status %.40q is not one of Initializing, Activating, Active, Terminating, Terminated, Interrupted", r.Status)
	}
	if len(r.ProcessList) > MaxProcesses {
		return invalid("ProcessList names %d processes, more than %d", len(r.ProcessList), MaxProcesses)
	}
	seen := make(map[string]bool, len(r.ProcessList))
	for i, id := range r.ProcessList {
		if err := ValidProcessID(id); err != nil {
			return invalid("ProcessList[%d] %v", i, err)
		}
		if seen[id] {
			return invalid("ProcessList names process %.64q twice", id)
		}
		seen[id] = true
	}
	return nil
}

// Validate checks a termination report: a valid ProcessId, a known
// TerminationReason, and an EventCode that is null, empty or the one of
// that reason.
func (n *NotifyServerProcessTerminationRequest) Validate() error {
	if err := ValidProcessID(n.ProcessID); err != nil {
		return invalid("ProcessId %v", err)
	}
	if !KnownReason(n.TerminationReason) {
		return invalid("TerminationReason %.40q is not a reason the GameLift Agent reports", n.TerminationReason)
	}
	if n.EventCode != nil && *n.EventCode != "" && *n.EventCode != EventCode(n.TerminationReason) {
		return invalid("EventCode %.40q does not go with TerminationReason %s", *n.EventCode, n.TerminationReason)
	}
	return nil
}

// ValidProcessID checks a process ID: 1 to MaxIDLength printable
// characters.
func ValidProcessID(id string) error {
	switch {
	case id == "":
		return errors.New("is empty")
	case len(id) > MaxIDLength:
		return fmt.Errorf("is longer than %d characters", MaxIDLength)
	}
	for _, r := range id {
		if !unicode.IsPrint(r) {
			return errors.New("holds characters that are not printable")
		}
	}
	return nil
}
