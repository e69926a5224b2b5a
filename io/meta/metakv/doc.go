// Package metakv is the key-value layout of the metadata store, shared by
// its implementations on ordered key-value stores (sim/metamem in the
// simulator, fsio/metapebble in the daemon): a batch becomes a list of
// puts and range deletions (Plan), and an ordered scan of the keys becomes
// a meta.State (Loader). It is deterministic and does no I/O.
//
// # Layout
//
// One key space, keys ordered bytewise:
//
//	0x01                  hard state    term u64 | vote u64 | commit u64
//	0x02                  compacted     index u64 | term u64
//	0x03                  snapshot      index u64 | term u64 | data
//	0x04                  applied       index u64 | data
//	0x10 | index u64 BE   entry         term u64 | kind u8 | data
//
// Every value is version u8 (1) | payload | CRC32C u32, where the CRC
// (Castagnoli) covers the key, the version and the payload, so a value
// under the wrong key fails its check as surely as a flipped bit. Payload
// integers are little-endian; the entry index is big-endian in the key so
// that entries sort by index. An absent singleton decodes as its zero
// value (a new store has no keys).
//
// A value that is too short, fails its CRC, has an unknown version, or a
// key that is not in the layout, is reported by the Loader as a
// *meta.CorruptError naming the record; so is a state whose records
// contradict each other (meta.CheckState). Nothing is ever skipped or
// repaired.
package metakv
