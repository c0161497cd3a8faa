package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/hoistgg/hoist/internal/config"
)

// notifySignals returns a context ended by SIGINT or SIGTERM, and a
// function telling which of them ended it (nil before one did): SIGINT
// ends the local agent's games with Hoist, SIGTERM leaves them running for
// the next Hoist.
func notifySignals() (context.Context, func() os.Signal, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var mu sync.Mutex
	var got os.Signal
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			mu.Lock()
			got = s
			mu.Unlock()
			cancel()
		case <-done:
		}
	}()
	which := func() os.Signal {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel()
		})
	}
	return ctx, which, stop
}

// superviseLocalAgent starts the local agent (StartLocalHost) and starts
// it again, after a growing pause (1s doubling to 30s, back to 1s once one
// ran a minute), whenever it ends while ctx lasts: the instances it ran
// are then lost and replaced, like those of any host that lost its agent.
func superviseLocalAgent(ctx context.Context, cfg *config.Config, log *slog.Logger,
	start func(context.Context, func(string, *os.File) error) error) error {
	var spawn func(string, *os.File) error
	var mu sync.Mutex
	pause, started := time.Second, time.Now()
	spawn = localAgentSpawner(ctx, cfg, func(err error) {
		mu.Lock()
		if time.Since(started) > time.Minute {
			pause = time.Second
		}
		wait := pause
		pause = min(2*pause, 30*time.Second)
		mu.Unlock()
		log.Warn("local host: the local agent ended; starting it again", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		mu.Lock()
		started = time.Now()
		mu.Unlock()
		if err := start(ctx, spawn); err != nil && ctx.Err() == nil {
			log.Error("local host: starting the local agent again", "err", err)
		}
	})
	return start(ctx, spawn)
}
