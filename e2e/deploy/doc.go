// Package deploy tests what Hoist ships for running it in production
// (deploy/): the systemd units, checked with systemd-analyze verify, held
// to the signals Hoist's restarts rely on and run against a real Hoist;
// and the container image, built with buildah from the release binary and
// run (docs/operations.md). Each test skips, saying why, where its tool
// (systemd-analyze, buildah) or a base image is missing.
package deploy
