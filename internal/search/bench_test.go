package search

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkSearch100k measures choosing one page (20 sessions) out of
// 100,000 with a filter on a game property and the player count and a sort
// on a property, no store: with the evaluator over Session values, and
// with a Table (columns, the filter compiled).
//
//	go test -run '^$' -bench Search100k ./internal/search/
func BenchmarkSearch100k(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 7))
	all := make([]Session, 100_000)
	for i := range all {
		all[i] = Session{ID: fmt.Sprintf("arn:aws:gamelift:us-west-2::gamesession/fleet-1/gsess-%08d", i),
			Name: fmt.Sprintf("game %d", i), HasName: true, MaximumSessions: 10, PlayerSessionCount: int64(rng.IntN(11)),
			CreationTimeMillis: int64(i), Properties: []Property{
				{"mode", []string{"ctf", "dm", "tdm", "koth"}[rng.IntN(4)]}, {"skill", fmt.Sprintf("%03d", rng.IntN(1000))}}}
	}
	filter, err := ParseFilter("gameSessionProperties.mode = 'ctf' AND hasAvailablePlayerSessions = true")
	if err != nil {
		b.Fatal(err)
	}
	srt, err := ParseSort("gameSessionProperties.skill DESC")
	if err != nil {
		b.Fatal(err)
	}
	order := OrderBy(&srt)
	b.Run("evaluator", func(b *testing.B) {
		for range b.N {
			top := NewTop(order, nil, 21)
			for i := range all {
				if filter.Match(&all[i]) {
					top.Offer(order.Key(&all[i]), i)
				}
			}
			if refs, _ := top.Result(); len(refs) != 21 {
				b.Fatal(len(refs))
			}
		}
	})
	b.Run("table", func(b *testing.B) {
		tab := NewTable()
		for i := range all {
			tab.Upsert(&all[i], "us-west-2")
		}
		b.ResetTimer()
		for range b.N {
			if ids, _ := tab.Search(filter, "", order, nil, 21); len(ids) != 21 {
				b.Fatal(len(ids))
			}
		}
	})
}
