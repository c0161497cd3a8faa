// Package loadreport is what the load tools (e2e/load, e2e/hostingload,
// e2e/hostsload, e2e/matchload) share around their scenarios: the run
// wrapper (flags, report on stdout, optional JSON file, exit code),
// starting and stopping Hoist, uploading a build, waiting for a
// condition, latency statistics and medians over runs, fetching profiles
// from Hoist's --pprof-addr listener, and their tests' tiny runs.
package loadreport

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"time"
)

// Report is a load tool's result.
type Report interface {
	// Print writes the human-readable report.
	Print(w io.Writer)
}

// Run is a load tool's main: parse reads the flags (flag.ErrHelp for
// -help) and returns the configuration and the -json path ("" for none);
// scenario runs, logging progress to stderr. The report, even a partial
// one, is printed and written as JSON; the result is the exit code (2 for
// bad flags, 1 for a failed run).
func Run[C any, R Report](name string, args []string, stdout, stderr io.Writer,
	parse func(args []string, stderr io.Writer) (C, string, error),
	scenario func(ctx context.Context, cfg C, log io.Writer) (R, error)) int {
	cfg, jsonPath, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	rep, err := scenario(context.Background(), cfg, stderr)
	if any(rep) != nil && !isNilPointer(rep) {
		rep.Print(stdout)
		if jsonPath != "" {
			b, _ := json.MarshalIndent(rep, "", "  ")
			if werr := os.WriteFile(jsonPath, append(b, '\n'), 0o644); werr != nil {
				fmt.Fprintf(stderr, "%s: %v\n", name, werr)
				return 1
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// isNilPointer reports whether r is a nil pointer (a scenario that failed
// before it had a report).
func isNilPointer(r any) bool {
	v := reflect.ValueOf(r)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// OpStats are latencies of one operation, in ms.
type OpStats struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// Stats returns the count, percentiles (nearest rank below) and maximum of d.
func Stats(d []time.Duration) OpStats {
	if len(d) == 0 {
		return OpStats{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	q := func(p float64) float64 { return float64(s[int(p*float64(len(s)-1))]) / 1e6 }
	return OpStats{Count: len(s), P50: q(0.50), P90: q(0.90), P99: q(0.99), Max: float64(s[len(s)-1]) / 1e6}
}

// Median returns the median of v (0 for none).
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Plural returns "1 run", "3 runs".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// FetchProfile waits until start, then writes what Hoist's pprof listener
// at addr answers for /debug/pprof/<path>?<query> (a CPU profile or trace
// covering the seconds the query asks for) to file.
func FetchProfile(addr, path, query string, start time.Time, file string) error {
	time.Sleep(time.Until(start)) // a wall-clock schedule, not a wait for a condition
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/%s?%s", addr, path, query))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}
