package api

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// MarshalCBOR writes tag 1 (epoch time) around integer seconds, or around a
// float when the time has a fraction of a second.
func (t Timestamp) MarshalCBOR() ([]byte, error) {
	ms := t.UnixMilli()
	var content any = ms / 1000
	if ms%1000 != 0 {
		content = float64(ms) / 1000
	}
	return cbor.Marshal(cbor.Tag{Number: 1, Content: content})
}

// ErrNonFinite is the error of a timestamp that is NaN or an infinity.
var ErrNonFinite = errors.New("timestamp: not a finite number")

// UnmarshalCBOR reads tag 1 around an integer or float, or a bare number.
func (t *Timestamp) UnmarshalCBOR(b []byte) error {
	var v any
	if err := cbor.Unmarshal(b, &v); err != nil {
		return err
	}
	if tag, ok := v.(cbor.Tag); ok {
		if tag.Number != 1 {
			return fmt.Errorf("timestamp: unexpected CBOR tag %d", tag.Number)
		}
		v = tag.Content
	}
	if tm, ok := v.(time.Time); ok {
		t.Time = tm.Round(time.Millisecond).UTC()
		return nil
	}
	switch n := v.(type) {
	case uint64:
		t.Time = time.Unix(int64(n), 0).UTC()
	case int64:
		t.Time = time.Unix(n, 0).UTC()
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return ErrNonFinite
		}
		t.Time = epoch(n)
	case float32:
		if f := float64(n); math.IsNaN(f) || math.IsInf(f, 0) {
			return ErrNonFinite
		}
		t.Time = epoch(float64(n))
	default:
		return fmt.Errorf("timestamp: want epoch seconds, got %T", v)
	}
	return nil
}
