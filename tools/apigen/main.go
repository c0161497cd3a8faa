// Command apigen writes Hoist's generated API package (internal/api/*_gen.go)
// from the pinned GameLift service model (internal/apigen/model/), and pins a
// new model.
//
//	go run ./tools/apigen -out internal/api [-model path/to/service-2.json(.gz)]
//	go run ./tools/apigen -pin [-pin-dir internal/apigen/model]
//
// Without -model it generates from the pinned model; `go generate
// ./internal/api` runs it so. -pin copies the GameLift model of the botocore
// that python3 imports into the pin directory, stripped of its documentation
// text, and records botocore's version; regenerate afterwards.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hoistgg/hoist/internal/apigen"
)

func main() {
	out := flag.String("out", ".", "directory of package api")
	model := flag.String("model", "", "GameLift service model to generate from (default: the pinned one)")
	pin := flag.Bool("pin", false, "pin the installed botocore's GameLift model instead of generating")
	pinDir := flag.String("pin-dir", filepath.Join("internal", "apigen", "model"), "with -pin: the pinned model's directory")
	flag.Parse()
	var err error
	if *pin {
		err = pinModel(*pinDir)
	} else {
		err = run(*out, *model)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(out, model string) error {
	var m *apigen.Model
	var err error
	if model == "" {
		m, err = apigen.PinnedModel()
	} else {
		m, err = apigen.LoadModel(model)
	}
	if err != nil {
		return err
	}
	files, err := apigen.Generate(m)
	if err != nil {
		return err
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(out, name), src, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// pinModel writes the installed botocore's model, stripped, and its version
// into dir.
func pinModel(dir string) error {
	raw, version, err := apigen.InstalledBotocoreModel()
	if err != nil {
		return err
	}
	stripped, err := apigen.StripModel(raw)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(apigen.PinnedModelFile)), stripped, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(apigen.PinnedVersionFile)), []byte(version+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("pinned the GameLift model of botocore %s; now run go generate ./internal/api\n", version)
	return nil
}
