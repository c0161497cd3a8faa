package postgres

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// sqlOne runs one statement on a connection of its own and scans its one
// row into dest (none: none).
func sqlOne(t *testing.T, connStr, sql string, dest ...any) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, connStr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if len(dest) == 0 {
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return
	}
	if err := c.QueryRow(ctx, sql).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestMigrateAtOnce: replicas opening an empty schema at the same moment
// all open it, and each migration is applied once.
func TestMigrateAtOnce(t *testing.T) {
	url := pgtest.URL(t)
	const replicas = 8
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() {
			s, err := Open(context.Background(), url, Options{})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	var n, max int
	sqlOne(t, url, `SELECT count(*), max(version) FROM hoist_schema_migrations`, &n, &max)
	if n != len(migrations) || max != len(migrations) {
		t.Errorf("hoist_schema_migrations holds %d versions up to %d, want %d", n, max, len(migrations))
	}
}

// TestNewerSchemaRefused: a schema a newer Hoist migrated is not opened.
func TestNewerSchemaRefused(t *testing.T) {
	url := pgtest.URL(t)
	s, err := Open(context.Background(), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	sqlOne(t, url, `INSERT INTO hoist_schema_migrations (version) VALUES (999)`)
	if _, err := Open(context.Background(), url, Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a newer schema: %v, want a refusal", err)
	}
}

// TestNoSchema: a search_path naming no schema fails with a message that
// says what to do.
func TestNoSchema(t *testing.T) {
	url := pgtest.WithParam(pgtest.URL(t), "search_path", "no_such_schema")
	if _, err := Open(context.Background(), url, Options{}); !errors.Is(err, errNoSchema) {
		t.Errorf("Open: %v, want errNoSchema", err)
	}
}

// TestPasswordNeverShown: neither the errors of Open nor its log hold the
// password of the connection string, in either form, even when the string
// is malformed or the password is wrong.
func TestPasswordNeverShown(t *testing.T) {
	base := pgtest.URL(t)
	const secret = "s3cr3t-Pa55"
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tests := map[string]string{
		"wrong password, URL":     strings.Replace(pgtest.WithParam(base, "password", secret), "postgres://", "postgres://nobody:"+secret+"@", 1),
		"wrong password, keyword": pgtest.WithParam(base, "password", secret),
		"malformed URL":           "postgres://user:" + secret + "@127.0.0.1:notaport/db",
		"malformed keyword":       "host=127.0.0.1 password=" + secret + " port=",
		"quoted keyword":          "host=127.0.0.1 port=1 password='" + secret + "' connect_timeout=1",
	}
	for name, connStr := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := Open(ctx, connStr, Options{Logger: log})
			if err == nil {
				s.Close()
				t.Skip("the server accepted the connection (trust authentication): only the log is checked")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the log shows the password:\n%s", logs.String())
	}
}

// TestLeaseByDatabaseClock: AcquireLease's expiry is the database's clock
// plus the ttl, whatever the clock of the process.
func TestLeaseByDatabaseClock(t *testing.T) {
	s := openTest(t, Options{})
	var dbNow time.Time
	if err := s.pool.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	g, ok, err := s.AcquireLease(context.Background(), "loop", "A", time.Hour)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if d := g.Expires.Sub(dbNow.Add(time.Hour)); d < -time.Second || d > time.Second {
		t.Errorf("Expires %v is %v from the database's now + 1h", g.Expires, d)
	}
}

// TestChangesTrimmed: the feed's rows older than the retention are
// deleted, and a reader whose position is below them learns it lost
// changes; a reader at the head goes on.
func TestChangesTrimmed(t *testing.T) {
	s := openTest(t, Options{ChangeRetention: time.Microsecond})
	s.Watch("K")
	ctx := context.Background()
	_, old, err := s.Changes(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	put := func(id string) {
		err := s.Update(ctx, func(tx store.Tx) error { return tx.Put(ctx, store.Record{Kind: "K", ID: id}) })
		if err != nil {
			t.Fatal(err)
		}
	}
	put("a") // its transaction began a round trip or more before the trim's: older than 1µs
	// Rows are trimmed below the horizon only: wait until a is below it.
	waitFor(t, s, old, "a")
	if err := s.trim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Changes(ctx, old, 0); !errors.Is(err, store.ErrChangesLost) {
		t.Errorf("a position below the trimmed rows: %v, want ErrChangesLost", err)
	}
	_, head, err := s.Changes(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	put("b")
	waitFor(t, s, head, "b")
}

// waitFor reads the feed from pos until it delivers the record id, which
// it does once every older transaction in the cluster (another test's)
// has ended; it fails on any other change.
func waitFor(t *testing.T, s *Store, pos, id string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		chs, next, err := s.Changes(context.Background(), pos, 0)
		if err != nil || len(chs) > 1 || (len(chs) == 1 && chs[0].Record.ID != id) {
			t.Fatalf("waiting for %s in the feed: %+v %v", id, chs, err)
		}
		if len(chs) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never came", id)
		}
		pos = next
		time.Sleep(5 * time.Millisecond) // the feed waits for another transaction to end
	}
}

// TestRetriesHidden: Updates that conflict on one row all succeed, the
// store having retried some of them (the conformance suite's Counter with
// a look at the counters).
func TestRetriesHidden(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	err := s.Update(ctx, func(tx store.Tx) error { return tx.Insert(ctx, store.Record{Kind: "K", ID: "n", Data: []byte{0}}) })
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 10 {
				err := s.Update(ctx, func(tx store.Tx) error {
					r, err := tx.Get(ctx, "K", "n")
					if err != nil {
						return err
					}
					r.Data = []byte{r.Data[0] + 1}
					return tx.Put(ctx, r)
				})
				if err != nil {
					t.Errorf("Update: %v", err)
				}
			}
		})
	}
	wg.Wait()
	var n store.Record
	_ = s.View(ctx, func(tx store.Tx) error { var err error; n, err = tx.Get(ctx, "K", "n"); return err })
	if n.Data[0] != 160 {
		t.Errorf("counter = %d, want 160", n.Data[0])
	}
	st := s.Stats()
	t.Logf("%d commits, %d retries", st.Commits, st.Retries)
	if st.Retries == 0 || st.Conflicts != 0 {
		t.Errorf("stats %+v: want retries and no conflict", st)
	}
}
