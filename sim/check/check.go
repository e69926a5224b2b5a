package check

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/record"
)

// Failure is one violated property.
type Failure struct {
	Checker string
	AtNs    int64
	Detail  string
}

func (f Failure) String() string {
	return fmt.Sprintf("%s at t=%d: %s", f.Checker, f.AtNs, f.Detail)
}

// failuresMax bounds the failures kept: the first ones explain a run.
const failuresMax = 16

// QueueSpec is what the checker must know of a queue's assignment.
type QueueSpec struct {
	Queue    core.QueueID
	Replicas []core.NodeID
	Owner    core.NodeID
	W        int
}

type logTruth struct {
	end    uint64
	epochs []core.EpochStart
}

type pubState uint8

const (
	pubPending pubState = iota
	pubConfirmed
	pubFailed
	pubUnknown
)

type queueTruth struct {
	spec      QueueSpec
	durable   map[core.NodeID]*logTruth
	confirmed map[uint64]uint64 // offset -> publish key
	// deliveredAt: offset -> key of the body delivered there, so a later
	// confirm at that offset must agree.
	deliveredAt   map[uint64]uint64
	firstMax      uint64
	firstAny      bool
	everDelivered map[uint64]bool // offsets delivered at least once
	// undelivered counts confirmed offsets not yet delivered once.
	undelivered int
	// ackRecs: acked offset -> the ack records (offset, epoch) the owner
	// appended for it.
	ackRecs map[uint64][]core.EpochStart
}

// Checker accumulates a run's history and reports violations.
type Checker struct {
	queues map[core.QueueID]*queueTruth
	pubs   map[uint64]pubState // publish key -> outcome
	// deliveredKeys: publish keys handed to a consumer at least once
	deliveredKeys map[uint64]bool
	failures      []Failure
	total         int
}

// New returns a checker for the given queues.
func New(specs []QueueSpec) *Checker {
	c := &Checker{queues: map[core.QueueID]*queueTruth{}, pubs: map[uint64]pubState{}, deliveredKeys: map[uint64]bool{}}
	for _, s := range specs {
		q := &queueTruth{spec: s, durable: map[core.NodeID]*logTruth{}, confirmed: map[uint64]uint64{},
			deliveredAt: map[uint64]uint64{}, everDelivered: map[uint64]bool{}, ackRecs: map[uint64][]core.EpochStart{}}
		for _, n := range s.Replicas {
			q.durable[n] = &logTruth{}
		}
		c.queues[s.Queue] = q
	}
	return c
}

func (c *Checker) fail(checker string, atNs int64, format string, args ...any) {
	c.total++
	if len(c.failures) < failuresMax {
		c.failures = append(c.failures, Failure{Checker: checker, AtNs: atNs, Detail: fmt.Sprintf(format, args...)})
	}
}

// Failures returns the violations found so far (the first few).
func (c *Checker) Failures() []Failure { return c.failures }

// FailureCount returns how many violations were found in all.
func (c *Checker) FailureCount() int { return c.total }

// Durable records ground truth: node's log of q holds [0, end) durably,
// with the given epoch history. The simulator calls it after a sync
// completes on the fake disk and after a restart recovers a log.
//
// The truth only grows here; only a truncation the protocol asked for
// (Truncated) shrinks it. A copy lost to a disk fault (a corrupt record and
// the tail after it) still counts as once made durable: silent loss is the
// fault budget's business (at most W-1 copies of any record), and the final
// checks judge whether a confirmed record survived it.
func (c *Checker) Durable(node core.NodeID, q core.QueueID, end uint64, epochs []core.EpochStart) {
	t := c.queues[q].durable[node]
	if end <= t.end && agree(t.epochs, epochs, end) {
		return // nothing new: the copy only lost a tail to a fault
	}
	// Longer, or different records in place of ones lost to a fault (the
	// lost copies are gone either way): the disk's content is the truth.
	t.end = end
	t.epochs = append(t.epochs[:0], epochs...)
}

// agree reports whether two epoch histories give every offset below end the
// same epoch, that is, describe the same records there.
func agree(a, b []core.EpochStart, end uint64) bool {
	for _, h := range [2][]core.EpochStart{a, b} {
		for _, e := range h {
			if e.Offset < end && epochAt(a, e.Offset) != epochAt(b, e.Offset) {
				return false
			}
		}
	}
	return true
}

// Truncated records that node's log of q no longer holds offsets >= from.
func (c *Checker) Truncated(node core.NodeID, q core.QueueID, from uint64) {
	t := c.queues[q].durable[node]
	if from < t.end {
		t.end = from
		for len(t.epochs) > 0 && t.epochs[len(t.epochs)-1].Offset >= from {
			t.epochs = t.epochs[:len(t.epochs)-1]
		}
	}
}

func epochAt(h []core.EpochStart, o uint64) uint64 {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Offset <= o {
			return h[i].Epoch
		}
	}
	return 0
}

// durableCopies counts the replicas that hold the owner's record at offset
// o durably; ownerHas says whether the owner itself does.
func (q *queueTruth) durableCopies(o uint64) (copies int, ownerHas bool) {
	own := q.durable[q.spec.Owner]
	if own.end <= o {
		return 0, false
	}
	e := epochAt(own.epochs, o)
	for _, n := range q.spec.Replicas {
		t := q.durable[n]
		if t.end > o && epochAt(t.epochs, o) == e {
			copies++
		}
	}
	return copies, true
}

// durableCopiesOf counts the replicas holding the record (epoch e) at
// offset o durably, and says whether the owner is one.
func (q *queueTruth) durableCopiesOf(o, e uint64) (copies int, ownerHas bool) {
	for _, n := range q.spec.Replicas {
		t := q.durable[n]
		if t.end > o && epochAt(t.epochs, o) == e {
			copies++
			ownerHas = ownerHas || n == q.spec.Owner
		}
	}
	return copies, ownerHas
}

// AckAppended records that node appended, at offset o with epoch e, the ack
// record of the delivery at acked. Only the owner's appends count: they
// define the record.
func (c *Checker) AckAppended(q core.QueueID, node core.NodeID, o, e, acked uint64) {
	qt := c.queues[q]
	if node != qt.spec.Owner {
		return
	}
	if len(qt.ackRecs[acked]) < 64 {
		qt.ackRecs[acked] = append(qt.ackRecs[acked], core.EpochStart{Epoch: e, Offset: o})
	}
}

// Converged reports whether every replica of q durably holds exactly the
// owner's log, as the ground truth knows it.
func (c *Checker) Converged(q core.QueueID) bool {
	qt := c.queues[q]
	own := qt.durable[qt.spec.Owner]
	for _, n := range qt.spec.Replicas {
		t := qt.durable[n]
		if t.end != own.end || !agree(t.epochs, own.epochs, own.end) {
			return false
		}
	}
	return true
}

// Undelivered returns how many confirmed publishes of q were never delivered.
func (c *Checker) Undelivered(q core.QueueID) int { return c.queues[q].undelivered }

// PublishStarted records a publish attempt.
func (c *Checker) PublishStarted(key uint64) { c.pubs[key] = pubPending }

// ConfirmEmitted checks, at the instant a broker confirms the publish at
// offset o of q, that W replicas hold it durably.
func (c *Checker) ConfirmEmitted(atNs int64, q core.QueueID, o uint64) {
	qt := c.queues[q]
	copies, ownerHas := qt.durableCopies(o)
	if !ownerHas || copies < qt.spec.W {
		c.fail("confirm-durable", atNs, "q=%d o=%d confirmed with %d durable copies (owner has it: %v), W=%d", q, o, copies, ownerHas, qt.spec.W)
	}
}

// DeliverEmitted checks, at the instant a broker hands the record at offset o
// of q to a consumer, that the record is confirmed and its publish was not
// reported failed.
func (c *Checker) DeliverEmitted(atNs int64, q core.QueueID, o uint64, key uint64, redelivered bool) {
	qt := c.queues[q]
	copies, ownerHas := qt.durableCopies(o)
	if !ownerHas || copies < qt.spec.W {
		c.fail("deliver-confirmed", atNs, "q=%d o=%d delivered with %d durable copies, W=%d", q, o, copies, qt.spec.W)
	}
	if c.pubs[key] == pubFailed {
		c.fail("failed-delivered", atNs, "q=%d o=%d: publish %#x was reported failed", q, o, key)
	}
	if _, known := c.pubs[key]; !known {
		c.fail("deliver-confirmed", atNs, "q=%d o=%d: body %#x was never published", q, o, key)
	}
	if k, ok := qt.confirmed[o]; ok && k != key {
		c.fail("deliver-confirmed", atNs, "q=%d o=%d: delivered body %#x, confirmed body %#x", q, o, key, k)
	}
	if k, ok := qt.deliveredAt[o]; ok && k != key {
		c.fail("deliver-confirmed", atNs, "q=%d o=%d: delivered body %#x, earlier delivered %#x", q, o, key, k)
	}
	qt.deliveredAt[o] = key
	c.deliveredKeys[key] = true
	if qt.everDelivered[o] {
		// A duplicate must be a redelivery of an unacked record: no ack of
		// it may be confirmed (durable on W replicas) already.
		for _, a := range qt.ackRecs[o] {
			if n, ownerHas := qt.durableCopiesOf(a.Offset, a.Epoch); ownerHas && n >= qt.spec.W {
				c.fail("redeliver-acked", atNs, "q=%d o=%d delivered again after its ack (record %d) was confirmed", q, o, a.Offset)
			}
		}
	} else {
		if _, ok := qt.confirmed[o]; ok {
			qt.undelivered--
		}
		if qt.firstAny && o <= qt.firstMax {
			c.fail("deliver-order", atNs, "q=%d: first delivery of o=%d after first delivery of o=%d", q, o, qt.firstMax)
		}
		qt.firstAny = true
		qt.firstMax = max(qt.firstMax, o)
		qt.everDelivered[o] = true
	}
}

// PublishEnded records how a publish ended, as the client learned it.
func (c *Checker) PublishEnded(atNs int64, key uint64, o core.Outcome, q core.QueueID, offset uint64) {
	switch o {
	case core.Confirmed:
		c.pubs[key] = pubConfirmed
		qt := c.queues[q]
		if k, ok := qt.confirmed[offset]; ok && k != key {
			c.fail("confirm-durable", atNs, "q=%d o=%d confirmed for two publishes %#x and %#x", q, offset, k, key)
		}
		if k, ok := qt.deliveredAt[offset]; ok && k != key {
			c.fail("deliver-confirmed", atNs, "q=%d o=%d: confirmed %#x but delivered %#x there", q, offset, key, k)
		}
		if _, seen := qt.confirmed[offset]; !seen && !qt.everDelivered[offset] {
			qt.undelivered++
		}
		qt.confirmed[offset] = key
	case core.Failed:
		if c.pubs[key] == pubConfirmed {
			c.fail("confirm-durable", atNs, "publish %#x both confirmed and failed", key)
		}
		c.pubs[key] = pubFailed
		if c.deliveredKeys[key] {
			c.fail("failed-delivered", atNs, "publish %#x reported failed after it was delivered", key)
		}
	case core.Unknown:
		if c.pubs[key] == pubPending {
			c.pubs[key] = pubUnknown
		}
	}
}

func (c *Checker) queuesSorted() []*queueTruth {
	out := make([]*queueTruth, 0, len(c.queues))
	for q := core.QueueID(0); len(out) < len(c.queues); q++ {
		if qt := c.queues[q]; qt != nil {
			out = append(out, qt)
		}
	}
	return out
}

// LogReader reads the record at offset o of node's log of q, as it is now.
type LogReader func(node core.NodeID, q core.QueueID, o uint64) (record.Record, bool)

// KeyOf extracts the publish key from a record body.
type KeyOf func(body []byte) uint64

// Final runs the end-of-run checks over the replicas' logs. drained says
// whether a queue's consumers had the time to drain every confirmed record.
func (c *Checker) Final(atNs int64, read LogReader, keyOf KeyOf, drained func(core.QueueID) bool) {
	for _, qt := range c.queuesSorted() {
		q := qt.spec.Queue
		for _, o := range sortedOffsets(qt.confirmed) {
			key := qt.confirmed[o]
			own, ok := read(qt.spec.Owner, q, o)
			if !ok || own.Kind != record.KindPublish || keyOf(own.Body) != key {
				c.fail("confirmed-lost", atNs, "q=%d o=%d: confirmed publish %#x missing from the owner's log", q, o, key)
				continue
			}
			for _, n := range qt.spec.Replicas {
				if n == qt.spec.Owner {
					continue
				}
				rec, ok := read(n, q, o)
				if ok && (rec.Epoch != own.Epoch || rec.Kind != own.Kind || !bytes.Equal(rec.Body, own.Body)) {
					c.fail("replicas-agree", atNs, "q=%d o=%d: n%d holds %v, owner n%d holds %v", q, o, n, rec, qt.spec.Owner, own)
				}
			}
			if drained(q) && !qt.everDelivered[o] {
				c.fail("at-least-once", atNs, "q=%d o=%d: confirmed publish %#x never delivered", q, o, key)
			}
		}
	}
}

func sortedOffsets(m map[uint64]uint64) []uint64 {
	out := make([]uint64, 0, len(m))
	for o := range m { //detguard:order-independent collected then sorted
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

// Linearizability records that q's history of publishes (appends returning
// offsets) and deliveries (reads) fits no sequential log.
func (c *Checker) Linearizability(atNs int64, q core.QueueID, detail string) {
	c.fail("linearizable", atNs, "q=%d: %s", q, detail)
}

// Liveness records that the cluster did not finish its work within the
// drain phase's bound.
func (c *Checker) Liveness(atNs int64, detail string) {
	c.fail("liveness", atNs, "%s", detail)
}
