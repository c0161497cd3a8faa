package fleets

import (
	"os"
	"path/filepath"
)

// ProcessOutputKept reports which of a fleet's processes have their
// output kept on this replica (those that ended abnormally, the newest
// outputKeepCount per fleet: what WriteProcessOutput serves), so that the
// console links only the outputs its log URLs can serve.
func (s *Service) ProcessOutputKept(fleetID string, processIDs []string) map[string]bool {
	out := map[string]bool{}
	dir := s.fleetDir(fleetID)
	if dir == "" {
		return out
	}
	for _, id := range processIDs {
		if !validName(id) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, outputDirName, id+".log")); err == nil && fi.Mode().IsRegular() {
			out[id] = true
		}
	}
	return out
}
