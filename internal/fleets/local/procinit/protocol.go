package procinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// What Hoist and the init say to each other. Hoist writes the spec (JSON)
// on the init's file descriptor 3 and closes it; the init writes reports,
// one line each, on its descriptor 4: "started <pid>" once the process
// runs (its PID in the namespace), or "failed <step> <errno>" if it could
// not be started; then "exited <code>" or "signaled <signal>" when it
// ended. A probe writes "started 0" once the namespaces are set up.

// argv0 is the init's argv[0]. A shell sets argv[0] to the command it ran,
// which cannot hold a colon followed by a space this way, so typing a
// command cannot start an init.
const argv0 = "hoist: process init"

// The init's modes (its argv[1]).
const (
	modeRun   = "run"
	modeProbe = "probe"
)

// The init's inherited descriptors (exec.Cmd.ExtraFiles start at 3).
const (
	specFD   = 3
	statusFD = 4
)

// maxSpec bounds the spec the init reads.
const maxSpec = 1 << 20

// spec is what the init runs: an exec.Cmd's Path, Args, Env and Dir, and
// the credential to run it with (nil: the init's own).
type spec struct {
	Path       string
	Args       []string
	Env        []string
	Dir        string
	Credential *credential `json:",omitempty"`
}

// credential is a syscall.Credential.
type credential struct {
	UID, GID uint32
	Groups   []uint32
}

// decodeSpec reads a spec: at most maxSpec bytes of JSON, naming a path and
// at least argv[0].
func decodeSpec(data []byte) (*spec, error) {
	if len(data) > maxSpec {
		return nil, syscall.E2BIG
	}
	var sp spec
	if err := json.Unmarshal(data, &sp); err != nil {
		return nil, err
	}
	if sp.Path == "" || len(sp.Args) == 0 {
		return nil, syscall.EINVAL
	}
	return &sp, nil
}

// The kinds of report.
const (
	reportStarted  = "started"
	reportFailed   = "failed"
	reportExited   = "exited"
	reportSignaled = "signaled"
)

// report is one line the init writes: N is the PID (started), the errno
// (failed), the exit code (exited) or the signal number (signaled); Step
// names what failed.
type report struct {
	Kind string
	Step string
	N    int
}

// String renders the report as its line, newline included.
func (r report) String() string {
	if r.Kind == reportFailed {
		return fmt.Sprintf("%s %s %d\n", r.Kind, r.Step, r.N)
	}
	return fmt.Sprintf("%s %d\n", r.Kind, r.N)
}

// maxReport bounds a report line, newline included.
const maxReport = 64

// parseReport reads one report line (without its newline).
func parseReport(line string) (report, error) {
	f := strings.Split(line, " ")
	kind := f[0]
	want, max := 2, 1<<22 // a PID
	switch kind {
	case reportStarted:
	case reportFailed:
		want, max = 3, 4095
	case reportExited:
		max = 255
	case reportSignaled:
		max = 64
	default:
		return report{}, fmt.Errorf("unknown report %q", truncate(line))
	}
	if len(f) != want {
		return report{}, fmt.Errorf("malformed report %q", truncate(line))
	}
	r := report{Kind: kind}
	if kind == reportFailed {
		r.Step = f[1]
		if !validStep(r.Step) {
			return report{}, fmt.Errorf("malformed report %q", truncate(line))
		}
	}
	n, err := strconv.Atoi(f[want-1])
	if err != nil || n < 0 || n > max || strconv.Itoa(n) != f[want-1] {
		return report{}, fmt.Errorf("malformed report %q", truncate(line))
	}
	if kind == reportSignaled && n == 0 {
		return report{}, errors.New("a report of signal 0")
	}
	r.N = n
	return r, nil
}

// validStep reports whether s can name a failed step: 1 to 20 of a-z and
// '-'.
func validStep(s string) bool {
	if len(s) == 0 || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && c != '-' {
			return false
		}
	}
	return true
}

// truncate shortens s for an error message.
func truncate(s string) string {
	if len(s) > maxReport {
		return s[:maxReport] + "..."
	}
	return s
}
