//go:build !unix

package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/hoistgg/hoist/internal/config"
)

// localAgentSpawner: the local agent needs a Unix system (its own session,
// outliving hoist serve); elsewhere --local-hosting defaults to in-process.
func localAgentSpawner(context.Context, *config.Config, func(error)) func(string, *os.File) error {
	return func(string, *os.File) error {
		return errors.New("the local agent runs on Unix systems only: use --local-hosting in-process")
	}
}

// endSpawnedAgent: no local agent is started here.
func endSpawnedAgent(time.Duration) bool { return false }
