// Package apigen generates Hoist's API package (internal/api) from the GameLift
// service model that ships with botocore: Go types for every shape, enums,
// modeled errors, the Service interface, the not-implemented fallback, the
// operation table and input validation.
//
// The generator copies no documentation text from the model: only names,
// types and constraints.
package apigen

import (
	"bytes"
	"compress/gzip"
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

// ModelPathEnv names the environment variable that may point at the model file.
const ModelPathEnv = "HOIST_GAMELIFT_MODEL"

// FindModel returns the path of the GameLift service model: $HOIST_GAMELIFT_MODEL
// if set, otherwise the copy inside the botocore that python3 imports.
func FindModel() (string, error) {
	if p := os.Getenv(ModelPathEnv); p != "" {
		return p, nil
	}
	out, err := exec.Command("python3", "-c",
		"import botocore,os;print(os.path.dirname(botocore.__file__))").Output()
	if err != nil {
		return "", fmt.Errorf("apigen: cannot find botocore (set %s to the GameLift service-2.json(.gz)): %w", ModelPathEnv, err)
	}
	dir := strings.TrimSpace(string(out))
	for _, name := range []string{"service-2.json.gz", "service-2.json"} {
		p := dir + "/data/gamelift/2015-10-01/" + name
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("apigen: no GameLift model under botocore at %s", dir)
}

// LoadModel reads and parses a model file (plain or gzip JSON).
func LoadModel(path string) (*Model, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, err
		}
	}
	var m Model
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("apigen: parse model: %w", err)
	}
	return &m, nil
}
