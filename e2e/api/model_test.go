package api_test

import (
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hoistgg/hoist/internal/apigen"
)

// The GameLift service model (the pinned copy internal/api is generated
// from) is the source of the operation names and of the constraints the
// generated inputs satisfy.

var (
	modelOnce sync.Once
	theModel  *apigen.Model
	modelErr  error
)

func loadModel(t testing.TB) *apigen.Model {
	t.Helper()
	modelOnce.Do(func() {
		theModel, modelErr = apigen.PinnedModel()
	})
	if modelErr != nil {
		t.Fatalf("the pinned GameLift service model: %v", modelErr)
	}
	return theModel
}

// modelOperations returns the model's operation names, sorted.
func modelOperations(m *apigen.Model) []string {
	names := make([]string, 0, len(m.Operations))
	for n := range m.Operations {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// gen builds minimal values that satisfy every constraint of the model:
// required members only, strings of the least length that matches the
// pattern, numbers at their minimum, lists and maps at their least length,
// the first enum value. Values are Go values (map[string]any, []any,
// string, int64, float64, bool, time.Time, []byte); toJSON and toWire
// convert them for the SDK structs and for raw requests.
type gen struct {
	m   *apigen.Model
	now time.Time
}

// input returns the minimal input of an operation (nil when it has none).
func (g *gen) input(op string) (map[string]any, error) {
	o, ok := g.m.Operations[op]
	if !ok {
		return nil, fmt.Errorf("no operation %s in the model", op)
	}
	if o.Input == nil {
		return map[string]any{}, nil
	}
	v, err := g.value(o.Input.Shape, op, 0)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

func (g *gen) value(shapeName, path string, depth int) (any, error) {
	if depth > 12 {
		return nil, fmt.Errorf("%s: required members nest too deeply", path)
	}
	s, ok := g.m.Shapes[shapeName]
	if !ok {
		return nil, fmt.Errorf("%s: no shape %s", path, shapeName)
	}
	switch s.Type {
	case "structure":
		out := map[string]any{}
		for _, name := range s.Required {
			ref, ok := s.Members[name]
			if !ok {
				return nil, fmt.Errorf("%s: required member %s is not a member", path, name)
			}
			v, err := g.value(ref.Shape, path+"."+name, depth+1)
			if err != nil {
				return nil, err
			}
			out[name] = v
		}
		return out, nil
	case "list":
		n := minCount(s)
		out := make([]any, 0, n)
		for i := 0; i < n; i++ {
			v, err := g.value(s.Member.Shape, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			if str, ok := v.(string); ok && i > 0 {
				v = g.variant(s.Member.Shape, str, i)
			}
			out = append(out, v)
		}
		return out, nil
	case "map":
		n := minCount(s)
		out := map[string]any{}
		for i := 0; i < n; i++ {
			k, err := g.value(s.Key.Shape, path+".key", depth+1)
			if err != nil {
				return nil, err
			}
			key := g.variant(s.Key.Shape, k.(string), i)
			v, err := g.value(s.Value.Shape, path+"."+key, depth+1)
			if err != nil {
				return nil, err
			}
			out[key] = v
		}
		return out, nil
	case "string":
		if len(s.Enum) > 0 {
			return s.Enum[0], nil
		}
		return minimalString(s, path)
	case "integer", "long":
		return int64(numberIn(s)), nil
	case "float", "double":
		return numberIn(s), nil
	case "boolean":
		return false, nil
	case "timestamp":
		return g.now, nil
	case "blob":
		n := minCount(s)
		if n == 0 {
			n = 1
		}
		return []byte(strings.Repeat("a", n)), nil
	}
	return nil, fmt.Errorf("%s: shape %s has type %q the generator does not know", path, shapeName, s.Type)
}

// variant returns a value of the string shape distinct from base for the
// i-th element of a list or map (so keys and set-like lists do not repeat),
// or base when no variant satisfies the shape.
func (g *gen) variant(shapeName, base string, i int) string {
	s := g.m.Shapes[shapeName]
	if len(s.Enum) > i {
		return s.Enum[i]
	}
	for _, c := range []string{base + fmt.Sprint(i), base + strings.Repeat("a", i), strings.Repeat("a", i) + base} {
		if stringFits(s, c) == nil {
			return c
		}
	}
	return base
}

func minCount(s *apigen.Shape) int {
	if s.Min != nil && *s.Min > 0 {
		return int(*s.Min)
	}
	return 0
}

// numberIn returns the minimum, or 1 kept within the maximum.
func numberIn(s *apigen.Shape) float64 {
	if s.Min != nil {
		return *s.Min
	}
	if s.Max != nil && *s.Max < 1 {
		return *s.Max
	}
	return 1
}

var (
	patternMu    sync.Mutex
	patternCache = map[string]*regexp.Regexp{}
)

// shapePattern compiles a shape's model pattern as internal/api does.
func shapePattern(p string) (*regexp.Regexp, error) {
	patternMu.Lock()
	defer patternMu.Unlock()
	if re, ok := patternCache[p]; ok {
		return re, nil
	}
	gp, err := apigen.GoPattern(p)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(gp)
	if err != nil {
		return nil, err
	}
	patternCache[p] = re
	return re, nil
}

// stringFits reports why s breaks a string shape's constraints (nil: it
// does not).
func stringFits(sh *apigen.Shape, s string) error {
	n := utf8.RuneCountInString(s)
	if sh.Min != nil && float64(n) < *sh.Min {
		return fmt.Errorf("shorter than %v", *sh.Min)
	}
	if sh.Max != nil && float64(n) > *sh.Max {
		return fmt.Errorf("longer than %v", *sh.Max)
	}
	if sh.Pattern != nil {
		re, err := shapePattern(*sh.Pattern)
		if err != nil {
			return err
		}
		if !re.MatchString(s) {
			return fmt.Errorf("does not match %s", re)
		}
	}
	return nil
}

// minimalString walks the pattern's syntax tree to build a matching
// string, growing its first unbounded repetition until the length
// constraints hold, and trying each top-level alternative.
func minimalString(sh *apigen.Shape, path string) (string, error) {
	minLen := 0
	if sh.Min != nil {
		minLen = int(*sh.Min)
	}
	if sh.Pattern == nil {
		s := strings.Repeat("a", max(minLen, 1))
		return s, stringFits(sh, s)
	}
	gp, err := apigen.GoPattern(*sh.Pattern)
	if err != nil {
		return "", err
	}
	re, err := syntax.Parse(gp, syntax.Perl)
	if err != nil {
		return "", err
	}
	re = re.Simplify()
	var tried []string
	for choice := 0; choice < 4; choice++ {
		for extra := 0; extra <= minLen+1; extra++ {
			w := &walker{extra: extra, choice: choice}
			s := w.gen(re)
			if stringFits(sh, s) == nil {
				return s, nil
			}
			if len(tried) < 4 {
				tried = append(tried, s)
			}
		}
	}
	return "", fmt.Errorf("%s: no generated string fits length [%v,%v] and pattern %q (tried %q); add an override", path, ptr(sh.Min), ptr(sh.Max), *sh.Pattern, tried)
}

func ptr(f *float64) any {
	if f == nil {
		return "-"
	}
	return *f
}

type walker struct {
	extra  int // repetitions added to the first unbounded repeat met
	choice int // which alternative each alternation takes (clamped)
}

func (w *walker) take() int {
	n := w.extra
	w.extra = 0
	return n
}

func (w *walker) gen(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune)
	case syntax.OpCharClass:
		return string(pickRune(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return "a"
	case syntax.OpCapture:
		return w.gen(re.Sub[0])
	case syntax.OpStar:
		return w.repeat(re.Sub[0], w.take())
	case syntax.OpPlus:
		return w.repeat(re.Sub[0], 1+w.take())
	case syntax.OpQuest:
		return ""
	case syntax.OpRepeat:
		n := re.Min
		if re.Max == -1 || re.Max > re.Min {
			n += w.take()
			if re.Max != -1 && n > re.Max {
				n = re.Max
			}
		}
		return w.repeat(re.Sub[0], n)
	case syntax.OpConcat:
		var b strings.Builder
		for _, s := range re.Sub {
			b.WriteString(w.gen(s))
		}
		return b.String()
	case syntax.OpAlternate:
		return w.gen(re.Sub[min(w.choice, len(re.Sub)-1)])
	}
	return "" // anchors, boundaries, empty match
}

func (w *walker) repeat(re *syntax.Regexp, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(w.gen(re))
	}
	return b.String()
}

// pickRune returns a readable rune of a character class (pairs of range
// bounds): a letter or digit where the class has one.
func pickRune(ranges []rune) rune {
	for _, want := range "a0A-_.x" {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= want && want <= ranges[i+1] {
				return want
			}
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < ranges[i]+256; r++ {
			if r > ' ' && r < 0x7f {
				return r
			}
		}
	}
	if len(ranges) == 0 {
		return 'a'
	}
	return ranges[0]
}

// toJSON converts a generated value for encoding/json into SDK structs:
// timestamps as RFC 3339 strings, blobs as base64 (what json does with
// time.Time and []byte already), so it is the identity.
func toJSON(v any) any { return v }

// toWire converts a generated value for a raw AWS JSON 1.1 or CBOR body:
// timestamps become epoch seconds (a JSON number; CBOR callers tag them).
func toWire(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toWire(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toWire(e)
		}
		return out
	case time.Time:
		return math.Round(float64(x.UnixMilli())) / 1000
	}
	return v
}

// TestGeneratorCoversModel proves the generator builds an input for every
// operation of the model that satisfies internal/api's validation, so the
// end-to-end calls reach the operations rather than stop at validation.
func TestGeneratorCoversModel(t *testing.T) {
	m := loadModel(t)
	g := &gen{m: m, now: time.Now()}
	for _, op := range modelOperations(m) {
		in, err := g.input(op)
		if err != nil {
			t.Errorf("%s: %v", op, err)
			continue
		}
		if err := validateLocally(op, in); err != nil {
			t.Errorf("%s: generated input %v fails internal/api validation: %v", op, in, err)
		}
	}
}
