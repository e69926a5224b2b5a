// Package seglog is Sluice's segment-log engine: a queue replica's log of
// records (core/record) kept in segment files over a vfs.FS, so that the
// simulator's memfs and the daemon's real files run the same format code.
// It is deterministic: no goroutines, locks, clock or randomness.
//
// # On-disk format (version 2)
//
// A log is a directory of segment files named by the offset of their first
// record, "%020d.seg" (so names sort like offsets). Beside them may be:
// START (the log's start, below), UNREPAIRED (empty: the log lost records
// to damage, not yet repaired), SEAL (a recovery's seal receipt, seal.go:
// "SLUICSEAL1", length u32, payload, CRC32C u32; written to SEAL.tmp,
// synced, renamed, directory synced) and BIND (the storage binding,
// bind.go, written the same way with "SLUICBIND1"); and beside the log's
// directory DIR, in its parent, the marker DIR.bound (the first binding's
// copy), which tells a log whose directory was lost or emptied from a new
// one. Other names are ignored.
//
// Generations (gen.go): a recovery's installation builds a stage, a log of
// its own in the subdirectory gen-G of the log's directory (OpenStage),
// and publishes it (Publish) by the pointer file GEN beside the first
// generation's segments ("SLUICGEN01", generation u64, CRC32C u32; written
// to GEN.tmp, synced, renamed, directory synced). Open follows the
// pointer: with one, the log is generation G's segments and receipt, and
// the generation it replaced stays untouched (for inspection); Publish
// removes the files of the generations before that one and of older
// stages never published, so a log holds at most two generations; a
// pointer that does not check fails Open (ErrPointer), never guessed
// around.
// Retention (retain.go): Retain deletes the log's head a whole segment at
// a time, after making the new start durable in the file START beside the
// segments ("SLUICSTART", start u64, count u32, count entries of (epoch
// u64, offset u64): the epoch history below the start, CRC32C u32; written
// to START.tmp, synced, renamed, directory synced). A Retain past the end
// resets the log: empty at the new start, with a given history below it (a
// reseed). Open honours START: segments below it are what an interrupted
// retention left, and are removed; the first segment must begin at it, and
// a START that does not check fails Open (ErrStart).
//
// A segment holds a 32-byte header, a region of header copies (one 32-byte
// slot per frame the segment may hold), then frames, back to back:
//
//	header [0, 32):
//	        magic "SLUICSEG" | version u32 (2) | slots u32 |
//	        base offset u64 | CRC32C of the 24 bytes before u32 | zero u32
//	slot i [32+32i, 32+32(i+1)), for i in [0, slots):
//	        offset u64 | epoch u64 | frame CRC u32 | frame length u32 |
//	        kind u8 | flags u8 | 2 zero bytes | CRC32C of the 28 bytes before u32
//	frames from byte 32+32*slots:
//	        length u32 | CRC32C u32 | epoch u64 | offset u64 | kind u8 | body
//
// Integers are little-endian; CRC32C is Castagnoli. slots lies in
// [1, SlotsPerSegmentMax]. length counts the bytes after the 8-byte frame
// header (17 + body length) and must lie in [17, 17+record.BodyBytesMax];
// it is checked before anything else is trusted, so an oversized or
// malformed length is refused from the header alone. The frame CRC covers
// the length field and every byte after the CRC. A segment's frames carry
// consecutive offsets from its base; segments are contiguous (each starts
// at the offset after its predecessor's last record); epochs never
// decrease.
//
// Slot i is the header copy of the segment's i-th frame (offset base+i):
// its offset, epoch, kind, and the length and CRC fields exactly as in the
// frame. An all-zero slot means "no frame". The copies are what tells a
// lost synced tail from a clean end: a frame area that reads as empty where
// a valid copy names a frame is a lost frame, not the end of the log (the
// design follows TigerBeetle's redundant WAL headers). A segment is closed
// for appends once it reaches Options.SegmentBytesMax bytes (header and
// copies included) or holds slots frames; slots comes from
// Options.SlotsPerSegment when the segment is created (each segment's
// header keeps its own). Version 1 segments (no copies; flags u32 = 0 where
// slots now is) are not readable: the scan reports them as damage,
// "unsupported segment version 1 (this build reads version 2 only)".
//
// A copy's flags byte has one flag, sync-first (1): its frame is the first
// the log appended after a completed sync (or its open), so every frame
// before it had been synced when it was written. A damaged frame with a
// valid sync-first copy of a later frame beyond it (in its segment or a
// later one) is Damage.Durable: acknowledged records are certainly lost.
// Damage in the last synced batch or past it is not: a crash can tear
// those, and the format cannot tell them from a lost write. (Segments
// written before the flag read as version 2 all the same, without it.)
//
// # Durability
//
// Append only encodes records: frames into a bounded write buffer and their
// header copies into a bounded copy buffer, both written when full; Read
// sees appended records at once. Sync is the group commit: it writes the
// buffered frames, then, with a separate write to the same file, their
// copies (a new segment's header goes in the write of its first copies; a
// frame and its copy never share a write), syncs each segment file written
// since the previous Sync (one, unless a segment was started), and syncs
// the directory when segments were created or removed. A commit therefore
// costs one fdatasync, as in version 1, plus the directory's fsync on a
// roll. Records appended before a successful Sync survive any crash.
//
// Lost synced writes. A device may acknowledge a write (fdatasync returned)
// and still lose it: the bytes revert to zeros or to what they held
// before. The guarantee: the loss of any ONE acknowledged write of a
// commit, reverting to zeros or to the old contents, is reported as
// Recovery.Damage at or before the first record it held, never as a clean
// end. A lost frames write leaves copies naming frames that are gone
// ("frame lost: ...", or a zero gap before later frames) or old frames
// under new copies ("header copy disagrees ..."); a lost copies write
// leaves frames without copies ("header copy missing ...") or under stale
// ones; a lost new-segment header leaves a bad header. Losing both writes
// of the same records, or the copies of several commits and their frames,
// can look like a clean end; that is beyond the guarantee.
//
// Unsynced writes. A power loss loses, keeps or tears unsynced frames and
// unsynced copies independently, so where version 1 saw a clean end (the
// unsynced frames gone) version 2 sometimes finds copies without frames or
// frames without copies and reports damage. This is conservative: the
// damage lies at or after the synced end (no synced record is lost), and a
// replica that reports damage is treated as possibly incomplete and
// repaired from the others.
//
// Files ahead of their frames. With Options.ExtendBytes a segment's file
// is extended with zeros (Truncate) before a write would pass its end, to
// cover the write and up to ExtendBytes more: an append then writes inside
// the file, and its fdatasync commits no change of size (on ext4 a growing
// file's size is journaled at every fdatasync). The zeros are an empty
// frame area, the scan's clean end (below), so a crash at any point of an
// extension reads as a log without it. When the log moves on to a new
// segment the old one is cut back to its frames (durable at the next
// Sync; a crash first leaves the zeros, which read the same).
//
// TruncateFrom removes the segments after the truncation point (the last
// first), cuts the segment holding it and then zeroes the copies of the cut
// frames (one write), and syncs before returning, so that records appended after
// it are never mixed with removed ones by a crash (stronger than "durable
// after the next Sync"). DiscardDamage is durable when it returns; it too
// zeroes the copies from the damage on. A crash in the middle of either
// may leave stale copies of removed frames (a process kill between the
// truncation and the zeroing always does): the next scan reports them as
// damage, which is conservative in the same way. A new log is durable when
// Open returns.
//
// Any failed write, truncation, removal or sync puts the log in the failed
// state: every later call returns ErrFailed (wrapping the cause). The log
// never retries and never reports possibly lost data as durable (io/vfs rule
// 4). Read errors do not fail the log.
//
// # Recovery
//
// Open scans every segment in order. It validates the header (magic, CRC,
// version 2, slots in range, base equal to its name and to where the log
// continues), then walks frame i = 0, 1, ... together with slot i:
//
//   - the frame area from frame i's position on is empty (end of file, or
//     zero bytes up to the end of the file) and slot i and every later slot
//     are all zero: the clean end of the segment;
//   - the frame area is empty but slot i is not: "frame lost: header copy
//     names offset X" when the copy is valid (the lost synced tail), else
//     "header copy corrupt at slot i";
//   - the frame area is empty, slot i is zero, a later slot j is not:
//     "stray header copy at slot j beyond the last frame";
//   - a frame that fails validation: length bounds, the whole frame within
//     the file, CRC, offset contiguity, epoch nondecreasing, known kind
//     ("torn frame header", "frame length N out of bounds", "torn frame: N
//     bytes past the end of the segment", "crc mismatch", "offset N out of
//     sequence", "epoch N below M", "unknown record kind N");
//   - a valid frame whose slot is zero: "header copy missing for offset X";
//     whose slot fails its CRC: "header copy corrupt at slot i"; whose slot
//     differs in any field: "header copy disagrees with frame at offset X";
//   - a segment holding slots frames with a non-empty frame area after
//     them: "frame beyond the segment's N header-copy slots";
//   - a read failing with vfs.ErrIO (an unreadable sector): damage where it
//     happened, "unreadable: segment header: ...", "unreadable: frame at
//     byte P: ...", "unreadable: header copy at slot i: ...". It is damage to
//     report and discard like a corrupt record, not an Open failure; Open
//     fails only for errors that are not about the contents (List failing,
//     say).
//
// The scan stops at the first damage and reports it in Recovery.Damage: the
// segment, the byte position where its valid frames end (0 for a bad
// header), the offset the bad record would have held (Recovery.End), and
// the reason. The valid records are those before it, and Recovery.Epochs is
// their epoch history. Nothing is repaired silently: until DiscardDamage
// removes the damaged tail (cutting the damaged segment at the damage,
// zeroing its copies from there on, removing every later segment, and
// syncing), Append and TruncateFrom return ErrDamaged, while Read serves the
// valid prefix. The scan is linear in the bytes of the log.
//
// # Memory
//
// Each segment keeps a sparse index of one (offset, position) entry per
// Options.IndexIntervalBytes of frames (4 KiB by default). At most a few
// inactive segment files are kept open; the write buffer, the copy buffer
// (at most 1024 copies), and the read window are bounded (the read window
// grows to the largest frame read). The scan reads a segment's copies in
// one read of up to 32768 slots (1 MiB; more reads of that size for larger
// segments), one slot at a time after a read error.
package seglog
