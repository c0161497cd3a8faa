// Package hosting holds Hoist's end-to-end tests of managed hosting: the real
// Hoist binary (e2e/hoisttest), the real test game server (e2e/gameserver,
// built once per test binary and uploaded as a build), and aws-sdk-go-v2 as
// the client, with aws-sdk-go (v1) for a few calls. They cover builds,
// fleets (EC2 and Anywhere), game sessions, player sessions, the failure
// paths of server processes, log downloads, scaling, shutdown, and game
// session queues and placement (1,000 placements contending for 4 processes
// included).
//
// Timers are made short with Hoist's --timings and --process-env; tests
// wait for states by polling with a deadline, never by sleeping. They find
// server processes through /proc (by the GAMELIFT_SDK_FLEET_ID in their
// environment), so they run on Linux only.
package hosting
