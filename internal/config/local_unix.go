//go:build unix

package config

// DefaultLocalHosting is LocalAgent on Unix systems: a restart of Hoist
// ends no game.
const DefaultLocalHosting = LocalAgent
