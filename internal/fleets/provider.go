package fleets

import (
	"context"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// ComputeProvider runs the instances of managed fleets: it places an
// instance's build, starts the server processes of the fleet's runtime
// configuration, keeps them running, and stops them. internal/fleets/local
// implements it with directories and OS processes on this machine; a
// provider for another platform (Kubernetes) implements the same contract.
//
// A provider reports everything that happens through the Hooks given to
// StartInstance, from its own goroutines: setup steps in order, and for
// each process ProcessStarted before its ProcessExited; hooks of different
// processes may run concurrently.
type ComputeProvider interface {
	// Layout returns where an instance keeps its files, before it starts.
	Layout(fleetID, instanceID string) InstanceLayout
	// StartInstance registers the instance and sets it up in the
	// background: it places the build, runs its install script, checks the
	// launch paths, then launches and supervises the server processes,
	// reporting each step through hooks. It returns once the instance is
	// registered (Instances lists it).
	StartInstance(ctx context.Context, spec InstanceSpec, hooks Hooks) error
	// UpdateRuntimeConfiguration gives a running instance the fleet's
	// current runtime configuration. Processes already running are left
	// alone; replacements follow the new configuration. It is cheap when
	// nothing changed.
	UpdateRuntimeConfiguration(instanceID string, rc api.RuntimeConfiguration)
	// StopInstance ends every server process of the instance (each is asked
	// to end with TerminateProcess, then killed after a grace period) and
	// removes the instance; Hooks.InstanceStopped follows. Stopping an
	// instance that is already stopping does nothing.
	StopInstance(instanceID, reason string) error
	// StopProcess ends one server process the same way; a replacement is
	// launched unless its instance is stopping. A second call while the
	// process is already ending kills it at once. It returns
	// ErrUnknownProcess when the provider runs no such process.
	StopProcess(processID, reason string) error
	// KillProcess ends one server process at once, without asking it
	// (no TerminateProcess, no grace); a replacement is launched unless its
	// instance is stopping. It returns ErrUnknownProcess when the provider
	// runs no such process.
	KillProcess(processID, reason string) error
	// Instances lists the instances the provider runs (set up, running or
	// stopping).
	Instances() []InstanceRef
	// Close stops every instance and returns when no process is left.
	Close() error
}

// ErrUnknownProcess: the provider runs no process with that ID.
var ErrUnknownProcess = errors.New("fleets: no such server process on this host")

// ErrProcessGone: the process's host, another machine, says it runs no
// such process (any more): the process is gone.
var ErrProcessGone = errors.New("fleets: the process's host runs no such server process")

// ErrUnknownInstance: the provider runs no instance with that ID.
var ErrUnknownInstance = errors.New("fleets: no such instance on this host")

// InstanceRef names an instance.
type InstanceRef struct {
	FleetID    string
	InstanceID string
	Location   string
}

// InstanceLayout is where an instance keeps its files.
type InstanceLayout struct {
	// Dir is the instance's directory.
	Dir string
	// GameRoot is the directory the game's /local/game (C:\game) maps to.
	GameRoot string
	// CertificateDir receives the instance's TLS certificate files when the
	// fleet's certificates are GENERATED.
	CertificateDir string
}

// InstanceSpec is what a provider needs to run an instance.
type InstanceSpec struct {
	InstanceRef
	// BuildID is the fleet's build (a host of another machine downloads
	// it from Hoist).
	BuildID string
	// BuildDir holds the build's unpacked files, to be placed at GameRoot.
	BuildDir string
	// RuntimeConfiguration says which server processes to run.
	RuntimeConfiguration api.RuntimeConfiguration
	// Env is the environment every server process gets besides the
	// provider's own GAMELIFT_SDK_PROCESS_ID (GAMELIFT_SDK_WEBSOCKET_URL,
	// GAMELIFT_SDK_AUTH_TOKEN, GAMELIFT_SDK_FLEET_ID, GAMELIFT_SDK_HOST_ID,
	// and Config.ProcessEnv), as KEY=value.
	Env []string
	// Certificate, when set, is written to the layout's CertificateDir.
	Certificate *CertificateFiles
	// CertificateRequest, set with Certificate for an instance on a pool
	// host, is what its certificate names (the replica holding the host's
	// connection makes one from it: hoststart.go).
	CertificateRequest *CertificateRequest
}

// CertificateFiles are the PEM files of an instance's TLS certificate, named
// as on GameLift instances: certificate.pem, certificateChain.pem,
// privateKey.pem and rootCertificate.pem.
type CertificateFiles struct {
	Certificate, Chain, PrivateKey, Root []byte
}

// Step is a step of setting up an instance.
type Step string

// Instance setup steps, in order. StepInstall is skipped when the build has
// no install script.
const (
	StepDownload Step = "DOWNLOAD" // placing the build in the instance
	StepInstall  Step = "INSTALL"  // running the build's install script
	StepValidate Step = "VALIDATE" // checking the runtime configuration's launch paths
	StepBuild    Step = "BUILD"    // writing certificates, preparing processes
	StepActivate Step = "ACTIVATE" // launching server processes
)

// ProcessStart describes a server process a provider started.
type ProcessStart struct {
	ProcessID  string
	LaunchPath string
	Parameters string
	// OutputPath is the file holding its captured stdout and stderr.
	OutputPath string
	StartedAt  time.Time
}

// ProcessExit describes how a server process ended.
type ProcessExit struct {
	ProcessID string
	// ExitCode is the exit status, or -1 when a signal ended the process.
	ExitCode int
	// Signal names the signal that ended it ("" when it exited).
	Signal string
	// StopReason is the reason given to StopProcess or StopInstance when
	// Hoist asked it to end ("" when it ended on its own).
	StopReason string
	// Killed is set when Hoist killed it after its grace period.
	Killed bool
	// Uptime is how long it ran.
	Uptime time.Duration
}

// Hooks is how a provider reports what happens on an instance. fleets
// implements it per instance.
type Hooks interface {
	// StepStarted reports that a setup step began.
	StepStarted(ctx context.Context, step Step)
	// StepFailed reports that a setup step failed; the instance is then
	// stopped by the provider (InstanceStopped follows).
	StepFailed(ctx context.Context, step Step, err error)
	// ProcessStarted reports a launched server process.
	ProcessStarted(ctx context.Context, p ProcessStart)
	// LaunchFailed reports a server process that could not be started
	// (its launch path is missing or not executable).
	LaunchFailed(ctx context.Context, launchPath string, err error)
	// ProcessExited reports that a server process ended.
	ProcessExited(ctx context.Context, e ProcessExit)
	// AskToEnd asks a server process to end by itself before deadline (the
	// SDK's TerminateProcess message); an error means it could not be told.
	AskToEnd(ctx context.Context, processID string, deadline time.Time) error
	// InstanceStopped reports that every process is gone and the instance
	// was removed.
	InstanceStopped(ctx context.Context)
}
