package events

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkDeliver: events of 4 queues delivered to one loopback webhook,
// per event (publishing is not timed).
//
//	go test -run XXX -bench Deliver -benchtime 4000x ./internal/events/
func BenchmarkDeliver(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	h := newHarness(b, map[string][]string{topic: {srv.URL}})
	for i := range b.N {
		if err := h.tryPublish(fmt.Sprint("queue-", i%4), i); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for h.count(kindDelivery) > 0 {
		if err := h.svc.Deliver(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
