// Package hosts holds the end-to-end tests of pool hosts: a real Hoist
// and real `hoist agent --pool` processes running the test game server
// (e2e/gameserver), driven with aws-sdk-go-v2. The loopback tests run the
// agents on this machine's loopback addresses; the network namespace
// tests (root only, see e2e/netns) run each agent on a host of its own,
// with Hoist on the test bridge. docs/hosts.md describes what they show.
package hosts
