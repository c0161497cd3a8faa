// Package paging is the one pager of Hoist's paginated GameLift operations
// and the one answer to a NextToken they did not issue.
//
// Every NextToken is opaque: either a store cursor (store.EncodeCursor,
// for lists read page by page from the store) or, for lists built in
// memory and sorted by a key (fleet IDs, location names, policy names), the
// last key shown, wrapped in the same codec. A token that does not decode
// is InvalidRequestException with one message, whichever operation got it.
package paging

import (
	"context"
	"errors"
	"sort"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// Message is what a request with a NextToken Hoist did not issue is told.
const Message = "NextToken is not a token this operation returned: give the NextToken of the previous page, or none for the first page"

// Err turns a bad cursor (store.ErrInvalidCursor) into the API's
// InvalidRequestException; other errors pass unchanged.
func Err(err error) error {
	if errors.Is(err, store.ErrInvalidCursor) {
		return api.NewInvalidRequestException("%s", Message)
	}
	return err
}

// Token returns the NextToken output of a page: nil on the last page
// (next == "").
func Token(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

// Records lists up to limit records of q that match accepts (nil accepts
// all), starting after the NextToken token ("" for the first page). It
// returns them and the NextToken of the rest ("" at the end): every record
// before that cursor was accepted or refused, so the next page starts
// exactly there.
func Records(ctx context.Context, tx store.Tx, q store.Query, token string, limit int, match func(store.Record) (bool, error)) ([]store.Record, string, error) {
	q.After = token
	var out []store.Record
	for {
		q.Limit = limit - len(out)
		recs, next, err := tx.List(ctx, q)
		if err != nil {
			return nil, "", Err(err)
		}
		for _, rec := range recs {
			ok := true
			if match != nil {
				if ok, err = match(rec); err != nil {
					return nil, "", err
				}
			}
			if ok {
				out = append(out, rec)
			}
		}
		if next == "" || len(out) >= limit {
			return out, next, nil
		}
		q.After = next
	}
}

// Check refuses a NextToken ("" is none) that is not a store cursor for
// a query in order (and desc), before an operation does anything else
// with its request.
func Check(token string, order store.Order, desc bool) error {
	if token == "" {
		return nil
	}
	_, err := store.DecodeCursor(token, order, desc)
	return Err(err)
}

// KeyToken is the NextToken of an in-memory page whose last item has key.
func KeyToken(key string) string {
	return store.EncodeCursor(store.OrderID, false, &store.Record{ID: key})
}

// AfterKey decodes a KeyToken ("" for none); anything else is the API's
// InvalidRequestException.
func AfterKey(token string) (string, error) {
	if token == "" {
		return "", nil
	}
	c, err := store.DecodeCursor(token, store.OrderID, false)
	if err != nil {
		return "", Err(err)
	}
	return c.ID, nil
}

// Sorted pages all, which is sorted by key: up to limit items after the
// NextToken token, and the NextToken of the rest ("" at the end). Items
// removed since the previous page do not disturb the next.
func Sorted[T any](all []T, key func(T) string, token string, limit int) ([]T, string, error) {
	after, err := AfterKey(token)
	if err != nil {
		return nil, "", err
	}
	if token != "" {
		all = all[sort.Search(len(all), func(i int) bool { return key(all[i]) > after }):]
	}
	if len(all) > limit {
		all = all[:limit]
		return all, KeyToken(key(all[limit-1])), nil
	}
	return all, "", nil
}
