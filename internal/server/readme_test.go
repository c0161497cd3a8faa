package server

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
)

// implementedBy returns, for every operation a domain service implements,
// the domain's type name.
func implementedBy() map[string]string {
	out := map[string]string{}
	st := reflect.TypeOf(service{})
	for i := range st.NumField() {
		f := st.Field(i)
		if f.Name == "fallback" {
			continue
		}
		for _, op := range api.Operations() {
			if _, ok := f.Type.MethodByName(op.Name); ok {
				out[op.Name] = f.Name
			}
		}
	}
	return out
}

// TestOperationTable checks the README's operation table against the code:
// every operation listed once, "implemented" exactly where a domain
// implements it.
func TestOperationTable(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 4 {
			continue
		}
		name, status := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])
		if _, ok := api.LookupOperation(name); !ok {
			continue
		}
		if _, dup := rows[name]; dup {
			t.Errorf("README lists %s twice", name)
		}
		rows[name] = status
	}
	impl := implementedBy()
	for _, op := range api.Operations() {
		status, ok := rows[op.Name]
		switch {
		case !ok:
			t.Errorf("README's operation table lacks %s", op.Name)
		case impl[op.Name] != "" && status != "implemented":
			t.Errorf("README says %s is %q; %s implements it", op.Name, status, impl[op.Name])
		case impl[op.Name] == "" && status == "implemented":
			t.Errorf("README says %s is implemented; no domain implements it", op.Name)
		}
	}
	if len(api.Operations()) != 120 {
		t.Errorf("%d operations, want 120", len(api.Operations()))
	}
}

// TestCIRunsTheREADMETestCommand checks that .ci/run runs the test command
// the README gives.
func TestCIRunsTheREADMETestCommand(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var cmd string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "go test ") {
			cmd, _, _ = strings.Cut(line, "#")
			cmd = strings.TrimSpace(cmd)
			break
		}
	}
	if cmd == "" {
		t.Fatal("the README gives no `go test` command")
	}
	if !strings.Contains(string(ci), "\n"+cmd+"\n") {
		t.Errorf(".ci/run does not run the README's test command %q", cmd)
	}
}

// TestArchitectureListsDependencies checks that docs/architecture.md's
// dependency table names every module go.mod requires directly.
func TestArchitectureListsDependencies(t *testing.T) {
	root := filepath.Join("..", "..")
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var direct []string
	inRequire := false
	for line := range strings.Lines(string(mod)) {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			inRequire = true
		case line == ")":
			inRequire = false
		case inRequire && !strings.Contains(line, "// indirect") && line != "":
			direct = append(direct, strings.Fields(line)[0])
		}
	}
	if len(direct) == 0 {
		t.Fatal("no direct requirements found in go.mod")
	}
	for _, m := range direct {
		if !strings.Contains(string(doc), "`"+m+"`") {
			t.Errorf("docs/architecture.md does not list the direct dependency %s (and why it was chosen)", m)
		}
	}
}

// TestArchitectureListsRoutes checks that docs/architecture.md's route
// table names every fixed path routes.go serves.
func TestArchitectureListsRoutes(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	pattern := regexp.MustCompile(`mux\.Handle(?:Func)?\("(/[^"]*)"`)
	found := 0
	for _, m := range pattern.FindAllStringSubmatch(string(src), -1) {
		found++
		route := strings.TrimSuffix(m[1], "/")
		if route == "" {
			continue // "/": the JSON protocol, listed as POST /
		}
		if !strings.Contains(string(doc), route) {
			t.Errorf("docs/architecture.md does not list the route %s", m[1])
		}
	}
	if found < 5 {
		t.Fatalf("found only %d routes in routes.go: has its form changed?", found)
	}
}
