package fleets

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/hoistgg/hoist/internal/api"
)

// Limits GameLift applies to fleets.
const (
	// maxProcessesPerInstance is the most server processes a runtime
	// configuration may run concurrently on one instance.
	maxProcessesPerInstance = 50
	// maxPermissions is the most inbound permissions a fleet may have.
	maxPermissions = 50
	// maxLocations is the most locations a fleet may have.
	maxLocations = 100
)

// Launch path roots of managed instances.
const (
	linuxGameRoot   = "/local/game/"
	windowsGameRoot = `c:\game\`
)

// checkRuntime checks a runtime configuration. On managed fleets every
// launch path must lie under the game root of the build's operating system
// (/local/game/ on Linux, C:\game\ on Windows).
func checkRuntime(rc *api.RuntimeConfiguration, managed bool, os api.OperatingSystem) error {
	if rc == nil || len(rc.ServerProcesses) == 0 {
		return api.NewInvalidRequestException("RuntimeConfiguration.ServerProcesses must list at least one server process")
	}
	total := 0
	for i, sp := range rc.ServerProcesses {
		n := api.ToInt32(sp.ConcurrentExecutions)
		if n < 1 {
			return api.NewInvalidRequestException("RuntimeConfiguration.ServerProcesses[%d].ConcurrentExecutions must be at least 1", i)
		}
		total += int(n)
		lp := api.ToString(sp.LaunchPath)
		if lp == "" {
			return api.NewInvalidRequestException("RuntimeConfiguration.ServerProcesses[%d].LaunchPath is required", i)
		}
		if managed {
			if err := checkLaunchPath(lp, os); err != nil {
				return api.NewInvalidRequestException("RuntimeConfiguration.ServerProcesses[%d].LaunchPath %q %v", i, lp, err)
			}
		}
	}
	if total > maxProcessesPerInstance {
		return api.NewLimitExceededException("the runtime configuration runs %d server processes per instance; at most %d are allowed",
			total, maxProcessesPerInstance)
	}
	if v := rc.GameSessionActivationTimeoutSeconds; v != nil && (*v < 1 || *v > 600) {
		return api.NewInvalidRequestException("GameSessionActivationTimeoutSeconds must be between 1 and 600")
	}
	if v := rc.MaxConcurrentGameSessionActivations; v != nil && *v < 1 {
		return api.NewInvalidRequestException("MaxConcurrentGameSessionActivations must be at least 1")
	}
	return nil
}

// checkLaunchPath checks that a launch path lies under the game root and
// does not climb out of it.
func checkLaunchPath(lp string, os api.OperatingSystem) error {
	windows := strings.HasPrefix(string(os), "WINDOWS")
	root := linuxGameRoot
	rel, ok := strings.CutPrefix(lp, root)
	if windows {
		root = `C:\game\`
		rel, ok = "", strings.HasPrefix(strings.ToLower(lp), windowsGameRoot)
		if ok {
			rel = strings.ReplaceAll(lp[len(windowsGameRoot):], `\`, "/")
		}
	}
	if !ok {
		return fmt.Errorf("must start with %s (where the build is installed)", root)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return fmt.Errorf("must not leave %s", root)
		}
	}
	if strings.Trim(rel, "/") == "" {
		return fmt.Errorf("names no file")
	}
	return nil
}

// checkPermissions checks inbound permissions.
func checkPermissions(field string, perms []api.IpPermission) error {
	for i, p := range perms {
		from, to := api.ToInt32(p.FromPort), api.ToInt32(p.ToPort)
		if from < 1 || to > 60000 || from > to {
			return api.NewInvalidRequestException("%s[%d]: ports must satisfy 1 <= FromPort <= ToPort <= 60000", field, i)
		}
		if _, err := netip.ParsePrefix(api.ToString(p.IpRange)); err != nil {
			return api.NewInvalidRequestException("%s[%d].IpRange %q is not a CIDR range", field, i, api.ToString(p.IpRange))
		}
		if p.Protocol != api.IpProtocolTcp && p.Protocol != api.IpProtocolUdp {
			return api.NewInvalidRequestException("%s[%d].Protocol must be TCP or UDP", field, i)
		}
	}
	return nil
}

// samePermission reports whether two permissions are the same rule.
func samePermission(a, b api.IpPermission) bool {
	return api.ToInt32(a.FromPort) == api.ToInt32(b.FromPort) && api.ToInt32(a.ToPort) == api.ToInt32(b.ToPort) &&
		api.ToString(a.IpRange) == api.ToString(b.IpRange) && a.Protocol == b.Protocol
}

// isCustomLocation reports whether a location name is a custom (Anywhere)
// location.
func isCustomLocation(name string) bool { return strings.HasPrefix(name, "custom-") }

// locationName returns the name of a location given by name or ARN.
func locationName(nameOrARN string) string {
	if strings.HasPrefix(nameOrARN, "arn:") {
		if i := strings.LastIndex(nameOrARN, "/"); i >= 0 {
			return nameOrARN[i+1:]
		}
	}
	return nameOrARN
}
