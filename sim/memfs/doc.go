// Package memfs is the simulator's in-memory file system: a vfs.FS that
// tracks, per file, which bytes are synced and which are not, and, per
// directory, which entries are durable, so that a simulated power loss
// (Crash) can lose, keep or tear exactly what the io/vfs contract allows to
// be lost, and nothing else.
//
// # Determinism
//
// The package is single-threaded and deterministic: no goroutines, no locks,
// no clock, no randomness of its own (Crash, CrashTearSynced,
// LoseSyncedWrite and a failed Sync under SetSyncFailureDropsPages draw only
// from the Rand they are given), and no map iteration whose order can reach
// a result. An FS must be used from one goroutine; the simulator owns it.
//
// # Memory
//
// A file's contents are kept in 4 KiB chunks (one per sector; a chunk
// never written reads as zeros), so a file grown by appends allocates its
// size once and copies nothing as it grows; zeros written where no chunk
// is yet allocate none (a simulated body is its key and zeros, so a log of
// large bodies costs little more than its frames' headers).
//
// A file that nothing can ever reach again is freed and its chunks are
// reused (cleared) by the files written after it, so a run that deletes
// files, as the segment log's retention does, allocates chunks only for the
// files alive at once (and the freed file's chunk table, undo and synced
// buffers and change log serve the next file created). Reachable means any
// of: a name in the current namespace; a name in the durable namespace (a
// crash brings it back); a pending directory operation naming it (a crash
// may replay it); an open handle of the current generation (an unlinked file
// stays usable until its last handle is closed; a crash kills every handle).
// A file is freed at the moment the last of these goes: the directory sync
// that makes its removal (or the rename over it) durable, the Close of its
// last handle, or the crash that leaves it without a durable name. Remove
// and Rename never free by themselves. No exported call hands out a file's
// bytes by reference (Bytes, DurableBytes and ReadDurable copy), so freeing
// is invisible: the same operations give the same results with recycling as
// without (TestRecyclingIsInvisible). A freed file is marked and every use
// of its contents panics; a handle on it is dead (a crash killed it or it
// was closed) and returns vfs.ErrClosed before touching it. Stats counts the
// files freed and the chunks allocated and reused (recycle.go).
//
// # What survives a crash
//
// File contents. Every WriteAt and Truncate since the file's last successful
// Sync is pending. Pending operations are kept as an undo log (the bytes a
// write overwrote are saved when it is made, so Sync is O(1) and a write is
// O(len)). On Crash the log is walked from the newest operation back to the
// oldest; for each pending write and each 4 KiB sector it touches, the
// sector's part of the write is lost (the previous bytes come back; bytes past
// the previous size come back as zeros), kept, or torn (a random prefix or
// suffix of that part is kept, the rest lost). Once a sector keeps (part of)
// a write, it also keeps every earlier write to it: a sector on the platter
// is always some version of the page cache. A write that grew the file may
// leave its new size behind even when its bytes are lost (the file then ends
// in zeros, as on a real file system whose size metadata reached the journal
// before the data). A pending Truncate is undone or kept as a whole; keeping
// it keeps every earlier pending operation of that file too.
//
// Directory entries. Create (of a new name), Rename, Remove and the
// directories made by MkdirAll are pending directory operations in one
// ordered journal. SyncDir(d) makes durable every pending operation touching
// d, together with the earlier pending operations they depend on (those
// touching the same file or directory), in journal order. On Crash a random
// prefix of the remaining journal survives, the rest is undone: a created
// name vanishes, a renamed file reappears under its old name (and a replaced
// target comes back), a removed name returns with its file. Rename is atomic.
// Create on an existing name is not a directory operation: it truncates the
// file (a pending Truncate to 0).
//
// After Crash or CrashClean every File handle opened before returns
// vfs.ErrClosed, and the file system holds what a reboot would read, all of
// it durable.
//
// CrashClean is the deterministic crash that keeps exactly the durable state:
// every synced write and truncation, every directory change made durable by
// SyncDir, and nothing else.
//
// # The durable state, for checkers
//
// The simulator's checkers judge from the disk's own durable bytes, not
// from what the broker says. DurableList(dir) lists the names durable in a
// directory, DurableSize(name) and ReadDurable(name, p, off) give the size
// and the bytes that CrashClean would leave under a durable name (ReadAt
// semantics, copying only the bytes asked for; a sticky unreadable range
// makes ReadDurable fail with vfs.ErrIO), and DurableBytes copies a whole
// file. DurableChanges names the ranges of a file whose durable bytes,
// readability or size may have changed since a DurableStamp (changes.go),
// so that a checker reads again only those. None of them consults the
// Injector.
//
// # Faults
//
// An Injector (SetInjector) is consulted before every operation with an
// Access describing it; a non-nil error it returns is returned by the
// operation, which then has no effect. A failed Sync leaves the file's
// pending operations pending (unknown state: a later crash may still lose
// them), as io/vfs rule 4 requires callers to assume. Corrupt flips a bit of
// durable content (bit rot); SetCapacity makes writes fail with
// vfs.ErrNoSpace past a total size. Faults that real disks have besides:
//
//   - Failed sync as Linux reports it (SetSyncFailureDropsPages(r)): when
//     the Injector fails a Sync, the file's pending writes and truncations
//     are settled as a power loss would settle that one file (each sector
//     of each pending write lost, kept or torn, from r), the file's contents
//     then show what the media holds (the dirty pages were dropped), and
//     nothing stays pending, so the next Sync succeeds: the error is
//     reported once. Handles stay usable.
//   - Lost write (LoseSyncedWrite(name, r)): the device acknowledged a
//     write and never stored it. Every successful Sync that makes something
//     durable remembers the newest operations of its batch (at most 64
//     writes whose overwritten bytes total at most 1 MiB, and at most 128
//     operations; older ones are forgotten; consecutive writes that
//     extended the file contiguously are one write); a Sync with nothing
//     pending keeps the previous batch. LoseSyncedWrite picks one of those
//     writes with r and reverts it on the media, by r either to what it
//     overwrote (bytes it wrote past the file's size at the time read as
//     zeros) or to zeros; the size stays, and the durable and the current
//     contents both change. It refuses (ok false, nothing changes) when no
//     write is remembered or when a later operation touches the write's
//     range: a later write or truncation of the same batch, or a pending
//     one. The memory is the undo log's, swapped at each Sync: nothing is
//     copied or allocated in the steady state. A crash (and a failed Sync
//     that settles the pages) forgets the remembered writes that a pending
//     operation touched; CrashClean keeps them all.
//   - Unreadable range (SetUnreadable(name, off, n)): a medium error. Every
//     ReadAt and ReadDurable whose bytes overlap the range fails with an
//     error wrapping vfs.ErrIO until the bytes are rewritten: a WriteAt
//     makes the bytes it covers readable again, a Truncate below the range
//     drops what lies past the new size. It survives crashes (it is the
//     media). At most 16 ranges per file (touching ones merge); a write
//     that would split a range beyond that makes the smaller piece
//     readable.
//   - Torn write over synced bytes (CrashTearSynced(r)): a power loss like
//     Crash, except that one pending write that shares a 4 KiB sector with
//     synced bytes (below the durable size, outside the write) is torn
//     there, and those synced bytes read back as random non-zero garbage,
//     as a torn sector does, never as a clean run of zeros; the write's own
//     bytes in the sector are split at a random point, garbage on one side.
//     It returns the number of synced bytes damaged, 0 (an ordinary Crash,
//     draw for draw) when no pending write shares a sector with synced
//     bytes.
//
// # Names
//
// Names are slash-separated and relative ("" and "." name the root). Only
// regular files can be renamed or removed; directories are made by MkdirAll
// and live until a crash undoes them.
package memfs
