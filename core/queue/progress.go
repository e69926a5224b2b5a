package queue

import "github.com/sluicemq/sluice/core/seam"

// progress is what the owner knows of one follower: how far its log
// matches and is durable (in this epoch), what to send it next, and the
// batches in flight.
type progress struct {
	node    seam.NodeID
	process uint64 // the newest process of the peer heard from; of a member, the one its assignment names
	// member: the peer is a placed queue's member, process its instance:
	// only that process's reports count (QueueConfig.Processes)
	member     bool
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
	// caughtUpNs: the lag rule's moment (docs/design/in-sync.md), the last instant at which the
	// follower held the owner's whole log durably: the instant of a report
	// that reached the owner's end, or of the report before one that
	// reached the end the owner had then (a follower streaming a few
	// records behind a busy owner is caught up as of its previous report).
	// The owner's start counts as one.
	caughtUpNs int64
	// reportEnd and reportEndNs: the owner's log end at the follower's
	// last Ok report, and when (the previous report of the rule above)
	reportEnd   uint64
	reportEndNs int64
	// learning: the peer is the assignment's learner, process its
	// instance (learner.go): streamed to, never counted toward W; named:
	// the process the assignment names for the member; cut: the owner's
	// log end when the learner first matched, which it must hold durably
	// before it is admitted
	learning bool
	named    uint64
	cut      uint64
	// reportNs: the last instant a reply of the follower's counted
	// process arrived (the owner's start counts as one): a follower silent
	// for RetainSilentMs stops protecting the owner's log (retain.go)
	reportNs int64
}

// restarted forgets what an older process of the peer reported.
func (p *progress) restarted(process uint64) {
	p.process = process
	p.matched = false
	p.durable = 0
	p.batches = p.batches[:0]
	p.reportEnd, p.reportEndNs = 0, 0
}

// reported takes an Ok report of end at nowNs, the owner's log end being
// ownerEnd: the follower is caught up now if it reached that end, and as
// of its previous report if it reached the end the owner had then.
func (p *progress) reported(end, ownerEnd uint64, nowNs int64) {
	switch {
	case end >= ownerEnd:
		p.caughtUpNs = nowNs
	case p.reportEndNs > 0 && end >= p.reportEnd:
		p.caughtUpNs = max(p.caughtUpNs, p.reportEndNs)
	}
	p.reportEnd, p.reportEndNs = ownerEnd, nowNs
}

// acked takes an Ok reply: the peer's log matches and is durable below end.
func (p *progress) acked(end uint64) {
	p.matched, p.slow = true, false
	p.durable = max(p.durable, end)
	p.next = max(p.next, p.durable)
	k := 0
	for k < len(p.batches) && p.batches[k] <= p.durable {
		k++
	}
	p.batches = p.batches[:copy(p.batches, p.batches[k:])]
}

// rejected takes a reply that did not match: the logs agree below d.
func (p *progress) rejected(d uint64) {
	p.matched = false
	p.durable = min(p.durable, d)
	p.next = d
	p.batches = p.batches[:0]
}
