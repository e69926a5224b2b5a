// Package vfs is the file-system interface that Sluice's storage code runs
// over. Two implementations satisfy it: sim/memfs, an in-memory file system
// for the simulator that tracks synced and unsynced bytes and can lose, keep
// or tear what was not synced when a power loss is simulated; and fsio, the
// Linux implementation on real files.
//
// Durability semantics, which every implementation must honour and every
// caller may rely on, and nothing more:
//
//  1. A WriteAt or Truncate on a file is durable only after a later Sync of
//     that file returns nil. Before that, a crash may lose it, keep it, or (for
//     writes) keep any subset of its 4 KiB sectors.
//  2. A file created by Create, or a name made by Rename, or a name removed by
//     Remove, is durable only after a later SyncDir of its directory returns
//     nil. Before that, a crash may undo the directory change. File contents
//     and directory entries are independent: syncing one does not sync the
//     other.
//  3. Rename is atomic: after a crash the new name refers to either the old
//     target (or nothing) or the renamed file, never a mix.
//  4. A failed Sync (any non-nil error) means the data written since the last
//     successful Sync is in an unknown state. Callers must not retry and then
//     treat that data as durable; they treat the file as failed.
//  5. Reads see every completed write, synced or not.
//
// Names are slash-separated paths relative to the file system's root; a
// directory must exist (MkdirAll) before files are created in it.
//
// Errors are classified by the sentinel values below, tested with errors.Is.
package vfs
