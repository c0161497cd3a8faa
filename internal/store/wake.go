package store

import "context"

// Waker is implemented by the stores whose replicas can wake one another
// (PostgreSQL: NOTIFY and LISTEN). A wake is a hint that carries no data
// of its own: what it announces is in the store, and a reader that was
// not woken (a wake lost with its connection, a store without Waker)
// finds it when it next looks.
type Waker interface {
	// Wake sends each payload to the listeners of channel, in one
	// statement committed on its own (never inside another transaction).
	Wake(ctx context.Context, channel string, payloads ...string) error
	// Listen calls fn with the payload of each wake sent to channel
	// until ctx ends (then it returns nil). It calls fn("") each time it
	// (re)connects, so that a listener looks for what it may have missed
	// meanwhile. fn must not block.
	Listen(ctx context.Context, channel string, fn func(payload string)) error
}
