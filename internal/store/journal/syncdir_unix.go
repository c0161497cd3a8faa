//go:build unix

package journal

import "os"

// syncDir fsyncs a directory, so that files created or renamed in it
// survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
