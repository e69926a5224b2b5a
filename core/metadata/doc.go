// Package metadata is the controller's metadata state machine: the
// commands the metadata group commits (core/ctrl, on raft), their
// versioned binary codec, and the state they fold into: runtime settings,
// brokers (their exact process and storage instances, live or not,
// draining or not) and the catalogue of queues (each with the incarnation
// id its declaration got in the same command), exchanges and bindings,
// with the routing they give (exchange.go, State.Route). It is pure and
// deterministic: no clock, randomness, goroutines or I/O, and no Go map
// (state is kept in sorted slices), so every replica folds the same
// committed commands into the same state.
//
// # Contract
//
//   - Decode refuses what it cannot read exactly: an unknown version or
//     kind, truncated or trailing bytes, a field out of its range. A
//     refused command is never applied; Validate gives the same verdict
//     before a command is proposed.
//   - Apply(index, cmd) is deterministic in (state, index, cmd). A
//     command that conflicts with the state (a conditional delete whose
//     incarnation is not the current one, a setting out of range, a
//     declaration of an existing name with other arguments) is refused
//     with a reason and changes nothing; every replica refuses it alike.
//   - Incarnation ids are the index of the entry that declared the queue:
//     unique over the group's history, never reused, and equal on every
//     replica. Concurrent declarations of one name keep the first (the
//     later ones find it declared and are answered with its id); a
//     deletion names the incarnation it observed, so a delayed deletion
//     cannot remove a queue recreated since; a recreation gets a new id.
//   - A queue's assignment holds at most one learner (AddLearner): a
//     follower's broker back with a newer process on the follower's
//     storage, live, which AdmitLearner makes the member (E and W
//     unchanged); or, while the assignment has fewer members than the
//     queue's replicas, a live, undrained broker outside them, which
//     AdmitLearner adds as a member (E grows by one; refused unless W
//     stays what it was). Admission is refused while a transition is
//     pending; a transition clears the learner (image version 3 holds it).
//   - Exchanges and bindings: a declaration of an existing exchange with
//     the same attributes keeps it, with others is refused (typed
//     seam.RefusalConflict); the predeclared amq.* exchanges exist in
//     every catalogue and cannot be deleted, and no other amq. name is
//     declared (RefusalReserved); a deletion of an exchange or queue ends
//     every binding from or to it, and an auto-delete exchange goes with
//     its last binding as a source, in turn. Refusals a proposer decides
//     by carry a typed code (Refused.Code).
//   - Lifetimes (lifetime.go): a queue may be auto-delete, non-durable or
//     exclusive to a connection of a broker's process, and server-named
//     (ServerName of its entry's index). A declaration of an exclusive
//     queue by another connection is refused (seam.RefusalLocked); the
//     exclusive queues of a process end when it does (BrokerDown of it,
//     or a new process of its broker registered), and the non-durable
//     queues a broker owns when it starts a new process.
//   - Limits: BrokersMax brokers, QueuesMax queues, QueueNameBytesMax,
//     ExchangesMax exchanges, BindingsMax bindings within
//     BindingsBytesMax, and every setting's range (Settings).
//   - The image (AppendImage, DecodeImage) is the whole State as one
//     canonical byte string, for snapshots: one State has one image, and a
//     decoded image is refused unless it is one (image.go). The metadata
//     group persists it and sends it as a raft snapshot (core/ctrl).
package metadata
