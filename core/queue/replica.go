package queue

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// Ctx is what a replica needs of the node it runs in: identity, limits,
// planted bugs, the instant of the input being handled, and where effects
// go. The node owns it and sets NowNs before every step.
type Ctx struct {
	Node    seam.NodeID
	Process uint64
	Lim     seam.Limits
	Bugs    bugs.Set
	NowNs   int64
	Out     *seam.Out
	// Refused counts peer messages refused as impossible or malformed: a
	// peer's word is input, never an assertion.
	Refused uint64
	// msg is the scratch every message is decoded into: its records and
	// bodies are valid during the step only.
	msg Msg
	// ack is the scratch the body of an ack record is built in: the
	// cache keeps a copy (bodies.go).
	ack [record.AckBodyBytes]byte
}

// ackBody returns the body of the ack record of offset o, valid until the
// next call.
func (x *Ctx) ackBody(o uint64) []byte {
	binary.LittleEndian.PutUint64(x.ack[:], o)
	return x.ack[:]
}

// Read tags say who asked for a storage read: the kind in the high bits, a
// node id in the low ones.
const (
	readApply    uint64 = 1 << 32
	readDeliver  uint64 = 2 << 32
	readPeer     uint64 = 3 << 32
	readKindMask        = ^uint64(math.MaxUint32)
)

// Replica is this node's replica of one queue: its log as the replica knows
// it, and a role. The role is a value with its own step functions: the
// owner (who admits publishes, replicates, confirms and keeps the queue
// state) or a follower (who copies the owner's log and reports what it
// holds durably).
type Replica struct {
	x   *Ctx
	cfg seam.QueueConfig
	g   seam.GroupID
	w   int // W: durable copies a confirm needs

	log   replicaLog
	epoch uint64 // owner: its epoch; follower: the highest seen

	failed     bool
	failReason string
	// fenced: the controller fenced the assignment this replica serves
	// (a pending transition): it admits no more writes, why says fenced.
	fenced string
	// sealed: the log is frozen for recovery (Seal): nothing writes to it.
	sealed bool
	// leaseUntilNs: a leased queue's owner serves until then (SetLease)
	leaseUntilNs int64
	// unrepaired: the log lost records to damage (now or at an earlier
	// start) and the loss is not yet repaired from other replicas.
	unrepaired bool

	scrub scrubState

	inSync inSync // in-sync tracking, for placed queues (insync.go)

	owner    *owner    // nil unless this replica owns the queue
	follower *follower // nil unless it follows
}

// New returns the replica of queue qc on the node of x.
func New(x *Ctx, qc seam.QueueConfig) *Replica {
	r := &Replica{x: x, cfg: qc, g: seam.QueueGroup(qc.Queue), w: qc.Policy.WriteQuorum(len(qc.Replicas), qc.MinInSync)}
	r.log.truncLow = noTrunc
	if qc.Owner == x.Node {
		r.owner = newOwner(r)
	} else {
		r.follower = &follower{}
	}
	return r
}

// Group returns the replica's group id.
func (r *Replica) Group() seam.GroupID { return r.g }

// Queue returns the queue's id.
func (r *Replica) Queue() seam.QueueID { return r.cfg.Queue }

// Restore takes what the driver recovered of the log; it runs once, before
// Begin.
func (r *Replica) Restore(l *seam.LogState) {
	if len(l.Epochs) > r.x.Lim.EpochsMax {
		panic("queue: recovered epoch history exceeds EpochsMax")
	}
	r.log.restore(l)
	r.scrub.next, r.scrub.atNs = l.Start, r.x.NowNs+r.x.Lim.ScrubIntervalMs*1e6
	if r.owner != nil {
		// What lies below the start was confirmed and settled before a
		// retention deleted it: confirmed, and folded in.
		r.owner.state.applied = l.Start
		r.owner.commit = l.Start
		// and so is every copy's, whatever the followers report: an isr
		// owner's high watermark starts there, never below its confirmed
		// end.
		if !r.x.Bugs.Has(bugs.ISRWatermarkAtZero) {
			r.inSync.hw = l.Start
		}
	}
	r.epoch = seam.LastEpoch(r.log.epochs)
	if l.Damage != "" {
		// The tail past End is torn or corrupt. Discarding it is a decision
		// made here, in the open, and traced, never a silent repair; the log
		// stays marked unrepaired until what it lost is restored.
		r.storage(seam.Effect{Op: seam.OpDiscard, Offset: l.End})
	}
	r.unrepaired = l.Unrepaired
	if r.unrepaired && r.follower != nil && (!r.cfg.Learner || r.x.Bugs.Has(bugs.LearnerRepairsAtOnce)) {
		// A follower's loss is repaired by the owner's resending, which
		// matching drives anyway.
		r.storage(seam.Effect{Op: seam.OpRepaired})
		r.unrepaired = false
	}
}

// Begin runs once at start, after Restore: an owner opens its epoch.
func (r *Replica) Begin() {
	if r.owner != nil {
		r.owner.begin()
	}
}

// OnMessage handles a peer message of this queue. A message that does not
// decode is refused and counted.
func (r *Replica) OnMessage(from seam.NodeID, data []byte) {
	if r.sealed {
		return // inert: its log belongs to the recovery now
	}
	if from == r.x.Node || !r.isReplica(from) {
		// No honest peer outside the queue's replicas speaks for it: a
		// misrouted frame or a broker with a stale assignment.
		r.x.Refused++
		return
	}
	m := &r.x.msg
	if err := DecodeMsgInto(m, data); err != nil {
		r.x.Refused++
		return
	}
	switch {
	case r.owner != nil:
		r.owner.onMessage(from, m)
	default:
		r.follower.onMessage(r, from, m)
	}
}

// isReplica reports whether node holds a replica of the queue
// (an owner's peers include a new copy's learner, which no replica list
// names before its admission).
func (r *Replica) isReplica(node seam.NodeID) bool {
	for _, n := range r.cfg.Replicas {
		if n == node {
			return true
		}
	}
	return r.owner != nil && r.owner.peer(node) != nil
}

// OnStorage handles the completion of one of this replica's storage
// effects.
func (r *Replica) OnStorage(d *seam.StorageDone) {
	if d.Err != "" {
		r.fail(d.Op.String() + ": " + d.Err)
		return
	}
	if r.sealed {
		// Inert: an operation it issued before its seal completes (the
		// sealer's sync waits behind them all). What a sync made durable
		// is still worth knowing; a read answers nothing any more (an
		// owner's apply, delivery or catch-up would issue more storage
		// and messages).
		switch d.Op {
		case seam.OpSync:
			r.log.synced(d.Offset)
		case seam.OpRetain:
			r.log.retained(d.Offset, r.x.Out.Steps) // a seal reports where the log starts
		}
		return
	}
	switch d.Op {
	case seam.OpSync:
		r.log.synced(d.Offset)
		if r.owner != nil {
			r.owner.onSynced()
		} else {
			r.follower.maybeReply(r)
		}
		r.ensureSync()
	case seam.OpRead:
		r.onRead(d)
	case seam.OpVerify:
		r.scrub.onVerified(r, d)
	case seam.OpRetain:
		r.log.retained(d.Offset, r.x.Out.Steps)
	case seam.OpAppend, seam.OpTruncate, seam.OpDiscard, seam.OpRepaired, seam.OpReseed:
		// Ordering is the driver's duty; nothing to learn from success.
	default:
		panic("queue: unknown storage completion")
	}
}

func (r *Replica) onRead(d *seam.StorageDone) {
	switch d.Tag & readKindMask {
	case readApply, readDeliver, readPeer:
		if r.owner == nil {
			panic("queue: an owner's read completed on a follower")
		}
		r.owner.onRead(d)
	default:
		panic("queue: read completion with unknown tag")
	}
}

// OnTick handles the passage of time.
func (r *Replica) OnTick() {
	if r.sealed {
		return // inert: no scrub, no replication
	}
	r.scrub.tick(r)
	if r.owner != nil {
		r.owner.onTick()
	}
}

// DeadlineNs returns when the replica next needs a tick (MaxInt64: never).
func (r *Replica) DeadlineNs() int64 {
	if r.sealed {
		return math.MaxInt64
	}
	if r.failed {
		return math.MaxInt64
	}
	at := r.scrub.deadlineNs()
	if r.owner != nil {
		at = min(at, r.owner.deadlineNs())
	}
	return at
}

// OnPublish, OnSubscribe, OnAck and OnClientGone handle clients.
func (r *Replica) OnPublish(c seam.ClientID, req *seam.Request) {
	switch {
	case r.owner == nil:
		r.x.Out.Reply(c, req.ID, seam.Failed, r.cfg.Queue, 0, "not the owner")
	case r.fenced != "":
		r.x.Out.Reply(c, req.ID, seam.Failed, r.cfg.Queue, 0, r.fenced)
	default:
		r.owner.onPublish(c, req)
	}
}

// Fence stops the replica admitting writes: the controller fenced its
// assignment (a member was lost), and only recovery activates the next.
// Publishes in flight still confirm if they reach W (their copies are
// durable and a recovery finds them); new publishes, subscriptions and
// acks are refused with why.
//
// Its consumers' subscriptions end, each told (EfCancel): a fenced owner
// delivers nothing they could ack, and the queue's next owner is elsewhere
// or under a new group; a consumer left subscribed would wait for ever.
func (r *Replica) Fence(why string) {
	if r.fenced == "" {
		r.fenced = "fenced: " + why
		if r.owner != nil {
			r.owner.state.cancelAll(r.fenced)
		}
	}
}

// Fenced reports whether the replica is fenced.
func (r *Replica) Fenced() bool { return r.fenced != "" }

// Seal freezes the replica's log for recovery (docs/design/recovery.md,
// "Seals"): from now on the
// replica writes nothing to it (no append, truncation or discard: a
// follower refuses every append, of whatever epoch), so that what a seal reports is what
// the log keeps. It goes inert: it takes no peer message and no tick and
// issues no storage operation at all (no scrub, no replication read), so
// that once the operations issued before the seal completed (the sealer
// syncs behind them) nothing of it is in flight and the recovery owns the
// log. It fences too. There is no unseal: recovery activates a new
// assignment, with a new replica.
func (r *Replica) Seal(why string) {
	r.Fence(why)
	if r.x.Bugs.Has(bugs.SealUnfrozen) {
		return // planted: fenced, not frozen
	}
	r.sealed = true
	if o := r.owner; o != nil {
		// Its publishes in flight: inert, it will never confirm them, and
		// each may or may not be in the history the recovery installs.
		for _, p := range o.pending {
			r.x.Out.Reply(p.client, p.reqID, seam.Unknown, r.cfg.Queue, 0, "sealed for recovery: in the recovered history or not")
		}
		o.pending = o.pending[:0]
	}
}

// SetLease gives a leased queue's replica its node's lease: it serves
// (confirms, delivers, admits publishes) until untilNs. A renewal lets an
// owner go on with what waited.
func (r *Replica) SetLease(untilNs int64) {
	was := r.leased()
	r.leaseUntilNs = untilNs
	if o := r.owner; o != nil && !was && r.leased() && !r.sealed && !r.failed {
		o.advanceCommit()
		o.state.dispatch()
	}
}

// leased reports whether the replica may serve now: not a leased queue, or
// its lease holds.
func (r *Replica) leased() bool { return !r.cfg.Leased || r.x.NowNs < r.leaseUntilNs }

// Owns reports whether the replica is its queue's owner.
func (r *Replica) Owns() bool { return r.owner != nil }

// PublishesConfirmed returns how many publishes this replica confirmed as
// the owner (0 on a follower).
func (r *Replica) PublishesConfirmed() uint64 {
	if r.owner == nil {
		return 0
	}
	return r.owner.confirmed
}

// Sealed reports whether the replica's log is frozen.
func (r *Replica) Sealed() bool { return r.sealed }

// LogState is the log as issued, as a start input would describe it (a
// sealed replica's is what its log holds once the seal's sync completed).
func (r *Replica) LogState() seam.LogState {
	l := &r.log
	return seam.LogState{Group: r.g, Start: l.start, End: l.end, Epochs: slices.Clone(l.epochs), Unrepaired: r.unrepaired}
}

// Retained describes the log as issued: its bounds [start, end), the epoch
// of its last record (0 when empty), and whether it lost records to
// damage not yet repaired. Once sealed, it no longer changes.
func (r *Replica) Retained() (start, end, lastEpoch uint64, damaged bool) {
	l := &r.log
	if l.end > l.start {
		lastEpoch = seam.EpochAt(l.epochs, l.end-1)
	}
	return l.start, l.end, lastEpoch, r.unrepaired
}

// refusedHere answers a request only a serving owner takes when this
// replica cannot take it (not the owner, its log failed, fenced), and
// reports whether it did.
func (r *Replica) refusedHere(c seam.ClientID, req *seam.Request) bool {
	switch {
	case r.owner == nil:
		r.x.Out.Reply(c, req.ID, seam.Failed, r.cfg.Queue, 0, "not the owner")
	case r.failed:
		r.x.Out.Reply(c, req.ID, seam.Failed, r.cfg.Queue, req.Offset, "log failed: "+r.failReason)
	case r.fenced != "":
		r.x.Out.Reply(c, req.ID, seam.Failed, r.cfg.Queue, req.Offset, r.fenced)
	default:
		return false
	}
	return true
}

// OnSubscribe starts a consumer.
func (r *Replica) OnSubscribe(c seam.ClientID, req *seam.Request) {
	if !r.refusedHere(c, req) {
		r.owner.state.onSubscribe(c, req)
	}
}

// OnAck settles a delivery. An accepted ack has no reply (as AMQP's
// basic.ack has none): it is a record of the log like any other.
func (r *Replica) OnAck(c seam.ClientID, req *seam.Request) {
	switch {
	case r.owner == nil:
		r.x.Out.Reply(c, req.ID, seam.Failed, r.cfg.Queue, 0, "not the owner")
	case r.failed:
		r.x.Out.Reply(c, req.ID, seam.Failed, r.cfg.Queue, req.Offset, "log failed: "+r.failReason)
	case !r.owner.ready:
		r.x.Out.Reply(c, req.ID, seam.Failed, r.cfg.Queue, req.Offset, "epoch not ready")
	case r.fenced != "":
		r.x.Out.Reply(c, req.ID, seam.Failed, r.cfg.Queue, req.Offset, r.fenced)
	default:
		r.owner.onAck(c, req)
	}
}

// OnRequeue returns a delivery to the queue, unsettled (seam.ReqRequeue):
// no reply when accepted, as OnAck.
func (r *Replica) OnRequeue(c seam.ClientID, req *seam.Request) {
	if !r.refusedHere(c, req) && !r.owner.state.requeue(c, req.Offset) {
		r.x.Out.Reply(c, req.ID, seam.Failed, r.cfg.Queue, req.Offset, "no such delivery")
	}
}

// OnPurge settles what is ready on the owner (seam.ReqPurge).
func (r *Replica) OnPurge(c seam.ClientID, req *seam.Request) {
	switch {
	case r.refusedHere(c, req):
	case !r.owner.ready || !r.owner.state.rebuiltNow():
		r.x.Out.Reply(c, req.ID, seam.Failed, r.cfg.Queue, 0, "epoch not ready")
	default:
		r.x.Out.Reply(c, req.ID, seam.Confirmed, r.cfg.Queue, uint64(r.owner.purge(seam.PurgeRecordsMax)), "")
	}
}

// OnCount answers how many messages are ready and how many consumers the
// queue has (seam.ReqCount), on its owner, and the incarnation of the queue
// it serves (a deletion names it).
func (r *Replica) OnCount(c seam.ClientID, req *seam.Request, incarnation uint64) {
	if !r.refusedHere(c, req) {
		s := &r.owner.state
		r.x.Out.ReplyCounts(c, req.ID, r.cfg.Queue, s.ready(), len(s.consumers), incarnation)
	}
}

// OnClientGone returns a lost connection's deliveries.
func (r *Replica) OnClientGone(c seam.ClientID) {
	if r.owner != nil {
		r.owner.state.onClientGone(c)
	}
}

// storage emits a storage effect on this replica's log.
func (r *Replica) storage(e seam.Effect) {
	if r.sealed {
		panic(fmt.Sprintf("queue %d: a sealed replica issued %s", r.cfg.Queue, e.Op))
	}
	e.Group = r.g
	r.x.Out.Storage(e)
}

// send encodes m (with this process's number) and sends it to a peer.
func (r *Replica) send(to seam.NodeID, m Msg) {
	m.Process = r.x.Process
	buf := AppendMsg(r.x.Out.Grow(MsgSize(&m)), &m)
	r.x.Out.Send(r.g, to, buf)
}

// appendLocal appends one record the owner writes (or fetched).
func (r *Replica) appendLocal(rec record.Record) {
	r.noteEpoch(rec.Epoch, rec.Offset)
	rec = r.log.appendCached(rec, r.x.Lim.CacheBytesMax, r.x.Out.Steps)
	r.storage(seam.Effect{Op: seam.OpAppend, Records: r.x.Out.Record(rec)})
	r.ensureSync()
}

func (r *Replica) noteEpoch(e, offset uint64) {
	if !r.log.noteEpoch(e, offset) {
		return
	}
	if len(r.log.epochs) > r.x.Lim.EpochsMax {
		panic("queue: epoch history full")
	}
}

// truncate removes the records from o on.
func (r *Replica) truncate(o uint64) {
	if r.owner != nil {
		panic("queue: an owner never truncates its log")
	}
	if !r.log.truncate(o) {
		return
	}
	if r.follower != nil {
		r.follower.matchEnd = min(r.follower.matchEnd, o)
	}
	r.storage(seam.Effect{Op: seam.OpTruncate, Offset: o})
}

// ensureSync issues a sync when unsynced records exist and none is in
// flight: one sync covers every append since the last (group commit).
func (r *Replica) ensureSync() {
	if r.failed || r.sealed || !r.log.needSync() {
		// (A sealed replica issues nothing: the sealer syncs behind it.)
		return
	}
	r.storage(seam.Effect{Op: seam.OpSync, Offset: r.log.startSync()})
}

// fail puts the log in the failed state: the replica stops using it.
func (r *Replica) fail(reason string) {
	if r.failed {
		return
	}
	r.failed = true
	r.failReason = reason
	if r.owner != nil {
		r.owner.onFail(reason)
	}
}

// prevEpoch returns the epoch of the record before offset o.
func (r *Replica) prevEpoch(o uint64) uint64 {
	if o == 0 {
		return 0
	}
	return seam.EpochAt(r.log.epochs, o-1)
}

// Invariants checks what must hold between steps; it panics with what broke
// (a programmer error). The simulator calls it after every step.
func (r *Replica) Invariants() {
	l := &r.log
	if l.start > l.end || l.syncedEnd > l.end {
		panic(fmt.Sprintf("queue %d: log [%d,%d) synced %d", r.cfg.Queue, l.start, l.end, l.syncedEnd))
	}
	if l.cacheStart+uint64(len(l.cache)) != l.end && len(l.cache) > 0 {
		panic(fmt.Sprintf("queue %d: cache [%d,+%d) does not end at the log end %d", r.cfg.Queue, l.cacheStart, len(l.cache), l.end))
	}
	if len(l.cache) > 0 && l.cacheStart < l.start && !l.retaining {
		panic(fmt.Sprintf("queue %d: cache [%d,+%d) holds records below the log start %d", r.cfg.Queue, l.cacheStart, len(l.cache), l.start))
	}
	for i := 1; i < len(l.epochs); i++ {
		if l.epochs[i].Epoch <= l.epochs[i-1].Epoch || l.epochs[i].Offset < l.epochs[i-1].Offset {
			panic(fmt.Sprintf("queue %d: epoch history out of order: %v", r.cfg.Queue, l.epochs))
		}
	}
	if n := len(l.epochs); n > 0 && l.epochs[n-1].Offset >= l.end {
		panic(fmt.Sprintf("queue %d: last epoch %v beyond the log end %d", r.cfg.Queue, l.epochs[n-1], l.end))
	}
	if n := len(l.epochs); n > 0 && r.epoch < l.epochs[n-1].Epoch {
		panic(fmt.Sprintf("queue %d: last epoch %v above the replica's epoch %d", r.cfg.Queue, l.epochs[n-1], r.epoch))
	}
	if r.owner != nil {
		r.owner.invariants()
	} else {
		r.follower.invariants(r)
	}
}
