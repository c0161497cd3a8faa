package main

import (
	"flag"
	"fmt"
	"io"
	"time"
)

// adminClock runs `hoist admin clock` (Hoist's clock and its time) and
// `hoist admin clock advance <duration>` (move a manual clock forward).
func adminClock(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hoist admin clock", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: hoist admin clock [flags]                    show Hoist's clock (real or manual) and its time\n"+
			"       hoist admin clock [flags] advance <duration>  move a manual clock forward (e.g. 90s, 1h30m)\n\nflags:\n")
		fs.PrintDefaults()
	}
	c := adminFlags(fs)
	var rest []string // the words, with flags before, between or after them
	for {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		rest, args = append(rest, fs.Arg(0)), fs.Args()[1:]
	}
	var out struct {
		Clock string
		Time  time.Time
	}
	switch {
	case len(rest) == 0:
		if code := adminCall(c, "DescribeClock", struct{}{}, &out, stderr); code != 0 {
			return code
		}
	case len(rest) == 2 && rest[0] == "advance":
		if d, err := time.ParseDuration(rest[1]); err != nil || d <= 0 {
			fmt.Fprintf(stderr, "hoist admin clock advance: %q is not a positive duration (e.g. 90s, 1h30m)\n", rest[1])
			return 2
		}
		if code := adminCall(c, "AdvanceClock", map[string]string{"By": rest[1]}, &out, stderr); code != 0 {
			return code
		}
	default:
		fs.Usage()
		return 2
	}
	fmt.Fprintf(stdout, "%s %s\n", out.Clock, out.Time.UTC().Format(time.RFC3339Nano))
	return 0
}
