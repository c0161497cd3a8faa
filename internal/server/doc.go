// Package server composes Hoist: it opens the store, builds every domain
// service (events, fleetiq, tags, builds, fleets, sessions, aliases), the Server SDK endpoint
// and the local compute provider, wires them to one another, and exposes one
// api.Service, one http.Handler for every route, the background loops (Run)
// and an orderly shutdown (Close).
//
// cmd/hoist only parses flags and listens; end-to-end tests start the real
// binary. Routes:
//
//	POST /                                 GameLift API, AWS JSON 1.1
//	POST /service/GameLift/operation/<Op>  GameLift API, Smithy RPC v2 CBOR
//	GET  /sdk, /sdk/                       Server SDK 5 WebSocket endpoint
//	     /<build bucket>/<key>             S3 uploads of aws gamelift upload-build
//	POST /hoist/admin/<Action>             operator actions (SigV4-signed)
//	GET  /hoist/events[?resource=...]      live event stream, Server-Sent Events (SigV4-signed with credentials)
//	GET  /hoist/logs?...                   game session and instance setup logs (signed, expiring URLs)
//	     /console/...                      the web console (internal/console; --console)
//	GET  /hoist/health                     liveness: 200 "ok", 503 and the reason once the store failed
//	GET  /hoist/ready                      readiness: 200 "ready"; 503 while the store opens (Starting) or once it failed
//
// The api.Service is a struct embedding each domain's Service, with
// api.Unimplemented one level deeper: Go's embedding rules pick a domain's
// method where one exists and the fallback elsewhere, and the compiler
// refuses two domains claiming the same operation.
package server
