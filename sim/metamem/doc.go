// Package metamem is the simulator's metadata store: an in-memory
// io/meta.Store with power-loss semantics, deterministic and
// single-threaded (no clock, goroutines, locks or randomness; every choice
// a fault needs comes from the caller's draw).
//
// A Disk is a broker's metadata medium; it outlives the Stores opened on
// it. Records are kept in io/meta/metakv's encoding (each value framed
// with a version and a CRC32C over key and value), the same bytes the
// daemon's pebble store writes, so that a flipped bit is met by the same
// checks a real disk's would be.
//
// # The asynchronous shape
//
// Apply is Start followed by Complete. The simulator's host calls them
// apart: Start validates a batch and writes it (Load sees it at once, as
// a page cache would show it), and returns a Ticket; Complete(t) is the
// sync that makes that batch, and every batch started before it on the
// disk, durable. In between, the world may strike:
//
//   - Disk.PowerLoss(keep): the open store dies; of the started batches
//     not yet durable the first keep survive whole, the rest are lost
//     whole, never a part of one (keep is the world's draw; any value is
//     legal for unacknowledged batches, and batches survive in order).
//   - Disk.Kill: a process crash without a power loss; started batches
//     stay written and not durable, and the next store sees them.
//   - Disk.FailNextSync: the next Complete fails with an error wrapping
//     meta.ErrFailed and ErrSyncFailed. Like Linux after a failed fsync,
//     the batches not yet durable are dropped whole (a real store may keep
//     them; callers treat the outcome as unknown), and the store is failed:
//     every call but Close returns meta.ErrFailed until the disk is opened
//     again.
//   - Disk.Corrupt(pick): one bit of one durable record flips. Load (and a
//     first Apply, which loads the summary) reports it as a
//     *meta.CorruptError naming the record; nothing repairs it.
//
// At most PendingBatchesMax batches may be started and not completed.
package metamem
