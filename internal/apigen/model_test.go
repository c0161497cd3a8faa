package apigen

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"testing"
)

// TestPinnedModelIsStripped: the pinned model is what StripModel writes
// (no documentation text, stable formatting) and parses with all 120
// operations.
func TestPinnedModelIsStripped(t *testing.T) {
	again, err := StripModel(pinnedModel)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, pinnedModel) {
		t.Error("the pinned model is not in StripModel's form: pin it with go run ./tools/apigen -pin")
	}
	if bytes.Contains(pinnedModel, []byte(`"documentation`)) {
		t.Error("the pinned model holds documentation text")
	}
	m, err := PinnedModel()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Operations) != 120 {
		t.Errorf("%d operations, want 120", len(m.Operations))
	}
	if PinnedBotocoreVersion() == "" {
		t.Error("no botocore version recorded")
	}
}

// TestStripModel removes documentation at every depth and keeps the rest.
func TestStripModel(t *testing.T) {
	in := `{"documentation":"<p>x</p>","operations":{"A":{"documentation":"d","input":{"shape":"S"},"errors":[{"shape":"E","documentation":"e"}]}},` +
		`"shapes":{"S":{"type":"structure","members":{"M":{"shape":"T","documentation":"m"}},"documentationUrl":"u","min":1}}}`
	out, err := StripModel([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	json.Unmarshal(out, &got)
	json.Unmarshal([]byte(`{"operations":{"A":{"input":{"shape":"S"},"errors":[{"shape":"E"}]}},"shapes":{"S":{"type":"structure","members":{"M":{"shape":"T"}},"min":1}}}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %s", out)
	}
}

// TestPinnedModelDrift compares the pinned model with the installed
// botocore's (skipped without python3 and botocore). The same botocore
// release must give the same model; a different release's differences are
// reported (run with -v to read them; go run ./tools/apigen -pin adopts
// them) without failing, so that a botocore update cannot break the build.
func TestPinnedModelDrift(t *testing.T) {
	raw, version, err := InstalledBotocoreModel()
	if err != nil {
		t.Skipf("no installed botocore to compare with: %v", err)
	}
	installed, err := StripModel(raw)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(installed, pinnedModel) {
		return
	}
	drift, err := modelDrift(pinnedModel, installed)
	if err != nil {
		t.Fatal(err)
	}
	if version == PinnedBotocoreVersion() {
		t.Fatalf("botocore %s's model differs from the copy pinned from the same release: %v", version, drift)
	}
	t.Skipf("the installed botocore %s's GameLift model differs from the pinned one (botocore %s): %v; "+
		"go run ./tools/apigen -pin && go generate ./internal/api adopts it", version, PinnedBotocoreVersion(), drift)
}

// modelDrift lists the operations and shapes added, removed or changed
// from model a to model b.
func modelDrift(a, b []byte) ([]string, error) {
	type model struct {
		Metadata   json.RawMessage
		Operations map[string]any
		Shapes     map[string]any
	}
	var ma, mb model
	if err := json.Unmarshal(a, &ma); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &mb); err != nil {
		return nil, err
	}
	var out []string
	diff := func(kind string, x, y map[string]any) {
		for name, v := range x {
			w, ok := y[name]
			switch {
			case !ok:
				out = append(out, kind+" "+name+" removed")
			case !reflect.DeepEqual(v, w):
				out = append(out, kind+" "+name+" changed")
			}
		}
		for name := range y {
			if _, ok := x[name]; !ok {
				out = append(out, kind+" "+name+" added")
			}
		}
	}
	diff("operation", ma.Operations, mb.Operations)
	diff("shape", ma.Shapes, mb.Shapes)
	if !bytes.Equal(ma.Metadata, mb.Metadata) {
		out = append(out, "metadata changed")
	}
	sort.Strings(out)
	return out, nil
}

func TestModelDrift(t *testing.T) {
	a := `{"metadata":{},"operations":{"A":{"x":1},"B":{}},"shapes":{"S":{"min":1}}}`
	b := `{"metadata":{},"operations":{"A":{"x":2},"C":{}},"shapes":{"S":{"min":1}}}`
	got, err := modelDrift([]byte(a), []byte(b))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"operation A changed", "operation B removed", "operation C added"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
