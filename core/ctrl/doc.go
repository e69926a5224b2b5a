// Package ctrl is the controller's metadata group: one node's replica of a
// raft group (go.etcd.io/raft/v3's RawNode) and the metadata state machine
// it applies, as a pure, deterministic state machine. Inputs go in as
// values, effects come out as values; the package never reads the clock,
// draws randomness, starts goroutines or does I/O.
//
// core.Node runs it as group seam.GroupCtrl on the nodes configured as
// voters (core.Config.Ctrl): io/driver's host carries its persists out on
// the node's metadata store, and the simulator runs it in every world
// (docs/simulator.md, "The metadata group"). Its own test harness
// (cluster_test.go) drives it alone, with crashes.
//
// # Configuration
//
// 1, 3 or 5 voters, by node id (sparse, any non-zero values). Raft's
// election tick is set out of reach (2^40 ticks) and CheckQuorum is off, so
// raft never campaigns on its own and its randomized election timeout (a
// crypto/rand draw) reaches nothing; PreVote is on; proposal forwarding is
// off (a follower drops a proposal, the caller retries at the leader).
// Raft's logger is a bounded recorder (LogLinesMax lines a step; Debug
// dropped); its lines come out as EfNote effects, never on stderr.
//
// # Membership and liveness
//
// 1, 3 or 5 voters; every other broker is a raft learner (Learners): it
// gets the log and applies the committed metadata, never votes, never
// campaigns. The membership is fixed by configuration. Every member with
// a process instance heartbeats the leader it knows (GroupCtrlPeer
// messages, liveness.go); the leader registers brokers from their
// heartbeats, takes out of the live set a broker not heard for
// liveness.expiry_ms, and at once one whose connection was lost with a
// failed reconnect (InPeerLost, eager failover), each guarded by the
// process instance the metadata holds.
//
// # Placement
//
// The leader places every declared queue on live, undrained brokers and
// fences a placed queue whose member left the live set (or runs another
// instance) with a pending transition under the next epoch, bound by its
// digest (placement.go, core/metadata). A fenced queue admits no writes
// until a recovery activates the proposal (docs/design/recovery.md):
// until then it stays fenced.
//
// # Inputs
//
//   - InTick, with the instant and Draw, a random value from the host (the
//     simulator's PRNG, the daemon's crypto source). Raft ticks once per
//     Config.TickNs passed (at most ticksPerStepMax per input). The failure
//     detector: a node that is not the leader and has heard no leader (an
//     append, heartbeat or snapshot from the leader it knows, or its own
//     granted vote) for CampaignTimeoutNs + Draw mod CampaignTimeoutNs
//     (the draw of the first tick after it last heard one) calls Campaign;
//     a voter told that its leader's committed process exited (InPeerLost)
//     campaigns sooner, since no heartbeat will come: the first of the
//     other voters by id at once, in that step; the k-th after it in the
//     k-th slot of CampaignTimeoutNs/4 from its next tick, with a jitter
//     within the slot (that tick's draw). The slots keep the survivors
//     from splitting the vote; a first voter whose log is behind is
//     refused, and the next one's slot elects another.
//   - After a step that applied a broker's BrokerDown, the leader runs
//     placement at once (its transitions or holds), not at its next tick.
//   - InMessage: a marshalled raftpb.Message from peer From. A message that
//     does not decode, is not addressed from From to this node, comes from
//     a non-voter, is a local or proposal type, or carries an entry that is
//     not a normal one within io/meta's EntryDataBytesMax, is refused with
//     a note.
//   - InPeerMessage: a heartbeat from From (version, kind, node, process,
//     storage; strict: trailing, truncated or padded bytes are refused).
//   - InPeerLost: the connection to From's process Process was lost.
//   - InPersisted: the completion of persist effect Seq, or its failure
//     (Err), after which the group stops (the driver contract's failure
//     policy: the host ends the process).
//   - InPropose: a metadata command (core/metadata's encoding) from a
//     caller's (Client, ReqID),
//     answered by an EfOutcome: Refused if invalid or if
//     ProposalsPendingMax proposals wait, NotLeader (naming the leader it
//     knows) if this node does not lead, Committed with the entry's index
//     once this node applied it (with its result), Rejected if the
//     metadata refused it when applied (a conflict), Unknown if this node
//     lost its leadership (or the term changed) first.
//
// # Effects
//
//   - EfPersist: one io/meta Batch (entries, hard state) to make durable
//     atomically, then to report as InPersisted with its Seq. One Ready's
//     batches are outstanding at a time: usually one; a Ready with more
//     entries than io/meta takes in a batch (BatchEntriesMax,
//     BatchBytesMax) comes as several with consecutive Seqs, entries in
//     index order and the hard state in the last, to be made durable and
//     reported in that order.
//   - EfSend: a marshalled raftpb.Message (deterministic bytes) for node To.
//   - EfApplied: a committed entry applied, in index order from 1 after
//     every start (the state is rebuilt by re-applying the log).
//   - EfNote: trace notes (raft's log, campaigns, refusals).
//   - EfOutcome: the answer to a proposal.
//   - EfSendPeer: a heartbeat for node To.
//
// Every effect has a stable one-line text form (Effect.String).
//
// # Persist before send
//
// Raft's rule: a Ready's messages may leave only after its entries and hard
// state are durable (a vote, a term, an acknowledged append must not be
// forgotten by a crash after a peer has seen it). Carried out here as
// effects: from a Ready with anything to persist, the group emits its
// EfPersist (several when the Ready exceeds one io/meta batch) and holds
// the Ready's messages; on the InPersisted of the last it emits them,
// applies the Ready's committed entries, and calls Advance. No other
// Ready is taken meanwhile (peer messages, ticks and proposals still step
// raft). A Ready with nothing to persist sends, applies and advances at
// once. This holds all of a Ready's messages, even those raft would let a
// leader send in parallel with its own append: simpler, and safe. The host
// therefore may send each EfSend as soon as it is emitted (core/doc.go,
// point 10).
//
// # Determinism
//
// Raft's messages in a Ready come out in sorted peer order (its tracker
// visits peers sorted); they are emitted in that order. The packages raft
// links are on the determinism guard's reviewed list
// (internal/detguard/modules.go) with the reasons.
//
// # Known limits
//
// A Ready larger than one io/meta batch is split (splitBatch); a crash
// between its batches keeps a prefix of its entries without its hard
// state, which raft allows (none was acknowledged). A batch is emitted
// even when only the commit index changed (raft needs no sync then), which
// holds that Ready's messages a little longer than needed.
// Raft's log lines come after the other effects of the step that produced
// them.
//
// # Images and compaction
//
// Every Config.ImageEntries applied entries (the daemon: 10,000; the
// simulator: 16), when nothing else is being persisted, the group persists
// the applied metadata's image (core/metadata's canonical codec) as
// io/meta's Applied record and compacts its log up to it, in one batch
// that takes its turn like a Ready's. A follower that needs compacted
// entries is sent the newest image as a raft snapshot; sends report
// nothing back, so the image counts as sent at once (ReportSnapshot) and
// a lost one is sent again when the leader's probe finds the follower
// still behind. A follower installs a snapshot like any batch, then takes
// its image for its applied metadata. A process starts from the newest
// image its store holds (its own, or an installed snapshot) and re-applies
// the committed entries above it. Either way the group emits EfApplied
// with ImageRestoredNote and the image's index, so that a watcher that
// follows every applied entry knows where it goes on.
//
// # Not built yet
//
// Membership changes (a broker outside the configured members); retiring
// the static configuration.
package ctrl
