// Command release builds Hoist's release archives from the repository:
// `hoist` for every release target, stamped with the release version,
// packed with the LICENSE and the README (and, for Linux, the systemd
// units), and a SHA256SUMS file over what it wrote.
//
//	go run ./tools/release -version v0.3.0 -out dist/
//	go run ./tools/release -version v0.0.0-ci -out "$(mktemp -d)" -archive=false   # CI: compile only
//	go run ./tools/release -version v0.3.0 -out dist/ -targets linux/amd64,linux/arm64 -archive=false   # the container image's input
//
// Builds are reproducible with the same Go release: CGO is off, paths are
// trimmed, no VCS information is stamped (the version is, with -ldflags -X),
// the GOAMD64/GOARM64 levels are fixed, the environment's GOFLAGS and
// GOEXPERIMENT are ignored, and archive entries carry fixed owners, modes and
// the time in SOURCE_DATE_EPOCH (else the time of the HEAD commit). See
// docs/operations.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "the release version, vMAJOR.MINOR.PATCH[-PRERELEASE] (required): what hoist --version prints")
	out := fs.String("out", "dist", "directory to write the archives (or binaries) and SHA256SUMS to")
	targets := fs.String("targets", strings.Join(targetNames(defaultTargets), ","), "GOOS/GOARCH pairs to build, comma-separated")
	archive := fs.Bool("archive", true, "pack each build with LICENSE and README (tar.gz; zip for Windows); false: leave the binaries")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "release: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	p, err := newPlan(*version, *targets, *out, *archive)
	if err != nil {
		fmt.Fprintln(stderr, "release:", err)
		return 2
	}
	if err := p.run(stdout); err != nil {
		fmt.Fprintln(stderr, "release:", err)
		return 1
	}
	return 0
}
