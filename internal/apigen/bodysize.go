package apigen

import "math"

// Bounds of encoded values, in bytes, for the largest request body an
// operation's input can take (bodyBound).
const (
	// unbounded stands for a value the model does not bound (a list or
	// map without a maximum): the operation's bound is then the protocol
	// layer's default.
	unbounded = math.MaxInt64 / 4
	// jsonCharBytes is the most bytes one character of a string takes in
	// JSON: an escaped surrogate pair (\ud83d\ude00), as encoders that
	// escape everything beyond ASCII (Python's json) write a character
	// outside the Basic Multilingual Plane.
	jsonCharBytes = 12
	// cborCharBytes is the most bytes one character takes in CBOR (UTF-8).
	cborCharBytes = 4
	// numberBytes is the most bytes of a number in JSON (e.g.
	// -1.2345678901234567e-308) or in CBOR (a head and 8 bytes), and of a
	// timestamp (epoch seconds as a number; a tag and a float in CBOR).
	numberBytes = 24
	// cborHead is the most bytes of a CBOR item's head (a length).
	cborHead = 9
)

// unboundedStringChars is the length assumed of a string the model does
// not bound (IDs, ARNs, NextToken, free text): Hoist's own bound, longer
// than any ARN.
const unboundedStringChars = 4096

// stringBound is the most bytes of a string of n characters.
func stringBound(n int64) int64 { return max(2+jsonCharBytes*n, cborHead+cborCharBytes*n) }

// bodyBound returns the most bytes a body carrying one value of shape can
// take in either protocol when its values are within the model's
// constraints (strings it does not bound within unboundedStringChars) and
// it is encoded as the SDKs encode: JSON with at most a space after each
// comma and colon (Python's json), CBOR with definite lengths; and
// whether the model bounds it (false when it bounds no list or map on the
// way).
func (g *gen) bodyBound(shape string) (int64, bool) {
	n := g.valueBound(shape, map[string]bool{})
	return n, n < unbounded
}

// valueBound is the most bytes of one value of shape in JSON or in CBOR,
// whichever is more (a member, element or entry adds its name or key, its
// punctuation and its spaces, or its head); unbounded when the model sets
// no maximum on a list or map (or the shape contains itself).
func (g *gen) valueBound(shape string, open map[string]bool) int64 {
	s := g.m.Shapes[shape]
	switch s.Type {
	case "string":
		if isEnum(s) {
			longest := 0
			for _, v := range s.Enum {
				longest = max(longest, len(v))
			}
			return 2 + int64(jsonCharBytes*longest)
		}
		if s.Max == nil {
			return stringBound(unboundedStringChars)
		}
		return maxCount(s, stringBound)
	case "blob":
		return maxCount(s, func(n int64) int64 { return max(2+4*((n+2)/3), cborHead+n) })
	case "integer", "long", "double", "float", "timestamp":
		return numberBytes
	case "boolean":
		return 5
	case "list":
		elem := g.valueBound(s.Member.Shape, open)
		return maxCount(s, func(n int64) int64 { return cborHead + 2 + saturate(n, elem+2) })
	case "map":
		entry := g.valueBound(s.Key.Shape, open) + g.valueBound(s.Value.Shape, open) + 4
		return maxCount(s, func(n int64) int64 { return cborHead + 2 + saturate(n, entry) })
	case "structure":
		return g.structBound(shape, open)
	}
	return unbounded
}

// structBound is valueBound for a structure: every member present.
func (g *gen) structBound(shape string, open map[string]bool) int64 {
	if open[shape] {
		return unbounded
	}
	open[shape] = true
	defer delete(open, shape)
	total := int64(cborHead + 2)
	for name, m := range g.m.Shapes[shape].Members {
		total += cborHead + 4 + int64(len(name)) + g.valueBound(m.Shape, open)
		if total >= unbounded {
			return unbounded
		}
	}
	return total
}

// maxCount applies size to the shape's maximum length (characters, bytes
// or entries), or returns unbounded when the model sets none.
func maxCount(s *Shape, size func(n int64) int64) int64 {
	if s.Max == nil || *s.Max < 0 || *s.Max > 1<<40 {
		return unbounded
	}
	return min(size(int64(*s.Max)), unbounded)
}

// saturate is n*each, or unbounded when that is beyond it.
func saturate(n, each int64) int64 {
	if each >= unbounded || (n > 0 && each > unbounded/n) {
		return unbounded
	}
	return n * each
}
