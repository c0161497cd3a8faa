package api

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ValidationErrors collects the constraint failures of one input, in the order
// members were checked (sorted by member name, depth first).
type ValidationErrors struct {
	msgs []string
}

// maxValueEcho caps how much of a bad value a message repeats.
const maxValueEcho = 64

func (e *ValidationErrors) add(value, path, constraint string) {
	e.msgs = append(e.msgs, "Value "+value+" at '"+path+"' failed to satisfy constraint: "+constraint)
}

func quoteValue(s string, sensitive bool) string {
	if sensitive {
		return "'***'"
	}
	if len(s) > maxValueEcho {
		s = s[:maxValueEcho] + "..."
	}
	return "'" + s + "'"
}

// Missing records a required member that is absent.
func (e *ValidationErrors) Missing(path string) {
	e.add("null", path, "Member must not be null")
}

// String checks a string's length (in characters; -1 for no bound) and pattern.
func (e *ValidationErrors) String(path, s string, min, max int, re *regexp.Regexp, sensitive bool) {
	n := utf8.RuneCountInString(s)
	switch {
	case min >= 0 && n < min:
		e.add(quoteValue(s, sensitive), path, "Member must have length greater than or equal to "+strconv.Itoa(min))
	case max >= 0 && n > max:
		e.add(quoteValue(s, sensitive), path, "Member must have length less than or equal to "+strconv.Itoa(max))
	case re != nil && !re.MatchString(s):
		e.add(quoteValue(s, sensitive), path, "Member must satisfy regular expression pattern: "+re.String())
	}
}

// Count checks the length of a list, map or blob (-1 for no bound).
func (e *ValidationErrors) Count(path string, n, min, max int) {
	switch {
	case min >= 0 && n < min:
		e.add("of length "+strconv.Itoa(n), path, "Member must have length greater than or equal to "+strconv.Itoa(min))
	case max >= 0 && n > max:
		e.add("of length "+strconv.Itoa(n), path, "Member must have length less than or equal to "+strconv.Itoa(max))
	}
}

// Number checks a numeric range.
func (e *ValidationErrors) Number(path string, v, min float64, hasMin bool, max float64, hasMax bool) {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	switch {
	case hasMin && v < min:
		e.add("'"+f(v)+"'", path, "Member must have value greater than or equal to "+f(min))
	case hasMax && v > max:
		e.add("'"+f(v)+"'", path, "Member must have value less than or equal to "+f(max))
	}
}

// Enum records a value outside an enum's set.
func Enum[T ~string](e *ValidationErrors, path, v string, allowed []T) {
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	e.add(quoteValue(v, false), path, "Member must satisfy enum value set: ["+strings.Join(names, ", ")+"]")
}

// Err returns nil when nothing failed, else an *InvalidRequestException whose
// message lists every failure.
func (e *ValidationErrors) Err() error {
	if len(e.msgs) == 0 {
		return nil
	}
	noun := "error"
	if len(e.msgs) > 1 {
		noun = "errors"
	}
	return &InvalidRequestException{Message: strconv.Itoa(len(e.msgs)) + " validation " + noun + " detected: " + strings.Join(e.msgs, "; ")}
}
