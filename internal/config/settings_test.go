package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSettingsTable checks the declarations themselves: names unique, every
// variable a HOIST_* one, every setting bound to its own field, and help
// for each.
func TestSettingsTable(t *testing.T) {
	flags, envs := map[string]bool{}, map[string]bool{}
	var c Config
	fields := map[any]string{}
	for _, s := range settings {
		if !strings.HasPrefix(s.Env, "HOIST_") || envs[s.Env] {
			t.Errorf("%s: want a HOIST_* variable used once", s.Env)
		}
		envs[s.Env] = true
		if s.Flag != "" {
			if flags[s.Flag] {
				t.Errorf("--%s declared twice", s.Flag)
			}
			flags[s.Flag] = true
		}
		if s.Help == "" {
			t.Errorf("%s has no help", s.Env)
		}
		v := s.value(&c)
		key := reflect.ValueOf(v).Pointer()
		if other, dup := fields[key]; dup {
			t.Errorf("%s and %s set the same field", s.Env, other)
		}
		fields[key] = s.Env
	}
}

// TestEveryFlagHasItsVariable: each flag, given only by its variable, sets
// the same as the flag does.
func TestEveryFlagHasItsVariable(t *testing.T) {
	values := map[string]string{
		"HOIST_ADDR": "127.0.0.1:1", "HOIST_TLS_ADDR": "127.0.0.1:2", "HOIST_DATA_DIR": "d",
		"HOIST_STORE": "sqlite", "HOIST_JOURNAL_WRITES": "buffered", "HOIST_REGION": "eu-west-1",
		"HOIST_ACCOUNT": "111122223333", "HOIST_INSTANCE_IP": "127.0.0.2", "HOIST_CREDENTIALS_FILE": "",
		"HOIST_HEALTH_EXPIRY": "1m", "HOIST_PROCESS_ENV": "A=1", "HOIST_TIMINGS": "fleets.reconcile=1s",
		"HOIST_LOG_LEVEL": "debug", "HOIST_LOG_FORMAT": "json", "HOIST_PPROF_ADDR": "127.0.0.1:3",
		"HOIST_SHUTDOWN_GRACE": "1s", "HOIST_PROCESS_USER": "game", "HOIST_SESSION_RETENTION": "48h", "HOIST_MEMORY_LIMIT": "2GiB", "HOIST_MAX_UNPACKED_SIZE": "3MiB", "HOIST_SDK_SCHEME": "ws", "HOIST_DNS_SUFFIX": "games.example",
		"HOIST_HTTP_HEADER_TIMEOUT": "1s", "HOIST_HTTP_BODY_TIMEOUT": "2s", "HOIST_HTTP_IDLE_TIMEOUT": "3s", "HOIST_HTTP_MAX_BODIES": "4", "HOIST_HTTP_BODY_MEMORY": "5MiB",
		"HOIST_MAX_LONG_CONNECTIONS": "500", "HOIST_MAX_EVENT_STREAMS": "8", "HOIST_SDK_COMPUTE_SOCKETS": "20", "HOIST_SDK_MESSAGE_RATE": "5",
		"HOIST_WEBHOOKS":      "arn:aws:sns:eu-west-1:1:t=http://127.0.0.1:4/hook,arn:aws:sns:eu-west-1:1:u=sns+http://127.0.0.1:4/sns",
		"HOIST_EVENT_OUTBOX":  "7",
		"HOIST_LOCAL_HOSTING": "off", "HOIST_LOCAL_ORPHAN_TIMEOUT": "1m",
		"HOIST_PLACEMENT_COSTS": "c5.large=0.085,c5.large/SPOT=0.03",
		"HOIST_HOST_NETWORKS":   "198.18.0.0/15,10.1.0.0/16",
		"HOIST_DATABASE_URL":    "postgres://h/db",
		"HOIST_CLOCK":           "manual",
		"HOIST_CONSOLE":         "false", "HOIST_CONSOLE_SESSION": "30m",
		"HOIST_METRICS_TOKEN": "scrape-token",
	}
	// Settings that need another one set as well.
	with := map[string]map[string]string{"HOIST_DATABASE_URL": {"HOIST_STORE": "postgres"}}
	for _, s := range settings {
		if s.Flag == "" {
			continue
		}
		val, ok := values[s.Env]
		if !ok {
			t.Errorf("no test value for %s", s.Env)
			continue
		}
		env := map[string]string{s.Env: val}
		for k, v := range with[s.Env] {
			env[k] = v
		}
		fromEnv, err := Parse(nil, envOf(env), io.Discard)
		if err != nil {
			t.Errorf("%s=%s: %v", s.Env, val, err)
			continue
		}
		fromFlag, err := Parse([]string{"--" + s.Flag + "=" + val}, envOf(with[s.Env]), io.Discard)
		if err != nil {
			t.Errorf("--%s=%s: %v", s.Flag, val, err)
			continue
		}
		if !reflect.DeepEqual(fromEnv, fromFlag) {
			t.Errorf("%s=%s gives %+v; --%s=%s gives %+v", s.Env, val, fromEnv, s.Flag, val, fromFlag)
		}
	}
}

// TestTimingsTable ties Timings to the list of names: every field has
// exactly one name, and every name sets its own field.
func TestTimingsTable(t *testing.T) {
	typ := reflect.TypeOf(Timings{})
	if typ.NumField() != len(timings) {
		t.Errorf("Timings has %d fields, the list %d timers", typ.NumField(), len(timings))
	}
	seen := map[string]string{}
	for _, tm := range timings {
		var tg Timings
		*tm.field(&tg) = time.Second
		v := reflect.ValueOf(tg)
		var set []string
		for i := range v.NumField() {
			if v.Field(i).Interface() != time.Duration(0) {
				set = append(set, typ.Field(i).Name)
			}
		}
		if len(set) != 1 {
			t.Fatalf("%s sets %v", tm.Name, set)
		}
		if other, dup := seen[set[0]]; dup {
			t.Errorf("%s and %s both set %s", tm.Name, other, set[0])
		}
		seen[set[0]] = tm.Name
		if tm.Help == "" {
			t.Errorf("%s has no help", tm.Name)
		}
	}
}

// TestDocs checks the configuration tables of the README and
// docs/configuration.md against Settings (each setting in one row with its
// flag, variable and default) and the --timings table against the timers.
func TestDocs(t *testing.T) {
	for _, doc := range []string{"README.md", filepath.Join("docs", "configuration.md")} {
		t.Run(doc, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", doc))
			if err != nil {
				t.Fatal(err)
			}
			rows := settingRows(string(b))
			for _, s := range settings {
				r, ok := rows[s.Env]
				if !ok {
					t.Errorf("%s has no row for %s", doc, s.Env)
					continue
				}
				delete(rows, s.Env)
				wantFlag := ""
				if s.Flag != "" {
					wantFlag = "--" + s.Flag
				}
				if r.flag != wantFlag {
					t.Errorf("%s: %s's flag is %q, want %q", doc, s.Env, r.flag, wantFlag)
				}
				want := s.Default
				if s.DocDefault != "" {
					want = s.DocDefault
				}
				if want == "" {
					want = "none"
				}
				if r.def != want {
					t.Errorf("%s: %s's default is %q, want %q", doc, s.Env, r.def, want)
				}
			}
			for env := range rows {
				t.Errorf("%s has a row for %s, which is not a setting", doc, env)
			}
		})
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, row := range tableRows(string(b), "Name") {
		names[row["Name"]] = true
	}
	for _, tm := range timings {
		if !names[tm.Name] {
			t.Errorf("docs/configuration.md's timer table lacks %s", tm.Name)
		}
		delete(names, tm.Name)
	}
	for n := range names {
		t.Errorf("docs/configuration.md's timer table has %s, which is not a timer", n)
	}
}

type settingRow struct{ flag, def string }

// settingRows reads the rows of every table with Flag, Environment and
// Default columns, by variable.
func settingRows(md string) map[string]settingRow {
	out := map[string]settingRow{}
	for _, row := range tableRows(md, "Flag", "Environment", "Default") {
		out[row["Environment"]] = settingRow{flag: row["Flag"], def: row["Default"]}
	}
	return out
}

// tableRows returns the rows of the markdown tables whose header has all
// the given columns, as column -> cell text without backticks.
func tableRows(md string, columns ...string) []map[string]string {
	var out []map[string]string
	var header []string
	for _, line := range strings.Split(md, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			header = nil
			continue
		}
		cells := splitRow(line)
		switch {
		case header == nil:
			header = cells
			for _, c := range columns {
				if !slices.Contains(header, c) {
					header = []string{} // not a table we read
					break
				}
			}
		case len(header) == 0 || strings.HasPrefix(cells[0], "---"):
		default:
			row := map[string]string{}
			for i, h := range header {
				if i < len(cells) {
					row[h] = cells[i]
				}
			}
			out = append(out, row)
		}
	}
	return out
}

// splitRow splits a table row into its cells (an escaped \| is not a
// separator) and strips backticks and spaces.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	line = strings.ReplaceAll(line, `\|`, "\x00")
	var cells []string
	for _, c := range strings.Split(line, "|") {
		c = strings.ReplaceAll(c, "\x00", "|")
		cells = append(cells, strings.TrimSpace(strings.ReplaceAll(c, "`", "")))
	}
	return cells
}

// TestBinders: the bool and int binders, which no setting uses yet, parse
// as their flags would.
func TestBinders(t *testing.T) {
	var c struct {
		b bool
		n int
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var((*boolValue)(&c.b), "b", "")
	fs.Var((*intValue)(&c.n), "n", "")
	if err := fs.Parse([]string{"-b", "-n", "7"}); err != nil || !c.b || c.n != 7 {
		t.Errorf("parsed %+v, %v", c, err)
	}
	if err := fs.Parse([]string{"-b=false"}); err != nil || c.b {
		t.Errorf("-b=false: %+v, %v", c, err)
	}
	for _, bad := range [][]string{{"-b=maybe"}, {"-n", "x"}, {"-n="}} {
		if err := fs.Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	_ = boolean(func(*Config) *bool { return &c.b })
	_ = integer(func(*Config) *int { return &c.n })
}

// TestPlacementCosts: --placement-costs reads TYPE=price pairs and refuses
// what is not a non-negative price.
func TestPlacementCosts(t *testing.T) {
	c, err := Parse([]string{"--placement-costs=c5.large=0.085, c5.large/SPOT=0.03"}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"c5.large": 0.085, "c5.large/SPOT": 0.03}
	if !reflect.DeepEqual(c.PlacementCosts, want) {
		t.Errorf("PlacementCosts = %v, want %v", c.PlacementCosts, want)
	}
	for _, bad := range []string{"c5.large", "=1", "c5.large=-1", "c5.large=x", "c5.large=NaN"} {
		if _, err := Parse([]string{"--placement-costs=" + bad}, envOf(nil), io.Discard); err == nil {
			t.Errorf("--placement-costs=%s accepted", bad)
		}
	}
}
