// Package metapebble is the daemon's metadata store: io/meta.Store on
// github.com/cockroachdb/pebble/v2.
//
// Records use io/meta/metakv's layout (one key space with prefixes, entries
// under big-endian indexes, every value framed with a version byte and a
// CRC32C over key and value). Apply validates the batch (meta.Validate),
// then writes it as one pebble batch committed with pebble.Sync: pebble
// appends the batch to its write-ahead log as one record and syncs the log
// before the commit returns, so the batch is atomic (a torn log tail is
// dropped whole at recovery) and durable on return. Load scans the key
// space in order and reports any checksum failure, undecodable record or
// inconsistency as a *meta.CorruptError; it never repairs.
//
// Pebble runs goroutines of its own (flushes, compactions), so this package
// lives only in the daemon; the simulator uses sim/metamem. A Store is used
// from one goroutine.
//
// Options.FS takes any pebble vfs.FS, so that tests run the store on
// pebble's in-memory file systems, including the crashable one whose
// CrashClone keeps exactly what was synced (a power loss).
//
// A failed commit (a failed WAL write or sync) fails the store: every later
// call but Close returns meta.ErrFailed. Pebble itself treats a failed WAL
// sync as fatal; whether the batch survives is unknown to the caller.
package metapebble
