package matchmaking

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// KindWait holds a configuration's recent wait (ID the configuration
// name): the estimate of EstimatedWaitTime and estimatedWaitMillis.
const KindWait store.Kind = "MatchmakingWait"

// waitFresh is how long a configuration's recent wait stays an estimate
// after its last match.
const waitFresh = 10 * time.Minute

// waitWeight is how much the tickets matched in one pass move the
// estimate (an exponential moving average over passes).
const waitWeight = 0.2

// waitRecord is a configuration's recent wait.
type waitRecord struct {
	// Millis is the moving average of the waits (match time - StartTime)
	// of the matched tickets.
	Millis  float64   `json:"millis"`
	Updated time.Time `json:"updated"`
}

// recordWaitTx folds the waits of the tickets a pass matched into the
// configuration's estimate.
func recordWaitTx(ctx context.Context, tx store.Tx, config string, mean time.Duration, now time.Time) error {
	w := waitRecord{Millis: float64(mean.Milliseconds()), Updated: now}
	var old waitRecord
	_, err := store.GetJSON(ctx, tx, KindWait, config, &old)
	switch {
	case err == nil && now.Sub(old.Updated) < waitFresh:
		w.Millis = (1-waitWeight)*old.Millis + waitWeight*w.Millis
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return err
	}
	data, err := json.Marshal(w)
	if err != nil {
		return err
	}
	return tx.Put(ctx, store.Record{Kind: KindWait, ID: config, Data: data})
}

// estimate returns the configuration's recent wait in milliseconds, or -1
// when there is none.
func estimate(ctx context.Context, tx store.Tx, config string, now time.Time) (int64, error) {
	var w waitRecord
	_, err := store.GetJSON(ctx, tx, KindWait, config, &w)
	if errors.Is(err, store.ErrNotFound) {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	if now.Sub(w.Updated) >= waitFresh {
		return -1, nil
	}
	return int64(math.Round(w.Millis)), nil
}

// estimatedSeconds is EstimatedWaitTime for an estimate (nil for none).
func estimatedSeconds(ms int64) *int32 {
	if ms < 0 {
		return nil
	}
	return api.Int32(int32(min((ms+999)/1000, math.MaxInt32)))
}

// estimatedMillis is estimatedWaitMillis for an estimate.
func estimatedMillis(ms int64) string {
	if ms < 0 {
		return "NOT_AVAILABLE"
	}
	return strconv.FormatInt(ms, 10)
}
