package events

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/storetest"
)

// TestHousekeepingFailover: when the replica running the housekeeping
// dies (its lease left held), another replica's takes it over within 15 s
// (it sends nothing, so its lease need not outlast a receiver's timeout).
func TestHousekeepingFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := journal.Open(t.TempDir(), journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		run := func(ctx context.Context, replica string) {
			_ = New(Config{Store: st, Region: "us-west-2", Account: "123456789012", Secret: secret, ReplicaID: replica}).Run(ctx)
		}
		storetest.LeaseFailover(t, st, leaseName, "the housekeeping", 3*time.Second, run)
	})
}
