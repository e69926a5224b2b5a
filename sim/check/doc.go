// Package check holds the simulator's safety and liveness checkers. They
// judge a run from the world's own ground truth, never from the code under
// test: durability from each fake disk's durable bytes (Disk), read by this
// package's own parser of the segment format (DiskLog: an independent
// reading of io/seglog's documented format, never its code), incrementally
// at each sync acknowledged to a core and again after a crash or an
// injected fault (what may have changed since the last reading, by the
// disk's change log, ChangeLog; the verdicts are a full reading's);
// deliveries from what live consumers received.
//
// Checkers, by name (the name appears in failure reports and summaries):
//
//   - sync-durable: when a sync completion is handed to the core, the disk
//     durably holds every record written to that log below the end the sync
//     covers.
//   - lost-synced: a log whose disk suffered no injected damage never
//     recovers below the end of its last acknowledged sync.
//   - loss-unreported: a log that lost acknowledged records to injected
//     damage reports damage at recovery, never a clean shorter log (a log
//     bound before that opens without its storage binding reports it: its
//     directory was lost).
//   - recovery-truth: every record a recovered log claims is intact on its
//     disk with the epoch it claims.
//   - confirm-durable: a publish is confirmed only while W replicas, the
//     owner among them, were read to hold its record durably (a copy lost
//     later to injected damage still counts, the fault budget answering for
//     it; a copy the protocol truncated does not; a copy a learner made,
//     its broker running another process than the member the assignment
//     names, counts only from its admission, or an activation naming it,
//     when its disk is read again: Admitted; what a sync verified on it
//     while away that injected damage struck since counts too).
//   - deliver-confirmed: a consumer is handed only confirmed records, whose
//     publish was not reported failed, with the confirmed body byte for
//     byte.
//   - deliver-order: per queue, records reach consumers for the first time in
//     increasing offset order.
//   - redeliver-acked: a record is delivered again only while no ack of it
//     is confirmed.
//   - failed-delivered: a publish reported as definitely failed never reaches
//     a consumer.
//   - confirmed-lost: at the end, some replica's disk holds an intact copy
//     of every confirmed publish.
//   - converged: at the end, the owner holds every confirmed publish and
//     every replica holds exactly the owner's records up to its end (a
//     member the world reports away, its broker running another process
//     under the follower-loss hold, is left out: SetAway).
//   - publish-durable: when an installation's publish of its stage
//     completes, the disk's durable generation pointer (this package's
//     own parser, gen.go) names the stage, which durably holds what it
//     was issued; from then on it is the replica's truth.
//   - at-least-once: at the end of a finished drain, every confirmed publish
//     reached a live consumer, and every one whose consumer was lost before
//     acking it was received again.
//   - one-owner: every confirm comes from the owner the committed
//     placement or activation names, from one process of it: at most one
//     owner admits writes per queue and assignment.
//   - isr-confirm: an isr queue's confirm leaves the owner only while every
//     member of its committed in-sync set (the model's fold of the applied
//     history) was read to hold the record durably.
//   - watermark-back, watermark-durable: an owner's announced high
//     watermark never moves back, and every member of the committed
//     in-sync set holds the record below it durably (an earlier
//     assignment's owner announcing late is not judged against the
//     current one's).
//   - retention-settled: when a retention completes, every publish below
//     the log's new durable start (this package's own reading of START,
//     retain.go) was settled: a live consumer that received it sent its
//     ack. confirmed-lost, converged, source-complete, isr-confirm and
//     watermark-durable leave out the settled records below a log's start.
//   - retention-held: when an owner's retention completes, every member
//     the owner took a message in from (its named process, sent after it
//     applied the assignment, by the world's account: SetHeard) within
//     the retention window (less a second)
//     before the core issued the retention, when it chose its point,
//     durably holds the owner's records up to the new start.
//   - linearizable, liveness, hold-kept, hold-ended: reported by the world
//     (sim/linear; the drain; the follower-loss hold judged from the
//     world's own follow of the committed metadata, sim/world/hold.go).
//
// The fault budget's bookkeeping lives here too: Injected marks a copy
// damaged, and the copy counts as damaged until its disk again holds an
// unbroken, undamaged log at least as long as the damaged one (Damaged).
//
// Every checker is shown to fail by a unit test that feeds it a violating
// history; sim/sweep's tests and `sluice sim mutants` show them catching
// planted bugs in whole runs.
package check
