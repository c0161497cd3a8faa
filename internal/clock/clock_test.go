package clock

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// ticked reports whether a tick is waiting on t, once every goroutine of
// the bubble is blocked.
func ticked(t *Ticker) bool {
	synctest.Wait()
	select {
	case <-t.C:
		return true
	default:
		return false
	}
}

// TestManualStandsStill: real time passing does not move a manual clock.
func TestManualStandsStill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewManual(start)
		time.Sleep(time.Hour)
		if got := m.Now(); !got.Equal(start) {
			t.Fatalf("after an hour of real time: %v, want %v", got, start)
		}
		got, err := m.Advance(90 * time.Second)
		if err != nil || !got.Equal(start.Add(90*time.Second)) || !m.Now().Equal(got) {
			t.Fatalf("Advance(90s) = %v, %v; Now %v", got, err, m.Now())
		}
	})
}

// TestAdvanceTicksEveryTicker: an advance ticks every ticker at once,
// however short it is beside their periods; one advance gives one tick; an
// advance by 0 or to the past none.
func TestAdvanceTicksEveryTicker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewManual(start)
		short, long := m.NewTicker(time.Second), m.NewTicker(time.Hour)
		defer short.Stop()
		defer long.Stop()
		if _, err := m.Advance(time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if !ticked(short) || !ticked(long) {
			t.Fatal("advance 1ms: want both tickers to tick at once")
		}
		if _, err := m.Advance(90 * time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Advance(90 * time.Second); err != nil {
			t.Fatal(err)
		}
		if !ticked(short) || ticked(short) {
			t.Fatal("two advances in a row: want one tick waiting, as time.Ticker keeps")
		}
		<-long.C
		if _, err := m.Advance(0); err != nil {
			t.Fatal(err)
		}
		if m.AdvanceTo(start) || ticked(short) || ticked(long) {
			t.Fatal("an advance by 0 or to the past ticked")
		}
		if !m.AdvanceTo(m.Now().Add(time.Second)) || !ticked(long) {
			t.Fatal("AdvanceTo a later time: want a tick")
		}
	})
}

// TestManualTickerTicksOnRealTime: a manual clock's ticker also ticks
// every period of real time, while the clock stands still, with the
// clock's time.
func TestManualTickerTicksOnRealTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewManual(start)
		tk := m.NewTicker(time.Second)
		defer tk.Stop()
		for i := range 3 {
			time.Sleep(time.Second)
			synctest.Wait()
			select {
			case at := <-tk.C:
				if !at.Equal(start) {
					t.Fatalf("tick %d carries %v, want the clock's %v", i, at, start)
				}
			default:
				t.Fatalf("no tick after %d s of real time", i+1)
			}
		}
	})
}

// TestStoppedTickerIsSilent: after Stop neither real time nor an advance
// ticks it.
func TestStoppedTickerIsSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewManual(start)
		tk := m.NewTicker(time.Second)
		tk.Stop()
		time.Sleep(5 * time.Second)
		if _, err := m.Advance(time.Hour); err != nil {
			t.Fatal(err)
		}
		if ticked(tk) {
			t.Fatal("a stopped ticker ticked")
		}
	})
}

// TestManualNeverGoesBack: a negative advance is refused, and AdvanceTo a
// time not after the clock's changes nothing.
func TestManualNeverGoesBack(t *testing.T) {
	m := NewManual(start)
	if _, err := m.Advance(-time.Second); !errors.Is(err, ErrBackwards) {
		t.Fatalf("Advance(-1s): %v, want ErrBackwards", err)
	}
	if m.AdvanceTo(start) || m.AdvanceTo(start.Add(-time.Hour)) || !m.Now().Equal(start) {
		t.Fatalf("AdvanceTo the past moved the clock to %v", m.Now())
	}
}

// TestRealTicker: the real clock's ticker is time's.
func TestRealTicker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := Or(nil)
		tk := c.NewTicker(time.Second)
		defer tk.Stop()
		before := c.Now()
		time.Sleep(time.Second)
		if !ticked(tk) || c.Now().Sub(before) != time.Second {
			t.Fatal("the real clock's ticker did not tick after its period")
		}
	})
}
