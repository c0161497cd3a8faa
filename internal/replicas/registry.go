// Package replicas is what lets several Hoist replicas on one store act as
// one: a registry of the live replicas (each renews its registration; a
// leased janitor removes the dead ones and clears what named them, so
// that their connections count as disconnected and may come back on any
// replica), and a durable inbox per replica that carries a message to the
// replica holding the connection it is for (a game server process's SDK
// socket, an Anywhere compute's agent, a pool host).
//
//	replica A                        store                         replica B (holds process p)
//	tx: game session on p ──────> GameSession, Process ...
//	    p.ConnectedTo == B  ────> InboxMessage{Parent B, Key process/p, Rank n}
//	commit; Wake(B) ───────────── NOTIFY (coalesced, own statement) ──> LISTEN: kick
//	                                                     every 500 ms, or kicked: list B's inbox,
//	                                                     per target in Rank order: deliver over the
//	                                                     socket, delete; moved: re-route; gone: drop
//
// Messages for a connection this replica holds take the direct path (no
// record); with one replica (the embedded stores) there is no inbox at
// all. docs/replicas.md, "Messages between replicas".
package replicas

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// KindReplica is a replica's registration. Record: ID = the replica's ID.
const KindReplica store.Kind = "Replica"

// LeasePrefix is the prefix of the registry's leases: a replica is live
// while it holds "replica/<ID>" (measured by the store's clock).
const LeasePrefix = "replica/"

// Defaults of the registry.
const (
	// DefaultTTL is how long a registration lasts unless renewed.
	DefaultTTL = 10 * time.Second
	// DefaultRenew is how often a replica renews it.
	DefaultRenew = 2 * time.Second
)

// Record is a replica's registration.
type Record struct {
	ID string `json:"id"`
	// Addresses are where it serves (its API URL, its TLS URL).
	Addresses []string  `json:"addresses,omitempty"`
	Version   string    `json:"version,omitempty"`
	Started   time.Time `json:"started"`
	// Term is the term of the registry lease it registered in: a replica
	// that lost its lease (paused past it) registers again in a new one.
	Term int64 `json:"term"`
	// Gone is set by the janitor once the lease expired: what names the
	// replica is being cleared; GoneAt is when it found it (janitor's
	// clock).
	Gone   bool      `json:"gone,omitempty"`
	GoneAt time.Time `json:"goneAt,omitzero"`
	// Expires is when the registration ends unless renewed (the store's
	// clock), as List reads it from the lease; not stored.
	Expires time.Time `json:"-"`
}

// Registry keeps this replica registered while Run runs. It is the
// store.Replicas of the sharded loops: Live counts the registrations.
type Registry struct {
	Store store.Store
	// Self is this replica's record (ID, Addresses, Started; Version is
	// filled in from the build when empty).
	Self Record
	// TTL and Renew default to DefaultTTL and DefaultRenew.
	TTL, Renew time.Duration
	// OnLost, when set, is called when this replica finds that its
	// registration had expired (it paused past it): the janitor of
	// another replica may have cleared its connections' records.
	OnLost func()
	Log    *slog.Logger
	term   int64
}

func (r *Registry) ttl() time.Duration {
	if r.TTL <= 0 {
		return DefaultTTL
	}
	return r.TTL
}

func (r *Registry) renew() time.Duration {
	if r.Renew <= 0 {
		return DefaultRenew
	}
	return r.Renew
}

func (r *Registry) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// Register takes this replica's lease and writes its record. Call it
// before the replica accepts connections: the janitor clears what names a
// replica only through its record.
func (r *Registry) Register(ctx context.Context) error {
	g, _, err := r.Store.AcquireLease(ctx, LeasePrefix+r.Self.ID, r.Self.ID, r.ttl())
	if err != nil {
		return err
	}
	return r.write(ctx, g.Term)
}

// write puts this replica's record for term.
func (r *Registry) write(ctx context.Context, term int64) error {
	rec := r.Self
	rec.Term, rec.Gone, rec.GoneAt = term, false, time.Time{}
	if rec.Version == "" {
		rec.Version = buildVersion()
	}
	if rec.Started.IsZero() {
		rec.Started = time.Now().UTC()
	}
	err := r.Store.Update(ctx, func(tx store.Tx) error {
		return store.PutJSON(ctx, tx, store.Record{Kind: KindReplica, ID: rec.ID}, rec)
	})
	if err == nil {
		r.term = term
	}
	return err
}

// Run renews the registration every Renew until ctx ends, then gives the
// lease up (the record stays for the janitor, which clears what still
// names this replica and removes it). A renewal in a new term (the lease
// had expired) writes the record again and calls OnLost.
func (r *Registry) Run(ctx context.Context) error {
	tick := time.NewTicker(r.renew())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			gone, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, _, _ = r.Store.AcquireLease(gone, LeasePrefix+r.Self.ID, r.Self.ID, 0)
			cancel()
			return nil
		case <-tick.C:
		}
		if err := r.renewOnce(ctx); err != nil && ctx.Err() == nil {
			r.log().Warn("replica registration", "err", err)
		}
	}
}

// renewOnce renews the lease, and registers again when it had expired.
func (r *Registry) renewOnce(ctx context.Context) error {
	g, ok, err := r.Store.AcquireLease(ctx, LeasePrefix+r.Self.ID, r.Self.ID, r.ttl())
	if err != nil || !ok || g.Term == r.term {
		return err
	}
	r.log().Warn("this replica's registration had expired: registered again; its connections may have been cleared",
		"replica", r.Self.ID, "term", g.Term)
	if err := r.write(ctx, g.Term); err != nil {
		return err
	}
	if r.OnLost != nil {
		r.OnLost()
	}
	return nil
}

// Live counts the live replicas, this one included (store.Replicas).
func (r *Registry) Live(ctx context.Context) (int, error) {
	gs, err := r.Store.Leases(ctx, LeasePrefix)
	if err != nil {
		return 0, err
	}
	n := len(gs)
	for _, g := range gs {
		if g.Holder == r.Self.ID {
			return n, nil
		}
	}
	return n + 1, nil
}

// List returns the registered replicas in ID order, each with the expiry
// of its lease (zero: expired, its janitor pass not yet run).
func List(ctx context.Context, st store.Store) ([]Record, error) {
	gs, err := st.Leases(ctx, LeasePrefix)
	if err != nil {
		return nil, err
	}
	expires := make(map[string]time.Time, len(gs))
	for _, g := range gs {
		expires[g.Holder] = g.Expires
	}
	var out []Record
	err = st.View(ctx, func(tx store.Tx) error {
		out = out[:0]
		return store.Each(ctx, tx, store.Query{Kind: KindReplica}, func(rec store.Record) error {
			var r Record
			if err := json.Unmarshal(rec.Data, &r); err != nil {
				return err
			}
			r.Expires = expires[r.ID]
			out = append(out, r)
			return nil
		})
	})
	return out, err
}

// Gone is a replica the janitor found dead, in the term it had
// registered in.
type Gone struct {
	ID   string
	Term int64
}

// Still reports, reading tx, whether the replica is still gone in that
// term (it has not registered again). A clearing transaction checks it,
// so that it never clears a connection the replica made after it came
// back.
func (g Gone) Still(ctx context.Context, tx store.Tx) (bool, error) {
	var r Record
	_, err := store.GetJSON(ctx, tx, KindReplica, g.ID, &r)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil && r.Gone && r.Term == g.Term, err
}

// buildVersion is the module version and VCS revision of this binary.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return v
}
