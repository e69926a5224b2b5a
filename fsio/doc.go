// Package fsio is the Linux implementation of io/vfs on real files.
//
// An FS is rooted at a directory; every vfs name is a slash-separated path
// relative to that root and may not leave it. Files are *os.File values opened
// read-write, and every read and write is positioned (pread/pwrite), so a File
// has no cursor.
//
// Durability, in the terms of the io/vfs contract:
//
//   - File.Sync is fdatasync(2): it makes the file's data and the metadata
//     needed to read it back (its size) durable, not its timestamps.
//   - FS.SyncDir opens the directory and fsync(2)s it. Create, Rename, Remove
//     and MkdirAll never sync a directory themselves: the contract says a
//     directory change is durable only after SyncDir, and callers do that
//     explicitly, once per batch of changes.
//   - File.Preallocate is fallocate(2) with FALLOC_FL_KEEP_SIZE, so the
//     reported size does not change; where the file system does not support it
//     (EOPNOTSUPP, ENOSYS) it does nothing.
//   - A failed Sync is reported as vfs.ErrIO (or vfs.ErrNoSpace) and, per rule
//     4 of the contract, must not be retried and trusted: Linux may already
//     have dropped the dirty pages and cleared the error.
//
// Errors are *Error values. They keep the operation and the OS path in their
// message, and unwrap both to the vfs kind (vfs.ErrNotExist, vfs.ErrExist,
// vfs.ErrNoSpace, vfs.ErrIO, vfs.ErrClosed) and to the underlying OS error, so
// errors.Is works with either. Reading past the end of a file returns io.EOF
// itself, unwrapped, as io.ReaderAt requires.
//
// # Failpoints
//
// Every storage boundary carries a github.com/pingcap/failpoint marker. In an
// ordinary build the markers are empty functions and cost nothing. In a build
// rewritten by failpoint-ctl (see failpoint-test.sh) they can be enabled by
// name, for instance through GO_FAILPOINTS:
//
//	GO_FAILPOINTS='github.com/sluicemq/sluice/fsio/afterSync=3*off->return("kill")'
//
// The failpoints are beforeWrite, midWrite, afterWrite, beforeSync, afterSync,
// beforeTruncate, afterTruncate, beforeCreate, afterCreate, beforeRename,
// afterRename, beforeRemove, afterRemove, beforeSyncDir and afterSyncDir. Their
// value is an action:
//
//	"kill"    the process sends itself SIGKILL (no deferred code, no flush)
//	"eio"     the operation fails with vfs.ErrIO
//	"enospc"  the operation fails with vfs.ErrNoSpace
//
// midWrite first writes only part of the buffer, then acts: half of it by
// default, or N bytes (never all of them) with "kill:N", "eio:N" or
// "enospc:N". It is how a torn record is made on a real file.
//
// A SIGKILL is not a power loss: the page cache survives the process, so
// unsynced writes usually survive a kill, and a kill test cannot tell a real
// fdatasync from a missing one. The fdatasync and directory-fsync system
// calls go through two unexported package variables so that this package's
// sync-count test (synccount_test.go) can count them per path behind every
// acknowledged sync of a segment log, and plant the removal of one; nothing
// else assigns them. Power loss is simulated by sim/memfs (its Crash
// methods), not here; see docs/storage.md.
package fsio
