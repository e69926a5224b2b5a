package core

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/queue"
	"github.com/sluicemq/sluice/core/recovery"
	"github.com/sluicemq/sluice/core/seam"
)

// Queues the controller places. A node holds a replica of a placed queue
// when the committed assignment names it with this very process and
// storage instance: it opens the queue's log (an OpOpen storage effect),
// and once the log is open runs the replica group as it runs a statically
// configured one. When the assignment is fenced (a pending transition),
// or the queue deleted or recreated, the group is fenced: it admits no
// more writes. A restarted process is named by no assignment (its process
// instance is new), so it serves none of the queues it held: their logs
// wait, untouched, for recovery (docs/design/recovery.md).

// placedGroup is one placed queue this node holds (or is opening).
type placedGroup struct {
	queue       QueueID
	incarnation uint64
	phase       placedPhase
	// forSeal: the log was opened for a seal (seal.go), never for a group.
	forSeal bool
	// state: what the log recovered when it opened (its receipt), and its
	// bounds when no group runs on it (fenced as it opened, or opened for
	// a seal), for a seal to read; byInstall: an installation wrote the
	// log since, and state is the log as it issued it.
	state     *seam.LogState
	byInstall bool
	// epoch: the assignment epoch of the group running on it (0: none)
	epoch uint64
	// held: the peer messages that reached the group while it was being
	// replaced, in arrival order, for the new group (holdForReplacement);
	// heldBytes: their size
	held      []heldMsg
	heldBytes int
	// generation: the live log's generation (io/seglog's); publishing:
	// the stage's state while its publish is under way, the live log's
	// once it completes; activateAfterPublish: an activation that names
	// this process came meanwhile, and its group starts on the published
	// log.
	generation           uint64
	publishing           *seam.LogState
	activateAfterPublish bool
	// copy: where a new copy's learner is in beginning a fresh generation
	// for its copy, its log holding an older history of the queue
	// (keepApart); fresh: the generation it opens (copyOpening only)
	copy  copyPhase
	fresh uint64
	// binding: what the live log's storage binding says of it
	// (bindingChecked)
	binding bindState
}

// placedPhase is where a placed queue's log is on this node.
type placedPhase uint8

const (
	// placedOpening: its OpOpen is in flight (for a group or a seal)
	placedOpening placedPhase = iota
	// placedOpen: open; a group runs on it (epoch > 0) or none does
	// (fenced as it opened, opened for a seal, or its assignment moved on)
	placedOpen
	// placedReplacing: its old group is sealed and a sync behind the old
	// group's operations is in flight, after which the new group starts
	// (replaced); peer messages for the group are held meanwhile
	placedReplacing
)

var placedPhaseNames = [...]string{placedOpening: "opening", placedOpen: "open", placedReplacing: "replacing"}

func (ph placedPhase) String() string { return phaseName(placedPhaseNames[:], ph, "placedPhase") }

// phaseName names phase v of a phase type by its table, or by its number.
func phaseName[P ~uint8](names []string, v P, typ string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(v))
}

// copyPhase is where a new copy's learner is in beginning the fresh
// generation its copy starts in (keepApart): its log holds an older
// history of the queue, which is never truncated to fit the owner's.
type copyPhase uint8

const (
	// copyNone: no fresh generation is being begun
	copyNone copyPhase = iota
	// copyAfterSeal: a seal of the old log is under way; the copy begins
	// once it ends (sealEnded)
	copyAfterSeal
	// copyQuieting: the sync behind the old log's effects is in flight
	copyQuieting
	// copyQuiet: it completed, and the copy may begin (within quieted's
	// step only: a later activation syncs again)
	copyQuiet
	// copyOpening: the fresh generation's open is in flight (freshOpened);
	// its publish follows (publishing)
	copyOpening
)

var copyPhaseNames = [...]string{copyNone: "none", copyAfterSeal: "after-seal", copyQuieting: "quieting", copyQuiet: "quiet", copyOpening: "opening"}

func (ph copyPhase) String() string { return phaseName(copyPhaseNames[:], ph, "copyPhase") }

// bindState is what a placed log's storage binding says of it.
type bindState uint8

const (
	// bindNew: this storage never bound the log (no marker): it
	// acknowledged nothing a binding could have lost; bound once it is
	// writable (its damaged tail discarded)
	bindNew bindState = iota
	// bindBound: it holds its binding, or its OpBind is issued
	bindBound
	// bindLost: bound here before and holding no binding of its own now
	// (its directory lost or emptied): what it acknowledged may be gone
	bindLost
)

// bindTag marks, with sealTag, a binding's OpBind (it completes silently,
// though a host may report it; a failure comes back, and the process
// exits).
const bindTag uint64 = 4

// placedMax bounds the placed queues a node tracks: the catalogue's limit.
// TODO: a deleted queue's group and entry stay (fenced) for the
// process's life, and its log stays open in the host; a long-lived daemon
// with queue churn needs them retired once the group's storage is idle.
const placedMax = metadata.QueuesMax

// reconcile follows the committed assignments after the metadata group
// applied something.
func (n *Node) reconcile() {
	md := n.ctrl.Metadata()
	if md.Applied() == n.reconciled {
		return
	}
	n.reconciled = md.Applied()
	n.recoveryDue = true
	n.recoveryBudgetChanged(md)
	n.recoveryRetryAsked(md)
	qs := md.Queues()
	for i := range qs {
		q := &qs[i]
		if !q.Assigned || q.Assignment.Fenced || !n.mine(&q.Assignment) {
			continue
		}
		if j := n.placedIndex(q.ID); j >= 0 {
			if p := &n.placed[j]; p.phase != placedOpening && p.epoch != q.Assignment.Epoch {
				n.activated(p, q)
			}
			continue
		}
		if len(n.placed) >= placedMax {
			panic("core: more placed queues than the catalogue holds")
		}
		n.placed = append(n.placed, placedGroup{queue: q.ID, incarnation: q.Incarnation, phase: placedOpening})
		n.out.Storage(seam.Effect{Op: seam.OpOpen, Group: seam.QueueGroup(q.ID)})
	}
	for _, p := range n.placed {
		r := n.queue(seam.QueueGroup(p.queue))
		if r == nil {
			continue
		}
		if !r.Fenced() {
			if why := fenceReason(md, p); why != "" {
				r.Fence(why)
			}
		}
		if why := retireReason(md, &p, n); why != "" && !r.Sealed() && p.phase != placedReplacing {
			// Nothing this group holds matters to the queue any more: it
			// answers its publishes in flight (unknown: each may or may not
			// be in the history the recovery installed) and goes inert,
			// rather than leaving their clients waiting for ever.
			r.Seal(why)
		}
	}
}

// retireReason says why placed group p's replica group on this node has
// no part in its queue any more (the queue deleted, or activated in an
// assignment that does not name this process), or "".
func retireReason(md *metadata.State, p *placedGroup, n *Node) string {
	q, ok := placedQueue(md, p.queue)
	switch {
	case !ok || q.Incarnation != p.incarnation:
		return "the queue was deleted"
	case q.Assigned && !q.Assignment.Fenced && q.Assignment.Epoch != p.epoch && !n.mine(&q.Assignment):
		return fmt.Sprintf("the assignment of epoch %d does not name this process", q.Assignment.Epoch)
	case q.Assigned && q.Assignment.Fenced && !n.mine(&q.Assignment):
		// A learner's group, its learner cleared by the transition: no
		// member of the assignment the recovery seals, it must not take
		// the next owner's appends on a log an installation may publish
		// over meanwhile.
		return fmt.Sprintf("the transition to epoch %d cleared this process's learner", q.Assignment.Pending.Epoch)
	}
	return ""
}

// inSyncTick feeds every placed group this node owns its committed in-sync
// set and the lag time (read on every tick), and carries the set its owner
// wants to the controller's leader.
func (n *Node) inSyncTick() {
	md := n.ctrl.Metadata()
	lagMs := md.Setting(metadata.ReplicaLagTimeMaxMs)
	for _, p := range n.placed {
		r := n.queue(seam.QueueGroup(p.queue))
		if r == nil || r.Fenced() {
			continue
		}
		q, ok := placedQueue(md, p.queue)
		if !ok || q.Incarnation != p.incarnation || q.Assignment.Owner != n.x.Node {
			continue
		}
		r.SetInSync(q.Assignment.InSync.Slice(), q.Assignment.InSyncVersion, lagMs)
		want, version, ok := r.InSyncWanted()
		if !ok {
			continue
		}
		var ns metadata.Nodes
		ns.N = copy(ns.ID[:], want)
		n.stepCtrl(ctrl.Input{Kind: ctrl.InRequestInSync, Msg: ctrl.AppendInSyncRequest(nil, p.queue, p.incarnation, q.Assignment.Epoch, version, &ns)})
	}
}

// learnerTick feeds every placed group this node owns its assignment's
// learner and member processes, and asks the leader to admit a learner
// that caught up (core/queue's learner.go), at most once per admitRetryNs.
// A pending transition refuses admission (the metadata guards it), and
// fenced groups are not asked.
func (n *Node) learnerTick() {
	md := n.ctrl.Metadata()
	for k, p := range n.placed {
		r := n.queue(seam.QueueGroup(p.queue))
		if r != nil && r.Learning() {
			if q, ok := placedQueue(md, p.queue); ok && q.Incarnation == p.incarnation && q.Assignment.Epoch == p.epoch && n.member(&q.Assignment) {
				r.Admitted() // its assignment names this process now
				n.bindWhole(&n.placed[k], n.onLiveLog(p.queue))
			}
			continue
		}
		if r == nil || r.Fenced() || !r.Owns() {
			continue
		}
		q, ok := placedQueue(md, p.queue)
		if !ok || q.Incarnation != p.incarnation || q.Assignment.Epoch != p.epoch || q.Assignment.Owner != n.x.Node {
			continue
		}
		a := &q.Assignment
		var nodes [seam.ReplicasMax]NodeID
		var processes [seam.ReplicasMax]uint64
		for i, m := range a.Members.Slice() {
			nodes[i], processes[i] = m.Node, m.Process
		}
		r.SetMembers(nodes[:a.Members.N], processes[:a.Members.N])
		r.SetLearner(a.Learner.Node, a.Learner.Process)
		node, process, ok := r.LearnerCaughtUp()
		if !ok || node != a.Learner.Node || process != a.Learner.Process {
			continue
		}
		i := slices.IndexFunc(n.admitAskedNs, func(x queueInstant) bool { return x.queue == p.queue })
		if i >= 0 && n.x.NowNs-n.admitAskedNs[i].atNs < admitRetryNs {
			continue
		}
		if i < 0 {
			if len(n.admitAskedNs) >= placedMax {
				n.admitAskedNs = n.admitAskedNs[:0] // a bound; forgetting only asks again
			}
			n.admitAskedNs = append(n.admitAskedNs, queueInstant{queue: p.queue})
			i = len(n.admitAskedNs) - 1
		}
		n.admitAskedNs[i].atNs = n.x.NowNs
		n.recoveryNote(p.queue, "learner n%d/%d caught up: asking its admission", node, process)
		n.stepCtrl(ctrl.Input{Kind: ctrl.InRequestAdmit, Msg: ctrl.AppendAdmitRequest(nil, p.queue, p.incarnation, a.Epoch, a.Learner)})
	}
}

// admitRetryNs: an owner asks again to admit its learner after this long
// (a request to a leader that went may be lost).
const admitRetryNs = 500e6

// mine reports whether assignment a names this node's process and storage
// (a member's, or its learner's: the learner's node runs the queue's
// follower group on the member's log).
func (n *Node) mine(a *metadata.Assignment) bool {
	if l := a.Learner; l.Node == n.x.Node && l.Process == n.x.Process && l.Storage == n.storage {
		return true
	}
	return n.member(a)
}

// member reports whether assignment a names this node's process and
// storage as a member.
func (n *Node) member(a *metadata.Assignment) bool {
	for _, m := range a.Members.Slice() {
		if m.Node == n.x.Node {
			if n.x.Bugs.Has(bugs.ServePredecessorsQueues) {
				return m.Storage == n.storage // planted: any process of this data directory
			}
			return m.Process == n.x.Process && m.Storage == n.storage
		}
	}
	return false
}

func (n *Node) placedIndex(q QueueID) int {
	return slices.IndexFunc(n.placed, func(p placedGroup) bool { return p.queue == q })
}

// placedInvariants checks the placed groups between steps: one a queue,
// within the catalogue's bound; messages held only while a group is
// replaced, within their bounds; phases that agree with the groups that
// run (none while a log opens, a sealed old one while it is replaced) and
// with each other (a fresh copy begun only once the log is open, its
// generation named only while it opens). It panics with what broke.
func (n *Node) placedInvariants() {
	if len(n.placed) > placedMax {
		panic(fmt.Sprintf("core: %d placed queues", len(n.placed)))
	}
	for i := range n.placed {
		p := &n.placed[i]
		for _, o := range n.placed[:i] {
			if o.queue == p.queue {
				panic(fmt.Sprintf("core: queue %d placed twice", p.queue))
			}
		}
		g := seam.QueueGroup(p.queue)
		switch {
		case len(p.held) > 0 && p.phase != placedReplacing:
			panic(fmt.Sprintf("core: queue %d holds %d messages and is not being replaced", p.queue, len(p.held)))
		case len(p.held) > replacingHeldMax || p.heldBytes > replacingHeldBytesMax || (len(p.held) == 0 && p.heldBytes != 0):
			panic(fmt.Sprintf("core: queue %d holds %d messages of %d bytes", p.queue, len(p.held), p.heldBytes))
		case p.phase > placedReplacing || p.copy > copyOpening:
			panic(fmt.Sprintf("core: queue %d in phase %s, copy %s", p.queue, p.phase, p.copy))
		case p.phase == placedOpening && (p.epoch != 0 || p.copy != copyNone || n.queue(g) != nil):
			panic(fmt.Sprintf("core: queue %d's log is opening, with a group of epoch %d (copy %s)", p.queue, p.epoch, p.copy))
		case p.phase == placedReplacing && (n.queue(g) == nil || !n.queue(g).Sealed()):
			panic(fmt.Sprintf("core: queue %d is being replaced, with no sealed old group", p.queue))
		case p.copy == copyQuiet:
			panic(fmt.Sprintf("core: queue %d's quiet old log outlived the step that found it quiet", p.queue))
		case (p.copy == copyOpening) != (p.fresh != 0):
			panic(fmt.Sprintf("core: queue %d's copy %s with fresh generation %d", p.queue, p.copy, p.fresh))
		}
	}
}

// brokerLive reports whether the metadata holds broker id live.
func (n *Node) brokerLive(id NodeID) bool {
	b, ok := n.ctrl.Metadata().Broker(id)
	return ok && b.Live
}

// placedQueue returns the catalogue entry of queue id q, if declared.
func placedQueue(md *metadata.State, q QueueID) (*metadata.Queue, bool) {
	qs := md.Queues()
	for i := range qs {
		if qs[i].ID == q {
			return &qs[i], true
		}
	}
	return nil, false
}

// fenceReason says why placed group p must be fenced, or "".
func fenceReason(md *metadata.State, p placedGroup) string {
	q, ok := placedQueue(md, p.queue)
	switch {
	case !ok || q.Incarnation != p.incarnation:
		return "the queue was deleted"
	case q.Assignment.Fenced:
		return fmt.Sprintf("pending transition to epoch %d", q.Assignment.Pending.Epoch)
	}
	return ""
}

// opened is the completion of a placed queue's OpOpen: the replica group
// starts from what its log recovered.
func (n *Node) opened(d *StorageDone) {
	i := n.placedIndex(QueueID(d.Group))
	if i < 0 || n.placed[i].phase != placedOpening {
		panic(fmt.Sprintf("core: open completion for group %d, which is not opening", d.Group))
	}
	p := &n.placed[i]
	p.phase = placedOpen
	if d.Err == "" && d.State != nil {
		d.State = n.bindingChecked(p, d.State)
	}
	if p.forSeal {
		n.sealOpened(p, d)
		// An activation that names this process may have come while the
		// log opened for the recovery: the group starts now.
		if q, ok := placedQueue(n.ctrl.Metadata(), p.queue); ok && d.Err == "" && q.Incarnation == p.incarnation &&
			q.Assigned && !q.Assignment.Fenced && n.mine(&q.Assignment) && p.epoch != q.Assignment.Epoch {
			n.activated(p, q)
		}
		return
	}
	if d.Err != "" {
		return // the failure policy: the process exits
	}
	p.state = d.State // what a seal of the log needs to know (its receipt)
	if d.State != nil {
		p.generation = d.State.Generation
	}
	md := n.ctrl.Metadata()
	if fenceReason(md, *p) != "" {
		// Fenced or deleted while its log opened: no group runs on it, so
		// nothing writes to the log (recovery reads it as it is).
		return
	}
	q, _ := placedQueue(md, p.queue)
	if !n.mine(&q.Assignment) {
		return // opened for a recovery, and the assignment names it not
	}
	n.startGroup(p, q, d.State)
}

// activated follows a recovered assignment that names this process for
// queue p (docs/design/recovery.md, "Activation"): the old group, sealed and inert, goes; a new one
// runs on the log as it is now (as the installation left it, if one
// wrote it).
func (n *Node) activated(p *placedGroup, q *metadata.Queue) {
	n.installAbort(p.queue)
	if p.publishing != nil {
		// The log changes when the publish completes: the group starts
		// on what it publishes.
		p.activateAfterPublish = true
		return
	}
	g := seam.QueueGroup(p.queue)
	st := p.state
	if r := n.queue(g); r != nil {
		if p.phase != placedReplacing {
			// The old group may have storage operations in flight (one
			// that never sealed follows whoever owns): seal it, inert,
			// and start the new one once a sync behind them all completed,
			// so that no completion of the old reaches the new.
			r.Seal(fmt.Sprintf("replaced by the assignment of epoch %d", q.Assignment.Epoch))
			p.phase = placedReplacing
			_, end, _, _ := r.Retained()
			if p.byInstall {
				end = p.state.End // an installation wrote the log since
			}
			n.out.Storage(seam.Effect{Op: seam.OpSync, Group: g, Offset: end, Tag: sealTag | replaceTag})
		}
		return
	}
	if st == nil {
		panic(fmt.Sprintf("core: queue %d activated here with no log state", p.queue))
	}
	n.startGroup(p, q, st)
}

// replaceTag marks, with sealTag, the sync behind an old group's
// operations; quietTag the sync behind an old log's before a new copy's
// fresh generation begins (keepApart).
const (
	replaceTag uint64 = 3
	quietTag   uint64 = 5
)

// quieted takes the sync behind the old log's effects that a new copy's
// fresh generation waited for, and begins the copy if its activation
// still stands.
func (n *Node) quieted(d *StorageDone) {
	i := n.placedIndex(QueueID(d.Group))
	if i < 0 || n.placed[i].copy != copyQuieting {
		return // the queue left this broker meanwhile
	}
	p := &n.placed[i]
	p.copy = copyQuiet // (a failed sync ended the process: sealStorage)
	n.activateDeferred(p)
	if i := n.placedIndex(QueueID(d.Group)); i >= 0 && n.placed[i].copy == copyQuiet {
		n.placed[i].copy = copyNone // (once: a later activation syncs again)
	}
}

// heldMsg is a peer message that reached a group being replaced.
type heldMsg struct {
	from NodeID
	data []byte // a copy: an input's bytes are the driver's once Step returns
}

// Bounds of what a group being replaced holds: past them a message is
// dropped, as the sealed old group would drop it (its sender resends).
const (
	replacingHeldMax      = 16
	replacingHeldBytesMax = 4 << 20
)

// holdForReplacement keeps a message for group g while its old group is
// being replaced, for the new group to take when it starts (replaced); it
// reports whether g is being replaced (the message is then held, or
// dropped past the bounds). The new owner's first append of its epoch
// comes in that window whenever its own replacement ended first: the old
// group, sealed, dropped it, and the new epoch confirmed nothing until
// the owner's resend (ResendMs, 100 ms) asked again.
func (n *Node) holdForReplacement(from NodeID, g GroupID, data []byte) bool {
	i := n.placedIndex(QueueID(g))
	if i < 0 || n.placed[i].phase != placedReplacing {
		return false
	}
	p := &n.placed[i]
	if len(p.held) < replacingHeldMax && p.heldBytes+len(data) <= replacingHeldBytesMax {
		p.held = append(p.held, heldMsg{from: from, data: slices.Clone(data)})
		p.heldBytes += len(data)
	}
	return true
}

// replaced takes the completion of that sync: the old group goes, and the
// new one starts if the assignment still names this process.
func (n *Node) replaced(d *StorageDone) {
	i := n.placedIndex(QueueID(d.Group))
	if i < 0 || n.placed[i].phase != placedReplacing {
		panic(fmt.Sprintf("core: a replacement sync for group %d, which is not being replaced", d.Group))
	}
	p := &n.placed[i]
	p.phase = placedOpen
	held := p.held
	p.held, p.heldBytes = nil, 0
	r := n.queue(d.Group)
	st := p.state
	if !p.byInstall {
		s := r.LogState()
		st = &s
	}
	j := slices.Index(n.queues, r)
	n.queues = slices.Delete(n.queues, j, j+1)
	q, ok := placedQueue(n.ctrl.Metadata(), p.queue)
	if !ok || q.Incarnation != p.incarnation || !q.Assigned || q.Assignment.Fenced || !n.mine(&q.Assignment) {
		// The assignment moved on meanwhile: no group runs on the log
		// (a recovery may seal and read it as it is).
		p.state, p.byInstall, p.epoch = st, true, 0
		return // (what it held was for a group that does not run)
	}
	if j := n.sealer.job; j != nil && j.req.Queue == p.queue {
		// A seal of this log is under way (asked for a transition that
		// has activated since): a group started now would write the log
		// (its retention deletes the head) that the seal reports as it
		// froze it. The group starts on the log once the seal ends
		// (sealEnded); what was held for it goes, as a sealed group
		// drops it (its senders resend).
		p.state, p.byInstall, p.epoch = st, true, 0
		p.copy = copyAfterSeal
		return
	}
	n.startGroup(p, q, st)
	if r := n.queue(d.Group); r != nil && len(held) > 0 {
		n.recoveryNote(p.queue, "queue %d epoch %d: %d messages held while its group was replaced go to the new group", p.queue, q.Assignment.Epoch, len(held))
		for _, h := range held {
			r.OnMessage(h.from, h.data)
		}
	}
}

// startGroup runs queue q's replica group on its open log, which holds st.
func (n *Node) startGroup(p *placedGroup, q *metadata.Queue, st *seam.LogState) {
	if n.keepApart(p, q, st) {
		return // the group starts on the fresh generation, once published
	}
	md := n.ctrl.Metadata()
	p.epoch, p.forSeal, p.byInstall = q.Assignment.Epoch, false, false
	qc := QueueConfig{Queue: p.queue, Owner: q.Assignment.Owner, Policy: q.Policy, EpochBase: seam.EpochBase(q.Assignment.Epoch), Leased: true}
	if q.Policy == ISR {
		qc.MinInSync = q.MinInsync
	}
	for _, m := range q.Assignment.Members.Slice() {
		qc.Replicas = append(qc.Replicas, m.Node)
		qc.Processes = append(qc.Processes, m.Process)
	}
	qc.Learner = !n.member(&q.Assignment) // (mine: as its learner)
	r := queue.New(&n.x, qc)
	at, _ := slices.BinarySearchFunc(n.queues, r.Group(), func(r *queue.Replica, g GroupID) int {
		switch {
		case r.Group() < g:
			return -1
		case r.Group() > g:
			return 1
		}
		return 0
	})
	n.queues = slices.Insert(n.queues, at, r)
	r.Restore(st)
	if p.binding == bindNew {
		n.bindWhole(p, n.onLiveLog(p.queue)) // behind the discard of its torn tail
	}
	r.SetLease(n.lease.untilNs)
	r.Begin()
	n.leaseTick(true)
	if q.Assignment.Owner == n.x.Node {
		// The committed in-sync set from the start, not from the next
		// tick: an isr owner admits nothing without one, and a publish
		// right after the declaration would be refused.
		r.SetInSync(q.Assignment.InSync.Slice(), q.Assignment.InSyncVersion, md.Setting(metadata.ReplicaLagTimeMaxMs))
		if q.Assignment.Epoch > 1 && !slices.Contains(n.reattach, p.queue) {
			// A recovered assignment (epoch 1 is the first placement):
			// its first confirm is the recovery's last stage.
			n.reattach = append(n.reattach, p.queue)
		}
	}
}

// reattachTick marks the reattach stage of the recovered queues this node
// owns whose owner confirmed its first publish, and forgets those whose
// group went (replaced, retired) first.
func (n *Node) reattachTick() {
	n.reattach = slices.DeleteFunc(n.reattach, func(q QueueID) bool {
		r := n.queue(seam.QueueGroup(q))
		if r == nil || r.Sealed() || !r.Owns() {
			return true
		}
		i := n.placedIndex(q)
		if c := r.PublishesConfirmed(); c > 0 && i >= 0 {
			n.out.Recovery(q, seam.StageReattach, n.placed[i].epoch, nil, fmt.Sprintf("owner n%d confirmed %d publishes", n.x.Node, c))
			return true
		}
		return false
	})
}

// topology answers where a queue lives, by the applied metadata.
func (n *Node) topology(c ClientID, req *Request) {
	if n.ctrl == nil {
		n.out.Reply(c, req.ID, Failed, 0, 0, "no metadata here")
		return
	}
	q, ok := n.ctrl.Metadata().Queue(string(req.Body))
	switch {
	case !ok && !n.ctrl.CaughtUp():
		n.out.Reply(c, req.ID, Failed, 0, 0, seam.ReasonCatchingUp)
	case !ok:
		n.out.Reply(c, req.ID, Failed, 0, 0, "no such queue")
	case !q.Assigned:
		n.out.Reply(c, req.ID, Failed, q.ID, 0, "not placed yet")
	case q.Assignment.Fenced:
		n.out.Reply(c, req.ID, Failed, q.ID, 0, fmt.Sprintf("fenced: pending transition to epoch %d", q.Assignment.Pending.Epoch))
	case !n.brokerLive(q.Assignment.Owner):
		// The metadata holds its owner's broker down: the transition that
		// fences the queue follows. A client sent there would only find
		// it gone (a forwarding link that cannot connect); it asks again.
		n.out.Reply(c, req.ID, Failed, q.ID, 0, fmt.Sprintf("owner down: n%d, its recovery follows", q.Assignment.Owner))
	default:
		n.out.Reply(c, req.ID, Confirmed, q.ID, uint64(q.Assignment.Owner), fmt.Sprintf("owner=n%d", q.Assignment.Owner))
	}
	if ok && q.Life != (metadata.Lifetime{}) {
		life := q.Life
		n.out.Effects[len(n.out.Effects)-1].Life = &life
	}
}

// route answers a route request (seam.ReqRoute) from the applied
// metadata: the queues the query's message reaches.
func (n *Node) route(c ClientID, req *Request) {
	if n.ctrl == nil {
		n.out.Reply(c, req.ID, Failed, 0, 0, "no metadata here")
		return
	}
	q, err := metadata.DecodeRouteQuery(req.Body)
	if err != nil {
		n.out.Reply(c, req.ID, Failed, 0, 0, err.Error())
		return
	}
	md := n.ctrl.Metadata()
	if !n.ctrl.CaughtUp() || md.Applied() < q.MinApplied {
		n.out.Refuse(c, req.ID, 0, seam.RefusalBehind, fmt.Sprintf("metadata applied to %d, asked for %d", md.Applied(), q.MinApplied))
		return
	}
	names, refusal := md.Route(n.routed[:0], q.Exchange, q.Key, q.Headers)
	n.routed = names[:0]
	switch refusal {
	case seam.RefusalNone:
		buf := n.out.Grow(metadata.QueueNameBytesMax + 16)
		start := len(buf)
		buf = metadata.AppendRouted(buf, names)
		n.out.Effects = append(n.out.Effects, seam.Effect{Kind: seam.EfReply, Client: c, ReqID: req.ID, Outcome: Confirmed,
			Count: len(names), Body: buf[start:len(buf):len(buf)]})
		n.out.Keep(buf)
	case seam.RefusalNotFound:
		n.out.Refuse(c, req.ID, 0, refusal, fmt.Sprintf("no exchange '%s' in vhost '/'", q.Exchange))
	default:
		n.out.Refuse(c, req.ID, 0, refusal, fmt.Sprintf("cannot publish to internal exchange '%s' in vhost '/'", q.Exchange))
	}
}

// keepApart begins, for a new copy's learner (no member of q is this
// broker) whose log holds an older history of the queue (of an assignment
// it left: a returning broker's), a fresh generation for the copy, and
// reports whether it did (or one is under way). The older history is never
// truncated to fit the owner's: it stays untouched in the generation it
// was, readable for inspection, and the copy catches up from empty
// (docs/design/recovery.md, "Learners and admission": a returning
// replica's older history is kept apart). A log of
// this assignment's generation or later (an installation of its recovery,
// or a learner's copy resumed after a restart) is the copy already.
func (n *Node) keepApart(p *placedGroup, q *metadata.Queue, st *seam.LogState) bool {
	a := &q.Assignment
	if slices.ContainsFunc(a.Members.Slice(), func(m metadata.Member) bool { return m.Node == n.x.Node }) {
		return false // a member, or its successor: the copy is the member's
	}
	if p.copy == copyOpening || p.copy == copyQuieting || p.publishing != nil {
		return true
	}
	if (st.End == st.Start && len(st.Epochs) == 0 && st.Damage == "") || st.Generation >= a.Epoch {
		return false
	}
	if j := n.sealer.job; j != nil && j.req.Queue == p.queue {
		// A seal of the old log is under way (asked for a transition
		// that has activated since): publishing the fresh generation
		// now would leave it describing a log that is no longer the
		// live one. The copy starts once the seal ends.
		p.copy = copyAfterSeal
		return true
	}
	if p.copy != copyQuiet && !n.x.Bugs.Has(bugs.FreshWithoutQuiet) { // (planted: publish at once)
		// Storage effects on the old log may still be in flight (an
		// installation's in place, whose transition activated without
		// it): published now, the fresh generation would be the log they
		// complete on. A sync behind them all first (a log's effects
		// complete in order); the copy begins once it completes
		// (quieted).
		p.copy = copyQuieting
		n.out.Storage(seam.Effect{Op: seam.OpSync, Group: seam.QueueGroup(p.queue), Offset: st.End, Tag: sealTag | quietTag})
		return true
	}
	p.copy, p.fresh = copyOpening, a.Epoch
	n.recoveryNote(p.queue, "queue %d: n%d's log [%d,%d) generation %d is an older history: its copy for epoch %d starts in generation %d",
		p.queue, n.x.Node, st.Start, st.End, st.Generation, a.Epoch, p.fresh)
	n.out.Storage(seam.Effect{Op: seam.OpOpen, Group: seam.QueueGroup(p.queue), Log: seam.LogStage, Offset: p.fresh})
	return true
}

// freshOpened takes the open of a new copy's fresh generation (keepApart),
// and reports whether it was one: what an earlier stage of that generation
// left goes, and the empty stage is published as the log, on which the
// learner's group starts (stagePublished).
func (n *Node) freshOpened(d *StorageDone) bool {
	i := n.placedIndex(QueueID(d.Group))
	if i < 0 || n.placed[i].copy != copyOpening || d.Offset != n.placed[i].fresh {
		return false
	}
	p := &n.placed[i]
	p.copy, p.fresh = copyNone, 0
	if d.Err != "" {
		return true // the failure policy: the process exits
	}
	issue := func(e seam.Effect) {
		e.Group, e.Log, e.Tag = d.Group, seam.LogStage, sealTag|installTag
		n.out.Storage(e)
	}
	st := d.State
	if st.Damage != "" {
		issue(seam.Effect{Op: seam.OpDiscard, Offset: st.End})
	}
	if st.End != 0 || len(st.Epochs) > 0 {
		issue(seam.Effect{Op: seam.OpReseed, Offset: 0})
	}
	p.publishing = &seam.LogState{Group: d.Group, Generation: st.Generation, Unrepaired: st.Unrepaired || st.Damage != "",
		Binding: recovery.AppendBinding(nil, p.queue, p.incarnation, n.storage)}
	p.activateAfterPublish = true
	issue(seam.Effect{Op: seam.OpBind, Body: p.publishing.Binding}) // empty and new: nothing it acknowledged can be missing
	issue(seam.Effect{Op: seam.OpPublish})
	return true
}

// bindingChecked checks the storage binding of placed queue p's log as it
// opened (st), and returns the state the node goes on from. A bound log is
// as it opened. A log this storage never bound (no marker: new, or made
// before bindings) is bound now, before anything else runs on it: it
// acknowledged nothing that a binding could have lost. A log bound before
// that holds no binding of its own (its queue or generation directory lost
// or emptied), or a binding that does not check or is another queue's or
// storage's, may lack what it acknowledged: it is taken as a log that lost
// records (unrepaired, and its seal says lost: no witness of a recovery,
// no owner started on it) until a learner's admission or an installation
// makes it whole and binds it again.
func (n *Node) bindingChecked(p *placedGroup, st *seam.LogState) *seam.LogState {
	if st.Log != 0 {
		return st
	}
	if recovery.Binds(st.Binding, p.queue, p.incarnation, n.storage) || n.x.Bugs.Has(bugs.UnboundWitness) {
		p.binding = bindBound // (planted: any log is taken as whole)
		return st
	}
	if !st.BoundBefore && len(st.Binding) == 0 && st.BindingDamage == "" {
		p.binding = bindNew
		if st.Damage == "" {
			n.bindWhole(p, n.onLiveLog(p.queue)) // (else once its group discarded the torn tail: startGroup)
		}
		return st
	}
	c := *st
	p.binding = bindLost
	c.Unrepaired = true
	why := "none"
	switch {
	case c.BindingDamage != "":
		why = c.BindingDamage
	case len(c.Binding) > 0:
		why = "another queue's or storage's"
	}
	n.recoveryNote(p.queue, "queue %d: n%d's log [%d,%d) generation %d was bound here and holds no storage binding of its own (%s): its directory was lost or emptied, and what it acknowledged with it; it is no witness, and comes back as a learner's or an installation's copy",
		p.queue, n.x.Node, c.Start, c.End, c.Generation, why)
	return &c
}

// onLiveLog returns a function that issues a storage effect on queue q's
// live log, tagged as a binding's.
func (n *Node) onLiveLog(q QueueID) func(seam.Effect) {
	return func(e seam.Effect) {
		e.Group, e.Tag = seam.QueueGroup(q), sealTag|bindTag
		n.out.Storage(e)
	}
}

// bindWhole binds queue p's live log, made whole (a learner admitted, an
// installation verified), unless it is bound: issue runs the effect on the
// log it is for.
func (n *Node) bindWhole(p *placedGroup, issue func(seam.Effect)) {
	if p.binding == bindBound {
		return
	}
	p.binding = bindBound
	// (Its own bytes, not the step's arena: the host may run it after
	// the next step, queued behind the log's operations.)
	issue(seam.Effect{Op: seam.OpBind, Body: recovery.AppendBinding(nil, p.queue, p.incarnation, n.storage)})
}
