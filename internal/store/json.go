package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// Helpers for domains whose record Data is JSON.

// Decode decodes a record's Data into v.
func Decode(rec Record, v any) error {
	if err := json.Unmarshal(rec.Data, v); err != nil {
		return fmt.Errorf("decode %s %s: %w", rec.Kind, rec.ID, err)
	}
	return nil
}

// GotJSON decodes what GetRefs read of a ref into a new T: nil when the
// record did not exist.
func GotJSON[T any](g Got) (*T, error) {
	if !g.Found {
		return nil, nil
	}
	v := new(T)
	if err := Decode(g.Record, v); err != nil {
		return nil, err
	}
	return v, nil
}

// GetJSON reads the record of kind and id and decodes its Data into v.
func GetJSON(ctx context.Context, tx Tx, kind Kind, id string, v any) (Record, error) {
	rec, err := tx.Get(ctx, kind, id)
	if err != nil {
		return rec, err
	}
	return rec, Decode(rec, v)
}

// PutJSON encodes v as rec's Data and puts rec.
func PutJSON(ctx context.Context, tx Tx, rec Record, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", rec.Kind, rec.ID, err)
	}
	rec.Data = data
	return tx.Put(ctx, rec)
}

// Each calls fn for every record q selects (q.Limit and q.After are
// ignored), reading a page of 256 at a time.
func Each(ctx context.Context, tx Tx, q Query, fn func(Record) error) error {
	q.Limit, q.After = 256, ""
	for {
		recs, next, err := tx.List(ctx, q)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		q.After = next
	}
}
