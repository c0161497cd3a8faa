// Package builds owns game server builds: the GameLift build operations
// (CreateBuild, DescribeBuild, ListBuilds, UpdateBuild, DeleteBuild,
// RequestUploadCredentials), the small S3 subset that `aws gamelift
// upload-build` and the AWS SDKs use to upload a build archive (path-style
// PutObject and multipart upload, verified with the temporary credentials
// Hoist issues; S3's wire format is in the s3 subpackage, and Hoist's own
// keys are checked by the verifier internal/server injects), and the safe
// unpacking of the archive into the build's directory.
//
// A build goes INITIALIZED -> READY when its archive has been uploaded and
// unpacked, or INITIALIZED -> FAILED when the archive is refused (see
// Unpack). docs/builds.md describes the upload flow, the limits, the archive
// rules and where a failure reason is shown.
package builds
