package core

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/recovery"
	"github.com/sluicemq/sluice/core/seam"
)

// Sealing (docs/design/recovery.md, "Seals"). A replica of a fenced
// queue's previous assignment, asked by the recovery worker, seals its log
// for the pending transition: it checks the transition against a fresh
// committed view (a read index of the metadata group, not what it happens
// to have applied), freezes its log (the running group, if any, writes
// nothing more; a log no group runs on is opened read-only in effect), makes
// what was issued durable, reads every retained record and answers with the
// log's bounds, last epoch, damage and content identity. One seal runs at
// a time on a broker; an identical request joins the running one; another
// is refused busy (the worker retries); a seal made answers identical
// requests again as it was (there is no unseal).
//
// A seal is stored as the log's receipt (OpSeal: checksummed, synced with
// its directory) before it is answered. A restarted process asked again
// for the same transition reads its log anew and, if it still matches the
// receipt, answers the original seal (its original process among it);
// a log that changed since, or a receipt that does not check, withholds
// the evidence.

// sealTag marks the storage effects of a seal: their completions come to
// the sealer, not to the queue's replica group.
const sealTag uint64 = 1 << 63

// sealServe marks, with sealTag, the reads that serve a sealed read.
const sealServe uint64 = 1

// sealsKeptMax bounds the seals a process remembers to answer retries.
const sealsKeptMax = 64

// sealWaitersMax bounds the requesters one seal answers.
const sealWaitersMax = 2 * seam.ReplicasMax

type sealPhase uint8

const (
	sealFresh   sealPhase = iota + 1 // waiting for the fresh committed view
	sealSync                         // waiting for the log's writes to be durable
	sealRead                         // reading the retained records
	sealReceipt                      // storing the seal's receipt
)

// sealJob is the seal running on this broker.
type sealJob struct {
	req     recovery.SealRequest
	waiters []NodeID
	phase   sealPhase
	token   uint64 // the fresh read's
	seal    recovery.Seal
	id      *recovery.Identity
	// fromReceipt: the log matched the receipt of an earlier process's
	// seal for this transition, which answers
	fromReceipt bool
	// epochs: the epoch history of the records hashed, as a verifier's
	// read of them would find it; epochsBad: they went back in epoch or
	// held more than recovery.EpochsMax epochs (only a read may judge)
	epochs    []seam.EpochStart
	epochsBad bool
}

type sealer struct {
	job  *sealJob
	done []recovery.Seal // made by this process, oldest first
	// doneEpochs[i] is done[i]'s epoch history (nil: see epochsBad), so
	// that this node's recovery worker can take its own log as the source
	// by the seal it just hashed (recoveryTakeOwnSource)
	doneEpochs [][]seam.EpochStart
	lastToken  uint64
	serving    *serving // the sealed read in flight
}

// invariants checks what holds of the sealer between steps; it panics
// with what broke.
func (s *sealer) invariants() {
	if len(s.done) > sealsKeptMax || len(s.doneEpochs) != len(s.done) {
		panic(fmt.Sprintf("core: %d seals kept, %d epoch histories", len(s.done), len(s.doneEpochs)))
	}
	if j := s.job; j != nil {
		if j.phase < sealFresh || j.phase > sealReceipt {
			panic(fmt.Sprintf("core: seal of q=%d in no such phase %d", j.req.Queue, j.phase))
		}
		if len(j.waiters) > sealWaitersMax {
			panic(fmt.Sprintf("core: seal of q=%d has %d waiters", j.req.Queue, len(j.waiters)))
		}
	}
}

// onRecoveryMsg handles a message of the recovery group from peer from
// (its identity is the transport's, which authenticated it).
func (n *Node) onRecoveryMsg(from NodeID, data []byte) {
	k, err := recovery.KindOf(data)
	if err != nil {
		n.x.Refused++
		return
	}
	switch k {
	case recovery.KindSealRequest:
		req, err := recovery.DecodeSealRequest(data)
		if err != nil {
			n.x.Refused++
			return
		}
		n.sealRequested(from, req)
	case recovery.KindSeal:
		s, err := recovery.DecodeSeal(data)
		if err != nil || s.Node != from {
			n.x.Refused++ // a seal speaks for its sender only
			return
		}
		n.sealArrived(s)
	case recovery.KindSealRefused:
		r, err := recovery.DecodeSealRefused(data)
		if err != nil {
			n.x.Refused++
			return
		}
		n.sealRefusedBy(from, r)
	case recovery.KindReadRequest:
		req, err := recovery.DecodeReadRequest(data)
		if err != nil {
			n.x.Refused++
			return
		}
		n.readRequested(from, req)
	case recovery.KindReadPage:
		p, err := recovery.DecodeReadPage(data)
		if err != nil || p.Node != from {
			n.x.Refused++
			return
		}
		n.pageArrived(&p)
	case recovery.KindInstall:
		req, err := recovery.DecodeInstallRequest(data)
		if err != nil {
			n.x.Refused++
			return
		}
		n.installRequested(from, req)
	case recovery.KindInstalled:
		r, err := recovery.DecodeInstalled(data)
		if err != nil || r.Node != from {
			n.x.Refused++
			return
		}
		n.installedArrived(r)
	}
}

// serving is the sealed read a broker serves (one at a time).
type serving struct {
	to  NodeID
	req recovery.ReadRequest
}

// readRequested serves a page of a log this process sealed for the
// request's transition, or refuses.
func (n *Node) readRequested(from NodeID, req recovery.ReadRequest) {
	s := &n.sealer
	i := slices.IndexFunc(s.done, func(d recovery.Seal) bool {
		return d.Queue == req.Queue && d.Incarnation == req.Incarnation && d.Epoch == req.Epoch && d.Transition == req.Transition
	})
	refuse := func(code recovery.Refusal, why string) {
		r := recovery.SealRefused{Queue: req.Queue, Transition: req.Transition, Code: code, Reason: why, Read: true}
		if from == n.x.Node {
			n.sealRefusedBy(from, r)
			return
		}
		n.out.Send(seam.GroupRecovery, from, recovery.AppendSealRefused(n.out.Grow(64+len(why)), &r))
	}
	switch {
	case i < 0:
		refuse(recovery.RefusedNotSealedHere, "not sealed by this process")
	case s.serving != nil:
		refuse(recovery.RefusedBusy, "serving another sealed read")
	case req.From < s.done[i].Start || req.From >= s.done[i].End || req.Count < 1:
		refuse(recovery.RefusedFor, fmt.Sprintf("from=%d count=%d outside the sealed [%d,%d)", req.From, req.Count, s.done[i].Start, s.done[i].End))
	default:
		s.serving = &serving{to: from, req: req}
		// A page of up to PageRecordsMax records (the read's bytes are the
		// driver's bound, within PageBytesMax): a 1,000,000-record log is
		// some 250 pages, well within an inspection's 1,024.
		count := min(uint64(req.Count), s.done[i].End-req.From, recovery.PageRecordsMax)
		n.out.Storage(seam.Effect{Op: seam.OpRead, Group: seam.QueueGroup(req.Queue), Offset: req.From, Count: int(count), Tag: sealTag | sealServe})
	}
}

// served sends the page read for the sealed read being served.
func (n *Node) served(d *StorageDone) {
	s := &n.sealer
	sv := s.serving
	s.serving = nil
	if sv == nil {
		panic("core: a sealed read completed with none served")
	}
	recs := d.Records
	bytes := 0
	for i := range recs {
		if bytes += len(recs[i].Body); bytes > recovery.PageBytesMax || i >= recovery.PageRecordsMax {
			recs = recs[:i] // a record that does not fit is the next page's
			break
		}
	}
	p := recovery.ReadPage{Queue: sv.req.Queue, Transition: sv.req.Transition, Node: n.x.Node, From: sv.req.From, Records: recs}
	if sv.to == n.x.Node {
		n.pageArrived(&p)
		return
	}
	n.out.Send(seam.GroupRecovery, sv.to, recovery.AppendReadPage(n.out.Grow(recovery.PageSize(recs)), &p))
}

// sealRequested starts, joins or answers a seal for from.
func (n *Node) sealRequested(from NodeID, req recovery.SealRequest) {
	s := &n.sealer
	if n.ctrl == nil {
		n.sealRefuse(from, req, recovery.RefusedFor, "no metadata here")
		return
	}
	if _, ok := n.ctrl.Metadata().Broker(from); !ok && from != n.x.Node {
		n.sealRefuse(from, req, recovery.RefusedFor, fmt.Sprintf("n%d is not a broker of this cluster", from))
		return
	}
	for i := range s.done {
		d := &s.done[i]
		if d.Queue == req.Queue && d.Incarnation == req.Incarnation && d.Epoch == req.Epoch && d.Transition == req.Transition {
			n.sealAnswer(from, d) // a retry keeps the original seal
			return
		}
	}
	if why, elsewhere := heldElsewhere(n.ctrl.Metadata(), &req, n.x.Node, n.storage); elsewhere {
		// No log of this storage is evidence (its disk was replaced): the
		// seal is refused for good, at once. A seal job started for it, or
		// an installation of the same transition ended for it, would hold
		// up the installation the worker asks for with the seal, at every
		// retry the same way, for ever.
		n.sealRefuse(from, req, recovery.RefusedStorageReplaced, why)
		return
	}
	if i := n.placedIndex(req.Queue); i >= 0 && n.placed[i].publishing != nil {
		// The log changes as the publish completes: a seal waits for it.
		n.sealRefuse(from, req, recovery.RefusedBusy, fmt.Sprintf("publishing queue %d's new generation", req.Queue))
		return
	}
	if in := n.installer.job; in != nil && in.req.Queue == req.Queue {
		if in.phase == installFresh {
			// The installation has not touched the log yet (it waits for
			// its fresh view): the seal goes first. A previous member
			// installs only once sealed, and a worker asks for both at
			// once: were the seal refused here, the installation would
			// end for want of it, and the next pair meet the same way
			// (seed 7000001363).
			n.installEnd(recovery.RefusedBusy, "a seal of its log asked first")
		} else {
			// An installation is rewriting the log: a seal now would
			// read it half written (and the installation must not write
			// under a seal being read). The installer refuses a seal's
			// queue the same way.
			n.sealRefuse(from, req, recovery.RefusedBusy, fmt.Sprintf("installing queue %d", req.Queue))
			return
		}
	}
	if j := s.job; j != nil {
		if j.req != req {
			n.sealRefuse(from, req, recovery.RefusedBusy, fmt.Sprintf("sealing queue %d for epoch %d", j.req.Queue, j.req.Epoch))
			return
		}
		if !slices.Contains(j.waiters, from) && len(j.waiters) < sealWaitersMax {
			j.waiters = append(j.waiters, from)
		}
		return
	}
	s.lastToken++
	s.job = &sealJob{req: req, waiters: []NodeID{from}, phase: sealFresh, token: s.lastToken}
	n.stepCtrl(ctrl.Input{Kind: ctrl.InFreshRead, Seq: s.lastToken})
}

// sealFreshDone continues the seal once its fresh read was answered.
func (n *Node) sealFreshDone(e *ctrl.Effect) {
	if n.installFreshDone(e) || n.leaseFresh(e) {
		return
	}
	j := n.sealer.job
	if j == nil || j.phase != sealFresh || j.token != e.Seq {
		return // a read of a seal that ended
	}
	if e.Result != ctrl.Committed {
		n.sealEnd("no fresh committed view: " + e.Note)
		return
	}
	md := n.ctrl.Metadata()
	q, why := sealAuthorized(md, &j.req, n.x.Node, n.storage)
	if why != "" {
		n.sealEnd(why)
		return
	}
	j.seal = recovery.Seal{Queue: j.req.Queue, Incarnation: j.req.Incarnation, Epoch: j.req.Epoch, Transition: j.req.Transition,
		Node: n.x.Node, Process: n.x.Process, Storage: n.storage}
	g := seam.QueueGroup(q.ID)
	if r := n.queue(g); r != nil && !n.writtenByInstall(q.ID) {
		// A group runs on the log: freeze it, then sync behind what it
		// issued, so that the reads see every record it ever will hold.
		// (Once an installation wrote the log, the group, sealed before
		// it, no longer knows what the log holds: the log is read as the
		// installation left it, below.)
		r.Seal(fmt.Sprintf("sealed for the transition to epoch %d", j.req.Epoch))
		j.seal.Start, j.seal.End, j.seal.LastEpoch, j.seal.Damaged = r.Retained()
		j.phase = sealSync
		n.out.Storage(seam.Effect{Op: seam.OpSync, Group: g, Offset: j.seal.End, Tag: sealTag})
		n.out.Effects = append(n.out.Effects, seam.Effect{Kind: seam.EfNote, Group: g,
			Reason: fmt.Sprintf("recovery seal q=%d epoch=%d frozen [%d,%d)", q.ID, j.req.Epoch, j.seal.Start, j.seal.End)})
		return
	}
	i := n.placedIndex(q.ID)
	switch {
	case i >= 0 && n.placed[i].phase == placedOpening:
		n.sealEnd("its log is opening")
	case i >= 0:
		// The log is open and no group runs on it (fenced as it opened):
		// nothing writes to it.
		n.sealRetained(n.placed[i].state)
	default:
		// No group ran on it in this process (a restart): open it, for
		// reading only; no group will run on it while the queue is fenced.
		if len(n.placed) >= placedMax {
			panic("core: more placed queues than the catalogue holds")
		}
		n.placed = append(n.placed, placedGroup{queue: q.ID, incarnation: q.Incarnation, phase: placedOpening, forSeal: true})
		n.out.Storage(seam.Effect{Op: seam.OpOpen, Group: g})
	}
}

// heldElsewhere reports whether node was a previous member of req's
// pending transition, as the applied metadata holds it, in another storage
// instance than storage: the transition's previous members are fixed, so
// sealAuthorized refuses its seal whatever the metadata applies next.
func heldElsewhere(md *metadata.State, req *recovery.SealRequest, node NodeID, storage uint64) (string, bool) {
	q, ok := placedQueue(md, req.Queue)
	if !ok || q.Incarnation != req.Incarnation || !q.Assigned || !q.Assignment.Fenced ||
		q.Assignment.Pending.Epoch != req.Epoch || recovery.Digest(q.Assignment.Pending.Digest) != req.Transition {
		return "", false
	}
	for _, m := range q.Assignment.Members.Slice() {
		if m.Node == node && m.Storage != storage {
			return fmt.Sprintf("n%d held queue %d in storage %d, not this one (%d)", node, req.Queue, m.Storage, storage), true
		}
	}
	return "", false
}

// sealAuthorized checks a seal request against committed metadata: the
// queue, its incarnation, its pending transition (epoch and digest), and
// this node among the previous members with this very storage instance.
func sealAuthorized(md *metadata.State, req *recovery.SealRequest, node NodeID, storage uint64) (*metadata.Queue, string) {
	q, ok := placedQueue(md, req.Queue)
	switch {
	case !ok || q.Incarnation != req.Incarnation:
		return nil, fmt.Sprintf("queue %d incarnation %d is not in the catalogue", req.Queue, req.Incarnation)
	case !q.Assigned || !q.Assignment.Fenced:
		return nil, fmt.Sprintf("queue %d has no pending transition", req.Queue)
	case q.Assignment.Pending.Epoch != req.Epoch || recovery.Digest(q.Assignment.Pending.Digest) != req.Transition:
		return nil, fmt.Sprintf("queue %d's pending transition is to epoch %d, digest %x", req.Queue, q.Assignment.Pending.Epoch, q.Assignment.Pending.Digest[:6])
	}
	for _, m := range q.Assignment.Members.Slice() {
		if m.Node == node {
			if m.Storage != storage {
				return nil, fmt.Sprintf("n%d held queue %d in storage %d, not this one (%d)", node, req.Queue, m.Storage, storage)
			}
			return q, ""
		}
	}
	return nil, fmt.Sprintf("n%d is not a previous member of queue %d", node, req.Queue)
}

// writtenByInstall reports whether an installation wrote queue q's log
// since the replica group on it (sealed, inert) last knew it: the placed
// state is the log as the installation issued it.
func (n *Node) writtenByInstall(q QueueID) bool {
	i := n.placedIndex(q)
	return i >= 0 && n.placed[i].byInstall && n.placed[i].state != nil
}

// sealRetained starts reading a log no group runs on, as it recovered.
func (n *Node) sealRetained(st *seam.LogState) {
	j := n.sealer.job
	if st == nil {
		n.sealEnd("its log did not open")
		return
	}
	j.seal.Start, j.seal.End = st.Start, st.End
	if old, err := recovery.DecodeSeal(st.Seal); len(st.Seal) > 0 && err == nil && st.SealDamage == "" && !old.Damaged &&
		old.Queue == j.req.Queue && old.Incarnation == j.req.Incarnation && old.Epoch == j.req.Epoch && old.Transition == j.req.Transition &&
		st.Start < old.Start && old.Start <= st.End && st.End == old.End {
		// This log sealed for the same transition from a higher start:
		// retention deletes whole segments only, and a power loss may undo
		// a deletion the seal's start already left behind, so the log can
		// reopen below its seal. The records below the sealed start are no
		// part of its evidence: the seal is checked over its own range.
		j.seal.Start = old.Start
	}
	if st.End > st.Start {
		j.seal.LastEpoch = seam.EpochAt(st.Epochs, st.End-1)
	}
	// A log this storage never bound (no marker beside its directory, no
	// binding) acknowledged nothing: a replica binds its log before
	// anything runs on it. One that holds no record, whose damage is at
	// most a tail no later sync lies beyond (its first segment's creation
	// cut short by a full disk or a power loss), is a new, empty log: a
	// whole witness that it holds nothing. Taken as damaged, it would
	// leave a recovery whose other previous member never returns waiting
	// for ever.
	newEmpty := !st.BoundBefore && len(st.Binding) == 0 && st.BindingDamage == "" &&
		st.End == st.Start && len(st.Epochs) == 0 && !st.DamageDurable
	j.seal.Damaged = !newEmpty && (st.Unrepaired || st.Damage != "")
	// A sync first, as behind a running group: an installation that ended
	// unfinished (its transition replaced) may have left appends not yet
	// durable, and a seal reports only what the disk holds.
	j.phase = sealSync
	n.out.Storage(seam.Effect{Op: seam.OpSync, Group: seam.QueueGroup(j.req.Queue), Offset: st.End, Tag: sealTag})
}

// sealOpened is the completion of the open a seal asked for.
func (n *Node) sealOpened(p *placedGroup, d *StorageDone) {
	p.state = d.State
	if d.State != nil {
		p.generation = d.State.Generation
	}
	if n.installOpened(d) {
		return
	}
	j := n.sealer.job
	if j == nil || j.phase != sealFresh || seam.QueueGroup(j.req.Queue) != d.Group {
		return
	}
	if d.Err != "" {
		return // the failure policy: the process exits
	}
	n.sealRetained(d.State)
}

// sealReadNext reads the next page of records, or finishes the seal.
func (n *Node) sealReadNext() {
	j := n.sealer.job
	if j.id == nil {
		id, err := recovery.NewIdentity(j.req.Queue, j.seal.Start, j.seal.End)
		if err != nil {
			n.sealEnd(err.Error())
			return
		}
		j.id = id
	}
	j.phase = sealRead
	if next := j.id.Next(); next < j.seal.End {
		n.out.Storage(seam.Effect{Op: seam.OpRead, Group: seam.QueueGroup(j.req.Queue), Offset: next,
			Count: int(min(j.seal.End-next, recovery.PageRecordsMax)), Tag: sealTag})
		return
	}
	sum, err := j.id.Sum()
	if err != nil {
		n.sealEnd(err.Error())
		return
	}
	j.seal.Identity = sum
	// The receipt: a log sealed for this transition before (by an earlier
	// process) must still match what it reported, and then answers as it
	// did; otherwise the seal is stored durably before it is answered.
	p := &n.placed[n.placedIndex(j.req.Queue)]
	if p.binding == bindLost || (j.seal.Damaged && p.state != nil && p.state.DamageDurable) {
		// Opened without its storage binding (bindingChecked), or with
		// damage to records a later sync's frames lie beyond, and not
		// repaired since: what it acknowledged is gone.
		j.seal.Damaged, j.seal.Lost = true, true
	}
	if st := p.state; st != nil && st.SealDamage != "" {
		// The receipt itself met damage on the disk: what this replica
		// answered before can no longer be checked, so it answers as a
		// damaged witness (the collection never counts it complete again,
		// recovery.Collection.Add) and stores that as its receipt.
		// Withholding every answer would leave a recovery that needs
		// every previous replica (AllSealed) waiting for ever.
		j.seal.Damaged = true
	} else if st := p.state; st != nil && len(st.Seal) > 0 {
		if old, err := recovery.DecodeSeal(st.Seal); err != nil {
			n.sealEnd("its seal receipt does not decode (" + err.Error() + "): evidence withheld")
			return
		} else if old.Queue == j.req.Queue && old.Incarnation == j.req.Incarnation && old.Epoch == j.req.Epoch && old.Transition == j.req.Transition {
			// (A log sealed damaged and found whole now, with the same
			// records, was repaired by an installation of this transition's
			// verified source over its own records: the original seal
			// stands, damaged, as a retry keeps it.)
			same := old.Node == j.seal.Node && old.Storage == j.seal.Storage && old.Start == j.seal.Start && old.End == j.seal.End &&
				old.LastEpoch == j.seal.LastEpoch && old.Identity == j.seal.Identity && (old.Damaged == j.seal.Damaged || old.Damaged)
			switch {
			case same:
				// A retry keeps the original seal; but a log whole and
				// bound again (an installation of this transition rewrote
				// it) has lost nothing any more: a later attempt must not
				// count it among the lost copies that block.
				lostNow := j.seal.Lost
				j.seal = old
				j.seal.Lost = old.Lost && lostNow
				j.fromReceipt = true
				n.sealMade()
				return
			case !j.seal.Damaged && !old.Damaged:
				n.sealEnd(fmt.Sprintf("the log changed since its seal ([%d,%d) %x, now [%d,%d) %x): evidence withheld",
					old.Start, old.End, old.Identity[:6], j.seal.Start, j.seal.End, j.seal.Identity[:6]))
				return
			}
			// The log met damage since it sealed (its restart's recovery
			// found a torn or corrupt part), or its receipt already said it
			// is no complete witness (an installation began to rewrite it):
			// the seal of what it holds now says so, as the collection
			// expects of such a replica (recovery.Collection.Add: a damaged
			// seal replaces a complete one), and becomes the receipt.
			// Withholding it would leave a recovery that needs every
			// previous replica waiting for a witness that can never answer
			// again.
			j.seal.Damaged = true
		}
	}
	j.phase = sealReceipt
	receipt := recovery.AppendSeal(nil, &j.seal)
	if p.state == nil {
		p.state = &seam.LogState{Group: seam.QueueGroup(j.req.Queue)}
	}
	p.state.Seal = receipt
	n.out.Storage(seam.Effect{Op: seam.OpSeal, Group: seam.QueueGroup(j.req.Queue), Body: receipt, Tag: sealTag})
}

// sealMade answers the seal's requesters and keeps it for retries.
func (n *Node) sealMade() {
	s := &n.sealer
	j := s.job
	if len(s.done) >= sealsKeptMax {
		s.done = slices.Delete(s.done, 0, 1)
		s.doneEpochs = slices.Delete(s.doneEpochs, 0, 1)
	}
	s.done = append(s.done, j.seal)
	if j.epochsBad {
		s.doneEpochs = append(s.doneEpochs, nil)
	} else {
		s.doneEpochs = append(s.doneEpochs, j.epochs)
	}
	n.out.Recovery(j.req.Queue, seam.StageSeal, j.req.Epoch, recovery.AppendSeal(n.out.Grow(128), &j.seal),
		fmt.Sprintf("n%d sealed [%d,%d) last-epoch=%d damaged=%v%s id=%x%s", n.x.Node, j.seal.Start, j.seal.End, j.seal.LastEpoch, j.seal.Damaged,
			lostNote(j.seal.Lost), j.seal.Identity[:6], receiptNote(j.fromReceipt)))
	for _, w := range j.waiters {
		n.sealAnswer(w, &j.seal)
	}
	s.job = nil
	n.sealEnded(j.req.Queue)
}

// sealEnded starts a new copy's group that waited for the seal of queue q
// to end (keepApart).
func (n *Node) sealEnded(q QueueID) {
	if i := n.placedIndex(q); i >= 0 && n.placed[i].copy == copyAfterSeal {
		n.placed[i].copy = copyNone
		n.activateDeferred(&n.placed[i])
	}
}

// sealStorage takes the completion of a seal's storage effect.
func (n *Node) sealStorage(d *StorageDone) {
	if d.Err != "" {
		return // the failure policy: the process exits
	}
	if d.Tag == sealTag|sealServe {
		n.served(d)
		return
	}
	if d.Tag == sealTag|installTag {
		n.installStorage(d)
		return
	}
	if d.Tag == sealTag|bindTag {
		return // a binding stored (a host may report what completes silently)
	}
	if d.Tag == sealTag|replaceTag {
		n.replaced(d)
		return
	}
	if d.Tag == sealTag|quietTag {
		n.quieted(d)
		return
	}
	j := n.sealer.job
	switch {
	case j == nil:
		panic("core: a seal's storage completed with no seal running")
	case d.Op == seam.OpSync && j.phase == sealSync:
		n.sealReadNext()
	case d.Op == seam.OpSeal && j.phase == sealReceipt:
		n.sealMade()
	case d.Op == seam.OpRead && j.phase == sealRead:
		if len(d.Records) == 0 {
			n.sealEnd(fmt.Sprintf("the log returned no record at %d, below its end %d", j.id.Next(), j.seal.End))
			return
		}
		for i := range d.Records {
			r := &d.Records[i]
			if err := j.id.Add(r); err != nil {
				n.sealEnd(err.Error())
				return
			}
			switch k := len(j.epochs); {
			case j.epochsBad:
			case k > 0 && r.Epoch < j.epochs[k-1].Epoch, k >= recovery.EpochsMax && r.Epoch != j.epochs[k-1].Epoch:
				j.epochsBad, j.epochs = true, nil
			case k == 0 || r.Epoch != j.epochs[k-1].Epoch:
				j.epochs = append(j.epochs, seam.EpochStart{Epoch: r.Epoch, Offset: r.Offset})
			}
		}
		n.sealReadNext()
	default:
		panic(fmt.Sprintf("core: a seal's %s completed in phase %d", d.Op, j.phase))
	}
}

// sealEnd ends the running seal unmade, telling its requesters why.
func (n *Node) sealEnd(why string) {
	j := n.sealer.job
	n.sealer.job = nil
	n.out.Effects = append(n.out.Effects, seam.Effect{Kind: seam.EfNote, Group: seam.QueueGroup(j.req.Queue),
		Reason: fmt.Sprintf("recovery seal q=%d epoch=%d refused: %s", j.req.Queue, j.req.Epoch, why)})
	for _, w := range j.waiters {
		n.sealRefuse(w, j.req, recovery.RefusedFor, why)
	}
	n.sealEnded(j.req.Queue)
}

func (n *Node) sealAnswer(to NodeID, s *recovery.Seal) {
	if to == n.x.Node {
		n.sealArrived(*s)
		return
	}
	buf := recovery.AppendSeal(n.out.Grow(128), s)
	n.out.Send(seam.GroupRecovery, to, buf)
}

func (n *Node) sealRefuse(to NodeID, req recovery.SealRequest, code recovery.Refusal, why string) {
	r := recovery.SealRefused{Queue: req.Queue, Transition: req.Transition, Code: code, Reason: why}
	if to == n.x.Node {
		n.sealRefusedBy(to, r)
		return
	}
	buf := recovery.AppendSealRefused(n.out.Grow(64+len(why)), &r)
	n.out.Send(seam.GroupRecovery, to, buf)
}

// ReceiptNote ends a seal stage's text when the seal is an earlier
// process's, kept in the log's receipt.
const ReceiptNote = " (the original seal, from its receipt)"

func receiptNote(from bool) string {
	if from {
		return ReceiptNote
	}
	return ""
}

// lostNote says, in a seal's line, that its log lost what it acknowledged.
func lostNote(lost bool) string {
	if lost {
		return " lost"
	}
	return ""
}
