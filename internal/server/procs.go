package server

import (
	"log/slog"
	"os"
	"runtime"
)

// startProcs is GOMAXPROCS as the runtime chose it when the process started.
var startProcs = runtime.GOMAXPROCS(0)

// directWriter is implemented by stores that may write with direct,
// synchronous writes which hold a P (the journal store on Linux).
type directWriter interface{ DirectWrites() bool }

// procsFor returns the GOMAXPROCS Hoist runs with: one more than the
// runtime's own choice (start) when the store writes its journal holding a
// P, so that the syncer's P, busy for each write's duration, is not taken
// from the request handlers; current when the operator set GOMAXPROCS, or
// when it is already at least that.
func procsFor(start, current int, operatorSet, holdsP bool) int {
	if operatorSet || !holdsP || current >= start+1 {
		return current
	}
	return start + 1
}

// tuneProcs applies procsFor for store st.
func tuneProcs(log *slog.Logger, st any) {
	dw, ok := st.(directWriter)
	_, operatorSet := os.LookupEnv("GOMAXPROCS")
	current := runtime.GOMAXPROCS(0)
	n := procsFor(startProcs, current, operatorSet, ok && dw.DirectWrites())
	if n != current {
		runtime.GOMAXPROCS(n)
		log.Info("runtime: GOMAXPROCS raised by one for the journal's direct writes (set GOMAXPROCS to choose)",
			"gomaxprocs", n)
	}
}
