package apigen

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
)

// inputStructs returns every structure reachable from an operation input.
func (g *gen) inputStructs() []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(name string) {
		s := g.m.Shapes[name]
		switch s.Type {
		case "structure":
			if seen[name] {
				return
			}
			seen[name] = true
			for _, r := range s.Members {
				walk(r.Shape)
			}
		case "list":
			walk(s.Member.Shape)
		case "map":
			walk(s.Key.Shape)
			walk(s.Value.Shape)
		}
	}
	for _, o := range g.m.Operations {
		walk(o.Input.Shape)
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (g *gen) validation(b *bytes.Buffer) error {
	var body bytes.Buffer
	structs := g.inputStructs()
	for _, name := range structs {
		s := g.m.Shapes[name]
		if g.m.Operations[trimInput(name)].Input != nil && g.m.Operations[trimInput(name)].Input.Shape == name {
			fmt.Fprintf(&body, "// Validate checks every constraint of the model on v.\n")
			fmt.Fprintf(&body, "func (v *%s) Validate() error {\n\tvar e ValidationErrors\n\tv.validate(\"\", &e)\n\treturn e.Err()\n}\n\n", name)
		}
		fmt.Fprintf(&body, "func (v *%s) validate(p string, e *ValidationErrors) {\n", name)
		required := map[string]bool{}
		for _, r := range s.Required {
			required[r] = true
		}
		for _, mn := range sortedMembers(s) {
			if err := g.memberCheck(&body, "v."+mn, `p+"`+mn+`"`, s.Members[mn].Shape, required[mn], false); err != nil {
				return fmt.Errorf("%s.%s: %w", name, mn, err)
			}
		}
		body.WriteString("}\n\n")
	}
	// Ops whose input shape is not named <Op>Input still need Validate.
	for _, op := range g.sortedOps() {
		in := g.m.Operations[op].Input.Shape
		if trimInput(in) != op {
			fmt.Fprintf(&body, "func (v *%s) Validate() error {\n\tvar e ValidationErrors\n\tv.validate(\"\", &e)\n\treturn e.Err()\n}\n\n", in)
		}
	}
	if len(g.patterns) > 0 {
		b.WriteString("import \"regexp\"\n\n")
		var pats []string
		for p := range g.patterns {
			pats = append(pats, p)
		}
		sort.Slice(pats, func(i, j int) bool { return g.patterns[pats[i]] < g.patterns[pats[j]] })
		b.WriteString("var (\n")
		for _, p := range pats {
			fmt.Fprintf(b, "\t%s = regexp.MustCompile(%s)\n", g.patterns[p], strconv.Quote(p))
		}
		b.WriteString(")\n\n")
	}
	b.Write(body.Bytes())
	return nil
}

func trimInput(name string) string {
	if len(name) > 5 && name[len(name)-5:] == "Input" {
		return name[:len(name)-5]
	}
	return name
}

func (g *gen) patternVar(p string) (string, error) {
	gp, err := GoPattern(p)
	if err != nil {
		return "", err
	}
	if v, ok := g.patterns[gp]; ok {
		return v, nil
	}
	v := fmt.Sprintf("pattern%d", len(g.patterns))
	g.patterns[gp] = v
	return v, nil
}

func bound(f *float64) string {
	if f == nil {
		return "-1"
	}
	return strconv.FormatInt(int64(*f), 10)
}

func fbound(f *float64) (string, string) {
	if f == nil {
		return "0", "false"
	}
	return strconv.FormatFloat(*f, 'g', -1, 64), "true"
}

// memberCheck writes the checks of one value. expr is the Go expression of the
// value (a pointer for optional scalars unless elem), path the Go expression of
// its path for messages.
func (g *gen) memberCheck(b *bytes.Buffer, expr, path, shape string, required, elem bool) error {
	s := g.m.Shapes[shape]
	deref := "*" + expr
	if elem {
		deref = expr
	}
	// nilCheck opens the check of a member that may be absent; the caller
	// continues with " else ..." (required) or the body of "if present".
	nilCheck := func(zero string) {
		if required {
			fmt.Fprintf(b, "\tif %s == %s {\n\t\te.Missing(%s)\n\t}", expr, zero, path)
		} else {
			fmt.Fprintf(b, "\tif %s == %s {\n\t\t// absent: nothing to check\n\t}", expr, zero)
		}
	}
	switch {
	case isEnum(s):
		if !elem {
			nilCheck(`""`)
			fmt.Fprintf(b, " else if !%s.IsValid() {\n\t\tEnum(e, %s, string(%s), %s(\"\").Values())\n\t}\n", expr, path, expr, shape)
		} else {
			fmt.Fprintf(b, "\tif !%s.IsValid() {\n\t\tEnum(e, %s, string(%s), %s(\"\").Values())\n\t}\n", expr, path, expr, shape)
		}
	case s.Type == "string":
		re := "nil"
		if s.Pattern != nil {
			v, err := g.patternVar(*s.Pattern)
			if err != nil {
				return err
			}
			re = v
		}
		call := fmt.Sprintf("e.String(%s, %s, %s, %s, %s, %v)", path, deref, bound(s.Min), bound(s.Max), re, s.Sensitive)
		if elem {
			fmt.Fprintf(b, "\t%s\n", call)
		} else {
			nilCheck("nil")
			fmt.Fprintf(b, " else {\n\t\t%s\n\t}\n", call)
		}
	case s.Type == "integer" || s.Type == "long" || s.Type == "double" || s.Type == "float":
		lo, hasLo := fbound(s.Min)
		hi, hasHi := fbound(s.Max)
		call := fmt.Sprintf("e.Number(%s, float64(%s), %s, %s, %s, %s)", path, deref, lo, hasLo, hi, hasHi)
		if s.Min == nil && s.Max == nil {
			call = ""
		}
		if elem {
			if call != "" {
				fmt.Fprintf(b, "\t%s\n", call)
			}
		} else {
			nilCheck("nil")
			if call != "" {
				fmt.Fprintf(b, " else {\n\t\t%s\n\t}\n", call)
			} else {
				b.WriteString("\n")
			}
		}
	case s.Type == "boolean" || s.Type == "timestamp":
		if !elem {
			nilCheck("nil")
			b.WriteString("\n")
		}
	case s.Type == "blob":
		nilCheck("nil")
		fmt.Fprintf(b, " else {\n\t\te.Count(%s, len(%s), %s, %s)\n\t}\n", path, expr, bound(s.Min), bound(s.Max))
	case s.Type == "structure":
		if elem {
			fmt.Fprintf(b, "\t%s.validate(%s+\".\", e)\n", expr, path)
		} else {
			nilCheck("nil")
			fmt.Fprintf(b, " else {\n\t\t%s.validate(%s+\".\", e)\n\t}\n", expr, path)
		}
	case s.Type == "list" || s.Type == "map":
		if elem {
			fmt.Fprintf(b, "\t{\n")
		} else {
			nilCheck("nil")
			b.WriteString(" else {\n")
		}
		fmt.Fprintf(b, "\t\te.Count(%s, len(%s), %s, %s)\n", path, expr, bound(s.Min), bound(s.Max))
		if s.Type == "list" {
			fmt.Fprintf(b, "\t\tfor i := range %s {\n", expr)
			if err := g.memberCheck(b, expr+"[i]", path+`+"["+itoa(i)+"]"`, s.Member.Shape, false, true); err != nil {
				return err
			}
			b.WriteString("\t\t}\n")
		} else {
			fmt.Fprintf(b, "\t\tfor k, x := range %s {\n\t\t\t_ = x\n", expr)
			if err := g.memberCheck(b, "k", path+`+"["+k+"](key)"`, s.Key.Shape, false, true); err != nil {
				return err
			}
			if err := g.memberCheck(b, "x", path+`+"["+k+"]"`, s.Value.Shape, false, true); err != nil {
				return err
			}
			b.WriteString("\t\t}\n")
		}
		b.WriteString("\t}\n")
	default:
		return fmt.Errorf("apigen: cannot validate shape type %s", s.Type)
	}
	return nil
}
