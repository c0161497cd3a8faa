package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hoistgg/hoist/internal/store"
)

var _ store.Waker = (*Store)(nil)

// sqlWake notifies channel once per payload. Arguments: channel, payloads.
const sqlWake = `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`

// Wake sends payloads to channel's listeners with pg_notify, in a
// statement of its own: NOTIFY takes a lock on the whole database's
// notification queue at COMMIT, so it is kept out of the transactions
// that write records.
func (s *Store) Wake(ctx context.Context, channel string, payloads ...string) error {
	if len(payloads) == 0 {
		return nil
	}
	if err := s.gate.Begin(ctx); err != nil {
		return err
	}
	defer s.gate.Leave()
	_, err := s.pool.Exec(ctx, sqlWake, channel, payloads)
	return err
}

// listenRetry is the pause before a lost LISTEN connection is opened
// again.
const listenRetry = time.Second

// Listen holds a connection of its own (outside the pool, which it would
// otherwise keep one short) listening on channel, and calls fn with each
// notification's payload; fn("") on every (re)connection. A lost
// connection is opened again after listenRetry.
func (s *Store) Listen(ctx context.Context, channel string, fn func(payload string)) error {
	for {
		err := s.listenOnce(ctx, channel, fn)
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn("postgres: LISTEN connection lost; opening it again", "channel", channel, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(listenRetry):
		}
	}
}

// listenOnce runs one LISTEN connection until it fails or ctx ends.
func (s *Store) listenOnce(ctx context.Context, channel string, fn func(payload string)) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		closing, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = conn.Close(closing)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	fn("")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		fn(n.Payload)
	}
}
