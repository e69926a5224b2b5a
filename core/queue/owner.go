package queue

import (
	"fmt"
	"math"
	"slices"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/quorum"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/seam"
)

// owner is the role of the replica that admits publishes. It opens a new
// epoch on every start with an epoch record, made durable before any record
// of the epoch leaves it; replicates to its followers within a window per
// follower; confirms once W replicas, itself among them, report a record
// durable; and keeps the queue state (deliveries and acks). An owner whose
// log lost records to damage serves nothing: only a recovery, which
// installs a verified history, may start an owner on such a log.
type owner struct {
	r       *Replica
	opened  bool   // its epoch record is issued (begin opened the epoch)
	ready   bool   // the epoch record is durable: replication may start
	marker  uint64 // offset of this epoch's record
	peers   []progress
	commit  uint64 // confirmed end: W replicas hold [0, commit) durably
	pending []pendingPublish
	state   queueState
	scratch [seam.ReplicasMax]uint64
	// confirmed counts the publishes this owner confirmed (a recovered
	// owner's first one is its recovery's reattach stage)
	confirmed uint64
}

type pendingPublish struct {
	offset uint64
	client seam.ClientID
	reqID  uint64
}

func newOwner(r *Replica) *owner {
	o := &owner{r: r}
	for i, n := range r.cfg.Replicas {
		if n != r.x.Node {
			p := progress{node: n, caughtUpNs: r.x.NowNs, reportNs: r.x.NowNs, reportEnd: r.log.end, reportEndNs: r.x.NowNs}
			if r.cfg.Processes != nil {
				p.process, p.member, p.named = r.cfg.Processes[i], true, r.cfg.Processes[i]
			}
			o.peers = append(o.peers, p)
		}
	}
	o.state.init(o)
	return o
}

// begin runs once at start: the owner opens a new epoch, unless its log
// lost records to damage (its unrepaired mark): a confirmed record may be
// among them, and an epoch opened on that log would confirm past the
// loss and have the followers truncate to it. Such an owner is fenced and
// waits for recovery, which installs a verified history (and clears the
// mark) before any group starts on the log again. A placed queue's owner
// never begins so: its group starts only on a log its installation
// verified. (With a single replica there is nothing to lose to: it opens
// its epoch on what it kept, as the only copy.)
func (o *owner) begin() {
	if o.r.unrepaired && len(o.peers) > 0 {
		o.r.Fence("its log lost records to damage: only a recovery may start an owner on it")
		return
	}
	o.openEpoch()
}

// openEpoch starts the owner's new epoch with its epoch record, above its
// own log's epochs (and the assignment's base).
func (o *owner) openEpoch() {
	r := o.r
	o.opened = true
	if r.x.Bugs.Has(bugs.EpochReused) && r.epoch != 0 {
		// planted: the new owner carries on in the last epoch its log
		// holds (the previous owner's), not one above every epoch written
	} else {
		r.epoch = max(r.epoch, r.cfg.EpochBase) + 1
	}
	o.marker = r.log.end
	for i := range o.peers {
		// Start each follower at this epoch's record, as raft probes at
		// the log end: one that holds the log below it matches at once; one
		// that does not rejects, and its history says where the logs part.
		// (Sending the whole log from 0 cost a restart a full re-read.)
		o.peers[i].next = o.marker
		o.peers[i].lastSendNs = r.x.NowNs
	}
	r.appendLocal(record.Record{Epoch: r.epoch, Offset: r.log.end, Kind: record.KindEpoch})
}

func (o *owner) onMessage(from seam.NodeID, m *Msg) {
	switch m.Kind {
	case MsgAppendReply:
		o.onAppendReply(from, m)
	}
}

// onSynced runs after a sync completed: the epoch may become ready, and
// the confirmed end may move.
func (o *owner) onSynced() {
	r := o.r
	if !o.ready && o.opened && !r.failed && !r.sealed && r.log.syncedEnd > o.marker {
		o.ready = true
		if r.unrepaired {
			// A single replica's loss: nothing can restore it, and the
			// epoch opened on what it kept is durable now.
			r.storage(seam.Effect{Op: seam.OpRepaired})
			r.unrepaired = false
		}
		for i := range o.peers {
			o.sendTo(&o.peers[i])
		}
	}
	o.advanceCommit()
}

func (o *owner) onFail(reason string) {
	o.ready = false
	// Records of pending publishes may or may not have reached storage.
	outcome := seam.Unknown
	if o.r.x.Bugs.Has(bugs.FailNotUnknown) {
		outcome = seam.Failed // planted
	}
	for _, p := range o.pending {
		o.r.x.Out.Reply(p.client, p.reqID, outcome, o.r.cfg.Queue, 0, "log failed: "+reason)
	}
	o.pending = o.pending[:0]
}

func (o *owner) onRead(d *seam.StorageDone) {
	switch d.Tag & readKindMask {
	case readApply, readDeliver:
		o.state.onRead(d)
	case readPeer:
		node := seam.NodeID(d.Tag &^ readKindMask)
		for i := range o.peers {
			p := &o.peers[i]
			if p.node != node {
				continue
			}
			p.reading = false
			if len(d.Records) > 0 && d.Records[0].Offset == p.next && o.ready {
				o.sendRecords(p, d.Records)
			}
			o.sendTo(p)
		}
	}
}

func (o *owner) onTick() {
	r := o.r
	if !o.ready {
		return
	}
	o.retain()
	resendNs := r.x.Lim.ResendMs * 1e6
	heartbeatNs := o.heartbeatNs()
	for i := range o.peers {
		p := &o.peers[i]
		if !o.waiting(p) && r.x.NowNs-p.lastSendNs >= heartbeatNs && !r.x.Bugs.Has(bugs.NoHeartbeat) {
			// All is well as far as the owner knows: ask anyway, since a
			// follower that restarted says nothing until asked.
			o.probe(p)
			continue
		}
		if o.waiting(p) && r.x.NowNs-p.lastSendNs >= resendNs {
			// No progress for a while: the messages may be lost. Go back to
			// what the follower reported durable and send again.
			if p.matched {
				p.next = p.durable
			}
			p.batches, p.slow = p.batches[:0], true
			before := len(r.x.Out.Effects)
			o.sendTo(p)
			if len(r.x.Out.Effects) == before && !p.reading {
				o.probe(p)
			}
		}
	}
}

// heartbeatNs is how often the owner probes a follower it has heard all
// it needs from: Limits.HeartbeatMs, or a third of the in-sync lag time
// when that is shorter, so that an idle follower's last caught-up instant
// is never older than the lag at the owner's checks (with a lag below
// the heartbeat, an idle queue's followers left and rejoined the in-sync
// set at every probe).
func (o *owner) heartbeatNs() int64 {
	hb := o.r.x.Lim.HeartbeatMs * 1e6
	if s := &o.r.inSync; s.tracking && s.lagNs > 0 {
		hb = min(hb, max(s.lagNs/3, 1))
	}
	return hb
}

// waiting reports whether the owner expects a reply from p.
func (o *owner) waiting(p *progress) bool {
	return !p.matched || p.durable < o.r.log.end
}

func (o *owner) deadlineNs() int64 {
	if !o.ready {
		return math.MaxInt64
	}
	at := int64(math.MaxInt64)
	resendNs := o.r.x.Lim.ResendMs * 1e6
	heartbeatNs := o.heartbeatNs()
	for i := range o.peers {
		p := &o.peers[i]
		if o.waiting(p) {
			at = min(at, p.lastSendNs+resendNs)
		} else {
			at = min(at, p.lastSendNs+heartbeatNs)
		}
	}
	return at
}

// sendTo sends p what it lacks, within its window.
func (o *owner) sendTo(p *progress) {
	r := o.r
	if !o.ready || p.reading {
		return
	}
	if r.w == 1 && r.x.Bugs.Has(bugs.StarveFollowers) {
		return // planted: followers of a W=1 queue get nothing
	}
	lim := &r.x.Lim
	l := &r.log
	if p.next < l.start {
		// The follower needs what the owner no longer holds: it reseeds
		// from the owner's start (retain.go). While a retention is in
		// flight the start is the one asked for, and the log may keep
		// more: the completion tells, and the follower waits for it.
		if !l.retaining {
			o.sendReset(p)
		}
		return
	}
	for p.next < l.end {
		window := lim.WindowBatchesMax
		if !p.matched || p.slow {
			// Until the follower matches or answers, one batch is enough.
			window = 1
		}
		if len(p.batches) >= window {
			return
		}
		if p.next < l.cacheStart {
			p.reading = true
			r.storage(seam.Effect{Op: seam.OpRead, Offset: p.next, Count: lim.BatchRecordsMax, Tag: readPeer | uint64(p.node)})
			return
		}
		i := int(p.next - l.cacheStart)
		j, bytes := i, 0
		for j < len(l.cache) && j-i < lim.BatchRecordsMax && (j == i || bytes+len(l.cache[j].Body) <= lim.BatchBytesMax) {
			bytes += len(l.cache[j].Body)
			j++
		}
		o.sendRecords(p, l.cache[i:j:j])
	}
}

func (o *owner) sendRecords(p *progress, recs []record.Record) {
	r := o.r
	prev := recs[0].Offset
	r.send(p.node, Msg{Kind: MsgAppend, Epoch: r.epoch, Prev: prev, PrevEpoch: r.prevEpoch(prev), Commit: o.commit, Start: r.log.start, Records: recs})
	p.next = prev + uint64(len(recs))
	p.lastSendNs = r.x.NowNs
	if len(p.batches) >= r.x.Lim.WindowBatchesMax {
		panic("queue: more batches in flight than the window")
	}
	p.batches = append(p.batches, p.next)
}

// probe sends an append without records: a heartbeat that asks the
// follower where its log stands.
func (o *owner) probe(p *progress) {
	r := o.r
	if p.next < r.log.start && !r.log.retaining {
		o.sendReset(p)
		return
	}
	r.send(p.node, Msg{Kind: MsgAppend, Epoch: r.epoch, Prev: p.next, PrevEpoch: r.prevEpoch(p.next), Commit: o.commit, Start: r.log.start})
	p.lastSendNs = r.x.NowNs
}

// sendReset sends p an append without records at the owner's start that
// resets its log there unless it matches (a reseed), with the owner's
// history below the start; what follows goes from the start.
func (o *owner) sendReset(p *progress) {
	r := o.r
	l := &r.log
	var below []seam.EpochStart
	for _, e := range l.epochs {
		if e.Offset < l.start {
			below = append(below, e)
		}
	}
	r.send(p.node, Msg{Kind: MsgAppend, Epoch: r.epoch, Prev: l.start, PrevEpoch: r.prevEpoch(l.start), Commit: o.commit, Start: l.start,
		Reset: true, Epochs: below})
	p.next = l.start
	p.lastSendNs = r.x.NowNs
}

func (o *owner) onAppendReply(from seam.NodeID, m *Msg) {
	r := o.r
	if m.Epoch != r.epoch || !o.ready {
		return // a reply to an older epoch says nothing about this one
	}
	p := o.peer(from)
	if p == nil || m.Process < p.process {
		return // unknown, or an older process whose reports may not hold
	}
	if p.member && m.Process != p.process {
		// A placed queue's member is the process its assignment names:
		// a newer one of its broker is no member, and its reports never
		// count (it rejoins through a recovery).
		return
	}
	if m.Process > p.process {
		// The follower restarted: what its old process reported durable may
		// have been lost since (a corrupt record and what follows). Count
		// only what the new process reports.
		p.restarted(m.Process)
	}
	p.reportNs = r.x.NowNs
	if m.Ok {
		if m.End > r.log.end {
			r.x.Refused++ // a report of records the owner never wrote
			return
		}
		p.acked(m.End)
		p.reported(m.End, r.log.end, r.x.NowNs)
		if p.learning && p.cut == 0 {
			p.cut = max(r.log.end, 1) // the fixed cut it catches up to (learner.go)
		}
		o.advanceCommit()
	} else {
		if len(m.Epochs) > r.x.Lim.EpochsMax {
			r.x.Refused++ // a follower never holds more
			return
		}
		// Where the logs part, from where both hold records on (below
		// either's start they are settled and gone); a follower whose
		// end lies below the owner's start reseeds (sendTo).
		p.rejected(seam.DivergenceFrom(r.log.epochs, r.log.end, m.Epochs, m.End, max(r.log.start, m.Start)))
	}
	o.sendTo(p)
}

func (o *owner) peer(n seam.NodeID) *progress {
	for i := range o.peers {
		if o.peers[i].node == n {
			return &o.peers[i]
		}
	}
	return nil
}

// advanceCommit moves the confirmed end (W replicas hold [0, end)
// durably, or for an isr queue the high watermark), then confirms and
// applies.
func (o *owner) advanceCommit() {
	r := o.r
	if !r.leased() {
		return // its view of the metadata is stale: it may be fenced already
	}
	o.raiseWatermark()
	var c uint64
	var ok bool
	if r.cfg.Policy == seam.ISR {
		c, ok = o.isrConfirmable()
	} else {
		c, ok = o.quorumConfirmable()
	}
	if !ok {
		return
	}
	c = min(c, r.log.end)
	if c <= o.marker && r.cfg.Leased {
		// Raft's rule, for placed queues (whose owners change with
		// recoveries): nothing below this epoch's own first record is
		// confirmed until that record is; the earlier epochs' records are
		// confirmed at once with it, so the confirmed end (and an isr
		// queue's watermark) starts above every earlier owner's.
		return
	}
	if c <= o.commit {
		return
	}
	o.commit = c
	k := 0
	for k < len(o.pending) && o.pending[k].offset < c {
		p := o.pending[k]
		r.x.Out.Reply(p.client, p.reqID, seam.Confirmed, r.cfg.Queue, p.offset, "")
		k++
	}
	o.confirmed += uint64(k)
	o.pending = o.pending[:copy(o.pending, o.pending[k:])]
	o.state.apply()
}

// quorumConfirmable is the highest offset that the owner and W-1 matching
// followers hold durably.
func (o *owner) quorumConfirmable() (uint64, bool) {
	r := o.r
	c := r.log.syncedEnd
	need := r.w - 1
	if need > 0 && r.x.Bugs.Has(bugs.ConfirmWithoutOwner) {
		c = math.MaxUint64 // planted: the owner's own sync is not waited for
	}
	if need > 0 && r.x.Bugs.Has(bugs.ConfirmShort) {
		need-- // planted: one durable copy fewer than W
		c = min(c, r.log.syncedEnd)
	}
	var durables [seam.ReplicasMax]uint64
	n := 0
	for i := range o.peers {
		if p := &o.peers[i]; p.matched && (!p.learning || r.x.Bugs.Has(bugs.LearnerCountsTowardW)) {
			durables[n] = p.durable // (a learner never counts: learner.go)
			n++
		}
	}
	return quorum.ConfirmedEnd(c, durables[:n], need, o.scratch[:0])
}

// --- clients ---

func (o *owner) onPublish(c seam.ClientID, req *seam.Request) {
	r := o.r
	q := r.cfg.Queue
	s := &o.state
	switch {
	case r.failed:
		r.x.Out.Reply(c, req.ID, seam.Failed, q, 0, "log failed: "+r.failReason)
	case !o.ready || !r.leased():
		// (Without its lease, as before its epoch: a client retries.)
		r.x.Out.Reply(c, req.ID, seam.Failed, q, 0, "epoch not ready")
	case o.belowMinInSync() != "":
		r.x.Out.Reply(c, req.ID, seam.Failed, q, 0, o.belowMinInSync())
	case len(req.Body) > record.BodyBytesMax:
		r.x.Out.Reply(c, req.ID, seam.Failed, q, 0, "body too large")
	case len(o.pending) >= r.x.Lim.PendingPublishesMax:
		r.x.Out.Reply(c, req.ID, seam.Failed, q, 0, "too many publishes in flight")
	case s.backlog()+len(o.pending) >= r.x.Lim.ReadyMax:
		r.x.Out.Reply(c, req.ID, seam.Failed, q, 0, "queue full")
	default:
		o.pending = append(o.pending, pendingPublish{offset: r.log.end, client: c, reqID: req.ID})
		r.appendLocal(record.Record{Epoch: r.epoch, Offset: r.log.end, Kind: record.KindPublish, Body: req.Body})
		for i := range o.peers {
			o.sendTo(&o.peers[i])
		}
		if r.x.Bugs.Has(bugs.DeliverUncommitted) {
			s.apply()
		}
	}
}

func (o *owner) onAck(c seam.ClientID, req *seam.Request) {
	r := o.r
	if !o.state.settle(c, req.Offset) {
		r.x.Out.Reply(c, req.ID, seam.Failed, r.cfg.Queue, req.Offset, "no such delivery")
		return
	}
	r.appendLocal(record.Record{Epoch: r.epoch, Offset: r.log.end, Kind: record.KindAck, Body: r.x.ackBody(req.Offset)})
	for i := range o.peers {
		o.sendTo(&o.peers[i])
	}
	o.state.dispatch()
}

// purge settles up to max ready messages: an ack record each, the
// returned ones first, then in offset order; it returns how many.
func (o *owner) purge(max int) int {
	r := o.r
	s := &o.state
	n := 0
	for n < max {
		off, redelivered, ok := s.nextToDeliver()
		if !ok {
			break
		}
		s.take(redelivered)
		r.appendLocal(record.Record{Epoch: r.epoch, Offset: r.log.end, Kind: record.KindAck, Body: r.x.ackBody(off)})
		n++
	}
	if n > 0 {
		for i := range o.peers {
			o.sendTo(&o.peers[i])
		}
	}
	return n
}

func (o *owner) invariants() {
	r := o.r
	if o.commit > r.log.syncedEnd && !r.x.Bugs.Has(bugs.ConfirmWithoutOwner) {
		panic(fmt.Sprintf("queue %d: confirmed end %d above the owner's durable end %d", r.cfg.Queue, o.commit, r.log.syncedEnd))
	}
	for i := 1; i < len(o.pending); i++ {
		if o.pending[i].offset <= o.pending[i-1].offset {
			panic(fmt.Sprintf("queue %d: pending publishes out of offset order", r.cfg.Queue))
		}
	}
	if len(o.pending) > 0 && o.pending[0].offset < o.commit {
		panic(fmt.Sprintf("queue %d: a publish at %d below the confirmed end %d still pending", r.cfg.Queue, o.pending[0].offset, o.commit))
	}
	if len(o.peers) > len(r.cfg.Replicas) || len(o.peers) >= seam.ReplicasMax {
		panic(fmt.Sprintf("queue %d: %d peers for %d replicas", r.cfg.Queue, len(o.peers), len(r.cfg.Replicas)))
	}
	for i := range o.peers {
		p := &o.peers[i]
		if p.named == 0 && p.member && !p.learning && !slices.Contains(r.cfg.Replicas, p.node) {
			panic(fmt.Sprintf("queue %d: n%d is a peer outside the replicas and no learner", r.cfg.Queue, p.node))
		}
		if len(p.batches) > r.x.Lim.WindowBatchesMax {
			panic(fmt.Sprintf("queue %d: %d batches in flight to n%d", r.cfg.Queue, len(p.batches), p.node))
		}
		if p.matched && p.durable > r.log.end {
			panic(fmt.Sprintf("queue %d: n%d durable %d beyond the log end %d", r.cfg.Queue, p.node, p.durable, r.log.end))
		}
	}
	r.inSync.invariants(r)
	o.state.invariants()
}
