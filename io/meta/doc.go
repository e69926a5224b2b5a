// Package meta is the metadata storage port: the one place where the
// controller's raft state (entries, hard state, snapshots) and its applied
// metadata are made durable. Two implementations satisfy it: sim/metamem,
// an in-memory fake for the simulator that can lose an unsynced batch
// whole on a simulated power loss, and fsio/metapebble, the daemon's store
// on github.com/cockroachdb/pebble/v2. io/meta/metatest is the behavioural
// suite both pass. The port does not import raft: the core converts
// raftpb's types to the plain ones here.
//
// The package is deterministic (no clock, goroutines, locks or I/O): the
// validation and consistency rules below are code here (Validate,
// CheckState), shared by every implementation.
//
// # Contract
//
// Every implementation must honour this, and callers may rely on it and
// nothing more:
//
//  1. Atomic. A Batch (its entries, hard state, snapshot, applied record
//     and compaction, see Batch for their order and rules) is applied as a
//     whole: after any crash, at any moment, either all of a batch is
//     visible or none of it, never a part.
//  2. Durable on return. When Apply returns nil, the whole batch survives
//     any later crash or power loss. Batches become visible and durable in
//     the order they were applied: a crash never keeps a batch and loses
//     an earlier one.
//  3. Validated first. Apply checks a batch against the stored state
//     before writing anything (Validate). A batch that breaks a rule or
//     exceeds a limit (EntryDataBytesMax, BatchEntriesMax, BatchBytesMax,
//     IndexMax) is refused with a *RefusedError naming the field and the
//     rule; a refused batch changes nothing and the store stays usable.
//  4. Failure is final. A *CorruptError from Apply (met while loading the
//     summary or reading a stored entry's term) means nothing was written
//     and the store is corrupt (see 5). Any other error from Apply (a
//     failed write or sync) leaves the batch's outcome unknown: it may be found whole after
//     a restart, or not at all, but never in part. The store is then
//     failed: every call but Close returns an error wrapping ErrFailed,
//     until it is closed and opened again (as Linux's fsync, a failed sync
//     is never retried and then trusted; io/vfs rule 4).
//  5. Load tells the truth. Load returns the state as the applied batches
//     left it: the hard state, the latest snapshot, the compaction point,
//     the entries after it (contiguous, terms never decreasing) and the
//     applied record. A new store loads as the zero State. Stored bytes
//     that fail a checksum or do not decode, and records that contradict
//     each other (CheckState), are reported as a *CorruptError naming the
//     record, never skipped, truncated or repaired. What to do with a
//     corrupt metadata store is the caller's decision (a broker rebuilds
//     its replica from its peers; it never runs on a guess).
//  6. One user. A Store is used from one goroutine; Close ends it, and
//     later calls return ErrClosed.
//
// An implementation keeps the Summary of the stored state in memory (it
// loads it on first use) so that Apply validates without a full read; an
// Apply before any Load may therefore report a *CorruptError too.
//
// Errors are classified by the sentinels ErrRefused, ErrCorrupt, ErrFailed
// and ErrClosed, tested with errors.Is.
package meta
