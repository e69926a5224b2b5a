package check

import (
	"strconv"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
)

// Retention (issue 12): an owner deletes its log's head once its records
// are settled, and its followers follow; a copy left behind is reseeded.
// The checkers read each log's durable start themselves (DiskLog, from
// the START file), and judge:
//
//   - retention-settled: when a retention completes, every publish the
//     log held below its new durable start was settled: a live consumer
//     that received it sent its ack (the world's ground truth, never the
//     broker's word). Acks and epoch records are settled by nature.
//
// The end-of-run checks (confirmed-lost, converged) then leave out the
// confirmed publishes below a log's durable start that were settled: a
// retention was entitled to delete them, and this checker judged it.

// Retained takes the completion of a retention on node's log of q: the
// disk's durable start is read again, and the records it passed judged.
// It reports whether the durable start moved (a segment went).
func (c *Checker) Retained(atNs int64, node core.NodeID, q core.QueueID) bool {
	qt := c.queue(q)
	r := c.rep(node, q)
	before := r.disk.Start()
	r.disk.Resume(c.diskOf(q, node))
	after := r.disk.Start()
	for o := before; o < after && o < uint64(len(r.issued)); o++ {
		id := r.issued[o]
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
	return after > before
}

// Reseeded takes the completion of a reseed of node's log of q at start:
// the log holds nothing now, and starts at start.
func (c *Checker) Reseeded(node core.NodeID, q core.QueueID, start uint64) {
	qt := c.queue(q)
	r := c.rep(node, q)
	qt.dropSeen(0, r.idx)
	r.issued = r.issued[:0]
	for uint64(len(r.issued)) < start {
		r.issued = append(r.issued, Ident{})
	}
	r.acked, r.verified = start, start
	r.disk.Cut(0)
	r.disk.listedOK = false
	r.disk.Reparse(c.diskOf(q, node))
	if r.injected {
		r.damageEnd = start // the damaged records went with the rest
	}
	c.noteRepair(qt, r)
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
