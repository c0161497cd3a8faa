package hoisttest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// mainTB stands in for a testing.TB in a Hoist started from TestMain: Stop
// reports a Hoist that would not stop on stderr.
type mainTB struct{ testing.TB }

func (mainTB) Errorf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// StartShared starts Hoist as Start does, for one Hoist shared by every test
// of a test binary: call it from TestMain and call stop (SIGTERM, then
// remove the temporary directories) after m.Run. opts.DataDir, when given,
// is kept.
func StartShared(opts Options) (h *Hoist, stop func(), err error) {
	bin, err := BuildBinary()
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "hoist-e2e-shared-")
	if err != nil {
		return nil, nil, err
	}
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(tmp, "data")
	}
	h, err = launch(bin, opts, tmp, mainTB{})
	stop = func() {
		if h != nil {
			h.Stop()
		}
		os.RemoveAll(tmp)
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	return h, stop, nil
}
