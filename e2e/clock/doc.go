// Package clock holds the end-to-end tests of the manual clock (--clock
// manual, docs/clock.md): a real Hoist binary on a loopback port, driven
// through aws-sdk-go-v2 (RPC v2 CBOR), its clock moved with `hoist admin
// clock advance`; a claim expiry, a placement timeout and a FlexMatch rule
// expansion each follow an advance within a second of wall time. The
// package has no code of its own.
package clock
