// Command apigen writes Hoist's generated API package (internal/api/*_gen.go)
// from the GameLift service model that ships with botocore.
//
//	go run ./tools/apigen -out internal/api [-model path/to/service-2.json.gz]
//
// Without -model it uses $HOIST_GAMELIFT_MODEL, else the model inside the
// botocore that python3 imports. It is run by `go generate ./internal/api`.
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
	model := flag.String("model", "", "GameLift service model (default: botocore's)")
	flag.Parse()
	if err := run(*out, *model); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(out, model string) error {
	if model == "" {
		p, err := apigen.FindModel()
		if err != nil {
			return err
		}
		model = p
	}
	m, err := apigen.LoadModel(model)
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
