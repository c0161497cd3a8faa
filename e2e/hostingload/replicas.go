//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/internal/store/postgres"
)

// replicas are the Hoists of a placement run: one on the default store,
// or -replicas sharing a new PostgreSQL schema (-store postgres).
type replicas struct {
	hs []*hoist
	// pprof are the replicas' --pprof-addr listeners, when profiles are
	// asked for.
	pprof []string
	url   string // the schema's connection string ("" on the embedded store)
	drop  func() error
}

// startReplicas starts the run's Hoists with extra arguments (each also
// with --pprof-addr when profiles are asked for: the first's address is
// returned, all of them are in pprof).
func (e *env) startReplicas(ctx context.Context, extra ...string) (*replicas, string, error) {
	r := &replicas{}
	if e.cfg.Store == "postgres" {
		var err error
		if r.url, r.drop, err = loadreport.NewSchema(ctx, e.cfg.databaseURL, "hoist_hostingload"); err != nil {
			return nil, "", err
		}
		extra = append(extra, "--store", "postgres", "--database-url", r.url)
	}
	h, pprofAddr, err := e.startHoist(extra...)
	if err != nil {
		return r, "", err
	}
	r.hs, r.pprof = append(r.hs, h), append(r.pprof, pprofAddr)
	for range e.cfg.Replicas - 1 {
		h, addr, err := e.startHoist(extra...)
		if err != nil {
			return r, pprofAddr, err
		}
		r.hs, r.pprof = append(r.hs, h), append(r.pprof, addr)
	}
	return r, pprofAddr, nil
}

// profile starts a CPU profile (and a trace) of every replica for d, as
// env.profile does for one: name, or name-replicaN with several.
func (r *replicas) profile(e *env, d time.Duration, name string) func() error {
	if len(r.pprof) <= 1 {
		return e.profile(r.pprof0(), d, name)
	}
	var waits []func() error
	for i, addr := range r.pprof {
		waits = append(waits, e.profile(addr, d, fmt.Sprintf("%s-replica%d", name, i+1)))
	}
	return func() error {
		var errs []error
		for _, w := range waits {
			errs = append(errs, w())
		}
		return errors.Join(errs...)
	}
}

// pprof0 is the first replica's --pprof-addr ("" without one).
func (r *replicas) pprof0() string {
	if len(r.pprof) == 0 {
		return ""
	}
	return r.pprof[0]
}

// roundTrips sums the replicas' round trips to PostgreSQL so far
// (hoist_store_postgres_round_trips_total); false on the embedded store or
// when a scrape fails.
func (r *replicas) roundTrips() (float64, bool) {
	if r.url == "" {
		return 0, false
	}
	sum := 0.0
	for _, h := range r.hs {
		m, err := hoisttest.Scrape(h.URL, "")
		if err != nil {
			return 0, false
		}
		v, ok := m.Value("hoist_store_postgres_round_trips_total", nil)
		if !ok {
			return 0, false
		}
		sum += v
	}
	return sum, true
}

// stop stops every replica and drops the schema.
func (r *replicas) stop() error {
	var errs []error
	for _, h := range r.hs {
		errs = append(errs, h.Stop())
	}
	if r.drop != nil {
		errs = append(errs, r.drop())
	}
	return errors.Join(errs...)
}

// logTail joins the last lines of every replica's log.
func (r *replicas) logTail(lines int) string {
	if len(r.hs) == 1 {
		return r.hs[0].logTail(lines)
	}
	var b strings.Builder
	for i, h := range r.hs {
		fmt.Fprintf(&b, "--- replica %d\n%s\n", i+1, h.logTail(lines))
	}
	return b.String()
}

// sampleCPU samples the machine, this program and every replica (Hoist's
// figures are the replicas' sum).
func (r *replicas) sampleCPU() cpuSample {
	s := sampleCPU(r.hs[0].pid())
	for _, h := range r.hs[1:] {
		o := sampleCPU(h.pid())
		s.hoist, s.reaped = s.hoist+o.hoist, s.reaped+o.reaped
		maps.Copy(s.live, o.live)
	}
	return s
}

// holder returns the replica holding the lease name (a shard of a sharded
// loop), waiting up to a minute for one to take it: the only one on the
// embedded store.
func (r *replicas) holder(ctx context.Context, name string) (*hoist, error) {
	if r.url == "" {
		return r.hs[0], nil
	}
	st, err := postgres.Open(ctx, r.url, postgres.Options{MaxConns: 1})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		gs, err := st.Leases(ctx, name)
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			for _, h := range r.hs {
				if id, err := os.ReadFile(filepath.Join(h.DataDir, "replica-id")); err == nil && strings.TrimSpace(string(id)) == g.Holder {
					return h, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no replica took the lease %s within a minute", name)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// sdkEndpoint is h's Server SDK endpoint on its plain listener.
func (h *hoist) sdkEndpoint() string {
	return "ws://" + strings.TrimPrefix(h.URL, "http://") + "/sdk"
}
