//go:build !unix

package config

// DefaultLocalHosting is LocalInProcess where the local agent cannot run
// in a session of its own.
const DefaultLocalHosting = LocalInProcess
