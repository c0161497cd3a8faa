package procinit

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseReport(t *testing.T) {
	for _, r := range []report{{Kind: reportStarted, N: 2}, {Kind: reportStarted}, {Kind: reportFailed, Step: "exec", N: 13},
		{Kind: reportFailed, Step: "mount-proc", N: 1}, {Kind: reportExited, N: 255}, {Kind: reportSignaled, N: 9}} {
		line := r.String()
		got, err := parseReport(strings.TrimSuffix(line, "\n"))
		if err != nil || got != r || len(line) > maxReport {
			t.Errorf("round trip of %q = %+v, %v", line, got, err)
		}
	}
	for _, bad := range []string{"", "started", "started -1", "started +2", "started 02", "exited 256", "signaled 0",
		"signaled 65", "failed exec", "failed EXEC 1", "failed exec 4096", "exited 1 2", "done 0", "started 2 ",
		"failed " + strings.Repeat("a", 21) + " 1", "started 99999999999999999999"} {
		if r, err := parseReport(bad); err == nil {
			t.Errorf("parseReport(%q) = %+v, want an error", bad, r)
		}
	}
}

// FuzzParseReport: any line is refused or read back to a report that
// renders as the same line.
func FuzzParseReport(f *testing.F) {
	for _, s := range []string{"started 2", "failed exec 13", "exited 0", "signaled 15", "failed mount-proc 1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, err := parseReport(line)
		if err != nil {
			return
		}
		if got := r.String(); got != line+"\n" || len(got) > maxReport {
			t.Errorf("parseReport(%q) = %+v, which renders as %q", line, r, got)
		}
	})
}

// FuzzDecodeSpec: a spec decodes without panicking, and one that decodes
// encodes and decodes again to the same.
func FuzzDecodeSpec(f *testing.F) {
	f.Add([]byte(`{"Path":"/bin/sh","Args":["sh","-c","x"],"Env":[],"Dir":"/","Credential":{"UID":1,"GID":2,"Groups":[]}}`))
	f.Add([]byte(`{"Path":"","Args":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sp, err := decodeSpec(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(sp)
		if err != nil {
			t.Fatal(err)
		}
		sp2, err := decodeSpec(again)
		if err != nil || !reflect.DeepEqual(sp, sp2) {
			t.Errorf("%s: decoded %+v, again %+v, %v", data, sp, sp2, err)
		}
	})
}
