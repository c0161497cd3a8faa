package apigen

import (
	"bytes"
	"fmt"
)

// jsonEncoders writes AppendJSON and writeJSON for every structure: the
// JSON encoding without reflection (see internal/api/jsonwrite.go).
func (g *gen) jsonEncoders(b *bytes.Buffer) error {
	for _, name := range g.sortedShapes(isStruct) {
		s := g.m.Shapes[name]
		fmt.Fprintf(b, "func (v *%s) AppendJSON(b []byte) ([]byte, error) {\n", name)
		b.WriteString("\tw := jsonWriter{b: b}\n\tv.writeJSON(&w)\n\treturn w.b, w.err\n}\n\n")
		fmt.Fprintf(b, "func (v *%s) writeJSON(w *jsonWriter) {\n\tw.open()\n", name)
		for _, mn := range sortedMembers(s) {
			if err := g.jsonMember(b, "v."+mn, mn, s.Members[mn].Shape); err != nil {
				return fmt.Errorf("apigen: %s.%s: %w", name, mn, err)
			}
		}
		b.WriteString("\tw.close()\n}\n\n")
	}
	return nil
}

// jsonMember writes the code for one member, omitted as omitzero omits it.
func (g *gen) jsonMember(b *bytes.Buffer, expr, key, shape string) error {
	s := g.m.Shapes[shape]
	var cond, val string
	switch {
	case isEnum(s):
		cond, val = expr+` != ""`, expr
	case s.Type == "timestamp":
		// *Timestamp has time.Time's IsZero, which omitzero uses.
		fmt.Fprintf(b, "\tif %s != nil && !%s.IsZero() {\n\t\tw.key(%q)\n\t\tw.timestamp(%s)\n\t}\n", expr, expr, key, expr)
		return nil
	case s.Type == "blob" || s.Type == "list" || s.Type == "map":
		cond, val = expr+" != nil", expr
	case s.Type == "structure":
		cond = expr + " != nil"
		fmt.Fprintf(b, "\tif %s {\n\t\tw.key(%q)\n\t\t%s.writeJSON(w)\n\t}\n", cond, key, expr)
		return nil
	default:
		cond, val = expr+" != nil", "*"+expr
	}
	fmt.Fprintf(b, "\tif %s {\n\t\tw.key(%q)\n", cond, key)
	if err := g.jsonValue(b, val, shape, 1); err != nil {
		return err
	}
	b.WriteString("\t}\n")
	return nil
}

// jsonValue writes the code for a value (not a pointer) of a shape; depth
// names the loop variables of nested lists and maps.
func (g *gen) jsonValue(b *bytes.Buffer, expr, shape string, depth int) error {
	s := g.m.Shapes[shape]
	switch s.Type {
	case "string":
		if isEnum(s) {
			fmt.Fprintf(b, "\t\tw.str(string(%s))\n", expr)
		} else {
			fmt.Fprintf(b, "\t\tw.str(%s)\n", expr)
		}
	case "integer", "long":
		fmt.Fprintf(b, "\t\tw.int(int64(%s))\n", expr)
	case "double":
		fmt.Fprintf(b, "\t\tw.float(%s, 64)\n", expr)
	case "float":
		fmt.Fprintf(b, "\t\tw.float(float64(%s), 32)\n", expr)
	case "boolean":
		fmt.Fprintf(b, "\t\tw.boolean(%s)\n", expr)
	case "timestamp":
		fmt.Fprintf(b, "\t\tw.timestamp(&%s)\n", expr)
	case "blob":
		fmt.Fprintf(b, "\t\tif %s == nil {\n\t\t\tw.null()\n\t\t} else {\n\t\t\tw.blob(%s)\n\t\t}\n", expr, expr)
	case "structure":
		fmt.Fprintf(b, "\t\t(&%s).writeJSON(w)\n", expr)
	case "list":
		i := fmt.Sprintf("i%d", depth)
		fmt.Fprintf(b, "\t\tif %s == nil {\n\t\t\tw.null()\n\t\t} else {\n", expr)
		fmt.Fprintf(b, "\t\tw.listStart()\n\t\tfor %s := range %s {\n\t\t\tw.elem(%s)\n", i, expr, i)
		if err := g.jsonValue(b, expr+"["+i+"]", s.Member.Shape, depth+1); err != nil {
			return err
		}
		b.WriteString("\t\t}\n\t\tw.listEnd()\n\t\t}\n")
	case "map":
		k := fmt.Sprintf("k%d", depth)
		fmt.Fprintf(b, "\t\tif %s == nil {\n\t\t\tw.null()\n\t\t} else {\n", expr)
		e := fmt.Sprintf("e%d", depth) // map values are not addressable
		fmt.Fprintf(b, "\t\tw.open()\n\t\tfor _, %s := range sortedKeys(%s) {\n\t\t\tw.mapKey(%s)\n\t\t\t%s := %s[%s]\n", k, expr, k, e, expr, k)
		if err := g.jsonValue(b, e, s.Value.Shape, depth+1); err != nil {
			return err
		}
		b.WriteString("\t\t}\n\t\tw.close()\n\t\t}\n")
	default:
		return fmt.Errorf("no JSON encoding for shape type %s", s.Type)
	}
	return nil
}

// jsonDecoders writes DecodeJSONFast for every operation's input: a decoder
// without reflection for inputs whose members present are strings, enums,
// whole numbers and booleans. Anything else (another member type, null, an
// escape in a string, a key that is not exactly a member's name) makes it
// give up, and the protocol decodes with encoding/json.
func (g *gen) jsonDecoders(b *bytes.Buffer) error {
	b.WriteString("import \"github.com/hoistgg/hoist/internal/flatjson\"\n\n")
	inputs := map[string]bool{}
	for _, op := range g.sortedOps() {
		if in := g.m.Operations[op].Input; in != nil {
			inputs[in.Shape] = true
		}
	}
	for _, name := range g.sortedShapes(isStruct) {
		if !inputs[name] {
			continue
		}
		s := g.m.Shapes[name]
		fmt.Fprintf(b, "func (v *%s) DecodeJSONFast(data []byte) bool {\n", name)
		fmt.Fprintf(b, "\tif v.decodeJSONFast(data) {\n\t\treturn true\n\t}\n\t*v = %s{}\n\treturn false\n}\n\n", name)
		fmt.Fprintf(b, "func (v *%s) decodeJSONFast(data []byte) bool {\n", name)
		var cases bytes.Buffer
		for _, mn := range sortedMembers(s) {
			ms := g.m.Shapes[s.Members[mn].Shape]
			var code string
			switch {
			case isEnum(ms):
				code = fmt.Sprintf("if kind != flatjson.String {\n\t\t\t\treturn false\n\t\t\t}\n\t\t\tv.%s = %s(val)", mn, s.Members[mn].Shape)
			case ms.Type == "string":
				code = fmt.Sprintf("if kind != flatjson.String {\n\t\t\t\treturn false\n\t\t\t}\n\t\t\tx := string(val)\n\t\t\tv.%s = &x", mn)
			case ms.Type == "boolean":
				code = fmt.Sprintf("if kind != flatjson.True && kind != flatjson.False {\n\t\t\t\treturn false\n\t\t\t}\n\t\t\tx := kind == flatjson.True\n\t\t\tv.%s = &x", mn)
			case ms.Type == "integer" || ms.Type == "long":
				goT := "int64"
				if ms.Type == "integer" {
					goT = "int32"
				}
				code = fmt.Sprintf("if kind != flatjson.Number {\n\t\t\t\treturn false\n\t\t\t}\n\t\t\tn, ok := flatjson.Int(val)\n\t\t\tif !ok || n != int64(%s(n)) {\n\t\t\t\treturn false\n\t\t\t}\n\t\t\tx := %s(n)\n\t\t\tv.%s = &x", goT, goT, mn)
			default:
				continue // left to encoding/json
			}
			fmt.Fprintf(&cases, "\t\tcase %q:\n\t\t\t%s\n", mn, code)
		}
		if cases.Len() == 0 { // only {} decodes here
			b.WriteString("\treturn flatjson.Each(data, func([]byte, byte, []byte) bool { return false })\n}\n\n")
			continue
		}
		b.WriteString("\treturn flatjson.Each(data, func(key []byte, kind byte, val []byte) bool {\n")
		b.WriteString("\t\tswitch string(key) {\n")
		b.Write(cases.Bytes())
		b.WriteString("\t\tdefault:\n\t\t\treturn false\n\t\t}\n\t\treturn true\n\t})\n}\n\n")
	}
	return nil
}
