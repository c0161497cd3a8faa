package sdkconn

import (
	"testing"
	"time"
)

func TestRefreshAt(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		life, before, want time.Duration // want: from now
	}{
		"long-lived token":      {3 * time.Hour, 15 * time.Minute, 3*time.Hour - 15*time.Minute},
		"signed URL":            {15 * time.Minute, 15 * time.Minute, 7*time.Minute + 30*time.Second},
		"short":                 {200 * time.Millisecond, 15 * time.Minute, 100 * time.Millisecond},
		"already expired":       {-time.Second, 15 * time.Minute, 0},
		"expires exactly now":   {0, time.Minute, 0},
		"margin under the half": {time.Hour, time.Minute, time.Hour - time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			if got := refreshAt(now, now.Add(tc.life), tc.before).Sub(now); got != tc.want {
				t.Errorf("refreshAt = now+%v, want now+%v", got, tc.want)
			}
		})
	}
}
