// Package fleetiq holds the end-to-end tests of FleetIQ: a real Hoist
// binary on a loopback port, driven through aws-sdk-go-v2 (RPC v2 CBOR),
// aws-sdk-go v1 (AWS JSON 1.1), signed raw JSON requests, the admin
// endpoint and `hoist admin set-instance-status`. The package has no code
// of its own; the behaviour it checks is described in docs/fleetiq.md.
package fleetiq
