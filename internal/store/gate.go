package store

import (
	"context"
	"sync"
)

// Gate admits a backend's operations until Close, and lets Close wait for
// the ones it admitted. The zero value is open.
type Gate struct {
	mu     sync.RWMutex
	closed bool
	shut   chan struct{} // closed when the first Close has finished
	err    error         // that Close's result, set before shut is closed
	active sync.WaitGroup
}

// enter admits an operation; it fails once Close has begun.
func (g *Gate) enter() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return false
	}
	g.active.Add(1)
	return true
}

// Begin admits an operation unless ctx has ended (its error) or Close has
// begun (ErrClosed); an admitted operation calls Leave when it ends.
func (g *Gate) Begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !g.enter() {
		return ErrClosed
	}
	return nil
}

// Leave ends an operation Begin admitted.
func (g *Gate) Leave() { g.active.Done() }

// Close shuts the gate, waits for the admitted operations, then runs
// release and returns its result. Later calls wait for the first to finish
// and return the same result.
func (g *Gate) Close(release func() error) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		<-g.shut
		return g.err
	}
	g.closed = true
	g.shut = make(chan struct{})
	g.mu.Unlock()
	g.active.Wait()
	g.err = release()
	close(g.shut)
	return g.err
}
