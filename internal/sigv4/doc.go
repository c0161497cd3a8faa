// Package sigv4 verifies AWS Signature Version 4 (AWS4-HMAC-SHA256)
// signatures: the one verifier Hoist uses for the GameLift API, for the S3
// build uploads and for the signed connection URLs of the Server SDK 5.
//
// A Verifier checks a request signed in its Authorization header, in one of
// two flavours that differ only where the AWS signers differ:
//
//   - API (every service but S3): the canonical URI is the path as sent,
//     normalised (dot segments and empty segments removed, as botocore
//     does) and encoded a second time; the payload hash is the SHA-256 of
//     the body. The un-normalised path is accepted too, since the Go SDKs
//     sign the path without normalising it. Errors carry the codes the AWS
//     JSON and CBOR services answer (MissingAuthenticationTokenException,
//     IncompleteSignatureException, UnrecognizedClientException,
//     InvalidSignatureException).
//   - S3: the canonical URI is the path exactly as sent; the payload hash
//     is the x-amz-content-sha256 header as sent (a hex digest,
//     UNSIGNED-PAYLOAD or a STREAMING-* value; checking a body against it
//     is the caller's business). Errors carry S3's codes (AccessDenied,
//     AuthorizationHeaderMalformed, InvalidAccessKeyId,
//     SignatureDoesNotMatch, RequestTimeTooSkewed).
//
// Both check that the credential scope names the expected service and the
// date of X-Amz-Date, and that X-Amz-Date is within MaxSkew of the injected
// clock; signatures are compared in constant time. The region in the scope
// is not checked: Hoist serves whatever region the client signs for.
//
// Authenticator is the GameLift API's authenticator (it has the method set
// of protocol.Authenticator and of sdkconn.SignedURLVerifier), built from a
// map of access key IDs to secrets; with an empty map it runs in
// unauthenticated mode, where a well-formed signature is required but not
// checked. AccessKeyID reads the caller's key from the context an
// authenticated operation runs with.
//
// Every error is an *Error, which has the method set of api.Error. Secrets
// and signatures never appear in its message. docs/sigv4.md describes what
// is verified and every answer.
package sigv4
