// Package seam holds the types every state machine of the core and every
// driver share: identities (NodeID, QueueID, GroupID), inputs (Input,
// Request, StorageDone, LogState), effects (Effect, the storage operations
// StorageOp), limits, and Out, the buffer a Step's effects are collected
// in.
//
// # Contract
//
//   - Every input and effect prints as one stable line (AppendText): the
//     trace and the transcript tests (core/testdata) are made of them.
//   - An Out's effects, and the bytes they carry (message bytes carved from
//     one buffer, the records of storage effects copied by Record), are
//     valid until the next Step (Reset). Out.Steps counts the Steps begun:
//     a group that frees memory an effect may name reuses it only from the
//     next Step on.
//   - Nothing here reads time, draws randomness or does I/O: the package
//     is under the determinism guard with the rest of the core.
package seam
