package search

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a token.
type tokKind int

const (
	tokEOF    tokKind = iota
	tokWord           // an operand name or keyword: letters, digits, _ - .
	tokNumber         // an optional '-' and digits
	tokString         // a quoted string (text is the unescaped value)
	tokComparator
	tokLParen
	tokRParen
)

// token is one lexeme; off is its byte offset in the source.
type token struct {
	kind tokKind
	text string // the word, digits, comparator or unescaped string
	raw  string // the source text of the token
	off  int
}

// describe names a token in an error message.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "the end of the expression"
	case tokString:
		return "the string " + t.raw
	}
	return fmt.Sprintf("%q", t.raw)
}

// lexer splits an expression into tokens.
type lexer struct {
	src string
	off int
}

// errAt returns an *Error at byte offset off of src.
func errAt(src string, off int, format string, args ...any) *Error {
	if off > len(src) {
		off = len(src)
	}
	return &Error{Pos: utf8.RuneCountInString(src[:off]) + 1, Msg: fmt.Sprintf(format, args...)}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// next returns the next token.
func (l *lexer) next() (token, error) {
	for l.off < len(l.src) && isSpace(l.src[l.off]) {
		l.off++
	}
	start := l.off
	if start == len(l.src) {
		return token{kind: tokEOF, off: start}, nil
	}
	c := l.src[start]
	tok := func(k tokKind, n int) (token, error) {
		l.off = start + n
		raw := l.src[start:l.off]
		return token{kind: k, text: raw, raw: raw, off: start}, nil
	}
	switch {
	case c == '(':
		return tok(tokLParen, 1)
	case c == ')':
		return tok(tokRParen, 1)
	case c == '=':
		return tok(tokComparator, 1)
	case c == '<' || c == '>':
		if start+1 < len(l.src) && (l.src[start+1] == '=' || c == '<' && l.src[start+1] == '>') {
			return tok(tokComparator, 2)
		}
		return tok(tokComparator, 1)
	case c == '!' && start+1 < len(l.src) && l.src[start+1] == '=':
		return token{}, errAt(l.src, start, `"!=" is not a comparator: use "<>"`)
	case c == '\'' || c == '"':
		return l.quoted(c)
	case c == '-' || c >= '0' && c <= '9':
		n := 1
		for start+n < len(l.src) && l.src[start+n] >= '0' && l.src[start+n] <= '9' {
			n++
		}
		if start+n < len(l.src) && isWordByte(l.src[start+n]) {
			break // a word such as 5abc: reported as a word below
		}
		if c == '-' && n == 1 {
			return token{}, errAt(l.src, start, `expected digits after "-"`)
		}
		return tok(tokNumber, n)
	}
	if isWordByte(c) {
		n := 1
		for start+n < len(l.src) && isWordByte(l.src[start+n]) {
			n++
		}
		return tok(tokWord, n)
	}
	r, _ := utf8.DecodeRuneInString(l.src[start:])
	return token{}, errAt(l.src, start, "unexpected character %q", r)
}

// quoted reads a string in quote q: a backslash makes the next character
// literal.
func (l *lexer) quoted(q byte) (token, error) {
	start := l.off
	var b strings.Builder
	i := start + 1
	for i < len(l.src) {
		c := l.src[i]
		switch c {
		case '\\':
			if i+1 == len(l.src) {
				return token{}, errAt(l.src, i, "the string that starts at position %d ends in a lone backslash: a backslash must be followed by the character it escapes", errAt(l.src, start, "").Pos)
			}
			_, n := utf8.DecodeRuneInString(l.src[i+1:])
			b.WriteString(l.src[i+1 : i+1+n])
			i += 1 + n
			continue
		case q:
			l.off = i + 1
			return token{kind: tokString, text: b.String(), raw: l.src[start:l.off], off: start}, nil
		}
		b.WriteByte(c)
		i++
	}
	return token{}, errAt(l.src, start, "unterminated string: expected a closing %c", q)
}
