package journal

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

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

func runBench(b *testing.B, s *Store, parallelism int, unit string, op func(worker, i int) error) {
	b.ReportAllocs()
	before := s.Stats()
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
	after := s.Stats()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
	if n := after.Batches - before.Batches; n > 0 {
		b.ReportMetric(float64(after.Updates-before.Updates)/float64(n), "updates/commit")
	}
}

// BenchmarkUpdate: small independent Updates, the same work in every case:
// "put" replaces the Data of one of 10,000 game servers (a heartbeat),
// "insert" adds a new record.
func BenchmarkUpdate(b *testing.B) {
	data := []byte(`{"GameServerId":"gs-1","ClaimStatus":"","UtilizationStatus":"AVAILABLE"}`)
	ops := map[string]func(s *Store, n int) func(tx store.Tx) error{
		"put": func(s *Store, n int) func(tx store.Tx) error {
			id := fmt.Sprintf("gs-%08d", n%10000)
			return func(tx store.Tx) error {
				return tx.Put(context.Background(), store.Record{Kind: "GameServer", ID: id,
					Parent: "group", Key: "free", Rank: int64(n % 10000 % 7), Data: data})
			}
		},
		"insert": func(s *Store, n int) func(tx store.Tx) error {
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
				s := openBench(b)
				fillFree(b, s, 10000)
				var counter atomic.Int64
				runBench(b, s, bc.parallelism, "updates/s", func(w, i int) error {
					return s.Update(context.Background(), ops[name](s, int(counter.Add(1))))
				})
			})
		}
	}
}

// BenchmarkClaimPattern: the FleetIQ claim, in parallel: find the first free
// game server through the (kind, parent, key, rank) index, mark it taken.
func BenchmarkClaimPattern(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			s := openBench(b)
			ctx := context.Background()
			fillFree(b, s, b.N)
			free := store.Query{Kind: "GameServer", Parent: "group", HasParent: true,
				Key: "free", HasKey: true, Order: store.OrderRankAsc, Limit: 1}
			runBench(b, s, bc.parallelism, "updates/s", func(w, i int) error {
				return s.Update(ctx, func(tx store.Tx) error {
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

func fillFree(b *testing.B, s *Store, n int) {
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

// BenchmarkViewGet: point reads on the read pool.
func BenchmarkViewGet(b *testing.B) {
	s := openBench(b)
	ctx := context.Background()
	fillFree(b, s, 1000)
	runBench(b, s, 8, "reads/s", func(w, i int) error {
		return s.View(ctx, func(tx store.Tx) error {
			_, err := tx.Get(ctx, "GameServer", fmt.Sprintf("gs-%08d", i%1000))
			return err
		})
	})
}

func openBench(b *testing.B) *Store {
	b.Helper()
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
