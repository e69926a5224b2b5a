// Package seglog is Sluice's segment-log engine: a queue replica's log of
// records (core/record) kept in segment files over a vfs.FS, so that the
// simulator's memfs and the daemon's real files run the same format code.
// It is deterministic: no goroutines, locks, clock or randomness.
//
// # On-disk format
//
// A log is a directory of segment files named by the offset of their first
// record, "%020d.seg" (so names sort like offsets). Other names are ignored.
// A segment holds a 32-byte header followed by frames, back to back:
//
//	header: magic "SLUICSEG" | version u32 (1) | flags u32 (0) |
//	        base offset u64 | CRC32C of the 24 bytes before u32 | zero u32
//	frame:  length u32 | CRC32C u32 | epoch u64 | offset u64 | kind u8 | body
//
// Integers are little-endian. length counts the bytes after the 8-byte frame
// header (17 + body length) and must lie in [17, 17+record.BodyBytesMax]; it
// is checked before anything else is trusted, so an oversized or malformed
// length is refused from the header alone. The CRC32C (Castagnoli) covers the
// length field and every byte after the CRC. A segment's frames carry
// consecutive offsets from its base; segments are contiguous (each starts at
// the offset after its predecessor's last record); epochs never decrease.
// A segment is closed for appends once it reaches Options.SegmentBytesMax.
//
// # Durability
//
// Append only encodes records into a bounded write buffer (written to the
// active segment when full); Read sees appended records at once. Sync is the
// group commit: it writes the buffer, syncs each segment file written since
// the previous Sync (one, unless a segment was started), and syncs the
// directory when segments were created or removed. Records appended before a
// successful Sync survive any crash. TruncateFrom cuts the segment holding
// the truncation point and removes the later ones (the last first), then
// syncs before returning, so that records appended after it are never mixed
// with removed ones by a crash (stronger than "durable after the next Sync").
// DiscardDamage is durable when it returns. A new log is durable when Open
// returns.
//
// Any failed write, truncation, removal or sync puts the log in the failed
// state: every later call returns ErrFailed (wrapping the cause). The log
// never retries and never reports possibly lost data as durable (io/vfs rule
// 4). Read errors do not fail the log.
//
// # Recovery
//
// Open scans every segment in order with large sequential reads, validating
// each segment header (magic, CRC, version, base equal to its name and to
// where the log continues) and each frame (length bounds, whole frame within
// the file, CRC, offset contiguity, epoch nondecreasing, known kind). The scan
// ends cleanly at the end of the last segment, or at a run of zero bytes that
// reaches the end of a segment file (a preallocated or zero-filled tail). It
// stops at the first bad header or frame and reports it in Recovery.Damage
// (segment, byte position, the offset the frame would have held, reason); the
// valid records are those before it, and Recovery.Epochs is their epoch
// history. Nothing is repaired silently: until DiscardDamage removes the
// damaged tail (cutting the damaged segment at the damage, removing every
// later segment, and syncing), Append and TruncateFrom return ErrDamaged,
// while Read serves the valid prefix.
//
// # Memory
//
// Each segment keeps a sparse index of one (offset, position) entry per
// Options.IndexIntervalBytes of frames (4 KiB by default). At most a few
// inactive segment files are kept open; the write buffer and the read window
// are bounded (the read window grows to the largest frame read).
package seglog
