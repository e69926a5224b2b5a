// Package memfs is the simulator's in-memory file system: a vfs.FS that
// tracks, per file, which bytes are synced and which are not, and, per
// directory, which entries are durable, so that a simulated power loss
// (Crash) can lose, keep or tear exactly what the io/vfs contract allows to
// be lost, and nothing else.
//
// # Determinism
//
// The package is single-threaded and deterministic: no goroutines, no locks,
// no clock, no randomness of its own (Crash draws from the Rand it is given),
// and no map iteration whose order can reach a result. An FS must be used
// from one goroutine; the simulator owns it.
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
// # Faults
//
// An Injector (SetInjector) is consulted before every operation with an
// Access describing it; a non-nil error it returns is returned by the
// operation, which then has no effect. A failed Sync leaves the file's
// pending operations pending (unknown state: a later crash may still lose
// them), as io/vfs rule 4 requires callers to assume. Corrupt flips a bit of
// durable content (bit rot); SetCapacity makes writes fail with
// vfs.ErrNoSpace past a total size.
//
// # Names
//
// Names are slash-separated and relative ("" and "." name the root). Only
// regular files can be renamed or removed; directories are made by MkdirAll
// and live until a crash undoes them.
package memfs
