package fleets

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestQuoteOutput(t *testing.T) {
	long := strings.Repeat("x", 300)
	longCut := strings.Repeat("x", quoteLineMax) + quoteCut // 203 bytes
	var many []string
	for i := range 15 {
		many = append(many, fmt.Sprint("line ", i))
	}
	tests := map[string]struct {
		in      string
		partial bool
		want    []string
	}{
		"lines":           {in: "starting\nmissing config file\n", want: []string{"starting", "missing config file"}},
		"no final return": {in: "a\nb", want: []string{"a", "b"}},
		"CRLF":            {in: "a\r\nb\r\n", want: []string{"a", "b"}},
		"blank lines":     {in: "a\n\n   \n\tb\n\n", want: []string{"a", `\x09b`}},
		"empty":           {in: "", want: nil},
		"last ten":        {in: strings.Join(many, "\n"), want: many[5:]},
		"partial first":   {in: "ne\nwhole\n", partial: true, want: []string{"whole"}},
		"long line":       {in: long, want: []string{strings.Repeat("x", quoteLineMax) + quoteCut}},
		"byte budget":     {in: long + "\n" + long + "\n" + long + "\n" + long + "\n" + long + "\n" + long + "\nend", want: []string{longCut, longCut, longCut, longCut, longCut, "end"}},
		"ANSI":            {in: "\x1b[31mred\x1b[0m", want: []string{`\x1b[31mred\x1b[0m`}},
		"forged log line": {in: "ok\rlevel=ERROR msg=forged", want: []string{`ok\x0dlevel=ERROR msg=forged`}},
		"invalid UTF-8":   {in: "a\xffb\xc3", want: []string{`a\xffb\xc3`}},
		"backslash":       {in: `C:\game\x1b`, want: []string{`C:\\game\\x1b`}},
		"separators":      {in: "a\u2028b\u2029c\u0085d", want: []string{`a\u2028b\u2029c\u0085d`}},
		"bidi":            {in: "abc\u202edef\u2066", want: []string{`abc\u202edef\u2066`}},
		"printable":       {in: "café – ok ✓ 日本", want: []string{"café – ok ✓ 日本"}},
		"escape cut whole": {in: strings.Repeat("x", quoteLineMax-2) + "\x1b",
			want: []string{strings.Repeat("x", quoteLineMax-2) + quoteCut}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := quoteOutput([]byte(tc.in), tc.partial); !slices.Equal(got, tc.want) {
				t.Errorf("quoteOutput(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzQuoteOutput: whatever a process prints, the quote is at most
// quoteLines lines of valid, printable UTF-8 (no control, format or
// separator characters), each at most quoteLineMax characters and the cut
// mark.
func FuzzQuoteOutput(f *testing.F) {
	for _, s := range []string{"missing config file\n", "\x1b[2J\r\nlevel=ERROR\u2028x", "a\xff\xfe\\", strings.Repeat("é", 500)} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, partial bool) {
		lines := quoteOutput(data, partial)
		if len(lines) > quoteLines {
			t.Fatalf("%d lines", len(lines))
		}
		if n := len(strings.Join(lines, "")); len(lines) > 1 && n > quoteBytes {
			t.Fatalf("%d lines of %d bytes", len(lines), n)
		}
		for _, l := range lines {
			if !utf8.ValidString(l) {
				t.Fatalf("invalid UTF-8 in %q", l)
			}
			body := strings.TrimSuffix(l, quoteCut)
			if n := utf8.RuneCountInString(body); n > quoteLineMax || n == 0 {
				t.Fatalf("line of %d characters: %q", n, l)
			}
			for _, r := range l {
				if r != ' ' && !unicode.IsPrint(r) {
					t.Fatalf("unprintable %U in %q", r, l)
				}
			}
		}
		if !bytes.ContainsAny(data, "\n\\") && !partial && len(data) <= quoteLineMax && utf8.Valid(data) && isPrintable(data) &&
			len(bytes.TrimSpace(data)) > 0 && data[len(data)-1] != '\r' {
			if len(lines) != 1 || lines[0] != string(data) {
				t.Fatalf("a printable line %q was changed: %q", data, lines)
			}
		}
	})
}

func isPrintable(b []byte) bool {
	for _, r := range string(b) {
		if r != ' ' && !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// TestKeepOutput: the kept copy is the output's last outputKeepMax bytes,
// a fleet keeps the newest outputKeepCount copies, and an output file that
// is a symbolic link is not read.
func TestKeepOutput(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	big := filepath.Join(dir, "big.log")
	data := append(bytes.Repeat([]byte("early\n"), outputKeepMax/6+10), "missing config file\n"...)
	if err := os.WriteFile(big, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out := h.svc.takeOutput("fleet-1", "process-big", big)
	if !out.Read || !out.Kept || !slices.Equal(out.Lines[len(out.Lines)-1:], []string{"missing config file"}) {
		t.Fatalf("takeOutput = %+v", out)
	}
	kept, err := os.ReadFile(filepath.Join(h.svc.fleetDir("fleet-1"), outputDirName, "process-big.log"))
	if err != nil || len(kept) != outputKeepMax || !bytes.HasSuffix(kept, []byte("missing config file\n")) {
		t.Fatalf("kept %d bytes (%v), want the last %d", len(kept), err, outputKeepMax)
	}
	for i := range outputKeepCount + 5 {
		p := filepath.Join(dir, fmt.Sprint(i, ".log"))
		os.WriteFile(p, []byte("x\n"), 0o600)
		h.svc.takeOutput("fleet-1", fmt.Sprint("process-", i), p)
	}
	entries, _ := os.ReadDir(filepath.Join(h.svc.fleetDir("fleet-1"), outputDirName))
	if len(entries) != outputKeepCount {
		t.Errorf("%d copies kept, want %d", len(entries), outputKeepCount)
	}
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("ca key\n"), 0o600)
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if out := h.svc.takeOutput("fleet-1", "process-link", link); out.Read || out.Kept || len(out.Lines) != 0 {
		t.Errorf("an output file that is a symbolic link was read: %+v", out)
	}
}
