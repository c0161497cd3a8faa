// Package s3 is the wire side of Hoist's S3 upload endpoint: which S3
// operation a path-style request asks for and the object key it names, the
// SigV4 check of a request signed with a known secret, reading payloads
// (plain, or aws-chunked with a checksum trailer), the checksums S3
// verifies (Content-MD5, the flexible x-amz-checksum-* ones, composite
// multipart checksums) and ETags, the CompleteMultipartUpload document,
// and S3's XML errors and results. It holds no state: internal/builds
// serves the operations (who may write which key, where the bytes go)
// with it. docs/builds.md describes the subset served.
package s3
