package server

import (
	"bufio"
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// On PostgreSQL a store Seq is taken when the insert runs, not when its
// transaction commits: an event whose transaction took a lower Seq but
// commits after a higher one was streamed must still reach the stream,
// once, and the higher one must not come twice.
func TestEventStreamMissesNoLateCommit(t *testing.T) {
	srv, ts := startWith(t, nil, map[string]string{"HOIST_CREDENTIALS": testKey + ":" + testSecret,
		"HOIST_STORE": "postgres", "HOIST_DATABASE_URL": pgtest.URL(t)})
	const q1 = "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/late"
	const q2 = "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/early"

	// Event 1 is inserted (its Seq taken) and its transaction held open.
	inserted, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	held := make(chan error, 1)
	go func() {
		held <- srv.store.Update(context.Background(), func(tx store.Tx) error {
			if err := srv.events.Publish(context.Background(), tx, events.Event{ID: "late-event",
				DetailType: "Hoist Test Event", Resources: []string{q1}}); err != nil {
				return err
			}
			once.Do(func() { close(inserted) })
			<-release
			return nil
		})
	}()
	<-inserted
	// Event 2 takes a higher Seq and commits first; a stream replaying
	// every kept event sends it.
	second := sendTestEvent(t, ts.URL, q2, "second")
	stream := openStream(t, ts.URL, "", "0", true)
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", stream.StatusCode)
	}
	sc := bufio.NewScanner(stream.Body)
	if got := readEvents(t, sc, 1); got[0].Envelope["id"] != second {
		t.Fatalf("first event streamed: %v, want %s", got[0].Envelope["id"], second)
	}
	// Event 1 commits, then event 3.
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	third := sendTestEvent(t, ts.URL, q2, "third")
	// Both come, once each (a replay sends in Seq order, so the third may
	// come first), and the second does not come again.
	seen := map[any]int{}
	for seen["late-event"] == 0 || seen[third] == 0 {
		done := make(chan []sseEvent, 1)
		go func() { done <- readEvents(t, sc, 1) }()
		select {
		case got := <-done:
			seen[got[0].Envelope["id"]]++
		case <-time.After(30 * time.Second):
			t.Fatalf("stream after the late commit: %v, and then nothing for 30 s", seen)
		}
	}
	if seen["late-event"] != 1 || seen[third] != 1 || seen[second] != 0 || len(seen) != 2 {
		t.Fatalf("after the late commit the stream sent %v, want the late event and the third once each", seen)
	}
	// Later events come through the feed, in commit order.
	fourth := sendTestEvent(t, ts.URL, q1, "fourth")
	if got := readEvents(t, sc, 1); got[0].Envelope["id"] != fourth {
		t.Fatalf("next: %v, want %s", got[0].Envelope["id"], fourth)
	}
}
