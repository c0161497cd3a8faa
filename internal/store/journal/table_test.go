package journal

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/hoistgg/hoist/internal/store"
)

// TestQueriesAgainstModel writes records at random (moving them between
// parents, keys and ranks, changing only data, deleting) and checks every
// query shape, page by page, against a plain filter-and-sort of the same
// records, in Views and inside Updates.
func TestQueriesAgainstModel(t *testing.T) {
	s := openDir(t, t.TempDir(), Options{})
	rng := rand.New(rand.NewPCG(7, 9))
	model := map[string]store.Record{}
	parents, keys := []string{"p1", "p2", ""}, []string{"a", "b", ""}
	ctx := context.Background()
	for round := range 40 {
		err := s.Update(ctx, func(tx store.Tx) error {
			for range 25 {
				id := fmt.Sprintf("r%02d", rng.IntN(60))
				r, exists := model[id]
				switch {
				case exists && rng.IntN(5) == 0:
					if err := tx.Delete(ctx, "K", id); err != nil {
						return err
					}
					delete(model, id)
					continue
				case exists && rng.IntN(2) == 0:
					r.Data = []byte(fmt.Sprint("data-only ", round)) // no indexed field changes
				default:
					r = store.Record{Kind: "K", ID: id, Parent: parents[rng.IntN(3)], Key: keys[rng.IntN(3)],
						Rank: int64(rng.IntN(5) - 2), Data: []byte(fmt.Sprint(round))}
				}
				if err := tx.Put(ctx, r); err != nil {
					return err
				}
				got, err := tx.Get(ctx, "K", id)
				if err != nil {
					return err
				}
				r.Seq = got.Seq
				model[id] = r
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		checkQueries(t, s, model, parents, keys)
	}
}

func checkQueries(t *testing.T, s store.Store, model map[string]store.Record, parents, keys []string) {
	t.Helper()
	ctx := context.Background()
	for _, order := range []store.Order{store.OrderID, store.OrderCreated, store.OrderRankAsc, store.OrderRankDesc} {
		for _, desc := range []bool{false, true} {
			for _, parent := range append([]string{"-"}, parents...) {
				for _, key := range append([]string{"-"}, keys...) {
					for _, rankMax := range []int64{99, 0} {
						q := store.Query{Kind: "K", Order: order, Desc: desc, Limit: 3}
						if parent != "-" {
							q.Parent, q.HasParent = parent, true
						}
						if key != "-" {
							q.Key, q.HasKey = key, true
						}
						if rankMax != 99 {
							q.RankMax, q.HasRankMax = rankMax, true
						}
						want := expected(model, q)
						var got []store.Record
						err := s.View(ctx, func(tx store.Tx) error {
							for {
								page, next, err := tx.List(ctx, q)
								if err != nil {
									return err
								}
								got = append(got, page...)
								if next == "" {
									return nil
								}
								q.After = next
							}
						})
						if err != nil {
							t.Fatal(err)
						}
						if !slices.EqualFunc(got, want, func(a, b store.Record) bool {
							return a.ID == b.ID && a.Parent == b.Parent && a.Key == b.Key && a.Rank == b.Rank &&
								a.Seq == b.Seq && string(a.Data) == string(b.Data)
						}) {
							t.Fatalf("%+v:\n got %v\nwant %v", q, idsOf(got), idsOf(want))
						}
						q.After, q.Limit = "", 0
						var n int
						_ = s.View(ctx, func(tx store.Tx) error { n, _ = tx.Count(ctx, q); return nil })
						if n != len(want) {
							t.Fatalf("Count(%+v) = %d, want %d", q, n, len(want))
						}
					}
				}
			}
		}
	}
}

// expected is q's answer by filtering and sorting the model.
func expected(model map[string]store.Record, q store.Query) []store.Record {
	var out []store.Record
	for _, r := range model {
		if q.HasParent && r.Parent != q.Parent || q.HasKey && r.Key != q.Key || q.HasRankMax && r.Rank > q.RankMax {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b store.Record) int {
		switch q.Order {
		case store.OrderCreated:
			if q.Desc {
				return cmp.Compare(b.Seq, a.Seq)
			}
			return cmp.Compare(a.Seq, b.Seq)
		case store.OrderRankAsc:
			return cmp.Or(cmp.Compare(a.Rank, b.Rank), strings.Compare(a.ID, b.ID))
		case store.OrderRankDesc:
			return cmp.Or(cmp.Compare(b.Rank, a.Rank), strings.Compare(a.ID, b.ID))
		}
		if q.Desc {
			return strings.Compare(b.ID, a.ID)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

func idsOf(recs []store.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = fmt.Sprintf("%s(%s/%s/%d)", r.ID, r.Parent, r.Key, r.Rank)
	}
	return out
}

// TestOpenPacksRecords: after a replay, the tables hold one rec per
// record, every index points at it (not at a replaced version), and the
// Parent and Key values records share are stored once.
func TestOpenPacksRecords(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	ctx := context.Background()
	for round := range 3 {
		err := s.Update(ctx, func(tx store.Tx) error {
			for i := range 50 {
				rec := store.Record{Kind: "K", ID: fmt.Sprintf("r%02d", i), Parent: strings.Repeat("p", 40),
					Key: fmt.Sprint("key-", round), Rank: int64(round), Data: []byte(fmt.Sprint(round))}
				if err := tx.Put(ctx, rec); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir, Options{})
	tb := s.tables["K"]
	parents, keys := map[*byte]bool{}, map[*byte]bool{}
	for _, tr := range tb.trees() {
		if tr.Len() != 50 {
			t.Fatalf("an index holds %d entries, want 50", tr.Len())
		}
		tr.Ascend(func(r *rec) bool {
			if cur := tb.get(r.id); cur != r {
				t.Errorf("an index entry of %s is not its current rec", r.id)
			}
			if string(r.data) != "2" || r.key != "key-2" {
				t.Errorf("%s: data %q key %q after replay", r.id, r.data, r.key)
			}
			parents[unsafe.StringData(r.parent)] = true
			keys[unsafe.StringData(r.key)] = true
			return true
		})
	}
	if len(parents) != 1 || len(keys) != 1 {
		t.Errorf("50 records sharing a Parent and a Key hold %d copies of the Parent and %d of the Key, want 1 each",
			len(parents), len(keys))
	}
}
