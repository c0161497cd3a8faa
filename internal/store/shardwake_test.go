package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recordingWaker is a Store with only Waker: it records the wakes sent
// (with the bubble's clock) and listens to nothing.
type recordingWaker struct {
	Store
	mu    sync.Mutex
	sends []sentWake
}

type sentWake struct {
	at   time.Time
	keys []string
}

func (r *recordingWaker) Wake(_ context.Context, _ string, payloads ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sends = append(r.sends, sentWake{at: time.Now(), keys: slices.Clone(payloads)})
	return nil
}

func (r *recordingWaker) Listen(ctx context.Context, _ string, _ func(string)) error {
	<-ctx.Done()
	return nil
}

func (r *recordingWaker) sent() []sentWake {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sends)
}

// TestShardWakeGap: a wake after a quiet spell is sent at once; wakes
// made faster than wakeGap go out together, one statement each wakeGap at
// most, and none is lost.
func TestShardWakeGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recordingWaker{}
		w := NewShardWake(r, "test", make(chan struct{}, 1), nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()
		start := time.Now()
		w.Wake("first")
		synctest.Wait()
		if got := r.sent(); len(got) != 1 || !got[0].at.Equal(start) || !slices.Equal(got[0].keys, []string{"first"}) {
			t.Fatalf("after one wake: %+v, want it sent at once", got)
		}
		want := map[string]bool{}
		for i := range 100 { // one a millisecond: 4 wakeGaps
			key := fmt.Sprint("k", i)
			want[key] = true
			w.Wake(key)
			time.Sleep(time.Millisecond)
		}
		time.Sleep(wakeGap)
		synctest.Wait()
		got := r.sent()
		if len(got) > 1+100/int(wakeGap/time.Millisecond)+1 {
			t.Errorf("%d statements for 101 wakes over %v, want one a %v at most", len(got), 100*time.Millisecond, wakeGap)
		}
		for i := 1; i < len(got); i++ {
			if d := got[i].at.Sub(got[i-1].at); d < wakeGap {
				t.Errorf("statement %d sent %v after the one before, want at least %v", i, d, wakeGap)
			}
			for _, k := range got[i].keys {
				delete(want, k)
			}
		}
		if len(want) > 0 {
			t.Errorf("%d wakes never sent", len(want))
		}
		// Quiet again: the next wake goes out at once.
		time.Sleep(wakeGap)
		before, at := len(got), time.Now()
		w.Wake("again")
		synctest.Wait()
		if got := r.sent(); len(got) != before+1 || !got[before].at.Equal(at) {
			t.Errorf("a wake after a quiet spell: %+v, want it sent at once", got[before:])
		}
		cancel()
		<-done
	})
}
