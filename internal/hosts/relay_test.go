package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/store"
)

// TestHostMessagesRouted: a message for a host connected to another
// replica goes into that replica's inbox (delivered there over the host's
// connection; this replica, holding none, reports ErrNoConnection); one
// for a host connected nowhere fails as before, and so does a StartInstance
// given to SendToHost, which never relays it with its secrets (sendStart
// relays it without them: TestStartInstanceRelayedWithoutSecrets); the
// janitor's clearer
// marks a dead replica's hosts disconnected.
func TestHostMessagesRouted(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	s.cfg.Inbox = replicas.New(replicas.Config{Store: s.cfg.Store, Self: "r1"})
	s.msgr = relayMessenger{s}
	hostID := enrolHost(t, s, "us-west-2", "10.0.0.1", 2)
	setHolder := func(replica string) {
		t.Helper()
		err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
			h, err := getHost(ctx, tx, hostID)
			if err != nil {
				return err
			}
			h.ConnectedTo = replica
			return putHost(ctx, tx, h)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setHolder("r2")
	if err := s.msgr.SendToHost(ctx, hostID, hostproto.ActionRetire, hostproto.Retire{Reason: "drained"}); err != nil {
		t.Fatalf("SendToHost to a host on r2: %v", err)
	}
	var recs []store.Record
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		recs, _, err = tx.List(ctx, store.Query{Kind: replicas.KindInboxMessage})
		return err
	})
	if err != nil || len(recs) != 1 || recs[0].Parent != "r2" || recs[0].Key != replicas.Target(replicas.TargetHost, hostID) {
		t.Fatalf("inbox: %+v, %v; want one message for host %s in r2's inbox", recs, err, hostID)
	}
	var m struct{ Body json.RawMessage }
	if err := json.Unmarshal(recs[0].Data, &m); err != nil {
		t.Fatal(err)
	}
	if err := s.DeliverToHost(ctx, hostID, m.Body); !errors.Is(err, replicas.ErrNoConnection) {
		t.Fatalf("DeliverToHost on a replica without the host's connection: %v, want ErrNoConnection", err)
	}
	// StartInstance (with a certificate key) is not written to the database.
	err = s.msgr.SendToHost(ctx, hostID, hostproto.ActionStartInstance,
		hostproto.StartInstance{InstanceId: "i-1", Certificate: &hostproto.Certificate{PrivateKey: "secret key"}})
	if !errors.Is(err, errNotConnected) {
		t.Fatalf("StartInstance for a host on r2: %v, want errNotConnected", err)
	}
	err = s.cfg.Store.View(ctx, func(tx store.Tx) error {
		n, err := tx.Count(ctx, store.Query{Kind: replicas.KindInboxMessage})
		if n != 1 {
			t.Errorf("%d inbox messages after StartInstance, want 1 (it is not relayed)", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	setHolder("")
	if err := s.msgr.SendToHost(ctx, hostID, hostproto.ActionRetire, hostproto.Retire{}); !errors.Is(err, errNotConnected) {
		t.Fatalf("SendToHost to a host connected nowhere: %v, want errNotConnected", err)
	}
	setHolder("r2")
	err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		return store.PutJSON(ctx, tx, store.Record{Kind: replicas.KindReplica, ID: "r2"}, replicas.Record{ID: "r2", Term: 3, Gone: true})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ClearReplica(ctx, replicas.Gone{ID: "r2", Term: 3}); err != nil {
		t.Fatal(err)
	}
	err = s.cfg.Store.View(ctx, func(tx store.Tx) error {
		h, err := HostHolder(ctx, tx, hostID)
		if h != "" {
			t.Errorf("host still connected to %q after its replica was cleared", h)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
