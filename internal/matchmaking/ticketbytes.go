package matchmaking

import (
	"context"
	"errors"
	"strconv"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// KindTicketBytes is the record that counts the bytes of a
// configuration's active tickets: ID the configuration's name, Data a
// JSON number.
const KindTicketBytes store.Kind = "MatchmakingTicketBytes"

// MaxTicketBytes is the most a configuration's active tickets (QUEUED,
// SEARCHING, REQUIRES_ACCEPTANCE, PLACING) may hold together, counted as
// the size of each ticket's record when it started: 64 MiB. The store
// keeps every active ticket, and the matchmaker keeps the SEARCHING ones
// decoded, so this bounds what one configuration's pool costs in memory:
// 52 tickets of ten players with every field at its limit (1.3 MB each),
// about 260,000 of one player with a number attribute and two latencies
// (250 B each).
const MaxTicketBytes = 64 << 20

// ticketBytes returns the bytes the configuration's active tickets hold
// (0 when nothing was counted yet).
func ticketBytes(ctx context.Context, tx store.Tx, config string) (int64, error) {
	rec, err := tx.Get(ctx, KindTicketBytes, config)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(rec.Data), 10, 64)
}

// addTicketBytes adds delta (negative when a ticket ends) to the bytes the
// configuration's active tickets hold. The count never goes below zero:
// tickets an older Hoist started were not counted, and end with nothing
// to take away.
func addTicketBytes(ctx context.Context, tx store.Tx, config string, delta int64) error {
	n, err := ticketBytes(ctx, tx, config)
	if err != nil {
		return err
	}
	n = max(n+delta, 0)
	return tx.Put(ctx, store.Record{Kind: KindTicketBytes, ID: config, Data: strconv.AppendInt(nil, n, 10)})
}

// checkTicketBytes refuses a ticket that took the configuration's active
// tickets past the bound (s.maxTicketBytes, MaxTicketBytes unless a test
// lowers it). It runs in the transaction that inserted t, after putTicket
// counted it, so that the refusal undoes both.
func (s *Service) checkTicketBytes(ctx context.Context, tx store.Tx, t *ticketRecord) error {
	n, err := ticketBytes(ctx, tx, t.config())
	if err != nil || n <= s.maxTicketBytes {
		return err
	}
	return api.NewInvalidRequestException("Players: matchmaking configuration %s's active tickets would hold %d bytes with this ticket of %d bytes; "+
		"at most %d bytes (%d MiB) are allowed: retry once some of its tickets have ended", t.config(), n, t.Size, s.maxTicketBytes, s.maxTicketBytes>>20)
}

// sizeTicket counts a ticket being inserted: its size is that of its
// record, data as putTicket encoded it (without the size) and ID, and is
// added to the configuration's count; the returned data carries the size
// as the field "size" (ticketRecord.Size), so that the ticket's end takes
// away what its start added.
func sizeTicket(ctx context.Context, tx store.Tx, t *ticketRecord, data []byte) ([]byte, error) {
	t.Size = int64(len(data) + len(t.id()))
	if err := addTicketBytes(ctx, tx, t.config(), t.Size); err != nil {
		return nil, err
	}
	// data is a JSON object without "size" (Size was 0, omitted): the
	// field goes before its closing brace.
	data = append(data[:len(data)-1], `,"size":`...)
	data = strconv.AppendInt(data, t.Size, 10)
	return append(data, '}'), nil
}
