package check

import (
	"strconv"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
)

// Retention (docs/design/retention.md): an owner deletes its log's head once its records
// are settled, and its followers follow; a copy left behind is reseeded.
// The checkers read each log's durable start themselves (DiskLog, from
// the START file), and judge:
//
//   - retention-settled: when a retention completes, every publish the
//     log held below its new durable start was settled: a live consumer
//     that received it sent its ack (the world's ground truth, never the
//     broker's word). Acks and epoch records are settled by nature.
//   - retention-held: when the owner's retention completes, every member
//     its owner took a message in from (the member's named process, by
//     the world's own account: SetHeard) within the retention window
//     durably holds the owner's records up to the new start, from its own
//     start on: a follower that reports protects the owner's log (one
//     silent for the window does not). A second's margin below
//     the window keeps the judge off the boundary.
//
// The end-of-run checks (confirmed-lost, converged) then leave out the
// confirmed publishes below a log's durable start that were settled: a
// retention was entitled to delete them, and this checker judged it.

// Retained takes the completion of a retention on node's log of q: the
// disk's durable start is read again, and the records it passed judged.
// It reports whether the durable start moved (a segment went).
//
// chosenNs is when the core issued the retention (it may wait in the
// log's queue before it runs): it chose its point then, so only a member
// heard before it was protecting.
func (c *Checker) Retained(atNs, chosenNs int64, node core.NodeID, q core.QueueID) bool {
	qt := c.queue(q)
	r := c.rep(node, q)
	before := r.judgedStart
	r.disk.Resume(c.diskOf(q, node))
	after := r.disk.Start()
	r.judgedStart = max(r.judgedStart, after)
	for o := before; o < after && o < uint64(len(r.issued)); o++ {
		id := r.issuedAt(o)
		if id.Kind != record.KindPublish {
			continue
		}
		if rc := qt.receipt(o); rc == nil || !rc.settled {
			what := "no live consumer received it"
			if rc != nil {
				what = "its consumer c" + strconv.FormatUint(uint64(rc.conn), 10) + " never acked it"
			}
			c.fail("retention-settled", atNs, "n%d q=%d: the log's durable start moved from %d to %d past the publish at o=%d (%s), which was not settled: %s",
				node, q, before, after, o, id, what)
			break
		}
	}
	if node == qt.spec.Owner && after > before && c.heard != nil {
		c.retainHeld(atNs, chosenNs, qt, before, after)
	}
	return after > before
}

// SetHeard gives the checker the world's account of when a placed queue's
// owner last took in a message from each member's named process (-1:
// never), and the retention window: retention-held's ground truth.
func (c *Checker) SetHeard(heard func(q core.QueueID, node core.NodeID) int64, windowNs int64) {
	c.heard, c.heardWindowNs = heard, windowNs
}

// retainHeld judges the owner's retention from before to after against
// every member heard within the window.
func (c *Checker) retainHeld(atNs, chosenNs int64, qt *queueTruth, before, after uint64) {
	q := qt.spec.Queue
	for _, r := range qt.reps {
		if r == qt.owner || r.former || r.injected {
			continue // (damage injected excuses a copy: the fault budget's business)
		}
		h := c.heard(q, r.node)
		if h < 0 || h >= chosenNs || chosenNs-h >= c.heardWindowNs-1e9 {
			continue // silent for the window (less the margin) when the point was chosen: it protects nothing
		}
		r.disk.Reparse(c.diskOf(q, r.node))
		for o := max(before, r.disk.Start()); o < after && o < uint64(len(qt.owner.issued)); o++ {
			if want := qt.owner.issuedAt(o); want.Intact() && r.disk.At(o) != want {
				c.fail("retention-held", atNs, "q=%d: the owner n%d's durable start moved from %d to %d, but n%d, heard %s before the retention was issued, durably holds %s at o=%d, not the owner's %s",
					q, qt.spec.Owner, before, after, r.node, instant(chosenNs-h), r.disk.At(o), o, want)
				return
			}
		}
	}
}

// Reseeded takes the completion of a reseed of node's log of q at start:
// the log holds nothing now, and starts at start.
func (c *Checker) Reseeded(node core.NodeID, q core.QueueID, start uint64) {
	qt := c.queue(q)
	r := c.rep(node, q)
	qt.dropSeen(0, r.idx)
	r.issued = r.issued[:0]
	for uint64(len(r.issued)) < start {
		r.issued = append(r.issued, 0)
	}
	r.acked, r.verified = start, start
	r.judgedStart = start
	r.disk.Cut(0)
	r.disk.listedOK = false
	r.disk.Reparse(c.diskOf(q, node))
	if r.injected {
		r.damageEnd = start // the damaged records went with the rest
	}
	c.noteRepair(qt, r)
}

// settledRecord reports whether the record id at o is settled: an ack or
// an epoch record (never delivered), or a publish a live consumer that
// received it acked.
func (q *queueTruth) settledRecord(o uint64, id Ident) bool {
	if id.Kind != record.KindPublish {
		return true
	}
	rc := q.receipt(o)
	return rc != nil && rc.settled
}

// retainedSettled reports whether the confirmed publish at o of qt may be
// missing from every disk: some log's durable start passed it, and it was
// settled (retention-settled judged the passing).
func (q *queueTruth) retainedSettled(o uint64) bool {
	rc := q.receipt(o)
	if rc == nil || !rc.settled {
		return false
	}
	for _, r := range q.reps {
		if r.disk.Start() > o {
			return true
		}
	}
	return false
}

// Admitted takes a learner's admission as node's member of q,
// or an activation that names node: what its disk durably holds of the
// records issued to it counts as its copies from now on (a learner's syncs
// did not: SyncAcked). A record a sync acknowledgement verified on its
// disk (below verified) that injected damage struck since counts too: as
// for a member's copy (holders), the fault budget, not the protocol,
// answers for its loss, and the owner counts the learner's durable report
// once it is admitted (seed 15726: a learner caught up, a byte of its
// segment flipped, then its admission, and a confirm counting it).
func (c *Checker) Admitted(q core.QueueID, node core.NodeID) {
	qt := c.queue(q)
	r := c.rep(node, q)
	r.disk.Reparse(c.diskOf(q, node))
	for o := r.disk.Start(); o < min(uint64(len(r.issued)), r.verified); o++ {
		if id, want := r.disk.At(o), r.issuedAt(o); (id.Intact() && id == want) || (r.injected && !id.Intact()) {
			qt.addSeen(o, want, r.idx)
		}
	}
}
