package netns

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"syscall"
)

// ownedName matches the names newName makes, capturing the owner's PID.
var ownedName = regexp.MustCompile(`^` + prefix + `([0-9]+)-[0-9a-z]+$`)

// sweep removes the namespaces and interfaces that a test process which is
// no longer alive left behind (killed before its cleanup ran). It is best
// effort: it logs what it removed and what it could not.
func sweep(logf func(format string, args ...any)) {
	namespaces, err := namedList("netns", "list")
	if err != nil {
		logf("netns sweep: %v", err)
		return
	}
	for _, name := range stale(namespaces) {
		if err := removeNamespace(name); err != nil {
			logf("netns sweep: %v", err)
		} else {
			logf("netns sweep: removed namespace %s", name)
		}
	}
	links, err := namedList("link", "show")
	if err != nil {
		logf("netns sweep: %v", err)
		return
	}
	for _, name := range stale(links) {
		if err := ip("link", "del", name); err != nil {
			logf("netns sweep: %v", err)
		} else {
			logf("netns sweep: removed interface %s", name)
		}
	}
}

// stale returns the names made by this package whose owner process is gone.
func stale(names []string) []string {
	var out []string
	for _, name := range names {
		m := ownedName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err == nil && pid > 0 && !alive(pid) {
			out = append(out, name)
		}
	}
	return out
}

// alive reports whether process pid exists (in this PID namespace).
func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// namedList runs `ip -j args...` and returns the names it lists: the "name"
// of namespaces, the "ifname" of interfaces.
func namedList(args ...string) ([]string, error) {
	out, err := ipOutput(append([]string{"-j"}, args...)...)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 { // older iproute2 prints nothing for no namespace
		return nil, nil
	}
	var entries []struct {
		Name   string `json:"name"`
		IfName string `json:"ifname"`
	}
	if err := json.Unmarshal(out, &entries); err != nil {
		return nil, fmt.Errorf("netns: ip -j %v: %w", args, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name+e.IfName)
	}
	return names, nil
}
