package check

import (
	"slices"

	"github.com/sluicemq/sluice/core"
)

// Recovered assignments (docs/design/recovery.md, "Activation"). A placed queue's pending transition
// proposes members the checker may not know yet (AddReplicas: their
// installations write their logs, judged like any other replica's); its
// activation makes a new assignment (Reassign): a new owner, members and
// W, and the queue is judged as a live one again. Replicas that left the
// assignment stay known (their disks may still hold confirmed records)
// but need not converge. Confirms from an earlier assignment's owner
// process may still come (publishes in flight when it was fenced, durable
// on W of its replicas then): one-owner accepts them from that process.

type formerOwner struct {
	node    core.NodeID
	process uint64 // 0: it never confirmed
}

// AddReplicas makes nodes known as replicas of placed queue q.
func (c *Checker) AddReplicas(q core.QueueID, nodes []core.NodeID) {
	qt := c.queue(q)
	if qt == nil {
		return
	}
	for _, n := range nodes {
		if qt.replica(n) == nil {
			qt.reps = append(qt.reps, qt.newReplica(c, n))
		}
	}
}

// Reassign takes queue q's activated assignment at atNs: its epoch,
// owner, members and W.
func (c *Checker) Reassign(atNs int64, q core.QueueID, epoch uint64, owner core.NodeID, members []core.NodeID, w int) {
	qt := c.queue(q)
	if qt == nil {
		return
	}
	c.AddReplicas(q, members)
	qt.formerOwners = append(qt.formerOwners, formerOwner{node: qt.spec.Owner, process: qt.ownerProcess})
	qt.spec.Owner, qt.spec.Replicas, qt.spec.W = owner, slices.Clone(members), w
	qt.owner, qt.ownerProcess = qt.replica(owner), 0
	qt.fenced = false
	qt.activatedNs = atNs
	if !qt.spec.ISR {
		// Only an isr queue confirms at its watermark: another policy's
		// watermark (over an in-sync set its lag timer may have shrunk)
		// can run ahead of what the recovery's R witnesses hold, and the
		// new owner's starts again from the recovered history.
		qt.watermark = 0
	}
	qt.activatedEpochs = append(qt.activatedEpochs, epoch)
	for _, r := range qt.reps {
		r.former = !slices.Contains(members, r.node)
	}
}

// Grown takes queue q's admission of a new copy: members are its
// assignment's members now (one more; owner, epoch and W unchanged).
func (c *Checker) Grown(q core.QueueID, members []core.NodeID) {
	qt := c.queue(q)
	if qt == nil {
		return
	}
	c.AddReplicas(q, members)
	qt.spec.Replicas = slices.Clone(members)
	for _, r := range qt.reps {
		r.former = !slices.Contains(members, r.node)
	}
}

// Installed takes node's installation of the recovered history of q: its
// log changed after its seal, on purpose.
func (c *Checker) Installed(atNs int64, node core.NodeID, q core.QueueID) {
	if qt := c.queue(q); qt != nil {
		if r := qt.replica(node); r != nil {
			r.installedNs = atNs
		}
	}
}

// formerOwnerConfirm reports whether a confirm from node's process comes
// from an earlier assignment's owner process of qt.
func (qt *queueTruth) formerOwnerConfirm(node core.NodeID, process uint64) bool {
	return slices.ContainsFunc(qt.formerOwners, func(f formerOwner) bool {
		return f.node == node && (f.process == process || f.process == 0)
	})
}

// ActivationWitnesses judges, as queue q's activation of epoch commits,
// that the seals the simulator saw made for that transition (the stage
// marks of the replicas themselves) reach the previous assignment's
// witness threshold: R = E − W + 1 complete seals of distinct previous
// members, or one for an isr queue, or else a seal, damaged or not, from
// every previous member (recovery.Collection.AllSealed: within the fault
// budget each confirmed record is intact on one of them) (activation-witnesses).
func (c *Checker) ActivationWitnesses(atNs int64, q core.QueueID, epoch uint64) {
	qt := c.queue(q)
	if qt == nil {
		return
	}
	e, w := len(qt.spec.Replicas), qt.spec.W
	need := e - w + 1
	if qt.spec.ISR {
		need = 1
	}
	var sealed, any []core.NodeID
	for _, s := range c.seals {
		if s.q != q || s.epoch != epoch || !slices.Contains(qt.spec.Replicas, s.node) {
			continue
		}
		if !slices.Contains(any, s.node) {
			any = append(any, s.node)
		}
		if !s.damaged && !slices.Contains(sealed, s.node) {
			sealed = append(sealed, s.node)
		}
	}
	if len(sealed) < need && len(any) < e {
		c.fail("activation-witnesses", atNs, "q=%d: epoch %d activated with %d complete seals of the previous members %v (%v), R=%d (E=%d, W=%d)",
			q, epoch, len(sealed), qt.spec.Replicas, sealed, need, e, w)
	}
}
