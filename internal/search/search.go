// Package search parses and evaluates the FilterExpression and SortExpression
// of SearchGameSessions over a small view of a game session (Session).
//
// It is pure: no store, no clock, no I/O. ParseFilter and ParseSort turn an
// expression into a tree (Expr) or a Sort, or fail with an *Error whose
// message says what was expected, what was found and at which character.
// Expr.Match evaluates a filter; Order sorts sessions, those lacking the
// sort value last, and Top keeps one page of them. Table holds many
// sessions in columns and runs a whole search over them with the filter
// compiled (what SearchGameSessions uses). docs/sessions.md ("SearchGameSessions") states the
// grammar and every choice made where GameLift's documents are silent.
package search

import (
	"fmt"
	"strconv"
	"strings"
)

// Attr is a game session attribute that an expression can name.
type Attr int

// The attributes, as GameLift names them in expressions.
const (
	AttrGameSessionID Attr = iota
	AttrGameSessionName
	AttrMaximumSessions
	AttrCreationTimeMillis
	AttrPlayerSessionCount
	AttrHasAvailablePlayerSessions
	AttrProperty // gameSessionProperties.<key>
)

// attrNames maps each operand name to its attribute.
var attrNames = map[string]Attr{
	"gameSessionId":              AttrGameSessionID,
	"gameSessionName":            AttrGameSessionName,
	"maximumSessions":            AttrMaximumSessions,
	"creationTimeMillis":         AttrCreationTimeMillis,
	"playerSessionCount":         AttrPlayerSessionCount,
	"hasAvailablePlayerSessions": AttrHasAvailablePlayerSessions,
}

// propertyPrefix starts an operand naming a game property.
const propertyPrefix = "gameSessionProperties."

// MaxPropertyKey is the longest game property key (GamePropertyKey).
const MaxPropertyKey = 32

// Type is the type of an attribute or a value.
type Type int

// The value types.
const (
	TypeNumber Type = iota
	TypeBool
	TypeString
)

func (t Type) String() string {
	switch t {
	case TypeNumber:
		return "a number"
	case TypeBool:
		return "true or false"
	}
	return "a quoted string"
}

// Operand is an attribute, with the property key for AttrProperty.
type Operand struct {
	Attr Attr
	Key  string
}

// Type returns the operand's value type.
func (o Operand) Type() Type {
	switch o.Attr {
	case AttrMaximumSessions, AttrCreationTimeMillis, AttrPlayerSessionCount:
		return TypeNumber
	case AttrHasAvailablePlayerSessions:
		return TypeBool
	}
	return TypeString
}

// String returns the operand as written in an expression.
func (o Operand) String() string {
	if o.Attr == AttrProperty {
		return propertyPrefix + o.Key
	}
	for name, a := range attrNames {
		if a == o.Attr {
			return name
		}
	}
	return "?"
}

// Comparator is one of = <> < > <= >=.
type Comparator int

// The comparators.
const (
	Eq Comparator = iota
	Ne
	Lt
	Gt
	Le
	Ge
)

var comparatorText = [...]string{Eq: "=", Ne: "<>", Lt: "<", Gt: ">", Le: "<=", Ge: ">="}

func (c Comparator) String() string { return comparatorText[c] }

// Value is a literal of an expression.
type Value struct {
	Type Type
	Num  int64
	Bool bool
	Str  string
}

// String returns the value as written in an expression (strings in single
// quotes, with \ and ' escaped).
func (v Value) String() string {
	switch v.Type {
	case TypeNumber:
		return strconv.FormatInt(v.Num, 10)
	case TypeBool:
		return strconv.FormatBool(v.Bool)
	}
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(v.Str); i++ {
		if c := v.Str[i]; c == '\'' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v.Str[i])
	}
	b.WriteByte('\'')
	return b.String()
}

// Property is one game property of a session.
type Property struct{ Key, Value string }

// Session is what a search sees of a game session.
type Session struct {
	// ID is the game session ID: its full ARN.
	ID string
	// Name is the game session's name; HasName is false when it has none.
	Name    string
	HasName bool
	// MaximumSessions is MaximumPlayerSessionCount; PlayerSessionCount is
	// CurrentPlayerSessionCount.
	MaximumSessions    int64
	PlayerSessionCount int64
	// CreationTimeMillis is the creation time in Unix milliseconds.
	CreationTimeMillis int64
	Properties         []Property
}

// property returns the value of the game property key.
func (s *Session) property(key string) (string, bool) {
	for i := range s.Properties {
		if s.Properties[i].Key == key {
			return s.Properties[i].Value, true
		}
	}
	return "", false
}

// value returns the session's value of o, and false when it has none.
func (s *Session) value(o Operand) (Value, bool) {
	switch o.Attr {
	case AttrGameSessionID:
		return Value{Type: TypeString, Str: s.ID}, true
	case AttrGameSessionName:
		return Value{Type: TypeString, Str: s.Name}, s.HasName
	case AttrMaximumSessions:
		return Value{Type: TypeNumber, Num: s.MaximumSessions}, true
	case AttrCreationTimeMillis:
		return Value{Type: TypeNumber, Num: s.CreationTimeMillis}, true
	case AttrPlayerSessionCount:
		return Value{Type: TypeNumber, Num: s.PlayerSessionCount}, true
	case AttrHasAvailablePlayerSessions:
		return Value{Type: TypeBool, Bool: s.PlayerSessionCount < s.MaximumSessions}, true
	}
	v, ok := s.property(o.Key)
	return Value{Type: TypeString, Str: v}, ok
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Error is a malformed expression: Pos is the 1-based character position
// where the problem was found (len+1 for the end of the expression).
type Error struct {
	Pos int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("at position %d: %s", e.Pos, e.Msg) }
