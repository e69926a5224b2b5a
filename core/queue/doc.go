// Package queue is one queue's replica group: the state machine each
// replica of a queue runs, deterministic, stepped by core.Node.
//
// # Contract
//
// A Replica (New) is one node's replica of one queue under a fixed
// assignment (seam.QueueConfig: the replicas, the owner, the policy and W).
// Its role is a value with its own step functions, never a flag: the owner
// (owner.go: admits publishes, replicates, confirms at W, keeps the queue
// state) or a follower (follower.go: copies the owner's log, reports what
// it holds durably), which may be the assignment's learner (learner.go:
// counted for nothing until its admission). The node hands it inputs
// (client requests, peer messages' bytes, storage completions, ticks) and it
// adds effects to its Ctx's seam.Out; it keeps nothing of an input's bytes
// past the step but what it copies (a publish's body goes into the record
// cache's arena, bodies.go).
//
// What holds between steps is checked by Invariants, which the simulator
// calls after every step: the log's bounds ([start, end), synced below
// end), the cache ending at the log's end and holding nothing below its
// start, the epoch history in order, the owner's confirmed end at or below
// its synced end and never falling, the queue state within what was
// confirmed. Values a peer sent are never asserted: an impossible report
// (beyond the owner's end, of another epoch) is refused and counted
// (Ctx.Refused).
//
// # Files
//
//   - replica.go: Replica, its inputs, its role changes, Invariants.
//   - log.go: the log as the replica issued it to storage, syncs in
//     flight, truncations, retentions, and the record cache.
//   - bodies.go: the cache's body arena, freed in log order.
//   - owner.go, progress.go: the owner, and its view of each follower
//     (what to send, what it holds durably).
//   - follower.go, learner.go: the follower's matching and reports; the
//     learner's catch-up and admission.
//   - state.go: the queue state, a fold of the committed records (ready,
//     delivered, acked) and the consumers.
//   - insync.go: in-sync tracking and the watermark of isr queues.
//   - retain.go: when the owner deletes its log's settled head.
//   - scrub.go: the background verification of the log's records.
//   - msg.go: the peer messages and their codec.
package queue
