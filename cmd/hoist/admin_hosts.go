package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"
)

// createEnrolmentToken runs `hoist admin create-enrolment-token`: the
// token is printed once (Hoist keeps only its hash).
func createEnrolmentToken(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hoist admin create-enrolment-token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := adminFlags(fs)
	pool := fs.String("pool", "", "pool the hosts enrol in (required)")
	expires := fs.Duration("expires", time.Hour, "how long the token can be used (at most 168h)")
	maxHosts := fs.Int("max-hosts", 0, "how many hosts may enrol with it (0: any number until it expires)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *pool == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "hoist admin create-enrolment-token: --pool is required")
		return 2
	}
	var out struct {
		Token   string
		Expires time.Time
	}
	in := map[string]any{"Pool": *pool, "Expires": expires.String(), "MaxHosts": *maxHosts}
	if code := adminCall(c, "CreateEnrolmentToken", in, &out, stderr); code != 0 {
		return code
	}
	fmt.Fprintln(stdout, out.Token)
	return 0
}

// listHosts runs `hoist admin list-hosts`: the hosts as JSON.
func listHosts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hoist admin list-hosts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := adminFlags(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return 2
	}
	var out json.RawMessage
	if code := adminCall(c, "ListHosts", struct{}{}, &out, stderr); code != 0 {
		return code
	}
	return printJSON(stdout, out)
}

// drainHost runs `hoist admin drain-host`.
func drainHost(args []string, stdout, stderr io.Writer) int {
	return hostAction("drain-host", "DrainHost", args, stdout, stderr)
}

// undrainHost runs `hoist admin undrain-host`.
func undrainHost(args []string, stdout, stderr io.Writer) int {
	return hostAction("undrain-host", "UndrainHost", args, stdout, stderr)
}

// hostAction runs `hoist admin <command> --host ID`: the admin action on
// that host, its answer printed as JSON.
func hostAction(command, action string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hoist admin "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := adminFlags(fs)
	host := fs.String("host", "", "host ID, as list-hosts shows it (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *host == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "hoist admin %s: --host is required\n", command)
		return 2
	}
	var out json.RawMessage
	if code := adminCall(c, action, map[string]string{"HostId": *host}, &out, stderr); code != 0 {
		return code
	}
	return printJSON(stdout, out)
}

// removeHost runs `hoist admin remove-host`.
func removeHost(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hoist admin remove-host", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := adminFlags(fs)
	host := fs.String("host", "", "host ID, as list-hosts shows it (required)")
	force := fs.Bool("force", false, "remove it even though it runs instances (they are lost: their game sessions end, fleets replace them)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *host == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "hoist admin remove-host: --host is required")
		return 2
	}
	var out json.RawMessage
	if code := adminCall(c, "RemoveHost", map[string]any{"HostId": *host, "Force": *force}, &out, stderr); code != 0 {
		return code
	}
	return printJSON(stdout, out)
}

// adminCall makes an admin call with a 30s timeout; it returns the exit
// status (1 after printing the error).
func adminCall(c *adminClient, action string, in, out any, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.call(ctx, action, in, out); err != nil {
		fmt.Fprintln(stderr, "hoist admin:", err)
		return 1
	}
	return 0
}

// printJSON prints raw JSON indented.
func printJSON(w io.Writer, raw json.RawMessage) int {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return 1
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintln(w, string(b))
	return 0
}
