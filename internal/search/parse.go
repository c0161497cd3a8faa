package search

import (
	"strconv"
	"strings"
)

// Expr is a parsed filter expression.
type Expr interface {
	// Match reports whether the session satisfies the expression.
	Match(s *Session) bool
	// String returns the expression fully parenthesized; parsing it gives
	// the same tree.
	String() string
}

// And is L AND R.
type And struct{ L, R Expr }

// Or is L OR R.
type Or struct{ L, R Expr }

// Not is NOT X.
type Not struct{ X Expr }

// Cond is one comparison: operand comparator value.
type Cond struct {
	Operand Operand
	Op      Comparator
	Value   Value
}

// Match implements Expr.
func (e *And) Match(s *Session) bool { return e.L.Match(s) && e.R.Match(s) }

// Match implements Expr.
func (e *Or) Match(s *Session) bool { return e.L.Match(s) || e.R.Match(s) }

// Match implements Expr.
func (e *Not) Match(s *Session) bool { return !e.X.Match(s) }

// Match implements Expr. A session without the operand's value (a game
// property it lacks, a name it does not have) satisfies only "<>".
func (e *Cond) Match(s *Session) bool {
	switch e.Operand.Attr {
	case AttrProperty:
		v, ok := s.property(e.Operand.Key)
		if !ok {
			return e.Op == Ne
		}
		return e.matchString(v)
	case AttrGameSessionName:
		if !s.HasName {
			return e.Op == Ne
		}
		return e.matchString(s.Name)
	case AttrGameSessionID:
		return e.matchString(s.ID)
	case AttrHasAvailablePlayerSessions:
		return (s.PlayerSessionCount < s.MaximumSessions == e.Value.Bool) == (e.Op == Eq)
	case AttrMaximumSessions:
		return e.matchNumber(s.MaximumSessions)
	case AttrCreationTimeMillis:
		return e.matchNumber(s.CreationTimeMillis)
	}
	return e.matchNumber(s.PlayerSessionCount)
}

// matchString compares a string value (the parser allows only = and <>).
func (e *Cond) matchString(v string) bool {
	if e.Op == Eq {
		return v == e.Value.Str
	}
	return v != e.Value.Str
}

func (e *Cond) matchNumber(n int64) bool {
	want := e.Value.Num
	switch e.Op {
	case Eq:
		return n == want
	case Ne:
		return n != want
	case Lt:
		return n < want
	case Gt:
		return n > want
	case Le:
		return n <= want
	}
	return n >= want
}

func (e *And) String() string { return "(" + e.L.String() + " AND " + e.R.String() + ")" }
func (e *Or) String() string  { return "(" + e.L.String() + " OR " + e.R.String() + ")" }
func (e *Not) String() string { return "NOT " + e.X.String() }
func (e *Cond) String() string {
	return e.Operand.String() + " " + e.Op.String() + " " + e.Value.String()
}

// parser is a recursive-descent parser with one token of lookahead.
type parser struct {
	lex lexer
	tok token
}

func newParser(src string) (*parser, error) {
	p := &parser{lex: lexer{src: src}}
	return p, p.advance()
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

// errHere reports what was expected at the current token.
func (p *parser) errHere(expected string) error {
	return errAt(p.lex.src, p.tok.off, "expected %s, found %s", expected, p.tok.describe())
}

// keyword reports whether the current token is the keyword kw (any case).
func (p *parser) keyword(kw string) bool {
	return p.tok.kind == tokWord && strings.EqualFold(p.tok.text, kw)
}

// ParseFilter parses a FilterExpression:
//
//	filter     = orExpr
//	orExpr     = andExpr { "OR" andExpr }
//	andExpr    = notExpr { "AND" notExpr }
//	notExpr    = { "NOT" } primary
//	primary    = "(" orExpr ")" | condition
//	condition  = operand comparator value
func ParseFilter(src string) (Expr, error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	e, err := p.orExpr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.errHere(`AND, OR or the end of the expression`)
	}
	return e, nil
}

func (p *parser) orExpr() (Expr, error) {
	l, err := p.andExpr()
	if err != nil {
		return nil, err
	}
	for p.keyword("OR") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		r, err := p.andExpr()
		if err != nil {
			return nil, err
		}
		l = &Or{l, r}
	}
	return l, nil
}

func (p *parser) andExpr() (Expr, error) {
	l, err := p.notExpr()
	if err != nil {
		return nil, err
	}
	for p.keyword("AND") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		r, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		l = &And{l, r}
	}
	return l, nil
}

func (p *parser) notExpr() (Expr, error) {
	if p.keyword("NOT") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		x, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		return &Not{x}, nil
	}
	return p.primary()
}

func (p *parser) primary() (Expr, error) {
	if p.tok.kind == tokLParen {
		open := p.tok.off
		if err := p.advance(); err != nil {
			return nil, err
		}
		e, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tokRParen {
			return nil, errAt(p.lex.src, p.tok.off, "expected AND, OR or \")\" to close the \"(\" at position %d, found %s",
				errAt(p.lex.src, open, "").Pos, p.tok.describe())
		}
		return e, p.advance()
	}
	return p.condition()
}

func (p *parser) condition() (Expr, error) {
	o, err := p.operand(`a condition (an operand such as maximumSessions or gameSessionProperties.<key>), NOT or "("`)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokComparator {
		return nil, p.errHere(`a comparator (=, <>, <, >, <= or >=) after ` + o.String())
	}
	opTok := p.tok
	var op Comparator
	for i, t := range comparatorText {
		if t == opTok.text {
			op = Comparator(i)
		}
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	v, err := p.value(o, op, opTok)
	if err != nil {
		return nil, err
	}
	return &Cond{Operand: o, Op: op, Value: v}, nil
}

// operand reads an operand; expected describes what may stand here.
func (p *parser) operand(expected string) (Operand, error) {
	if p.tok.kind != tokWord {
		return Operand{}, p.errHere(expected)
	}
	t := p.tok
	name := t.text
	if key, ok := strings.CutPrefix(name, propertyPrefix); ok {
		switch {
		case key == "":
			return Operand{}, errAt(p.lex.src, t.off, "expected a game property key after %q", propertyPrefix)
		case strings.Contains(key, "."):
			return Operand{}, errAt(p.lex.src, t.off, "game property key %q contains \".\": such keys cannot be searched", key)
		case len(key) > MaxPropertyKey:
			return Operand{}, errAt(p.lex.src, t.off, "game property key %q is longer than %d characters", key, MaxPropertyKey)
		}
		return Operand{Attr: AttrProperty, Key: key}, p.advance()
	}
	if a, ok := attrNames[name]; ok {
		return Operand{Attr: a}, p.advance()
	}
	for known := range attrNames {
		if strings.EqualFold(known, name) {
			return Operand{}, errAt(p.lex.src, t.off, "unknown operand %q: operand names are case-sensitive, did you mean %s?", name, known)
		}
	}
	if strings.EqualFold(name, "gameSessionProperties") || strings.HasPrefix(strings.ToLower(name), strings.ToLower(propertyPrefix)) {
		return Operand{}, errAt(p.lex.src, t.off, "unknown operand %q: a game property is written gameSessionProperties.<key>", name)
	}
	if isKeyword(name) {
		return Operand{}, p.errHere(expected)
	}
	return Operand{}, errAt(p.lex.src, t.off, "unknown operand %q: expected one of gameSessionId, gameSessionName, maximumSessions, "+
		"creationTimeMillis, playerSessionCount, hasAvailablePlayerSessions or gameSessionProperties.<key>", name)
}

func isKeyword(w string) bool {
	for _, k := range []string{"AND", "OR", "NOT", "ASC", "DESC", "true", "false"} {
		if strings.EqualFold(w, k) {
			return true
		}
	}
	return false
}

// value reads the value of a condition and checks it against the operand's
// type and the comparator.
func (p *parser) value(o Operand, op Comparator, opTok token) (Value, error) {
	t := p.tok
	var v Value
	switch {
	case t.kind == tokNumber:
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return Value{}, errAt(p.lex.src, t.off, "number %s is out of range (a 64-bit integer)", t.text)
		}
		v = Value{Type: TypeNumber, Num: n}
	case t.kind == tokString:
		v = Value{Type: TypeString, Str: t.text}
	case t.kind == tokWord && (strings.EqualFold(t.text, "true") || strings.EqualFold(t.text, "false")):
		v = Value{Type: TypeBool, Bool: strings.EqualFold(t.text, "true")}
	case t.kind == tokWord && t.text[0] >= '0' && t.text[0] <= '9' || t.kind == tokWord && t.text[0] == '-':
		return Value{}, errAt(p.lex.src, t.off, "expected %s for %s, found %q: numbers are whole numbers", o.Type(), o, t.text)
	default:
		return Value{}, p.errHere(o.Type().String() + " after " + o.String() + " " + opTok.text)
	}
	if v.Type != o.Type() {
		hint := ""
		if o.Attr == AttrProperty {
			hint = " (game property values are compared as strings)"
		}
		return Value{}, errAt(p.lex.src, t.off, "%s takes %s%s, found %s", o, o.Type(), hint, t.describe())
	}
	if v.Type != TypeNumber && op != Eq && op != Ne {
		return Value{}, errAt(p.lex.src, opTok.off, "%s cannot be compared with %q: %s values allow only = and <>", o, opTok.text,
			map[Type]string{TypeBool: "boolean", TypeString: "string"}[v.Type])
	}
	return v, p.advance()
}

// Sort is a parsed SortExpression: one operand and a direction.
type Sort struct {
	Operand Operand
	Desc    bool
}

// String returns the sort as written in an expression.
func (s Sort) String() string {
	if s.Desc {
		return s.Operand.String() + " DESC"
	}
	return s.Operand.String() + " ASC"
}

// ParseSort parses a SortExpression: operand ( "ASC" | "DESC" ).
func ParseSort(src string) (Sort, error) {
	p, err := newParser(src)
	if err != nil {
		return Sort{}, err
	}
	o, err := p.operand("an operand to sort by (such as creationTimeMillis or gameSessionProperties.<key>)")
	if err != nil {
		return Sort{}, err
	}
	var s Sort
	switch {
	case p.keyword("ASC"):
		s = Sort{Operand: o}
	case p.keyword("DESC"):
		s = Sort{Operand: o, Desc: true}
	default:
		return Sort{}, p.errHere("ASC or DESC after " + o.String())
	}
	if err := p.advance(); err != nil {
		return Sort{}, err
	}
	if p.tok.kind != tokEOF {
		return Sort{}, p.errHere("the end of the expression (a sort names one operand)")
	}
	return s, nil
}
