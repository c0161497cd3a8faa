package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hoistgg/hoist/internal/flexmatch"
)

const matchUsage = `usage: hoist match <command> [flags]

commands:
  simulate   run the matchmaker over simulated time on a file of tickets
  validate   check a rule set

  hoist match simulate --rule-set rules.json --tickets tickets.json
      [--request-timeout 120s] [--tick 1s] [--seed N] [--json]
  hoist match validate --rule-set rules.json

Neither needs a running Hoist. Exit status: 0 done (simulate: whatever
became of the tickets; validate: the rule set is valid), 1 an invalid rule
set or tickets file, or a file that cannot be read, 2 bad usage, 3 the
matcher broke its contract (a bug in Hoist: please report it).
See docs/flexmatch-simulate.md.
`

// Exit statuses of hoist match.
const (
	matchOK        = 0
	matchInvalid   = 1
	matchUsageErr  = 2
	matchInvariant = 3
)

// Bounds of simulate's flags: the request timeout as
// RequestTimeoutSeconds allows, and a tick no shorter than a millisecond.
const (
	maxRequestTimeout = 43200 * time.Second
	minTick           = time.Millisecond
	// maxPasses bounds the passes a simulation may need (the last
	// submission plus the request timeout, over the tick), so that a tiny
	// tick over a long span fails at once instead of running for hours.
	maxPasses = 10_000_000
)

func match(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, matchUsage)
		return matchOK
	}
	switch args[0] {
	case "simulate":
		return matchSimulate(args[1:], stdout, stderr)
	case "validate":
		return matchValidate(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "hoist match: unknown command %q\n%s", args[0], matchUsage)
	return matchUsageErr
}

// loadRuleSet reads and parses a rule set file; the error is printed and
// its exit status returned (0 when loaded).
func loadRuleSet(path string, stderr io.Writer) (*flexmatch.RuleSet, int) {
	body, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(stderr, "hoist match:", err)
		return nil, matchInvalid
	}
	rs, err := flexmatch.Parse(body)
	if err != nil {
		// A *flexmatch.Error prints as "path: message".
		fmt.Fprintf(stderr, "hoist match: rule set %s: %v\n", path, err)
		return nil, matchInvalid
	}
	return rs, matchOK
}

func matchValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hoist match validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ruleSet := fs.String("rule-set", "", "the rule set file (a RuleSetBody; required)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return matchOK
		}
		return matchUsageErr
	}
	if *ruleSet == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "hoist match validate: --rule-set is required (and takes no other arguments)")
		return matchUsageErr
	}
	if _, code := loadRuleSet(*ruleSet, stderr); code != matchOK {
		return code
	}
	fmt.Fprintln(stdout, "valid")
	return matchOK
}

func matchSimulate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hoist match simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ruleSet := fs.String("rule-set", "", "the rule set file (a RuleSetBody; required)")
	ticketsPath := fs.String("tickets", "", "the tickets file (required; see docs/flexmatch-simulate.md)")
	var o simOptions
	fs.DurationVar(&o.RequestTimeout, "request-timeout", 120*time.Second, "a ticket times out this long after its submission (the configuration's RequestTimeoutSeconds; 1s to 12h)")
	fs.DurationVar(&o.Tick, "tick", time.Second, "simulated time between two matcher passes (at least 1ms)")
	fs.Uint64Var(&o.Seed, "seed", 0, "the matcher's seed (the same seed gives the same matches)")
	asJSON := fs.Bool("json", false, "print the result as one JSON document")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return matchOK
		}
		return matchUsageErr
	}
	switch {
	case *ruleSet == "" || *ticketsPath == "":
		fmt.Fprintln(stderr, "hoist match simulate: --rule-set and --tickets are required")
		return matchUsageErr
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "hoist match simulate: unexpected argument %q\n", fs.Arg(0))
		return matchUsageErr
	case o.RequestTimeout < time.Second || o.RequestTimeout > maxRequestTimeout:
		fmt.Fprintf(stderr, "hoist match simulate: --request-timeout must be from 1s to %v, got %v\n", maxRequestTimeout, o.RequestTimeout)
		return matchUsageErr
	case o.Tick < minTick:
		fmt.Fprintf(stderr, "hoist match simulate: --tick must be at least %v, got %v\n", minTick, o.Tick)
		return matchUsageErr
	}
	rs, code := loadRuleSet(*ruleSet, stderr)
	if code != matchOK {
		return code
	}
	data, err := os.ReadFile(*ticketsPath)
	if err != nil {
		fmt.Fprintln(stderr, "hoist match:", err)
		return matchInvalid
	}
	tickets, err := parseTickets(data, rs)
	if err != nil {
		fmt.Fprintf(stderr, "hoist match: %s: %v\n", *ticketsPath, err)
		return matchInvalid
	}
	if span := tickets[len(tickets)-1].Submitted + o.RequestTimeout; span/o.Tick > maxPasses {
		fmt.Fprintf(stderr, "hoist match simulate: a pass every %v over %v is more than %d passes: use a longer --tick\n", o.Tick, span, maxPasses)
		return matchUsageErr
	}
	rep, err := simulate(rs, tickets, o)
	if err != nil {
		fmt.Fprintln(stderr, "hoist match:", err)
		return matchInvariant
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(stderr, "hoist match:", err)
			return matchInvalid
		}
		return matchOK
	}
	rep.print(stdout)
	return matchOK
}
