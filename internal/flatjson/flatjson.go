// Package flatjson reads and writes flat JSON objects (string, number,
// boolean and null members, no nesting) without reflection, for records on
// hot paths. It is deliberately partial: Scanner reports anything outside
// that subset as a failure, and the caller then decodes with encoding/json,
// which stays the reference for what a record means.
package flatjson

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Kinds of member values.
const (
	String = 's' // Value is the string's bytes, without quotes (no escapes in it)
	Number = 'n' // Value is the number's text
	True   = 't'
	False  = 'f'
	Null   = 'z'
)

// Scanner walks the members of one flat JSON object.
type Scanner struct {
	data   []byte
	pos    int
	failed bool
	done   bool
}

// NewScanner starts scanning data, which must hold one JSON object.
func NewScanner(data []byte) *Scanner {
	s := &Scanner{data: data}
	s.space()
	if s.pos >= len(data) || data[s.pos] != '{' {
		s.failed = true
		return s
	}
	s.pos++
	s.space()
	if s.pos < len(data) && data[s.pos] == '}' {
		s.pos++
		s.end()
	}
	return s
}

// Next returns the next member: its key, the kind of its value and the value
// (see the kinds). ok is false at the end of the object and on failure;
// Failed tells which.
func (s *Scanner) Next() (key []byte, kind byte, value []byte, ok bool) {
	if s.failed || s.done {
		return nil, 0, nil, false
	}
	key, ok = s.plainString()
	if !ok {
		return s.fail()
	}
	s.space()
	if s.pos >= len(s.data) || s.data[s.pos] != ':' {
		return s.fail()
	}
	s.pos++
	s.space()
	if s.pos >= len(s.data) {
		return s.fail()
	}
	switch c := s.data[s.pos]; {
	case c == '"':
		value, ok = s.plainString()
		kind = String
	case c == '-' || c >= '0' && c <= '9':
		value, ok = s.number()
		kind = Number
	case c == 't':
		ok, kind = s.literal("true"), True
	case c == 'f':
		ok, kind = s.literal("false"), False
	case c == 'n':
		ok, kind = s.literal("null"), Null
	default:
		ok = false
	}
	if !ok {
		return s.fail()
	}
	s.space()
	if s.pos >= len(s.data) {
		return s.fail()
	}
	switch s.data[s.pos] {
	case ',':
		s.pos++
		s.space()
	case '}':
		s.pos++
		s.end()
	default:
		return s.fail()
	}
	return key, kind, value, true
}

// Each calls set for each member of the flat JSON object in data. It
// reports false when data is outside the subset Scanner reads or set
// returned false.
func Each(data []byte, set func(key []byte, kind byte, value []byte) bool) bool {
	sc := NewScanner(data)
	for {
		key, kind, value, ok := sc.Next()
		if !ok {
			return !sc.Failed()
		}
		if !set(key, kind, value) {
			return false
		}
	}
}

// Failed reports whether the scan failed: the data is not a flat object in the
// subset this package reads (or not JSON at all).
func (s *Scanner) Failed() bool { return s.failed }

func (s *Scanner) fail() ([]byte, byte, []byte, bool) {
	s.failed = true
	return nil, 0, nil, false
}

// end checks that only white space follows the object.
func (s *Scanner) end() {
	s.done = true
	s.space()
	if s.pos != len(s.data) {
		s.failed = true
	}
}

func (s *Scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// plainString reads a string with no escapes, of valid UTF-8 and no control
// characters; anything else fails (encoding/json handles it).
func (s *Scanner) plainString() ([]byte, bool) {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return nil, false
	}
	start := s.pos + 1
	ascii := true
	for i := start; i < len(s.data); i++ {
		c := s.data[i]
		switch {
		case c == '"':
			v := s.data[start:i]
			if !ascii && !utf8.Valid(v) {
				return nil, false
			}
			s.pos = i + 1
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// number reads a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *Scanner) number() ([]byte, bool) {
	start := s.pos
	if s.at('-') {
		s.pos++
	}
	switch {
	case s.at('0'):
		s.pos++
	case s.digits() == 0:
		return nil, false
	}
	if s.at('.') {
		s.pos++
		if s.digits() == 0 {
			return nil, false
		}
	}
	if s.at('e') || s.at('E') {
		s.pos++
		if s.at('+') || s.at('-') {
			s.pos++
		}
		if s.digits() == 0 {
			return nil, false
		}
	}
	return s.data[start:s.pos], true
}

func (s *Scanner) at(c byte) bool { return s.pos < len(s.data) && s.data[s.pos] == c }

func (s *Scanner) digits() int {
	n := 0
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}

func (s *Scanner) literal(lit string) bool {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return false
	}
	s.pos += len(lit)
	return true
}

// Int parses a Number value as a whole number that fits 64 bits, in JSON's
// syntax (no leading zeros or plus sign).
func Int(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 20 {
		return 0, false
	}
	digits := v
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// AppendString appends s as a JSON string, exactly as encoding/json's
// Encoder with HTML escaping off writes it (invalid UTF-8 becomes U+FFFD).
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return appendStringSlow(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendStringSlow leaves escapes, non-ASCII text and invalid UTF-8 to
// encoding/json.
func appendStringSlow(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
