package queue

import (
	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/seam"
)

// Retention (docs/design/retention.md). The owner deletes its log's head once the
// records there are settled (acked publishes; acks and epoch records, which
// are never delivered) and held durably by every follower that reported in
// the last RetainSilentMs: a follower silent that long stops protecting the
// owner's log, so the owner keeps deleting while the copy is away, and the
// copy reseeds when it returns (its end below the owner's start). The
// followers follow the owner's start, which every append carries.
//
// Why it is safe: a retention passes only records that are confirmed
// (below the confirmed end) and settled: no consumer will ever be handed
// them again, and every confirmed record a recovery must find, an
// unsettled one, lies above every copy's start (a follower's start is an
// owner's, never above what that owner had settled; settled stays settled,
// since an ack counts once it is confirmed). The start is the log's
// logical start here; the storage keeps the segment holding it whole, and
// after a restart the log starts at that segment's base, below.

// retain deletes the owner's log head up to the settled and held point,
// once it lies RetainRecordsMin records past the start.
func (o *owner) retain() {
	r := o.r
	if !o.ready || r.failed || r.sealed || r.fenced != "" || !r.leased() {
		return
	}
	l := &r.log
	point := min(o.commit, l.syncedEnd)
	if !r.x.Bugs.Has(bugs.RetainUnsettled) { // planted: confirmed is taken for settled
		point = min(point, o.state.settledEnd())
	}
	silentNs := r.x.Lim.RetainSilentMs * 1e6
	for i := range o.peers {
		if p := &o.peers[i]; r.x.NowNs-p.reportNs < silentNs && !r.x.Bugs.Has(bugs.RetainPastFollowers) {
			point = min(point, p.durable)
		}
	}
	if l.retaining || point < max(l.start, l.asked)+uint64(r.x.Lim.RetainRecordsMin) {
		return
	}
	l.retain(point)
	r.storage(seam.Effect{Op: seam.OpRetain, Offset: point})
}

// settledEnd is the first offset whose record may still be delivered: the
// lowest of what is ready, returned for redelivery or outstanding, and the
// applied end (what is not folded in yet is not known settled).
func (s *queueState) settledEnd() uint64 {
	end := s.applied
	if len(s.redeliver) > 0 {
		end = min(end, s.redeliver[0])
	}
	for _, k := range s.consumers {
		for _, o := range k.outstanding {
			end = min(end, o)
		}
	}
	// The ready publishes, skipping those acked in an earlier process
	// (settled, though still queued until delivery reaches them); a
	// bounded look, which only makes the point lower.
	for i, n := s.readyHead, 0; i < len(s.readyQ); i, n = i+1, n+1 {
		o := s.readyQ[i]
		if _, acked := s.ackedEarly[o]; !acked || n >= settledLookMax {
			end = min(end, o)
			break
		}
	}
	return end
}

// settledLookMax bounds settledEnd's walk over publishes acked early.
const settledLookMax = 1024

// followStart deletes the follower's log head up to the owner's start
// (what lies below it is settled), within what the follower holds.
func (f *follower) followStart(r *Replica, ownerStart uint64) {
	l := &r.log
	to := min(ownerStart, l.end)
	if l.retaining || to <= max(l.start, l.asked) {
		return
	}
	l.retain(to)
	r.storage(seam.Effect{Op: seam.OpRetain, Offset: to})
}

// reseed empties the follower's log and restarts it at start, the owner's
// start, with the owner's history below it: the copy was left behind (its
// end below the owner's start) or parts from the owner's log below where it
// could be matched.
func (f *follower) reseed(r *Replica, start uint64, below []seam.EpochStart) {
	l := &r.log
	if l.retaining {
		l.retaining = false
		l.retainsStale++
	}
	l.start, l.end, l.syncedEnd, l.asked = start, start, start, start
	l.truncLow = min(l.truncLow, start)
	l.epochs = append(l.epochs[:0], below...)
	f.matchEnd, f.replyEnd = start, 0
	f.reseedSyncs = l.syncsIssued + 1 // the next sync issued runs after the reseed
	// The effect carries its own copy: below aliases the message.
	r.storage(seam.Effect{Op: seam.OpReseed, Offset: start, Epochs: append([]seam.EpochStart(nil), below...)})
	r.ensureSync()
}
