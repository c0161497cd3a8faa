// Package journal is Hoist's default embedded store.Store: the whole state
// in memory, indexed by B-trees, made durable by an append-only journal
// with group commit and compacted by snapshots.
//
// See internal/store/README.md for the design, the file formats and the
// guarantees.
package journal
