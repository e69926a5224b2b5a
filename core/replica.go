package core

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/record"
)

// Read tags say who asked for a storage read: the kind in the high bits, a
// node id in the low ones.
const (
	readApply    uint64 = 1 << 32
	readDeliver  uint64 = 2 << 32
	readPeer     uint64 = 3 << 32
	readFetch    uint64 = 4 << 32
	readScrub    uint64 = 5 << 32
	readKindMask        = ^uint64(math.MaxUint32)
)

// noTrunc marks "no truncation since the sync in flight was issued".
const noTrunc = math.MaxUint64

// replica is this broker's copy of one queue: its log as the core knows it,
// and, on the owner, replication and queue state.
type replica struct {
	b   *Broker
	cfg QueueConfig
	w   int

	isOwner    bool
	failed     bool
	failReason string

	// The log as issued to storage: [start, end); synced is the durable end.
	start, end   uint64
	synced       uint64
	epochs       []EpochStart
	syncInFlight bool
	syncTarget   uint64
	truncLow     uint64 // lowest truncation since the sync in flight was issued

	epoch uint64 // owner: its epoch; follower: the highest seen

	// Owner.
	ready   bool // the epoch record is durable: replication may start
	marker  uint64
	peers   []peer
	commit  uint64 // confirmed end: W replicas hold [0, commit) durably
	pending []pendingPublish

	cache      []record.Record // records [cacheStart, end) kept in memory
	cacheStart uint64
	cacheBytes int64

	// Queue state, rebuilt from the log by applying records below commit.
	applied        uint64
	applyReading   bool
	readyQ         []uint64 // committed publishes not yet delivered, ascending
	readyHead      int
	ackedEarly     map[uint64]struct{} // acked offsets still in readyQ (rebuild)
	outstanding    map[uint64]ClientID // delivered, unacked
	redeliver      []uint64            // returned deliveries, ascending
	consumers      []*consumer         // ascending client id
	rr             int                 // round-robin position in consumers
	deliverReading bool
	deliverBuf     []record.Record // the last read done for delivery

	// Owner recovery: an owner whose log lost records to damage rebuilds it
	// from the most complete replica before it opens an epoch.
	unrepaired   bool
	recovering   bool
	queriedNs    int64 // when the log queries or the fetch were last sent
	source       int   // index in peers of the replica fetched from
	sourceEnd    uint64
	fetching     bool
	reportEpochs uint64 // the highest epoch any report named

	// Scrub: the next offset to verify by reading it, whether a read is out,
	// and when the next may go.
	scrubNext    uint64
	scrubReading bool
	scrubAtNs    int64

	// Follower.
	ownerProcess uint64 // the newest owner process heard from
	matchEnd     uint64 // the log below matchEnd matches the owner's in epoch
	replyWanted  bool
	replyEnd     uint64 // the last End reported
}

type peer struct {
	node       NodeID
	process    uint64 // the newest process of the peer heard from
	matched    bool   // an Ok reply of this epoch arrived
	next       uint64 // next offset to send
	durable    uint64 // durable, matching end reported in this epoch
	lastSendNs int64
	reading    bool
	// batches: the end offsets of the append messages in flight beyond
	// durable, ascending; at most WindowBatchesMax (one while slow).
	batches []uint64
	// slow: a resend timed out; send one batch at a time until it answers,
	// so a lost or stalled follower costs one message per resend interval.
	slow bool

	// recovery: the log the peer reported
	reported  bool
	repEnd    uint64
	repEpochs []EpochStart
}

type pendingPublish struct {
	offset uint64
	client ClientID
	reqID  uint64
}

type consumer struct {
	client      ClientID
	prefetch    int
	outstanding []uint64
}

func newReplica(b *Broker, qc QueueConfig) *replica {
	r := &replica{
		b:           b,
		cfg:         qc,
		w:           qc.Policy.WriteQuorum(len(qc.Replicas)),
		isOwner:     qc.Owner == b.node,
		truncLow:    noTrunc,
		ackedEarly:  map[uint64]struct{}{},
		outstanding: map[uint64]ClientID{},
	}
	if r.isOwner {
		for _, n := range qc.Replicas {
			if n != b.node {
				r.peers = append(r.peers, peer{node: n})
			}
		}
	}
	return r
}

func (r *replica) restore(l *LogState) {
	if len(l.Epochs) > r.b.lim.EpochsMax {
		panic("core: recovered epoch history exceeds EpochsMax")
	}
	r.start, r.end, r.synced = l.Start, l.End, l.End
	r.scrubNext, r.scrubAtNs = l.Start, r.b.nowNs+r.b.lim.ScrubIntervalMs*1e6
	r.epochs = append(r.epochs[:0], l.Epochs...)
	r.cacheStart = l.End
	r.applied = l.Start
	if n := len(r.epochs); n > 0 {
		r.epoch = r.epochs[n-1].Epoch
	}
	if l.Damage != "" {
		// The tail past End is torn or corrupt. Discarding it is a decision
		// made here, in the open, and traced, never a silent repair; the log
		// stays marked unrepaired until what it lost is restored.
		r.b.storage(Effect{Op: OpDiscard, Queue: r.cfg.Queue, Offset: l.End})
	}
	r.unrepaired = l.Unrepaired
	if r.unrepaired && !r.isOwner {
		// A follower's loss is repaired by the owner's resending, which
		// matching drives anyway.
		r.b.storage(Effect{Op: OpRepaired, Queue: r.cfg.Queue})
		r.unrepaired = false
	}
}

// begin runs once at start, after restore. An owner opens a new epoch: its
// first record makes the epoch durable before any record of it leaves.
func (r *replica) begin() {
	if !r.isOwner {
		return
	}
	if r.unrepaired && len(r.peers) > 0 {
		// The owner's log lost records: a confirmed one may be among them.
		// Every confirmed record is on W replicas and at most W-1 lose it,
		// so some replica still has it, and the most complete log (highest
		// last epoch, then longest) holds every confirmed record. Ask every
		// follower: one that lost records itself cannot yet prove which.
		r.recovering = true
		r.queryLogs()
		return
	}
	r.openEpoch()
}

// openEpoch starts the owner's new epoch with its epoch record.
func (r *replica) openEpoch() {
	r.recovering = false
	r.epoch = max(r.epoch, r.reportEpochs) + 1
	if r.b.bugs.Has(bugs.SameEpochOnRestart) && r.epoch > 1 {
		r.epoch-- // planted: reopen the old epoch
	}
	r.marker = r.end
	r.appendLocal(record.Record{Epoch: r.epoch, Offset: r.end, Kind: record.KindEpoch})
}

func (r *replica) queryLogs() {
	r.queriedNs = r.b.nowNs
	for i := range r.peers {
		if !r.peers[i].reported {
			r.b.send(r.peers[i].node, Message{Kind: MsgLogQuery, Queue: r.cfg.Queue, Epoch: r.epoch})
		}
	}
}

func (r *replica) onLogReport(from NodeID, m *Message) {
	if !r.recovering || r.fetching || len(m.Epochs) > r.b.lim.EpochsMax {
		return
	}
	for i := range r.peers {
		p := &r.peers[i]
		if p.node == from && m.Process >= p.process {
			p.process = m.Process
			p.reported, p.repEnd = true, m.End
			p.repEpochs = append(p.repEpochs[:0], m.Epochs...)
			// The follower may have seen a higher epoch than its log holds
			// (a probe of an epoch whose records it never kept): the new
			// epoch must be above that too, or the follower fences it out
			// forever (seed 431: epoch 3 opened over a follower at 4).
			if !r.b.bugs.Has(bugs.EpochBelowSeen) {
				r.reportEpochs = max(r.reportEpochs, m.Epoch)
			}
		}
	}
	for i := range r.peers {
		if !r.peers[i].reported {
			return
		}
	}
	// Every follower reported: pick the most complete log, ours on a tie.
	best, bestEpoch, bestEnd := -1, lastEpoch(r.epochs), r.end
	for i := range r.peers {
		p := &r.peers[i]
		r.reportEpochs = max(r.reportEpochs, lastEpoch(p.repEpochs))
		e := lastEpoch(p.repEpochs)
		better := e > bestEpoch || (e == bestEpoch && p.repEnd > bestEnd)
		if r.b.bugs.Has(bugs.RecoveryWorstSource) {
			better = e < bestEpoch || (e == bestEpoch && p.repEnd < bestEnd) // planted
		}
		if better {
			best, bestEpoch, bestEnd = i, e, p.repEnd
		}
	}
	if best < 0 {
		r.openEpoch()
		return
	}
	src := &r.peers[best]
	if d := divergence(r.epochs, r.end, src.repEpochs, src.repEnd); d < r.end {
		// Our records from d on are not the source's: none is confirmed.
		r.truncate(d)
	}
	r.source, r.sourceEnd, r.fetching = best, src.repEnd, true
	r.fetch()
}

func lastEpoch(h []EpochStart) uint64 {
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].Epoch
}

func (r *replica) fetch() {
	r.queriedNs = r.b.nowNs
	r.b.send(r.peers[r.source].node, Message{Kind: MsgFetch, Queue: r.cfg.Queue, Epoch: r.epoch, Prev: r.end})
}

func (r *replica) onFetchReply(from NodeID, m *Message) {
	if !r.recovering || !r.fetching || from != r.peers[r.source].node || m.Prev != r.end {
		return // late, duplicate or not ours
	}
	src := &r.peers[r.source]
	if m.Process < src.process {
		return // a reply of an older process of the source
	}
	if r.b.bugs.Has(bugs.RecoveryTrustsChangedSource) {
		// planted: whatever the source answers, keep fetching from it
		if m.Prev > r.start && epochAt(r.epochs, m.Prev-1) != m.PrevEpoch {
			return
		}
	} else if m.Process > src.process || m.End < r.sourceEnd ||
		(m.Prev > r.start && epochAt(r.epochs, m.Prev-1) != m.PrevEpoch) {
		// The source is no longer the log it reported: it restarted, or
		// lost records since (a fault), or no longer continues ours. Its
		// report proves nothing now, so start over: ask everyone, choose
		// again. Waiting for a resend would wait forever, since the source
		// answers every resend the same way (seed 1001943: the epoch check
		// came first and returned, so the owner never opened an epoch).
		r.restartRecovery()
		return
	}
	for i := range m.Records {
		rec := m.Records[i]
		if rec.Offset != r.end || rec.Epoch < lastEpoch(r.epochs) {
			break
		}
		r.appendLocal(rec)
	}
	if r.end >= r.sourceEnd {
		r.fetching = false
		if r.b.bugs.Has(bugs.RepairedMarkEarly) && r.unrepaired {
			r.b.storage(Effect{Op: OpRepaired, Queue: r.cfg.Queue}) // planted: not durable yet
			r.unrepaired = false
		}
		r.openEpoch()
		return
	}
	r.fetch()
}

// restartRecovery forgets every report and queries all followers again.
func (r *replica) restartRecovery() {
	r.fetching = false
	for i := range r.peers {
		r.peers[i].reported = false
	}
	r.queryLogs()
}

// onFetch serves an owner that rebuilds its log: records from storage.
func (r *replica) onFetch(from NodeID, m *Message) {
	if from != r.cfg.Owner || r.failed {
		return
	}
	if m.Prev >= r.end || m.Prev < r.start {
		r.b.send(from, Message{Kind: MsgFetchReply, Queue: r.cfg.Queue, Epoch: r.epoch, Prev: m.Prev, PrevEpoch: r.prevEpoch(m.Prev), End: r.end})
		return
	}
	r.b.storage(Effect{Op: OpRead, Queue: r.cfg.Queue, Offset: m.Prev, Count: r.b.lim.BatchRecordsMax, Tag: readFetch | uint64(from)})
}

func (r *replica) prevEpoch(o uint64) uint64 {
	if o == 0 {
		return 0
	}
	return epochAt(r.epochs, o-1)
}

// appendLocal appends one record to the owner's log.
func (r *replica) appendLocal(rec record.Record) {
	if rec.Offset != r.end {
		panic(fmt.Sprintf("core: append at %d, log end %d", rec.Offset, r.end))
	}
	r.noteEpoch(rec.Epoch, rec.Offset)
	r.end++
	r.cache = append(r.cache, rec)
	r.cacheBytes += int64(len(rec.Body))
	r.evictCache()
	r.b.storage(Effect{Op: OpAppend, Queue: r.cfg.Queue, Records: r.cache[len(r.cache)-1 : len(r.cache) : len(r.cache)]})
	r.ensureSync()
}

func (r *replica) noteEpoch(e, offset uint64) {
	n := len(r.epochs)
	if n > 0 && r.epochs[n-1].Epoch == e {
		return
	}
	if n > 0 && r.epochs[n-1].Epoch > e {
		panic(fmt.Sprintf("core: epoch %d after epoch %d in log", e, r.epochs[n-1].Epoch))
	}
	if n >= r.b.lim.EpochsMax {
		panic("core: epoch history full")
	}
	r.epochs = append(r.epochs, EpochStart{Epoch: e, Offset: offset})
}

func (r *replica) evictCache() {
	for r.cacheBytes > r.b.lim.CacheBytesMax && len(r.cache) > 1 {
		r.cacheBytes -= int64(len(r.cache[0].Body))
		r.cache[0] = record.Record{}
		r.cache = r.cache[1:]
		r.cacheStart++
	}
}

// cached returns the record at offset o if it is in memory.
func (r *replica) cached(o uint64) *record.Record {
	if o < r.cacheStart || o >= r.cacheStart+uint64(len(r.cache)) {
		return nil
	}
	return &r.cache[o-r.cacheStart]
}

// truncate removes the follower's records from o on.
func (r *replica) truncate(o uint64) {
	if r.isOwner && !r.recovering {
		panic("core: the owner truncates its log only while recovering it")
	}
	if o >= r.end {
		return
	}
	r.end = o
	r.synced = min(r.synced, o)
	r.truncLow = min(r.truncLow, o)
	r.matchEnd = min(r.matchEnd, o)
	for len(r.epochs) > 0 && r.epochs[len(r.epochs)-1].Offset >= o {
		r.epochs = r.epochs[:len(r.epochs)-1]
	}
	if o < r.cacheStart+uint64(len(r.cache)) {
		keep := int(max(o, r.cacheStart) - r.cacheStart)
		for i := keep; i < len(r.cache); i++ {
			r.cacheBytes -= int64(len(r.cache[i].Body))
			r.cache[i] = record.Record{}
		}
		r.cache = r.cache[:keep]
		if len(r.cache) == 0 {
			r.cacheStart = o
		}
	}
	r.b.storage(Effect{Op: OpTruncate, Queue: r.cfg.Queue, Offset: o})
}

// ensureSync issues a sync when unsynced records exist and none is in
// flight: one sync covers every append since the last (group commit).
func (r *replica) ensureSync() {
	if r.syncInFlight || r.failed || (r.synced >= r.end && r.truncLow == noTrunc) {
		return
	}
	r.syncInFlight = true
	r.syncTarget = r.end
	r.truncLow = noTrunc
	r.b.storage(Effect{Op: OpSync, Queue: r.cfg.Queue, Offset: r.end})
}

func (r *replica) fail(reason string) {
	if r.failed {
		return
	}
	r.failed = true
	r.failReason = reason
	r.ready = false
	// Records of pending publishes may or may not have reached storage.
	outcome := Unknown
	if r.b.bugs.Has(bugs.FailNotUnknown) {
		outcome = Failed // planted
	}
	for _, p := range r.pending {
		r.b.reply(p.client, p.reqID, outcome, r.cfg.Queue, 0, "log failed: "+reason)
	}
	r.pending = r.pending[:0]
}

func (r *replica) onStorage(d *StorageDone) {
	if d.Err != "" {
		r.fail(d.Op.String() + ": " + d.Err)
		return
	}
	switch d.Op {
	case OpSync:
		if !r.syncInFlight || d.Offset != r.syncTarget {
			panic(fmt.Sprintf("core: sync completion for %d, in flight %v target %d", d.Offset, r.syncInFlight, r.syncTarget))
		}
		r.syncInFlight = false
		r.synced = max(r.synced, min(r.syncTarget, r.truncLow))
		if r.synced > r.end {
			panic("core: synced beyond log end")
		}
		if r.isOwner {
			if !r.ready && !r.failed && !r.recovering && r.synced > r.marker {
				r.ready = true
				if r.unrepaired {
					// What recovery restored is durable now: the mark may go.
					r.b.storage(Effect{Op: OpRepaired, Queue: r.cfg.Queue})
					r.unrepaired = false
				}
				for i := range r.peers {
					r.sendTo(&r.peers[i])
				}
			}
			r.advanceCommit()
		} else {
			r.maybeReply()
		}
		r.ensureSync()
	case OpRead:
		r.onRead(d)
	case OpAppend, OpTruncate, OpDiscard:
		// Ordering is the driver's duty; nothing to learn from success.
	default:
		panic("core: unknown storage completion")
	}
}

func (r *replica) onRead(d *StorageDone) {
	switch d.Tag & readKindMask {
	case readApply:
		r.applyReading = false
		for i := range d.Records {
			if d.Records[i].Offset == r.applied && r.applied < r.applyLimit() {
				r.applyOne(&d.Records[i])
			}
		}
		r.apply()
	case readDeliver:
		r.deliverReading = false
		r.deliverBuf = append(r.deliverBuf[:0], d.Records...)
		r.dispatch()
	case readFetch:
		owner := NodeID(d.Tag &^ readKindMask)
		e := r.epoch
		for i := range d.Records {
			e = max(e, d.Records[i].Epoch)
		}
		r.b.send(owner, Message{Kind: MsgFetchReply, Queue: r.cfg.Queue, Epoch: e, Prev: d.Offset, PrevEpoch: r.prevEpoch(d.Offset), End: r.end, Records: d.Records})
	case readScrub:
		// The records read back whole (a damaged one fails the read, and
		// with it the log). Go on from there, from the start at the end.
		r.scrubReading = false
		r.scrubNext = d.Offset + uint64(len(d.Records))
		if r.scrubNext >= r.synced || len(d.Records) == 0 {
			r.scrubNext = r.start
		}
		r.scrubAtNs = r.b.nowNs + r.b.lim.ScrubIntervalMs*1e6
	case readPeer:
		node := NodeID(d.Tag &^ readKindMask)
		for i := range r.peers {
			p := &r.peers[i]
			if p.node != node {
				continue
			}
			p.reading = false
			if len(d.Records) > 0 && d.Records[0].Offset == p.next && r.ready {
				r.sendRecords(p, d.Records)
			}
			r.sendTo(p)
		}
	default:
		panic("core: read completion with unknown tag")
	}
}

func (r *replica) onTick() {
	r.scrub()
	if r.recovering && r.b.nowNs-r.queriedNs >= r.b.lim.ResendMs*1e6 {
		if r.fetching {
			r.fetch()
		} else {
			r.queryLogs()
		}
	}
	if !r.isOwner || !r.ready {
		return
	}
	resendNs := r.b.lim.ResendMs * 1e6
	heartbeatNs := r.b.lim.HeartbeatMs * 1e6
	for i := range r.peers {
		p := &r.peers[i]
		if !r.peerWaiting(p) && r.b.nowNs-p.lastSendNs >= heartbeatNs && !r.b.bugs.Has(bugs.NoHeartbeat) {
			// All is well as far as the owner knows: ask anyway, since a
			// follower that restarted says nothing until asked.
			r.probe(p)
			continue
		}
		if r.peerWaiting(p) && r.b.nowNs-p.lastSendNs >= resendNs {
			// No progress for a while: the messages may be lost. Go back to
			// what the follower reported durable and send again.
			if p.matched {
				p.next = p.durable
			}
			p.batches, p.slow = p.batches[:0], true
			before := len(r.b.effects)
			r.sendTo(p)
			if len(r.b.effects) == before && !p.reading {
				r.probe(p)
			}
		}
	}
}

// scrub issues the next scrub read when it is due.
func (r *replica) scrub() {
	if r.failed || r.recovering || r.scrubReading || r.b.nowNs < r.scrubAtNs {
		return
	}
	if r.scrubNext < r.start || r.scrubNext >= r.synced {
		r.scrubNext = r.start
	}
	if r.scrubNext >= r.synced {
		r.scrubAtNs = r.b.nowNs + r.b.lim.ScrubIntervalMs*1e6
		return // nothing durable to read yet
	}
	r.scrubReading = true
	r.b.storage(Effect{Op: OpRead, Queue: r.cfg.Queue, Offset: r.scrubNext, Count: r.b.lim.ReadRecordsMax, Tag: readScrub})
}

// peerWaiting reports whether the owner expects a reply from p.
func (r *replica) peerWaiting(p *peer) bool {
	return !p.matched || p.durable < r.end
}

func (r *replica) deadlineNs() int64 {
	if r.recovering && !r.failed {
		return r.queriedNs + r.b.lim.ResendMs*1e6
	}
	if r.failed {
		return math.MaxInt64
	}
	at := int64(math.MaxInt64)
	if !r.scrubReading {
		at = r.scrubAtNs
	}
	if !r.isOwner || !r.ready {
		return at
	}
	resendNs := r.b.lim.ResendMs * 1e6
	heartbeatNs := r.b.lim.HeartbeatMs * 1e6
	for i := range r.peers {
		p := &r.peers[i]
		if r.peerWaiting(p) {
			at = min(at, p.lastSendNs+resendNs)
		} else {
			at = min(at, p.lastSendNs+heartbeatNs)
		}
	}
	return at
}

func (r *replica) onMessage(from NodeID, m *Message) {
	switch m.Kind {
	case MsgAppend:
		if !r.isOwner {
			r.onAppend(from, m)
		}
	case MsgAppendReply:
		if r.isOwner {
			r.onAppendReply(from, m)
		}
	case MsgLogQuery:
		if !r.isOwner && from == r.cfg.Owner && !r.failed {
			hist := make([]EpochStart, len(r.epochs))
			copy(hist, r.epochs)
			r.b.send(from, Message{Kind: MsgLogReport, Queue: r.cfg.Queue, Epoch: r.epoch, End: r.end, Epochs: hist})
		}
	case MsgLogReport:
		if r.isOwner {
			r.onLogReport(from, m)
		}
	case MsgFetch:
		if !r.isOwner {
			r.onFetch(from, m)
		}
	case MsgFetchReply:
		if r.isOwner {
			r.onFetchReply(from, m)
		}
	}
}

// --- owner: replication ---

// sendTo sends p what it lacks, within its window.
func (r *replica) sendTo(p *peer) {
	if !r.ready || p.reading {
		return
	}
	if r.w == 1 && r.b.bugs.Has(bugs.StarveFollowers) {
		return // planted: followers of a W=1 queue get nothing
	}
	lim := r.b.lim
	for p.next < r.end {
		window := lim.WindowBatchesMax
		if !p.matched || p.slow {
			// Until the follower matches or answers, one batch is enough.
			window = 1
		}
		if len(p.batches) >= window {
			return
		}
		if p.next < r.cacheStart {
			p.reading = true
			r.b.storage(Effect{Op: OpRead, Queue: r.cfg.Queue, Offset: p.next, Count: lim.BatchRecordsMax, Tag: readPeer | uint64(p.node)})
			return
		}
		i := int(p.next - r.cacheStart)
		j, bytes := i, 0
		for j < len(r.cache) && j-i < lim.BatchRecordsMax && (j == i || bytes+len(r.cache[j].Body) <= lim.BatchBytesMax) {
			bytes += len(r.cache[j].Body)
			j++
		}
		r.sendRecords(p, r.cache[i:j:j])
	}
}

func (r *replica) sendRecords(p *peer, recs []record.Record) {
	prev := recs[0].Offset
	var prevEpoch uint64
	if prev > 0 {
		prevEpoch = epochAt(r.epochs, prev-1)
	}
	r.b.send(p.node, Message{Kind: MsgAppend, Queue: r.cfg.Queue, Epoch: r.epoch, Prev: prev, PrevEpoch: prevEpoch, Commit: r.commit, Records: recs})
	p.next = prev + uint64(len(recs))
	p.lastSendNs = r.b.nowNs
	if len(p.batches) >= r.b.lim.WindowBatchesMax {
		panic("core: more batches in flight than the window")
	}
	p.batches = append(p.batches, p.next)
}

// probe sends an append without records: a heartbeat that asks the
// follower where its log stands.
func (r *replica) probe(p *peer) {
	var prevEpoch uint64
	if p.next > 0 {
		prevEpoch = epochAt(r.epochs, p.next-1)
	}
	r.b.send(p.node, Message{Kind: MsgAppend, Queue: r.cfg.Queue, Epoch: r.epoch, Prev: p.next, PrevEpoch: prevEpoch, Commit: r.commit})
	p.lastSendNs = r.b.nowNs
}

func (r *replica) onAppendReply(from NodeID, m *Message) {
	if m.Epoch != r.epoch || !r.ready {
		return // a reply to an older epoch says nothing about this one
	}
	var p *peer
	for i := range r.peers {
		if r.peers[i].node == from {
			p = &r.peers[i]
		}
	}
	if p == nil || m.Process < p.process {
		return // unknown, or an older process whose reports may not hold
	}
	if m.Process > p.process {
		// The follower restarted: what its old process reported durable may
		// have been lost since (a corrupt record and what follows). Count
		// only what the new process reports.
		p.process = m.Process
		p.matched = false
		p.durable = 0
		p.batches = p.batches[:0]
	}
	if m.Ok {
		if m.End > r.end {
			// A peer's word is input, never an assertion: refuse it.
			r.b.refused++
			return
		}
		p.matched, p.slow = true, false
		p.durable = max(p.durable, m.End)
		p.next = max(p.next, p.durable)
		k := 0
		for k < len(p.batches) && p.batches[k] <= p.durable {
			k++
		}
		p.batches = p.batches[:copy(p.batches, p.batches[k:])]
		r.advanceCommit()
	} else {
		if len(m.Epochs) > r.b.lim.EpochsMax {
			return // refused: a follower never holds more
		}
		d := divergence(r.epochs, r.end, m.Epochs, m.End)
		p.matched = false
		p.durable = min(p.durable, d)
		p.next = d
		p.batches = p.batches[:0]
	}
	r.sendTo(p)
}

// advanceCommit moves the confirmed end to the highest offset that the
// owner and W-1 matching followers hold durably, then confirms and applies.
func (r *replica) advanceCommit() {
	c := r.synced
	need := r.w - 1
	if need > 0 && r.b.bugs.Has(bugs.ConfirmWithoutOwner) {
		c = math.MaxUint64 // planted: the owner's own sync is not waited for
	}
	if need > 0 && r.b.bugs.Has(bugs.ConfirmShort) {
		need-- // planted: one durable copy fewer than W
		c = min(c, r.synced)
	}
	if need > 0 {
		var durables [ReplicasMax]uint64
		n := 0
		for i := range r.peers {
			if r.peers[i].matched {
				durables[n] = r.peers[i].durable
				n++
			}
		}
		if n < need {
			return
		}
		ds := durables[:n]
		// insertion sort, descending: at most four peers
		for i := 1; i < len(ds); i++ {
			for j := i; j > 0 && ds[j] > ds[j-1]; j-- {
				ds[j], ds[j-1] = ds[j-1], ds[j]
			}
		}
		c = min(c, ds[need-1])
	}
	c = min(c, r.end)
	if c <= r.commit {
		return
	}
	r.commit = c
	k := 0
	for k < len(r.pending) && r.pending[k].offset < c {
		p := r.pending[k]
		r.b.reply(p.client, p.reqID, Confirmed, r.cfg.Queue, p.offset, "")
		k++
	}
	r.pending = r.pending[:copy(r.pending, r.pending[k:])]
	r.apply()
}

// --- follower ---

func (r *replica) onAppend(from NodeID, m *Message) {
	if from != r.cfg.Owner || r.failed || m.Epoch < r.epoch || m.Process < r.ownerProcess {
		return // fenced: an older epoch's or older process's owner may not write
	}
	r.ownerProcess = max(r.ownerProcess, m.Process)
	if m.Epoch > r.epoch {
		r.epoch = m.Epoch
		r.matchEnd = 0
		r.replyEnd = 0
	}
	if m.Prev > r.end || m.Prev < r.start || (m.Prev > r.start && epochAt(r.epochs, m.Prev-1) != m.PrevEpoch) {
		if r.b.bugs.Has(bugs.RejectAsOK) { // planted: claims a match it lacks
			r.b.send(from, Message{Kind: MsgAppendReply, Queue: r.cfg.Queue, Epoch: r.epoch, Ok: true, End: min(r.synced, m.Prev)})
			return
		}
		hist := make([]EpochStart, len(r.epochs))
		copy(hist, r.epochs)
		r.b.send(from, Message{Kind: MsgAppendReply, Queue: r.cfg.Queue, Epoch: r.epoch, End: r.end, Epochs: hist})
		return
	}
	recs := m.Records
	for len(recs) > 0 && recs[0].Offset < r.end {
		if epochAt(r.epochs, recs[0].Offset) != recs[0].Epoch && !r.b.bugs.Has(bugs.SkipTruncate) {
			r.truncate(recs[0].Offset)
			break
		}
		recs = recs[1:]
	}
	if len(recs) > 0 {
		for i := range recs {
			if recs[i].Offset != r.end+uint64(i) {
				panic("core: append message with a gap")
			}
			r.noteEpoch(recs[i].Epoch, recs[i].Offset)
		}
		r.end += uint64(len(recs))
		r.b.storage(Effect{Op: OpAppend, Queue: r.cfg.Queue, Records: recs})
		r.ensureSync()
	}
	r.matchEnd = max(r.matchEnd, m.Prev+uint64(len(m.Records)))
	r.replyWanted = true
	r.maybeReply()
}

// maybeReply reports the durable, matching end once it covers what the
// owner sent: never more than a completed sync made durable.
func (r *replica) maybeReply() {
	if !r.replyWanted {
		return
	}
	end := min(r.synced, r.matchEnd)
	if r.b.bugs.Has(bugs.AckBeforeSync) {
		end = min(r.end, r.matchEnd) // the planted bug: appended is not durable
	}
	if end <= r.replyEnd && r.syncInFlight {
		return // nothing new yet; the sync in flight will tell more
	}
	r.replyEnd = end
	r.replyWanted = end < r.matchEnd
	r.b.send(r.cfg.Owner, Message{Kind: MsgAppendReply, Queue: r.cfg.Queue, Epoch: r.epoch, Ok: true, End: end})
}

// --- owner: clients and queue state ---

func (r *replica) onPublish(c ClientID, req *Request) {
	q := r.cfg.Queue
	switch {
	case !r.isOwner:
		r.b.reply(c, req.ID, Failed, q, 0, "not the owner")
	case r.failed:
		r.b.reply(c, req.ID, Failed, q, 0, "log failed: "+r.failReason)
	case !r.ready:
		r.b.reply(c, req.ID, Failed, q, 0, "epoch not ready")
	case len(req.Body) > record.BodyBytesMax:
		r.b.reply(c, req.ID, Failed, q, 0, "body too large")
	case len(r.pending) >= r.b.lim.PendingPublishesMax:
		r.b.reply(c, req.ID, Failed, q, 0, "too many publishes in flight")
	case len(r.readyQ)-r.readyHead+len(r.redeliver)+len(r.outstanding)+len(r.pending) >= r.b.lim.ReadyMax:
		r.b.reply(c, req.ID, Failed, q, 0, "queue full")
	default:
		r.pending = append(r.pending, pendingPublish{offset: r.end, client: c, reqID: req.ID})
		r.appendLocal(record.Record{Epoch: r.epoch, Offset: r.end, Kind: record.KindPublish, Body: req.Body})
		for i := range r.peers {
			r.sendTo(&r.peers[i])
		}
		if r.b.bugs.Has(bugs.DeliverUncommitted) {
			r.apply()
		}
	}
}

func (r *replica) onSubscribe(c ClientID, req *Request) {
	q := r.cfg.Queue
	switch {
	case !r.isOwner:
		r.b.reply(c, req.ID, Failed, q, 0, "not the owner")
		return
	case len(r.consumers) >= r.b.lim.ConsumersMax:
		r.b.reply(c, req.ID, Failed, q, 0, "too many consumers")
		return
	}
	for _, k := range r.consumers {
		if k.client == c {
			r.b.reply(c, req.ID, Failed, q, 0, "already subscribed")
			return
		}
	}
	pf := min(max(req.Prefetch, 1), r.b.lim.PrefetchMax)
	k := &consumer{client: c, prefetch: pf}
	i := len(r.consumers)
	for i > 0 && r.consumers[i-1].client > c {
		i--
	}
	r.consumers = append(r.consumers, nil)
	copy(r.consumers[i+1:], r.consumers[i:])
	r.consumers[i] = k
	r.b.reply(c, req.ID, Confirmed, q, 0, "")
	r.dispatch()
}

func (r *replica) onAck(c ClientID, req *Request) {
	q := r.cfg.Queue
	if !r.isOwner || !r.ready {
		r.b.reply(c, req.ID, Failed, q, 0, "not the owner")
		return
	}
	if owner, ok := r.outstanding[req.Offset]; !ok || owner != c {
		r.b.reply(c, req.ID, Failed, q, req.Offset, "no such delivery")
		return
	}
	delete(r.outstanding, req.Offset)
	for _, k := range r.consumers {
		if k.client == c {
			k.remove(req.Offset)
		}
	}
	var body [8]byte
	binary.LittleEndian.PutUint64(body[:], req.Offset)
	r.appendLocal(record.Record{Epoch: r.epoch, Offset: r.end, Kind: record.KindAck, Body: body[:]})
	for i := range r.peers {
		r.sendTo(&r.peers[i])
	}
	r.dispatch()
}

func (k *consumer) remove(o uint64) {
	for i, v := range k.outstanding {
		if v == o {
			k.outstanding = append(k.outstanding[:i], k.outstanding[i+1:]...)
			return
		}
	}
}

func (r *replica) onClientGone(c ClientID) {
	for i, k := range r.consumers {
		if k.client != c {
			continue
		}
		for _, o := range k.outstanding {
			delete(r.outstanding, o)
			if !r.b.bugs.Has(bugs.NoRedeliver) {
				r.redeliver = insertSorted(r.redeliver, o)
			}
		}
		r.consumers = append(r.consumers[:i], r.consumers[i+1:]...)
		if r.rr > i {
			r.rr--
		}
		r.dispatch()
		return
	}
}

func insertSorted(s []uint64, v uint64) []uint64 {
	i := len(s)
	for i > 0 && s[i-1] > v {
		i--
	}
	s = append(s, 0)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

// apply folds committed records into the queue state, reading from storage
// what is no longer in memory (after a restart, the whole log).
func (r *replica) apply() {
	limit := r.applyLimit()
	for r.applied < limit && !r.applyReading {
		rec := r.cached(r.applied)
		if rec == nil {
			r.applyReading = true
			count := min(uint64(r.b.lim.ReadRecordsMax), limit-r.applied)
			r.b.storage(Effect{Op: OpRead, Queue: r.cfg.Queue, Offset: r.applied, Count: int(count), Tag: readApply})
			return
		}
		r.applyOne(rec)
	}
	r.dispatch()
}

// applyLimit is the end of what the queue state may fold in: the confirmed
// end.
func (r *replica) applyLimit() uint64 {
	if r.b.bugs.Has(bugs.DeliverUncommitted) && r.ready {
		return r.end // planted: appended is not confirmed
	}
	return r.commit
}

func (r *replica) applyOne(rec *record.Record) {
	if rec.Offset != r.applied {
		panic("core: apply out of order")
	}
	r.applied++
	switch rec.Kind {
	case record.KindPublish:
		r.readyQ = append(r.readyQ, rec.Offset)
	case record.KindAck:
		if len(rec.Body) != 8 {
			panic("core: malformed ack record")
		}
		o := binary.LittleEndian.Uint64(rec.Body)
		if _, delivered := r.outstanding[o]; !delivered && r.inReady(o) {
			// Rebuilding after a restart: the publish is not delivered yet
			// in this process, but it was settled before.
			r.ackedEarly[o] = struct{}{}
		}
	}
}

func (r *replica) inReady(o uint64) bool {
	q := r.readyQ[r.readyHead:]
	lo, hi := 0, len(q)
	for lo < hi {
		m := (lo + hi) / 2
		if q[m] < o {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(q) && q[lo] == o
}

// nextToDeliver returns the next offset to hand out and whether it is a
// redelivery, without taking it.
func (r *replica) nextToDeliver() (uint64, bool, bool) {
	if len(r.redeliver) > 0 {
		return r.redeliver[0], true, true
	}
	for r.readyHead < len(r.readyQ) {
		o := r.readyQ[r.readyHead]
		if _, acked := r.ackedEarly[o]; acked {
			delete(r.ackedEarly, o)
			r.readyHead++
			continue
		}
		return o, false, true
	}
	return 0, false, false
}

func (r *replica) take(redelivered bool) {
	if redelivered {
		r.redeliver = r.redeliver[1:]
		return
	}
	r.readyHead++
	if r.readyHead > 1024 && r.readyHead*2 > len(r.readyQ) {
		r.readyQ = r.readyQ[:copy(r.readyQ, r.readyQ[r.readyHead:])]
		r.readyHead = 0
	}
}

func (r *replica) body(o uint64) *record.Record {
	if rec := r.cached(o); rec != nil {
		return rec
	}
	if n := len(r.deliverBuf); n > 0 && o >= r.deliverBuf[0].Offset && o < r.deliverBuf[0].Offset+uint64(n) {
		return &r.deliverBuf[o-r.deliverBuf[0].Offset]
	}
	return nil
}

// dispatch hands committed records to consumers with credit, round robin.
func (r *replica) dispatch() {
	rebuilt := r.applied > r.marker || r.b.bugs.Has(bugs.DeliverBeforeRebuild)
	if !r.isOwner || r.deliverReading || r.applied < r.applyLimit() || !rebuilt {
		// Deliver only from a queue state that has caught up with the
		// confirmed log, and after a restart with the whole log before this
		// epoch: an ack confirmed in an earlier epoch but not yet applied
		// would make a duplicate.
		return
	}
	for len(r.consumers) > 0 {
		o, redelivered, ok := r.nextToDeliver()
		if !ok {
			return
		}
		var k *consumer
		for i := 0; i < len(r.consumers); i++ {
			c := r.consumers[(r.rr+i)%len(r.consumers)]
			if len(c.outstanding) < c.prefetch {
				k = c
				r.rr = (r.rr + i + 1) % len(r.consumers)
				break
			}
		}
		if k == nil {
			return
		}
		rec := r.body(o)
		if rec == nil {
			r.deliverReading = true
			r.b.storage(Effect{Op: OpRead, Queue: r.cfg.Queue, Offset: o, Count: r.b.lim.ReadRecordsMax, Tag: readDeliver})
			return
		}
		if rec.Kind != record.KindPublish {
			panic("core: delivering a record that is not a publish")
		}
		r.take(redelivered)
		k.outstanding = append(k.outstanding, o)
		r.outstanding[o] = k.client
		r.b.deliver(k.client, r.cfg.Queue, rec, redelivered)
	}
}
