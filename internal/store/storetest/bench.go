package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

// Counted is a store with its group commit counters, for the benchmarks.
type Counted struct {
	store.Store
	// Counters returns how many commits (fsyncs) and how many Updates in
	// them the store has made since it opened.
	Counters func() (batches, updates int64)
}

// Benchmarks runs the store benchmarks every backend shares against the
// stores open returns (each one fresh and empty): Update (put, insert),
// ClaimPattern (in an Update), Claim (the same in a Claim) and ViewGet,
// each with one caller and with many.
func Benchmarks(b *testing.B, open func(b *testing.B) Counted) {
	b.Run("Update", func(b *testing.B) { benchUpdate(b, open) })
	b.Run("ClaimPattern", func(b *testing.B) {
		benchClaimPattern(b, open, func(s store.Store) func(context.Context, func(store.Tx) error) error { return s.Update })
	})
	b.Run("Claim", func(b *testing.B) {
		benchClaimPattern(b, open, func(s store.Store) func(context.Context, func(store.Tx) error) error { return s.Claim })
	})
	b.Run("ViewGet", func(b *testing.B) { benchViewGet(b, open) })
}

// benchCases: one caller (every Update waits for its own fsync) and many
// concurrent callers (group commit shares the fsync).
var benchCases = []struct {
	name        string
	parallelism int // goroutines per GOMAXPROCS; 0: one goroutine
}{
	{"callers=1", 0},
	{"callers=8xP", 8},
	{"callers=64xP", 64},
}

func runBench(b *testing.B, s Counted, parallelism int, unit string, op func(worker, i int) error) {
	b.ReportAllocs()
	beforeBatches, beforeUpdates := s.Counters()
	b.ResetTimer()
	if parallelism == 0 {
		for i := range b.N {
			if err := op(0, i); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		var workers atomic.Int32
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			w := int(workers.Add(1))
			for i := 0; pb.Next(); i++ {
				if err := op(w, i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.StopTimer()
	afterBatches, afterUpdates := s.Counters()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
	if n := afterBatches - beforeBatches; n > 0 {
		b.ReportMetric(float64(afterUpdates-beforeUpdates)/float64(n), "updates/commit")
	}
}

// benchUpdate: small independent Updates, the same work in every case:
// "put" replaces the Data of one of 10,000 game servers (a heartbeat),
// "insert" adds a new record.
func benchUpdate(b *testing.B, open func(b *testing.B) Counted) {
	data := []byte(`{"GameServerId":"gs-1","ClaimStatus":"","UtilizationStatus":"AVAILABLE"}`)
	ops := map[string]func(n int) func(tx store.Tx) error{
		"put": func(n int) func(tx store.Tx) error {
			id := fmt.Sprintf("gs-%08d", n%10000)
			return func(tx store.Tx) error {
				return tx.Put(context.Background(), store.Record{Kind: "GameServer", ID: id,
					Parent: "group", Key: "free", Rank: int64(n % 10000 % 7), Data: data})
			}
		},
		"insert": func(n int) func(tx store.Tx) error {
			id := fmt.Sprintf("new-%08d", n)
			return func(tx store.Tx) error {
				return tx.Insert(context.Background(), store.Record{Kind: "GameServer", ID: id,
					Parent: "group", Key: "free", Rank: int64(n % 7), Data: data})
			}
		},
	}
	for _, name := range []string{"put", "insert"} {
		for _, bc := range benchCases {
			b.Run(name+"/"+bc.name, func(b *testing.B) {
				s := open(b)
				fillFree(b, s, 10000)
				var counter atomic.Int64
				runBench(b, s, bc.parallelism, "updates/s", func(w, i int) error {
					return s.Update(context.Background(), ops[name](int(counter.Add(1))))
				})
			})
		}
	}
}

// benchClaimPattern: the FleetIQ claim, in parallel: find the first free
// game server through the (kind, parent, key, rank) index, mark it taken,
// in the transaction run gives (Update or Claim).
func benchClaimPattern(b *testing.B, open func(b *testing.B) Counted, run func(store.Store) func(context.Context, func(store.Tx) error) error) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			s := open(b)
			ctx := context.Background()
			fillFree(b, s, b.N)
			free := store.Query{Kind: "GameServer", Parent: "group", HasParent: true,
				Key: "free", HasKey: true, Order: store.OrderRankAsc, Limit: 1}
			update := run(s.Store)
			runBench(b, s, bc.parallelism, "updates/s", func(w, i int) error {
				return update(ctx, func(tx store.Tx) error {
					recs, _, err := tx.List(ctx, free)
					if err != nil {
						return err
					}
					if len(recs) == 0 {
						return fmt.Errorf("no free game server left")
					}
					rec := recs[0]
					rec.Key = "taken"
					return tx.Put(ctx, rec)
				})
			})
		})
	}
}

func fillFree(b *testing.B, s store.Store, n int) {
	ctx := context.Background()
	for start := 0; start < n; start += 1000 {
		err := s.Update(ctx, func(tx store.Tx) error {
			for i := start; i < min(n, start+1000); i++ {
				rec := store.Record{Kind: "GameServer", ID: fmt.Sprintf("gs-%08d", i), Parent: "group",
					Key: "free", Rank: int64(i % 7), Data: []byte(`{"GameServerData":"x"}`)}
				if err := tx.Insert(ctx, rec); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// benchViewGet: point reads, 8 readers per core.
func benchViewGet(b *testing.B, open func(b *testing.B) Counted) {
	s := open(b)
	ctx := context.Background()
	fillFree(b, s, 1000)
	runBench(b, s, 8, "reads/s", func(w, i int) error {
		return s.View(ctx, func(tx store.Tx) error {
			_, err := tx.Get(ctx, "GameServer", fmt.Sprintf("gs-%08d", i%1000))
			return err
		})
	})
}
