package apigen

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// GoPattern translates a model pattern (Java regular expression syntax, as
// Smithy uses) into Go RE2 syntax. The meaning is kept: a pattern is not
// anchored unless it says ^ or $ itself.
//
// Java spells code points outside the BMP as UTF-16 surrogate pairs; the model
// uses the range "\uD800\uDC00-\uDBFF\uDFFF" for "any supplementary character",
// which becomes \x{10000}-\x{10FFFF}. Other \uXXXX escapes become \x{XXXX}.
func GoPattern(p string) (string, error) {
	p = strings.ReplaceAll(p, `\uD800\uDC00-\uDBFF\uDFFF`, `\x{10000}-\x{10FFFF}`)
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			if p[i+1] == 'u' && i+6 <= len(p) {
				if _, err := strconv.ParseUint(p[i+2:i+6], 16, 32); err == nil {
					b.WriteString(`\x{` + p[i+2:i+6] + `}`)
					i += 5
					continue
				}
			}
			b.WriteString(p[i : i+2])
			i++
			continue
		}
		b.WriteByte(p[i])
	}
	out := b.String()
	if _, err := regexp.Compile(out); err != nil {
		return "", fmt.Errorf("apigen: pattern %q (Go %q): %w", p, out, err)
	}
	return out, nil
}
