// Package core is one Sluice broker's logic as a pure, deterministic state
// machine: a Node routes each input to the group it names and collects the
// groups' effects. Inputs go in (peer messages, client requests, storage
// completions, the passage of time), effects come out (sends, storage
// operations, replies, deliveries, the next deadline). The core never reads
// the clock, draws randomness, starts goroutines, uses channels or does I/O;
// every input carries the current instant. The same core runs in the
// simulator and in the daemon.
//
// The groups today are the replica groups of queues (core/queue): one
// owner and N followers under an assignment and an epoch, W-of-N durable
// confirms under the leader_durable, majority_durable and all_durable
// policies (and isr: confirms at the high watermark of the in-sync set),
// log matching across epochs, group commit, consumers with prefetch, acks
// through the log, redelivery after a consumer is lost, queue state
// rebuilt from the log when a group starts on a log that holds records,
// heartbeats and scrubbing. An owner whose log lost records to damage
// serves nothing: sealed recovery (core/recover.go) restores a verified
// history before any owner starts on it. The
// seam's types are in core/seam; the quorum arithmetic in core/quorum. The
// controller's metadata group (core/ctrl, on raft) is the group GroupCtrl
// of the nodes configured as its voters (Config.Ctrl): peer messages,
// persists, ticks and operators' metadata requests (ReqMeta) reach it.
// Queues the controller places on a node run as replica groups too: the
// node opens a placed queue's log (OpOpen) once the committed assignment
// names this very process and storage instance, and fences the group
// (no more writes) when the assignment is fenced or the queue deleted
// (core/placed.go); ReqTopology answers where a queue lives. Every queue
// of a running cluster, simulated or real, is placed: Config.Queues, a
// replica group under a fixed assignment, is the transcript tests' way to
// drive one group directly, and no world uses it.
//
// # The driver contract
//
// A driver owns one Node. io/driver's Host is the one implementation, used
// by the simulator and the daemon alike; its test (io/driver/host_test.go)
// checks each point. A driver must:
//
//  1. Create the node with New, open every log of every group, and pass an
//     InStart input with what each log recovered (start, end, epoch history,
//     damage, the unrepaired mark) before any other input. A log whose
//     recovery found a torn or corrupt tail is reported with Damage set; the
//     driver does not repair it: the core answers with an OpDiscard effect.
//  2. Call Step with one input at a time, with a NowNs that never decreases,
//     and start the returned effects in the order given before the next Step
//     (their byte slices are valid until then: a driver that keeps a body,
//     a delivery on its way to a consumer, copies it). The input's byte
//     slices are the driver's again once Step returns: the core copies
//     what it keeps (a publish's body, into its record cache's arena; the
//     records of a read it delivers later), so a driver may reuse a
//     request's buffer for the next one, and a read's memory for the
//     log's next read (io/driver lends reads: seglog.ReadLent).
//  3. Execute the storage effects of one log strictly in order: each starts
//     after the previous one completed. Return the completion of every
//     sync, read, verify, seal (OpSeal: the log's seal receipt stored
//     durably, file and directory) and retention (OpRetain: the log's
//     head deleted, its new start durable first; the completion says
//     where the log starts now) as an InStorage input, in that same
//     order. Appends,
//     truncations, discards, OpRepaired (which durably clears the log's
//     unrepaired mark), OpReseed (the log emptied at a new start) and
//     OpBind (the log's storage binding stored durably) complete silently; only their failure comes back, as
//     an InStorage input carrying the error text, and nothing queued behind a
//     failure runs. Never retry a failed operation.
//  4. The failure policy: after handing the core a failed storage completion
//     (the core then treats the log as failed and stops using it: publishes
//     in flight end unknown), end the process. Its supervisor restarts it,
//     and the new process's recovery judges what the disk holds.
//  5. Treat an OpSync completion as a promise that every append and
//     truncation issued on that log before the sync is durable (file data and
//     directory entries both). The core never sends a message that claims
//     durability before it has received that completion, so sends need no
//     ordering against storage: a send may leave as soon as it is emitted.
//  6. Deliver sends on a best-effort basis: a message may be lost,
//     duplicated, delayed or reordered; the core resends what matters. A
//     frame that fails its checksum or length (core/wire) is dropped at the
//     edge; a group refuses, and counts (Node.Refused), a message that does
//     not decode or that no peer could truthfully send.
//  7. Pass each reply, delivery and cancel (EfCancel: the broker ended a
//     subscription, as AMQP's server-sent basic.cancel) to the client
//     connection it names, if that connection is still open; drop it
//     otherwise. A connection is a stream:
//     its requests arrive in order and its close after them. When it closes,
//     pass InClientGone so its unacked deliveries return to the queue.
//  8. Keep the latest EfDeadline only (one timer), and pass an InTick at or
//     after its instant. Extra ticks are harmless.
//  9. Read records through the log engine only; a read completion carries the
//     records from the requested offset, at least one if any exist there.
//  10. Persist before send, for the metadata group (core/ctrl, raft's
//     rule): carry out each storage effect OpPersist of group GroupCtrl
//     as one atomic, synced io/meta batch on the node's metadata store,
//     one at a time and in order like one log's operations (point 3),
//     and return its completion (an InStorage input echoing its Tag), or
//     its failure, then rule 4. The group holds every message of a raft
//     Ready until that Ready's batch is reported durable, so its sends,
//     like the queues', may leave as soon as they are emitted; a host
//     must never report a batch durable before it is (a vote or an
//     acknowledged append would be forgotten by a crash). Pass the state
//     the store loaded in the start input (Input.Meta), and a random
//     value in every tick input (Input.Draw): the jitter of the group's
//     failure detector. EfApplied, EfNote, EfWatermark and EfRecovery
//     effects ask for nothing (EfApplied tells a watcher what the group
//     applied, EfWatermark a queue's new high watermark, EfRecovery a
//     stage of a queue's recovery). When the
//     transport sees a peer's connection close and a reconnect fail,
//     pass InPeerLost naming the process instance it was connected to
//     (eager failover); never for a silence (a timeout is the group's
//     own business).
//  11. Open a placed queue's log on OpOpen (creating it if new, in a place
//     of the driver's choosing, one per group), recover it, and return
//     the completion as an InStorage input of its own carrying what it
//     recovered (StorageDone.State); from then on the log's operations
//     follow point 3. A failed open is a failed operation (rule 4).
//  12. A group's stage (log LogStage, a recovery's installation): OpOpen
//     of log LogStage opens the stage of generation Offset beside the
//     group's open log 0 (io/seglog's generations); a stage already open
//     is reopened in its queue, after the operations issued before on it.
//     Its operations follow point 3, and OpPublish's completion (the
//     generation pointer durable, file and directory) comes back like a
//     sync's; once it completes, log 0 of the group is the stage's log
//     (what is queued on log 0 runs on it) and the stage is closed. Its
//     completions, like every storage completion, name the log. The core
//     never reads a generation older than the one a publish replaces, so
//     the driver may remove those (io/seglog's Publish does).
//
// A restarted process is a new Node: memory is gone, the logs remain.
//
// # Messages and epochs
//
// A queue replica's messages (core/queue.Msg) carry the sender's epoch and
// process: on the owner's messages the epoch it writes in, which fences
// older owners; on a follower's, the highest epoch it has seen from an owner,
// which may be above the last epoch its log holds. A record carries the
// epoch that wrote it.
//
// # Determinism
//
// Given the same inputs, Step returns the same effects: effects come out in
// group order and peer order, never in Go map order. A test in
// internal/detguard enforces the rules above for this package tree.
package core
