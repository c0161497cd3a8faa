package main

import (
	"bytes"
	"maps"
	"strings"
	"testing"
)

func TestParseInstances(t *testing.T) {
	got, err := parseInstances(" c5.large=4, c5.xlarge=2,*=1,c5.large=1")
	if err != nil || !maps.Equal(got, map[string]int{"c5.large": 5, "c5.xlarge": 2, "*": 1}) {
		t.Fatalf("parseInstances = %v, %v", got, err)
	}
	for _, bad := range []string{"", ",", "c5.large", "c5.large=0", "c5.large=-1", "=3", "c5.large=x"} {
		if _, err := parseInstances(bad); err == nil {
			t.Errorf("parseInstances(%q) accepted", bad)
		}
	}
}

func FuzzParseInstances(f *testing.F) {
	f.Add("c5.large=4,c5.xlarge=2")
	f.Add("*=1")
	f.Fuzz(func(t *testing.T, v string) {
		got, err := parseInstances(v)
		if err != nil {
			return
		}
		for typ, n := range got {
			if n < 1 || strings.TrimSpace(typ) == "" {
				t.Fatalf("%q gave %v", v, got)
			}
		}
	})
}

// TestPoolAgentNeedsTLS: hoist agent --pool speaks to Hoist's TLS
// listener only.
func TestPoolAgentNeedsTLS(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"agent", "--pool", "p", "--endpoint", "http://127.0.0.1:9080", "--dir", t.TempDir()}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "https://") {
		t.Fatalf("a plain http endpoint: exit %d, %q", code, errOut.String())
	}
	out.Reset()
	if code := run([]string{"agent", "--pool", "p", "--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "--enrolment-token") {
		t.Fatalf("hoist agent --pool --help: exit %d, %q", code, out.String())
	}
}
