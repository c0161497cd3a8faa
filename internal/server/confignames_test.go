package server

import (
	"os"
	"reflect"
	"regexp"
	"testing"

	"github.com/hoistgg/hoist/internal/builds"
	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/fleetiq"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/sessions"
)

// TestDomainConfigsAgree: the domains' configs call the same things by the
// same names: the Region and the account ARNs are made of (each domain
// builds its ARNs from them with internal/arn), and a Timings struct of
// the timers config.Timings overrides.
func TestDomainConfigsAgree(t *testing.T) {
	for _, tc := range []struct {
		cfg          any
		arns, timers bool
	}{
		{cfg: fleetiq.Config{}, arns: true, timers: true},
		{cfg: builds.Config{}, arns: true},
		{cfg: fleets.Config{}, arns: true, timers: true},
		{cfg: sessions.Config{}, timers: true},
		{cfg: events.Config{}, timers: true},
	} {
		typ := reflect.TypeOf(tc.cfg)
		has := func(name string, kind reflect.Kind) bool {
			f, ok := typ.FieldByName(name)
			return ok && f.Type.Kind() == kind
		}
		if !has("Region", reflect.String) {
			t.Errorf("%s has no Region string", typ)
		}
		if tc.arns && !has("Account", reflect.String) {
			t.Errorf("%s makes ARNs but has no Account string", typ)
		}
		if tc.timers && !has("Timings", reflect.Struct) {
			t.Errorf("%s has timers but no Timings struct", typ)
		}
		for _, other := range []string{"AccountID", "ARN", "ARNs"} {
			if _, ok := typ.FieldByName(other); ok {
				t.Errorf("%s has a field %s: the domains make ARNs from Region and Account", typ, other)
			}
		}
	}
}

// TestEveryTimingIsWired: compose hands every field of config.Timings to a
// domain (each appears as t.<Field> in server.go, where compose reads
// them).
func TestEveryTimingIsWired(t *testing.T) {
	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(config.Timings{})
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if !regexp.MustCompile(`\bt\.` + name + `\b`).Match(src) {
			t.Errorf("config.Timings.%s is not handed to any domain in server.go", name)
		}
	}
}
