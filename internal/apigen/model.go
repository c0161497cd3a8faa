// Package apigen generates Hoist's API package (internal/api) from the GameLift
// service model (a pinned copy of botocore's, without its documentation text,
// in model/): Go types for every shape, enums,
// modeled errors, the Service interface, the not-implemented fallback, the
// operation table and input validation.
//
// The generator copies no documentation text from the model: only names,
// types and constraints.
package apigen

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Model is the part of a botocore service model the generator reads.
type Model struct {
	Metadata   map[string]any       `json:"metadata"`
	Operations map[string]Operation `json:"operations"`
	Shapes     map[string]*Shape    `json:"shapes"`
}

// Operation is one modeled operation.
type Operation struct {
	Name   string    `json:"name"`
	Input  *ShapeRef `json:"input"`
	Output *ShapeRef `json:"output"`
	Errors []ShapeRef
}

// ShapeRef points at a shape.
type ShapeRef struct {
	Shape string `json:"shape"`
}

// Shape is one modeled shape with its constraints.
type Shape struct {
	Type      string              `json:"type"`
	Members   map[string]ShapeRef `json:"members"`
	Required  []string            `json:"required"`
	Member    *ShapeRef           `json:"member"`
	Key       *ShapeRef           `json:"key"`
	Value     *ShapeRef           `json:"value"`
	Min       *float64            `json:"min"`
	Max       *float64            `json:"max"`
	Pattern   *string             `json:"pattern"`
	Enum      []string            `json:"enum"`
	Exception bool                `json:"exception"`
	Fault     bool                `json:"fault"`
	Sensitive bool                `json:"sensitive"`
	Error     *struct {
		HTTPStatusCode int `json:"httpStatusCode"`
	} `json:"error"`
}

// The pinned model: the GameLift service model from the botocore release
// named in model/botocore-version, stripped of its documentation text
// (StripModel). The generator reads it, so that generation does not depend
// on what the machine has installed; `go run ./tools/apigen -pin` replaces
// it with the installed botocore's, and TestPinnedModelDrift reports how
// the two differ.
var (
	//go:embed model/gamelift-2015-10-01.json
	pinnedModel []byte
	//go:embed model/botocore-version
	pinnedVersion string
)

// PinnedModelFile is the pinned model's path in this package's directory,
// and PinnedVersionFile the file naming its botocore release.
const (
	PinnedModelFile   = "model/gamelift-2015-10-01.json"
	PinnedVersionFile = "model/botocore-version"
)

// PinnedModel parses the pinned model.
func PinnedModel() (*Model, error) { return ParseModel(pinnedModel) }

// PinnedBotocoreVersion is the botocore release the pinned model comes from.
func PinnedBotocoreVersion() string { return strings.TrimSpace(pinnedVersion) }

// InstalledBotocoreModel returns the GameLift model inside the botocore
// that python3 imports (raw, as botocore ships it) and botocore's version.
func InstalledBotocoreModel() (raw []byte, version string, err error) {
	out, err := exec.Command("python3", "-c",
		"import botocore,os;print(botocore.__version__);print(os.path.dirname(botocore.__file__))").Output()
	if err != nil {
		return nil, "", fmt.Errorf("apigen: cannot import botocore: %w", err)
	}
	version, dir, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	for _, name := range []string{"service-2.json.gz", "service-2.json"} {
		p := dir + "/data/gamelift/2015-10-01/" + name
		if raw, err := readModelFile(p); err == nil {
			return raw, version, nil
		}
	}
	return nil, "", fmt.Errorf("apigen: no GameLift model under botocore at %s", dir)
}

// StripModel returns a model with its documentation text removed (every
// "documentation" and "documentationUrl" member, at any depth), written
// as indented JSON with sorted keys: shapes, members, traits, constraints
// and errors stay.
func StripModel(raw []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("apigen: parse model: %w", err)
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "documentation")
			delete(v, "documentationUrl")
			for _, x := range v {
				strip(x)
			}
		case []any:
			for _, x := range v {
				strip(x)
			}
		}
	}
	strip(v)
	out, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// LoadModel reads and parses a model file (plain or gzip JSON).
func LoadModel(path string) (*Model, error) {
	raw, err := readModelFile(path)
	if err != nil {
		return nil, err
	}
	return ParseModel(raw)
}

// readModelFile reads a model file, gunzipping it if needed.
func readModelFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	}
	return raw, nil
}

// ParseModel parses a model.
func ParseModel(raw []byte) (*Model, error) {
	var m Model
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("apigen: parse model: %w", err)
	}
	return &m, nil
}
