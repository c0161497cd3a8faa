package search

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// sessions used by the evaluation tests.
var (
	novice = &Session{ID: "arn:aws:gamelift:us-west-2::gamesession/fleet-1/a", Name: "Matt's Game", HasName: true,
		MaximumSessions: 10, PlayerSessionCount: 3, CreationTimeMillis: 1000,
		Properties: []Property{{"difficulty", "novice"}, {"map", "dust"}}}
	full = &Session{ID: "arn:aws:gamelift:us-west-2::gamesession/fleet-1/b", Name: "b", HasName: true,
		MaximumSessions: 4, PlayerSessionCount: 4, CreationTimeMillis: 2000,
		Properties: []Property{{"map", "nuke"}}}
	bare = &Session{ID: "arn:aws:gamelift:us-west-2::gamesession/fleet-1/c",
		MaximumSessions: 20, PlayerSessionCount: 0, CreationTimeMillis: 3000}
)

func TestFilterMatches(t *testing.T) {
	tests := map[string]struct {
		expr string
		want []*Session // of novice, full, bare
	}{
		"available":               {`hasAvailablePlayerSessions=true`, []*Session{novice, bare}},
		"unavailable":             {`hasAvailablePlayerSessions = false`, []*Session{full}},
		"spec example and":        {`maximumSessions>=10 AND hasAvailablePlayerSessions=true`, []*Session{novice, bare}},
		"property":                {`gameSessionProperties.difficulty = 'novice'`, []*Session{novice}},
		"property double quotes":  {`gameSessionProperties.difficulty = "novice"`, []*Session{novice}},
		"property not equal":      {`gameSessionProperties.difficulty <> 'novice'`, []*Session{full, bare}},
		"not group":               {`NOT (gameSessionProperties.map = 'dust' OR gameSessionProperties.map = 'nuke')`, []*Session{bare}},
		"escaped quote":           {`gameSessionName = 'Matt\'s Game'`, []*Session{novice}},
		"double quotes with '":    {`gameSessionName = "Matt's Game"`, []*Session{novice}},
		"name missing is not =":   {`gameSessionName <> 'b'`, []*Session{novice, bare}},
		"id":                      {`gameSessionId = 'arn:aws:gamelift:us-west-2::gamesession/fleet-1/b'`, []*Session{full}},
		"numbers":                 {`creationTimeMillis > 1000 AND creationTimeMillis <= 3000`, []*Session{full, bare}},
		"less than":               {`playerSessionCount < 4`, []*Session{novice, bare}},
		"ne number":               {`maximumSessions <> 4`, []*Session{novice, bare}},
		"or binds looser":         {`maximumSessions = 4 OR maximumSessions = 10 AND playerSessionCount = 0`, []*Session{full}},
		"parens":                  {`(maximumSessions = 4 OR maximumSessions = 10) AND playerSessionCount = 3`, []*Session{novice}},
		"not binds tighter":       {`NOT maximumSessions = 4 AND playerSessionCount = 0`, []*Session{bare}},
		"double not":              {`NOT NOT maximumSessions = 4`, []*Session{full}},
		"lowercase keywords":      {`maximumSessions = 4 or not playerSessionCount > 0`, []*Session{full, bare}},
		"no spaces":               {`(maximumSessions>=10)AND(playerSessionCount<1)`, []*Session{bare}},
		"negative number":         {`playerSessionCount > -1`, []*Session{novice, full, bare}},
		"strings are byte-wise =": {`gameSessionProperties.map = 'DUST'`, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e, err := ParseFilter(tc.expr)
			if err != nil {
				t.Fatalf("ParseFilter(%q): %v", tc.expr, err)
			}
			var got []*Session
			for _, s := range []*Session{novice, full, bare} {
				if e.Match(s) {
					got = append(got, s)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%q matched %v, want %v", tc.expr, names(got), names(tc.want))
			}
		})
	}
}

func names(ss []*Session) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.ID[strings.LastIndex(s.ID, "/")+1:])
	}
	return out
}

func TestPrecedence(t *testing.T) {
	tests := map[string]string{
		`A OR B AND C`:           `(maximumSessions = 1 OR (maximumSessions = 2 AND maximumSessions = 3))`,
		`NOT A AND B`:            `(NOT maximumSessions = 1 AND maximumSessions = 2)`,
		`A AND B OR C AND D`:     `((maximumSessions = 1 AND maximumSessions = 2) OR (maximumSessions = 3 AND maximumSessions = 4))`,
		`NOT (A OR B)`:           `NOT (maximumSessions = 1 OR maximumSessions = 2)`,
		`A AND B AND C`:          `((maximumSessions = 1 AND maximumSessions = 2) AND maximumSessions = 3)`,
		`((A))`:                  `maximumSessions = 1`,
		`A OR NOT NOT B`:         `(maximumSessions = 1 OR NOT NOT maximumSessions = 2)`,
		`NOT A OR (B AND NOT C)`: `(NOT maximumSessions = 1 OR (maximumSessions = 2 AND NOT maximumSessions = 3))`,
	}
	for abbrev, want := range tests {
		// Each single capital letter stands for one condition.
		var words []string
		for w := range strings.FieldsSeq(strings.NewReplacer("(", " ( ", ")", " ) ").Replace(abbrev)) {
			if len(w) == 1 && w[0] >= 'A' && w[0] <= 'D' {
				w = "maximumSessions = " + string('1'+rune(w[0]-'A'))
			}
			words = append(words, w)
		}
		src := strings.Join(words, " ")
		e, err := ParseFilter(src)
		if err != nil {
			t.Fatalf("%s: %v", abbrev, err)
		}
		if e.String() != want {
			t.Errorf("%s parsed as %s, want %s", abbrev, e, want)
		}
	}
}

func TestFilterErrors(t *testing.T) {
	tests := map[string]struct{ expr, want string }{
		"bool with >":       {`hasAvailablePlayerSessions > true`, `at position 28: hasAvailablePlayerSessions cannot be compared with ">": boolean values allow only = and <>`},
		"string with <":     {`gameSessionName < 'b'`, `at position 17: gameSessionName cannot be compared with "<": string values allow only = and <>`},
		"missing value":     {`maximumSessions >=`, `at position 19: expected a number after maximumSessions >=, found the end of the expression`},
		"unclosed paren":    {`(maximumSessions = 1 AND playerSessionCount = 2`, `at position 48: expected AND, OR or ")" to close the "(" at position 1, found the end of the expression`},
		"unknown operand":   {`ipAddress = '1'`, `at position 1: unknown operand "ipAddress": expected one of gameSessionId, gameSessionName, maximumSessions, creationTimeMillis, playerSessionCount, hasAvailablePlayerSessions or gameSessionProperties.<key>`},
		"number wants num":  {`playerSessionCount = 'x'`, `at position 22: playerSessionCount takes a number, found the string 'x'`},
		"property wants st": {`gameSessionProperties.level = 5`, `at position 31: gameSessionProperties.level takes a quoted string (game property values are compared as strings), found "5"`},
		"bool wants bool":   {`hasAvailablePlayerSessions = 1`, `at position 30: hasAvailablePlayerSessions takes true or false, found "1"`},
		"case of operand":   {`MaximumSessions = 1`, `at position 1: unknown operand "MaximumSessions": operand names are case-sensitive, did you mean maximumSessions?`},
		"empty":             {``, `at position 1: expected a condition (an operand such as maximumSessions or gameSessionProperties.<key>), NOT or "(", found the end of the expression`},
		"dangling and":      {`maximumSessions = 1 AND`, `at position 24: expected a condition (an operand such as maximumSessions or gameSessionProperties.<key>), NOT or "(", found the end of the expression`},
		"missing operator":  {`maximumSessions = 1 playerSessionCount = 2`, `at position 21: expected AND, OR or the end of the expression, found "playerSessionCount"`},
		"no comparator":     {`maximumSessions 5`, `at position 17: expected a comparator (=, <>, <, >, <= or >=) after maximumSessions, found "5"`},
		"unterminated":      {`gameSessionName = 'abc`, `at position 19: unterminated string: expected a closing '`},
		"lone backslash":    {`gameSessionName = 'abc\`, `at position 23: the string that starts at position 19 ends in a lone backslash: a backslash must be followed by the character it escapes`},
		"bang equals":       {`maximumSessions != 5`, `at position 17: "!=" is not a comparator: use "<>"`},
		"odd char":          {`maximumSessions = 5 & x`, `at position 21: unexpected character '&'`},
		"decimal":           {`maximumSessions = 5.5`, `at position 19: expected a number for maximumSessions, found "5.5": numbers are whole numbers`},
		"overflow":          {`creationTimeMillis > 99999999999999999999`, `at position 22: number 99999999999999999999 is out of range (a 64-bit integer)`},
		"dotted key":        {`gameSessionProperties.a.b = 'x'`, `at position 1: game property key "a.b" contains ".": such keys cannot be searched`},
		"empty key":         {`gameSessionProperties. = 'x'`, `at position 1: expected a game property key after "gameSessionProperties."`},
		"long key":          {`gameSessionProperties.` + strings.Repeat("k", 33) + ` = 'x'`, `at position 1: game property key "` + strings.Repeat("k", 33) + `" is longer than 32 characters`},
		"bare properties":   {`gameSessionProperties = 'x'`, `at position 1: unknown operand "gameSessionProperties": a game property is written gameSessionProperties.<key>`},
		"stray paren":       {`maximumSessions = 1)`, `at position 20: expected AND, OR or the end of the expression, found ")"`},
		"keyword operand":   {`AND maximumSessions = 1`, `at position 1: expected a condition (an operand such as maximumSessions or gameSessionProperties.<key>), NOT or "(", found "AND"`},
		"unicode position":  {`gameSessionName = 'é' AND x`, `at position 27: unknown operand "x": expected one of gameSessionId, gameSessionName, maximumSessions, creationTimeMillis, playerSessionCount, hasAvailablePlayerSessions or gameSessionProperties.<key>`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e, err := ParseFilter(tc.expr)
			if err == nil {
				t.Fatalf("ParseFilter(%q) = %v, want an error", tc.expr, e)
			}
			if _, ok := err.(*Error); !ok {
				t.Errorf("error %T, want *Error", err)
			}
			if err.Error() != tc.want {
				t.Errorf("ParseFilter(%q):\n got %s\nwant %s", tc.expr, err, tc.want)
			}
		})
	}
}

func TestParseSort(t *testing.T) {
	good := map[string]string{
		"creationTimeMillis ASC":              "creationTimeMillis ASC",
		" playerSessionCount   desc ":         "playerSessionCount DESC",
		"gameSessionProperties.skill DESC":    "gameSessionProperties.skill DESC",
		"hasAvailablePlayerSessions ASC":      "hasAvailablePlayerSessions ASC",
		"gameSessionName\tASC":                "gameSessionName ASC",
		"gameSessionId DESC":                  "gameSessionId DESC",
		"maximumSessions ASC":                 "maximumSessions ASC",
		"gameSessionProperties.my-key_1 DESC": "gameSessionProperties.my-key_1 DESC",
	}
	for src, want := range good {
		s, err := ParseSort(src)
		if err != nil {
			t.Errorf("ParseSort(%q): %v", src, err)
			continue
		}
		if s.String() != want {
			t.Errorf("ParseSort(%q) = %s, want %s", src, s, want)
		}
	}
	bad := map[string]string{
		"creationTimeMillis":          `at position 19: expected ASC or DESC after creationTimeMillis, found the end of the expression`,
		"creationTimeMillis UP":       `at position 20: expected ASC or DESC after creationTimeMillis, found "UP"`,
		"ASC":                         `at position 1: expected an operand to sort by (such as creationTimeMillis or gameSessionProperties.<key>), found "ASC"`,
		"creationTimeMillis ASC, x":   `at position 23: unexpected character ','`,
		"players DESC":                `at position 1: unknown operand "players": expected one of gameSessionId, gameSessionName, maximumSessions, creationTimeMillis, playerSessionCount, hasAvailablePlayerSessions or gameSessionProperties.<key>`,
		"creationTimeMillis ASC DESC": `at position 24: expected the end of the expression (a sort names one operand), found "DESC"`,
	}
	for src, want := range bad {
		_, err := ParseSort(src)
		if err == nil || err.Error() != want {
			t.Errorf("ParseSort(%q):\n got %v\nwant %s", src, err, want)
		}
	}
}

func TestOrder(t *testing.T) {
	a := &Session{ID: "a", MaximumSessions: 5, Properties: []Property{{"rank", "b"}}}
	b := &Session{ID: "b", MaximumSessions: 3}
	c := &Session{ID: "c", MaximumSessions: 5, Properties: []Property{{"rank", "a"}}}
	d := &Session{ID: "d", MaximumSessions: 9, Properties: []Property{{"rank", "c"}}}
	all := []*Session{d, c, b, a}
	tests := map[string][]string{
		"":                                 {"a", "b", "c", "d"},
		"maximumSessions ASC":              {"b", "a", "c", "d"},
		"maximumSessions DESC":             {"d", "a", "c", "b"},
		"gameSessionProperties.rank ASC":   {"c", "a", "d", "b"}, // b lacks rank: last
		"gameSessionProperties.rank DESC":  {"d", "a", "c", "b"}, // still last
		"hasAvailablePlayerSessions DESC":  {"a", "b", "c", "d"}, // all true: by ID
		"gameSessionName ASC":              {"a", "b", "c", "d"}, // none has a name
		"gameSessionProperties.other DESC": {"a", "b", "c", "d"},
	}
	for src, want := range tests {
		var o Order
		if src != "" {
			s, err := ParseSort(src)
			if err != nil {
				t.Fatal(err)
			}
			o = OrderBy(&s)
		}
		// Page through two at a time with Top, as the service does.
		var got []string
		var after *Key
		for {
			top := NewTop(o, after, 2)
			for i, s := range all {
				top.Offer(o.Key(s), i)
			}
			refs, keys := top.Result()
			for _, r := range refs {
				got = append(got, all[r].ID)
			}
			if len(refs) < 2 {
				break
			}
			after = &keys[len(keys)-1]
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: order %v, want %v", src, got, want)
		}
	}
}

// TestTopMatchesSort checks Top against a full sort on random sessions.
func TestTopMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := Sort{Operand: Operand{Attr: AttrProperty, Key: "k"}, Desc: true}
	o := OrderBy(&s)
	var all []*Session
	for i := range 500 {
		ss := &Session{ID: string(rune('a'+i%26)) + string(rune('a'+i/26))}
		if rng.IntN(4) > 0 {
			ss.Properties = []Property{{"k", string(rune('a' + rng.IntN(5)))}}
		}
		all = append(all, ss)
	}
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b *Session) int { return o.Compare(o.Key(a), o.Key(b)) })
	var got []*Session
	var after *Key
	for {
		top := NewTop(o, after, 7)
		for i, s := range all {
			top.Offer(o.Key(s), i)
		}
		refs, keys := top.Result()
		for _, r := range refs {
			got = append(got, all[r])
		}
		if len(refs) == 0 {
			break
		}
		after = &keys[len(keys)-1]
	}
	if !slices.Equal(got, sorted) {
		t.Errorf("paging with Top gave %d sessions in a different order than sorting", len(got))
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`hasAvailablePlayerSessions=true`,
		`maximumSessions>=10 AND hasAvailablePlayerSessions=true`,
		`gameSessionProperties.difficulty = 'novice'`,
		`NOT (gameSessionProperties.map = 'dust' OR gameSessionProperties.map = "nuke")`,
		`gameSessionName = 'Matt\'s Game' or creationTimeMillis < -5`,
		`(maximumSessions = 1 AND playerSessionCount = 2`,
		`creationTimeMillis ASC`, `gameSessionProperties.k DESC`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if e, err := ParseFilter(src); err == nil {
			again, err := ParseFilter(e.String())
			if err != nil {
				t.Fatalf("%q printed as %q, which does not parse: %v", src, e, err)
			}
			if again.String() != e.String() {
				t.Fatalf("%q printed as %q, which parses as %q", src, e, again)
			}
			// The compiled filter agrees with the evaluator.
			tab := NewTable()
			var want []string
			for _, s := range []*Session{novice, full, bare} {
				tab.Upsert(s, "here")
				if e.Match(s) {
					want = append(want, s.ID)
				}
			}
			if got, _ := tab.Search(e, "", Order{}, nil, 5); !slices.Equal(got, want) {
				t.Fatalf("%q: table found %v, evaluator %v", src, got, want)
			}
		} else if pe, ok := err.(*Error); !ok || pe.Pos < 1 || pe.Pos > len(src)+1 {
			t.Fatalf("%q: error %v (%T) has no valid position", src, err, err)
		}
		if s, err := ParseSort(src); err == nil {
			again, err := ParseSort(s.String())
			if err != nil || again != s {
				t.Fatalf("sort %q printed as %q, parsed back as %v, %v", src, s, again, err)
			}
		}
	})
}
