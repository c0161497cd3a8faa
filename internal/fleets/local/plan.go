package local

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// slot identifies the server processes of one runtime configuration entry:
// processes with the same launch path and parameters are interchangeable.
type slot struct {
	LaunchPath string
	Parameters string
}

// want is how many processes a slot should run.
type want struct {
	Slot  slot
	Count int
}

// wants lists a runtime configuration's slots in order (entries with the
// same launch path and parameters add up).
func wants(rc api.RuntimeConfiguration) []want {
	var out []want
	idx := map[slot]int{}
	for _, sp := range rc.ServerProcesses {
		s := slot{api.ToString(sp.LaunchPath), api.ToString(sp.Parameters)}
		n := int(api.ToInt32(sp.ConcurrentExecutions))
		if i, ok := idx[s]; ok {
			out[i].Count += n
			continue
		}
		idx[s] = len(out)
		out = append(out, want{s, n})
	}
	return out
}

// planInput is what the supervisor decides the next launch from.
type planInput struct {
	Now     time.Time
	Wants   []want
	Running map[slot]int
	// NotBefore holds, per slot, when it may launch again after a crash or
	// a failed launch.
	NotBefore map[slot]time.Time
	// LastLaunch and Stagger space launches on an instance.
	LastLaunch time.Time
	Stagger    time.Duration
}

// nextLaunch returns the slot to launch now (ok), or else how long to wait
// before one may be launched (0: every slot is full). Slots are filled in
// the runtime configuration's order, one launch per Stagger.
func nextLaunch(in planInput) (s slot, ok bool, wait time.Duration) {
	for _, w := range in.Wants {
		if in.Running[w.Slot] >= w.Count {
			continue
		}
		at := in.NotBefore[w.Slot]
		if t := in.LastLaunch.Add(in.Stagger); !in.LastLaunch.IsZero() && t.After(at) {
			at = t
		}
		if !in.Now.Before(at) {
			return w.Slot, true, 0
		}
		if d := at.Sub(in.Now); wait == 0 || d < wait {
			wait = d
		}
	}
	return slot{}, false, wait
}

// backoff is the wait before a slot launches again after failures failures
// in a row: base, doubling each time, at most limit.
func backoff(failures int, base, limit time.Duration) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := base << min(failures-1, 20)
	return min(d, limit)
}

// Game roots of a GameLift instance.
const (
	linuxRoot   = "/local/game"
	windowsRoot = `c:\game`
)

// hostPath maps a launch path as GameLift requires it (/local/game/... on
// Linux, C:\game\... on Windows) to the file under gameRoot. It refuses
// paths outside the game root or climbing out of it.
func hostPath(gameRoot, launchPath string) (string, error) {
	var rel string
	switch lower := strings.ToLower(launchPath); {
	case strings.HasPrefix(launchPath, linuxRoot+"/"):
		rel = launchPath[len(linuxRoot)+1:]
	case strings.HasPrefix(lower, windowsRoot+`\`):
		rel = strings.ReplaceAll(launchPath[len(windowsRoot)+1:], `\`, "/")
	default:
		return "", fmt.Errorf("is not under %s", linuxRoot)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return "", errors.New("leaves the game directory")
		}
	}
	rel = strings.TrimPrefix(path.Clean("/"+rel), "/")
	if rel == "" {
		return "", errors.New("names no file")
	}
	return filepath.Join(gameRoot, filepath.FromSlash(rel)), nil
}

// splitParameters splits a runtime configuration's Parameters into
// arguments as a POSIX shell would, without expanding anything: blanks
// separate arguments, single quotes keep everything literally, double
// quotes keep blanks (a backslash escapes " and \ in them), and a backslash
// outside quotes escapes the next character. An unclosed quote runs to the
// end.
func splitParameters(s string) []string {
	var args []string
	var cur strings.Builder
	inArg := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inArg {
				args, inArg = append(args, cur.String()), false
				cur.Reset()
			}
		case c == '\'':
			inArg = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inArg = true
			i = readDoubleQuoted(s, i+1, &cur)
		case c == '\\' && i+1 < len(s):
			inArg = true
			i++
			cur.WriteByte(s[i])
		default:
			inArg = true
			cur.WriteByte(c)
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args
}

// readDoubleQuoted copies a double-quoted string starting at i into cur and
// returns the index of its closing quote (or the end).
func readDoubleQuoted(s string, i int, cur *strings.Builder) int {
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i
		case c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
			i++
			cur.WriteByte(s[i])
		default:
			cur.WriteByte(c)
		}
	}
	return i
}

// DefaultPath is the PATH of server processes when Hoist has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// baseEnv is what every process Hoist starts gets of the machine: PATH
// (Hoist's own, or DefaultPath) and HOME (the instance's home/). Nothing
// else of Hoist's environment is passed on: it may hold secrets
// (HOIST_CREDENTIALS, AWS keys, whatever the operator exported).
func baseEnv(path, home string) []string {
	if path == "" {
		path = DefaultPath
	}
	return []string{"PATH=" + path, "HOME=" + home}
}

// processEnv is a server process's environment: baseEnv, then the
// instance's variables (the GAMELIFT_SDK_* ones and the operator's
// --process-env), then the process ID.
func processEnv(path, home string, instance []string, processID string) []string {
	env := append(baseEnv(path, home), instance...)
	return append(env, "GAMELIFT_SDK_PROCESS_ID="+processID)
}
