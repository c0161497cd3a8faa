// Package protocol serves the GameLift API over the two wire protocols the AWS
// SDKs speak, on one http.Handler:
//
//   - AWS JSON 1.1: POST / with X-Amz-Target: GameLift.<Operation> and a JSON
//     body (boto3, the AWS CLI, aws-sdk-go v1 and most other SDKs).
//   - Smithy RPC v2 CBOR: POST /service/GameLift/operation/<Operation> with
//     smithy-protocol: rpc-v2-cbor and a CBOR body (aws-sdk-go-v2 and the
//     other SDKs that moved to CBOR).
//
// Every request goes through the same steps: route (path, method, headers),
// read the body (bounded), authenticate, look the operation up in the api
// operation table, decode, validate, invoke the api.Service, encode. Any step
// may fail with an error; exactly one function, (*exchange).writeError, turns
// an error into a response in the protocol's error form. Errors implementing
// api.Error are answered with their code, message and HTTP status; anything
// else (and a recovered panic) is logged and answered as a generic
// InternalServiceException naming the request ID.
//
// The package holds no business logic: it knows shapes only through the
// generated api package. docs/protocols.md describes the wire behaviour in
// full.
package protocol
