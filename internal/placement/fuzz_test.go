package placement

import (
	"testing"

	"github.com/hoistgg/hoist/internal/arn"
)

// FuzzDestination: any DestinationArn is a fleet or alias with an ID, or
// refused; never a panic.
func FuzzDestination(f *testing.F) {
	f.Add("arn:aws:gamelift:us-west-2:123456789012:fleet/fleet-1")
	f.Add("arn:aws:gamelift:us-west-2:123456789012:alias/alias-1")
	f.Add("arn:aws:gamelift:us-west-2:123456789012:build/build-1")
	f.Add("fleet-x")
	f.Add("arn:")
	f.Fuzz(func(t *testing.T, s string) {
		typ, id, err := destination(s)
		if err != nil {
			return
		}
		if (typ != arn.TypeFleet && typ != arn.TypeAlias) || id == "" {
			t.Fatalf("%q: %q %q", s, typ, id)
		}
	})
}
