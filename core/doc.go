// Package core is one Sluice broker's replication and queue logic as a pure,
// deterministic state machine. Inputs go in (peer messages, client requests,
// storage completions, the passage of time), effects come out (sends,
// storage operations, replies, deliveries, the next deadline). The core
// never reads the clock, draws randomness, starts goroutines, uses channels
// or does I/O; every input carries the current instant. The same core runs in
// the simulator and in the daemon.
//
// What it implements now: queues under a static assignment (one owner, N
// followers, an epoch), W-of-N durable confirms under the leader_durable,
// majority_durable and all_durable policies, log matching across epochs
// (followers truncate a suffix the owner lacks), group commit, consumers with
// prefetch, acks that go through the log, redelivery of unacked records after
// a consumer is lost, queue state rebuilt from the log after a restart, and
// recovery of an owner whose log lost records to damage: it asks every
// follower for its log, fetches from the most complete one (highest last
// epoch, then longest), and only then opens an epoch. The controller that
// changes assignments, sealing with E-W+1 witnesses, learners and in-sync
// tracking come with later issues.
//
// # The driver contract
//
// A driver (io/driver, shared by the simulator and the daemon) owns one
// Broker and must:
//
//  1. Create the broker with New, open every configured queue's log, and pass
//     an InStart input with what each log recovered (start, end, epoch
//     history, damage) before any other input. A log whose recovery found a
//     torn or corrupt tail is reported with Damage set; the driver does not
//     repair it: the core answers with an OpDiscard effect.
//  2. Call Step with one input at a time, with a NowNs that never decreases,
//     and start the returned effects in the order given before the next Step.
//  3. Execute the storage effects of one queue's log strictly in order: each
//     starts after the previous one completed. Return the completion of
//     every sync and read as an InStorage input, in that same order. Appends,
//     truncations and discards complete silently; only their failure comes
//     back, as an InStorage input carrying the error text, and nothing
//     queued behind a failure runs. Never retry a failed operation: after a
//     failed storage operation the core treats the log as failed and stops
//     using it.
//  4. Treat an OpSync completion as a promise that every append and
//     truncation issued on that log before the sync is durable (file data and
//     directory entries both). The core never sends a message that claims
//     durability before it has received that completion, so sends need no
//     ordering against storage: a send may leave as soon as it is emitted.
//  5. Deliver sends on a best-effort basis: a message may be lost,
//     duplicated, delayed or reordered; the core resends what matters. A
//     message that fails to decode is dropped at the edge, never passed in.
//  6. Pass each reply and delivery to the client connection it names, if that
//     connection is still open; drop it otherwise. When a connection closes,
//     pass InClientGone so its unacked deliveries return to the queue.
//  7. Keep the latest EfDeadline only, and pass an InTick at or after its
//     instant. Extra ticks are harmless.
//  8. Read records through the log engine only; a read completion carries the
//     records from the requested offset, at least one if any exist there.
//
// A restarted process is a new Broker: memory is gone, the logs remain.
//
// # Determinism
//
// Given the same inputs, Step returns the same effects: effects come out in
// queue order and peer order, never in Go map order. A test in
// internal/detguard enforces the rules above for this package tree.
package core
