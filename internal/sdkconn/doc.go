// Package sdkconn is the service side of the GameLift Server SDK 5 WebSocket
// protocol: the endpoint (GET /sdk and /sdk/) that game servers built with
// the official Server SDKs connect to, exactly as they connect to GameLift
// Anywhere or managed EC2 fleets. docs/sdk-endpoint.md describes what is
// implemented for users; the protocol itself is summarized in the team's
// server-sdk-5-protocol notes.
//
//	game server process                        Hoist
//	  InitSDK ── GET /sdk?pID=&FleetId=&ComputeId=&Authorization= ──> Server.ServeHTTP
//	                                             1. query parsed (any order)
//	                                             2. token -> TokenVerifier (fleet, compute must match)
//	                                             3. ProcessAPI.Connected       (refusal: HTTP 403, never upgraded)
//	                                             4. upgrade to WebSocket
//	  {"Action":..,"RequestId":..} ──────────> reader loop ─> handlers ─> ProcessAPI (sessions)
//	  <─ {"Action":..,"RequestId":..,"StatusCode":200,..}  writer goroutine <─ replies
//	  <─ {"Action":"CreateGameSession",..,"StatusCode":200}  <─ SendToProcess (hosting.Messenger)
//
// Each connection has one reader loop (the handler's goroutine), which
// decodes a frame, calls the ProcessAPI and queues the reply, one request
// after the other, and one writer goroutine, which alone writes to the
// socket. Requests of one process are answered in order; processes are
// served in parallel. A process may hold several sockets at once (the SDK
// opens a new one on RefreshConnection and closes the old one a few seconds
// later): SendToProcess uses the newest, and every socket has its own
// hosting.Conn.ConnID so that sessions ignores the old one's Disconnected.
//
// # WebSocket library
//
// github.com/coder/websocket (the maintained continuation of
// nhooyr.io/websocket): a small, dependency-free, RFC 6455 implementation
// (Autobahn-tested) whose Conn is safe for one concurrent reader and writer,
// takes a context on every Read and Write (so write timeouts and shutdown
// need no deadline bookkeeping), answers pings while reading, and rejects
// cross-origin browser handshakes by default. gorilla/websocket (what the
// Go SDK uses as a client) would also work, but needs explicit deadlines
// and a mutex around writes, and golang.org/x/net/websocket is not
// maintained for this use. Compression is not negotiated: the official SDKs
// do not offer it and frames are small.
//
// # Decisions
//
//   - A frame that is not a JSON object with a string Action and RequestId
//     cannot be answered (a reply without a RequestId would be taken by the
//     SDKs for a message from the service), so it is dropped and logged; the
//     socket stays open. Closing with a non-1000 code would only make the SDK
//     reconnect and resend. A frame with a RequestId but a bad Action or a
//     field of the wrong type is answered 400.
//   - Binary frames are ignored, as the SDKs ignore them.
//   - The service never closes a socket with 1000/1001 (which would stop the
//     SDK from reconnecting); Shutdown closes with 1012 (service restart), so
//     processes reconnect to the next Hoist.
//   - A socket that closes with 1000 or 1001, or in any way after the
//     process's TerminateServerProcess (ProcessEnding) succeeded, is a normal
//     close for ProcessAPI.Disconnected; anything else (the Go SDK's Destroy
//     drops TCP: 1006) is not.
//   - Signed connection URLs (Authorization=SigV4) are verified by
//     Config.SignedURLs; without one they are refused with 403.
//   - StartMatchBackfill and StopMatchBackfill are parsed and bounded here
//     (backfill.go), then ProcessAPI.CheckGameSessionHost makes sure the
//     process hosts that ACTIVE game session, and only then is
//     Config.Backfiller (FlexMatch) called; without a Backfiller both are
//     answered 400.
package sdkconn
