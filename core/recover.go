package core

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/recovery"
	"github.com/sluicemq/sluice/core/seam"
)

// The recovery worker (seed 004, "Automatic recovery bounds"; issue 11).
// Every node runs one; it drives one queue recovery at a time: that of the
// first fenced queue (by name) whose candidate it is. The candidate of a
// pending transition is the lowest proposed member that was a previous
// member too (it holds the queue's history), else the lowest proposed
// member. The worker asks every previous member to seal (itself directly,
// the others by a recovery message), again after a backoff from 1 s
// doubling to 30 s while a member's seal is missing, and collects the
// seals (core/recovery's Collection) until it holds R = E − W + 1 complete
// witnesses (or, for an isr queue, one member of the last committed
// in-sync set). It then reads the furthest witness's sealed log and every
// other complete witness's, a page at a time (core/recovery's Verifier:
// each must hash to its seal's identity, none may contradict the source),
// and accepts the source. It marks each stage in the trace. A changed or
// cleared transition ends the attempt; contradictory evidence or an
// exhausted inspection budget blocks it, with a note.
//
// TODO(issue 11): staging and installation on the proposed members, the
// activation command; until then a recovered queue stays fenced at
// "source accepted".

// Backoff bounds of the worker's seal requests (seed 004). The backoff
// grows to recoveryBackoffMaxNs only for a broker the metadata does not
// hold live: one it holds live (heartbeating to the controller) is asked
// again within recoveryBackoffLiveMaxNs, since its silence is a lost
// message far more often than a busy peer, and a request it already
// answered costs it only the answer again (from its receipt).
const (
	recoveryBackoffMinNs     = 1_000_000_000
	recoveryBackoffLiveMaxNs = 2_000_000_000
	recoveryBackoffMaxNs     = 30_000_000_000
)

// recoveryBackoff returns the backoff after one of backoffNs asking node.
func (n *Node) recoveryBackoff(node NodeID, backoffNs int64) int64 {
	if b, ok := n.ctrl.Metadata().Broker(node); ok && b.Live {
		return min(2*backoffNs, recoveryBackoffLiveMaxNs)
	}
	return min(2*backoffNs, recoveryBackoffMaxNs)
}

// recoveryAsk is the worker's state of one previous member.
type recoveryAsk struct {
	node      NodeID
	nextNs    int64 // when to ask (again)
	backoffNs int64
	sealed    bool
	// process: the node's process the metadata registered when it was
	// last asked; a new one is news that ends the backoff
	process uint64
	askedNs int64 // when it was last asked
}

// recoveryWork is the worker's current recovery.
type recoveryWork struct {
	t        recovery.Transition
	name     string
	coll     *recovery.Collection
	asks     []recoveryAsk
	src      recovery.Seal      // the source being verified
	verify   *recovery.Verifier // its sealed reads; nil until the collection completes
	askedNs  int64              // when the page wanted was asked for
	selected bool               // the source was verified (and marked)
	blocked  string             // the blocked reason marked
	// After the selection: the source's epoch history, the installations
	// asked of the proposed members, and when activation was last asked.
	srcEpochs  []seam.EpochStart
	installs   []installAsk
	activateNs int64
	detectNs   int64 // when the worker took the transition up (after its commit)
	blockedNs  int64 // when it blocked
	// blockedOn: the replica whose sealed read blocked the verification
	// (0: none), asked for its seal again at blockedAskNs
	blockedOn    NodeID
	blockedAskNs int64
}

// leaseMarginNs covers the clocks' drift over an owner lease.
const leaseMarginNs = 250_000_000

// oldOwnerStopped reports whether the previous assignment's owner process
// serves no more whatever its lease: it sealed for this transition (inert),
// its exit was seen (InPeerLost), or its broker runs another process now.
func (n *Node) oldOwnerStopped(w *recoveryWork, q *metadata.Queue) bool {
	a := &q.Assignment
	if slices.ContainsFunc(w.coll.Seals(), func(s recovery.Seal) bool { return s.Node == a.Owner }) {
		return true
	}
	for _, m := range a.Members.Slice() {
		if m.Node == a.Owner {
			if n.exited(m.Node, m.Process) {
				return true
			}
			b, ok := n.ctrl.Metadata().Broker(m.Node)
			return ok && b.Live && b.Process != m.Process
		}
	}
	return false
}

// installAsk is the worker's state of one proposed member's installation.
type installAsk struct {
	node      NodeID
	nextNs    int64
	backoffNs int64
	askedNs   int64 // when it was last asked
	receipt   *recovery.Installed
}

// candidate returns the node that runs the recovery of q's pending
// transition.
func candidate(q *metadata.Queue) NodeID {
	a := &q.Assignment
	for _, p := range a.Pending.Proposed.Slice() {
		if slices.ContainsFunc(a.Members.Slice(), func(m metadata.Member) bool { return m.Node == p }) {
			return p
		}
	}
	return a.Pending.Proposed.ID[0]
}

// recoveryTick runs the worker: it drops an attempt whose transition
// changed, starts the next one, and asks for the missing seals.
func (n *Node) recoveryTick() {
	md := n.ctrl.Metadata()
	w := n.recovery
	if w != nil {
		q, ok := md.Queue(w.name)
		if ok && q.Incarnation == w.t.Incarnation && q.Assigned && !q.Assignment.Fenced && q.Assignment.Epoch == w.t.Epoch {
			n.out.Recovery(w.t.Queue, seam.StageActivate, w.t.Epoch, nil, fmt.Sprintf("activated: owner n%d, members %d, in-sync %v",
				q.Assignment.Owner, q.Assignment.Members.N, q.Assignment.InSync.Slice()))
			n.recovery, w = nil, nil
		} else if !ok || q.Incarnation != w.t.Incarnation || !q.Assignment.Fenced || recovery.Digest(q.Assignment.Pending.Digest) != w.t.Digest {
			n.recoveryNote(w.t.Queue, "recovery q=%d epoch=%d ended: the transition is no longer pending", w.t.Queue, w.t.Epoch)
			n.recovery, w = nil, nil
		}
	}
	if w != nil && w.blocked != "" && n.x.NowNs >= w.blockedNs+recoveryBlockedSetAsideNs && n.recoveryPending(md, w.t.Queue) {
		// Blocked (contradictory evidence, a budget spent): it stays
		// fenced with its diagnostic, but it does not keep this broker's
		// worker from every other queue: it is set aside, and taken up
		// again (asking everyone afresh) after the queues behind it.
		n.recoveryNote(w.t.Queue, "recovery q=%d epoch=%d set aside, blocked: %s", w.t.Queue, w.t.Epoch, w.blocked)
		n.recoverySetAside = append(n.recoverySetAside[:0:0], w.t.Queue)
		n.recovery, w = nil, nil
	}
	if w == nil {
		qs := md.Queues()
		var aside *metadata.Queue
		for i := range qs {
			q := &qs[i]
			if q.Assigned && q.Assignment.Fenced && q.Assignment.Pending.Proposed.N > 0 && candidate(q) == n.x.Node {
				if slices.Contains(n.recoverySetAside, q.ID) {
					if aside == nil {
						aside = q
					}
					continue
				}
				n.recoveryStart(q)
				break
			}
		}
		if n.recovery == nil && aside != nil {
			n.recoverySetAside = n.recoverySetAside[:0]
			n.recoveryStart(aside)
		}
		if w = n.recovery; w == nil {
			return
		}
	}
	if w.blocked != "" {
		if w.blockedOn != 0 && n.x.NowNs >= w.blockedAskNs+recoveryBackoffLiveMaxNs {
			n.recoveryAskBlockedOn() // the answer may have been lost
		}
		return
	}
	if w.selected {
		n.recoveryInstallTick()
		return
	}
	if w.verify != nil {
		if n.x.NowNs-w.askedNs >= recoveryBackoffMinNs {
			n.recoveryAskPage() // the page or its answer was lost: ask again
		}
		return
	}
	for i := range w.asks {
		a := &w.asks[i]
		if b, ok := md.Broker(a.node); ok && b.Live && b.Process != a.process {
			// Back (or just registered): ask now rather than at the end
			// of a backoff that may have grown to recoveryBackoffMaxNs.
			a.process, a.nextNs = b.Process, min(a.nextNs, n.x.NowNs)
		}
		if a.sealed || n.x.NowNs < a.nextNs {
			continue
		}
		a.nextNs, a.askedNs = n.x.NowNs+a.backoffNs, n.x.NowNs
		a.backoffNs = n.recoveryBackoff(a.node, a.backoffNs)
		req := recovery.SealRequest{Queue: w.t.Queue, Incarnation: w.t.Incarnation, Epoch: w.t.Epoch, Transition: w.t.Digest}
		if a.node == n.x.Node {
			n.sealRequested(n.x.Node, req)
			continue
		}
		buf := recovery.AppendSealRequest(n.out.Grow(64), &req)
		n.out.Send(seam.GroupRecovery, a.node, buf)
	}
}

// recoveryStart begins the recovery of q's pending transition.
func (n *Node) recoveryStart(q *metadata.Queue) {
	a := &q.Assignment
	t := recovery.Transition{Queue: q.ID, Incarnation: q.Incarnation, Epoch: a.Pending.Epoch, Digest: recovery.Digest(a.Pending.Digest),
		W: q.Policy.WriteQuorum(a.Members.N, q.MinInsync), ISR: q.Policy == seam.ISR, InSync: slices.Clone(a.InSync.Slice())}
	w := &recoveryWork{t: t, name: q.Name, detectNs: n.x.NowNs}
	for _, m := range a.Members.Slice() {
		t.Previous = append(t.Previous, recovery.Replica{Node: m.Node, Storage: m.Storage})
		w.asks = append(w.asks, recoveryAsk{node: m.Node, nextNs: n.x.NowNs, backoffNs: recoveryBackoffMinNs})
	}
	w.t = t
	if n.x.Bugs.Has(bugs.ActivateShortOfR) && !t.ISR && t.W < len(t.Previous) {
		t.W++ // planted: R = E - W + 1 one short
	}
	coll, err := recovery.NewCollection(t)
	if err != nil {
		// Committed metadata the collection cannot take: a bug, but not
		// one worth a crash loop; the queue stays fenced, said why.
		n.recoveryNote(q.ID, "recovery q=%d epoch=%d cannot start: %v", q.ID, t.Epoch, err)
		return
	}
	w.coll = coll
	n.recovery = w
	n.out.Recovery(q.ID, seam.StageDetect, t.Epoch, nil, fmt.Sprintf("candidate n%d, %d previous members, R=%d", n.x.Node, len(t.Previous), coll.Threshold()))
}

// sealArrived takes a seal for the worker.
func (n *Node) sealArrived(s recovery.Seal) {
	w := n.recovery
	if w == nil || s.Queue != w.t.Queue || s.Transition != w.t.Digest {
		return // an attempt that ended
	}
	if i := slices.IndexFunc(w.coll.Seals(), func(o recovery.Seal) bool { return o.Node == s.Node }); i >= 0 {
		if old := &w.coll.Seals()[i]; old.Storage == s.Storage && !sameSealEvidence(old, &s) {
			// Its log changed since it sealed, and its receipt says how: it
			// met damage, or an installation rewrote it (this attempt's, or
			// an earlier attempt's of the same transition, whose request
			// it was still carrying out: seed 5000001860), and the receipt
			// names the history installed. Not contradictory evidence (a
			// seal is only ever believed through sealed reads that hash to
			// it), but the old no longer describes its log, and this
			// attempt's reads of it would wait for pages it no longer
			// serves. Start over on fresh seals.
			n.recoveryStartOver("n%d's log changed since its seal (now [%d,%d) damaged=%v)", s.Node, s.Start, s.End, s.Damaged)
			return
		}
	}
	if err := w.coll.Add(s); err != nil {
		n.recoveryNote(w.t.Queue, "recovery q=%d seal of n%d refused: %v", w.t.Queue, s.Node, err)
		return
	}
	if i := slices.IndexFunc(w.asks, func(a recoveryAsk) bool { return a.node == s.Node }); i >= 0 {
		w.asks[i].sealed = true
	}
	if b := w.coll.Blocked(); b != "" {
		n.recoveryBlocked(b)
		return
	}
	if w.selected {
		if s.Node == w.src.Node && !sameSealEvidence(&s, &w.src) {
			// The source met damage since it was chosen (its seal says
			// so now): the installations would wait for pages its log no
			// longer serves. Start over.
			n.recoveryStartOver("the source n%d's seal changed ([%d,%d) damaged=%v, now [%d,%d) damaged=%v)",
				s.Node, w.src.Start, w.src.End, w.src.Damaged, s.Start, s.End, s.Damaged)
		}
		return
	}
	src, ok := w.coll.Source()
	if !ok {
		w.verify = nil // a witness stopped counting: collect again
		return
	}
	if n.x.Bugs.Has(bugs.RecoveryFirstWitness) {
		src = firstWitness(w.coll) // planted
	}
	if w.verify != nil && src == w.src {
		return // the verification of this source goes on
	}
	// A new source (or the first): read it and every other complete
	// witness before accepting it. (The source may be a damaged one when
	// every previous replica sealed and too few are complete: its valid
	// prefix is read and checked like any source's.)
	var witnesses []recovery.Seal
	for _, s := range w.coll.Seals() {
		if !s.Damaged && !n.x.Bugs.Has(bugs.RecoveryFirstWitness) { // planted: nothing to compare it with
			witnesses = append(witnesses, s)
		}
	}
	w.src, w.verify = src, recovery.NewVerifier(src, witnesses)
	if w.t.ISR && w.coll.Witnesses() >= w.coll.Threshold() {
		w.verify = recovery.NewISRVerifier(src, witnesses)
	}
	n.recoveryAskPage()
}

// recoveryAskPage asks for the page the verification wants next, or ends
// the verification: the source accepted (the select stage) or blocked.
func (n *Node) recoveryAskPage() {
	w := n.recovery
	v := w.verify
	node, from, ok := v.Want()
	if !ok {
		if b := v.Blocked(); b != "" {
			n.recoveryBlocked(b)
			return
		}
		w.selected = true
		src := &w.src
		pages, records, bytes := v.Inspected()
		n.out.Recovery(w.t.Queue, seam.StageSelect, w.t.Epoch, recovery.AppendSeal(n.out.Grow(128), src),
			fmt.Sprintf("source n%d [%d,%d) last-epoch=%d: %d of R=%d witnesses; sealed reads: %d pages, %d records, %d bytes",
				src.Node, src.Start, src.End, src.LastEpoch, w.coll.Witnesses(), w.coll.Threshold(), pages, records, bytes))
		w.srcEpochs = slices.Clone(v.SourceEpochs())
		if q, ok := n.ctrl.Metadata().Queue(w.name); ok && q.Incarnation == w.t.Incarnation && recovery.Digest(q.Assignment.Pending.Digest) == w.t.Digest {
			// (The members this transition proposed: a newer transition,
			// applied before the tick ends this attempt, proposes others.)
			for _, p := range q.Assignment.Pending.Proposed.Slice() {
				w.installs = append(w.installs, installAsk{node: p, nextNs: n.x.NowNs, backoffNs: recoveryBackoffMinNs})
			}
		}
		n.recoveryInstallTick()
		return
	}
	w.askedNs = n.x.NowNs
	req := recovery.ReadRequest{Queue: w.t.Queue, Incarnation: w.t.Incarnation, Epoch: w.t.Epoch, Transition: w.t.Digest,
		From: from, Count: recovery.PageRecordsMax}
	if node == n.x.Node {
		n.readRequested(node, req)
		return
	}
	n.out.Send(seam.GroupRecovery, node, recovery.AppendReadRequest(n.out.Grow(96), &req))
}

// pageArrived takes a page of a sealed read for an installation or the
// verification.
func (n *Node) pageArrived(p *recovery.ReadPage) {
	if n.installPage(p) {
		return
	}
	w := n.recovery
	if w == nil || w.verify == nil || p.Queue != w.t.Queue || p.Transition != w.t.Digest {
		return
	}
	w.verify.AddPage(p.Node, p.From, p.Records)
	n.recoveryAskPage()
}

// recoveryBlockedSetAsideNs is how long a blocked attempt keeps the worker
// before it is set aside for the other queues waiting behind it.
const recoveryBlockedSetAsideNs = 5_000_000_000

// recoveryPending reports whether another queue waits for this worker
// than q.
func (n *Node) recoveryPending(md *metadata.State, q QueueID) bool {
	qs := md.Queues()
	for i := range qs {
		o := &qs[i]
		if o.ID != q && o.Assigned && o.Assignment.Fenced && o.Assignment.Pending.Proposed.N > 0 && candidate(o) == n.x.Node {
			return true
		}
	}
	return false
}

func (n *Node) recoveryBlocked(why string) {
	w := n.recovery
	if w.blocked == "" {
		w.blockedNs = n.x.NowNs
		w.blocked = why
		n.recoveryNote(w.t.Queue, "recovery q=%d epoch=%d blocked: %s", w.t.Queue, w.t.Epoch, why)
		if w.verify != nil {
			if on, ok := w.verify.BlockedOn(); ok {
				w.blockedOn = on
				n.recoveryAskBlockedOn()
			}
		}
	}
}

// recoveryAskBlockedOn asks the replica whose sealed read blocked the
// verification for its seal again. A log an installation of this
// transition's source rewrote since it sealed (a request of an earlier
// attempt, from a process of this worker's broker that died) serves its
// new log under its new receipt: its fresh seal says so, and the attempt
// starts over (sealArrived). A seal the same as before leaves the block as
// it is: the evidence is contradictory.
func (n *Node) recoveryAskBlockedOn() {
	w := n.recovery
	w.blockedAskNs = n.x.NowNs
	req := recovery.SealRequest{Queue: w.t.Queue, Incarnation: w.t.Incarnation, Epoch: w.t.Epoch, Transition: w.t.Digest}
	if w.blockedOn == n.x.Node {
		n.sealRequested(n.x.Node, req)
		return
	}
	n.out.Send(seam.GroupRecovery, w.blockedOn, recovery.AppendSealRequest(n.out.Grow(64), &req))
}

// sealRefusedBy takes a refusal for the worker: it asks again after its
// backoff.
func (n *Node) sealRefusedBy(from NodeID, r recovery.SealRefused) {
	if j := n.installer.job; j != nil && r.Read && !r.Busy && from != n.x.Node && j.phase == installCopy &&
		r.Queue == j.req.Queue && r.Transition == j.req.Transition && from == j.req.Source {
		if r.Reason != notSealedHere {
			// The source's seal no longer covers what it reported when it
			// was chosen: the worker must choose again.
			n.installEnd(false, sourceChangedNote+": "+r.Reason)
			return
		}
		// The installation's source restarted and lost its seal (a read
		// is served only under this process's seal): ask it to seal again
		// (it answers from its receipt if its log still matches), as the
		// worker does for the verification's reads; the page is asked
		// again on a later tick.
		req := recovery.SealRequest{Queue: j.req.Queue, Incarnation: j.req.Incarnation, Epoch: j.req.Epoch, Transition: j.req.Transition}
		n.out.Send(seam.GroupRecovery, from, recovery.AppendSealRequest(n.out.Grow(64), &req))
	}
	w := n.recovery
	if w == nil || r.Queue != w.t.Queue || r.Transition != w.t.Digest {
		return
	}
	what := "seal"
	switch {
	case r.Read:
		what = "serve a sealed read"
	case r.Install && !r.Busy && strings.HasPrefix(r.Reason, sourceChangedNote):
		n.recoveryStartOver("n%d: %s", from, r.Reason)
		return
	case r.Busy && !r.Install:
		// Busy sealing another queue (one seal at a time per broker):
		// that ends soon, so it is asked again soon, not at the end of a
		// backoff grown while it was unreachable.
		if i := slices.IndexFunc(w.asks, func(a recoveryAsk) bool { return a.node == from }); i >= 0 && !w.asks[i].sealed {
			a := &w.asks[i]
			a.nextNs, a.backoffNs = min(a.nextNs, n.x.NowNs+recoveryBackoffMinNs), recoveryBackoffMinNs
		}
	case r.Install:
		what = "install"
		if i := slices.IndexFunc(w.installs, func(a installAsk) bool { return a.node == from }); i >= 0 && r.Busy {
			// Busy with another queue's installation or with its own seal
			// of this one: neither lasts long, so it is asked again soon,
			// not at the end of a backoff grown while it was away.
			a := &w.installs[i]
			a.nextNs, a.backoffNs = min(a.nextNs, n.x.NowNs+recoveryBackoffMinNs), recoveryBackoffMinNs
		}
	}
	n.recoveryNote(w.t.Queue, "recovery q=%d n%d did not %s (busy=%v): %s", w.t.Queue, from, what, r.Busy, r.Reason)
	if r.Read && !r.Busy && from != n.x.Node {
		// Its seal is gone (a restart): it seals again, its log frozen,
		// and the page is asked again on a later tick.
		req := recovery.SealRequest{Queue: w.t.Queue, Incarnation: w.t.Incarnation, Epoch: w.t.Epoch, Transition: w.t.Digest}
		n.out.Send(seam.GroupRecovery, from, recovery.AppendSealRequest(n.out.Grow(64), &req))
	}
}

// recoveryHeard takes a message from peer from, of any group: the peer is
// reachable now, so a seal or installation asked of it during an outage
// is asked again within recoveryBackoffMinNs of the last ask, not at the
// end of a backoff grown while it was cut off (a drain, a healed
// partition: seed 2230 waited past its drain for a seal lost on a one-way
// link).
func (n *Node) recoveryHeard(from NodeID) {
	w := n.recovery
	if w == nil || from == n.x.Node {
		return
	}
	soon := func(nextNs, askedNs *int64, backoffNs *int64) {
		if t := *askedNs + recoveryBackoffMinNs; *nextNs > t {
			*nextNs, *backoffNs = max(t, n.x.NowNs), recoveryBackoffMinNs
		}
	}
	for i := range w.asks {
		if a := &w.asks[i]; a.node == from && !a.sealed {
			soon(&a.nextNs, &a.askedNs, &a.backoffNs)
		}
	}
	for i := range w.installs {
		if a := &w.installs[i]; a.node == from && a.receipt == nil {
			soon(&a.nextNs, &a.askedNs, &a.backoffNs)
		}
	}
}

// sourceChangedNote begins an installation's refusal when the source's
// sealed log no longer is what its seal said (met damage, or changed
// under a later seal): the worker must start over, not ask again.
const sourceChangedNote = "the source's sealed log changed"

// recoveryStartOver ends the worker's attempt and begins it again at once:
// every previous member is asked for its seal again (answered from its
// receipt where its log still matches) and the source is chosen again.
// Waiting for a source that changed would wait for ever (issue 7: a
// recovering owner whose source no longer continued its log did). The
// lease wait keeps the first attempt's start.
func (n *Node) recoveryStartOver(format string, a ...any) {
	w := n.recovery
	n.recoveryNote(w.t.Queue, "recovery q=%d epoch=%d starts over: %s", w.t.Queue, w.t.Epoch, fmt.Sprintf(format, a...))
	n.recovery = nil
	if q, ok := n.ctrl.Metadata().Queue(w.name); ok && q.Assigned && q.Assignment.Fenced && candidate(&q) == n.x.Node {
		n.recoveryStart(&q)
		if n.recovery != nil {
			n.recovery.detectNs = w.detectNs
		}
	}
}

// sameSealEvidence reports whether two seals of one replica say the same of
// its log.
func sameSealEvidence(a, b *recovery.Seal) bool {
	return a.Start == b.Start && a.End == b.End && a.LastEpoch == b.LastEpoch && a.Identity == b.Identity && a.Damaged == b.Damaged
}

// firstWitness is the planted recovery-first-witness's source: the first
// complete witness that arrived, however short its log.
func firstWitness(c *recovery.Collection) recovery.Seal {
	for _, s := range c.Seals() {
		if !s.Damaged {
			return s
		}
	}
	return recovery.Seal{}
}

func (n *Node) recoveryNote(q QueueID, format string, a ...any) {
	n.out.Effects = append(n.out.Effects, seam.Effect{Kind: seam.EfNote, Group: seam.QueueGroup(q), Reason: fmt.Sprintf(format, a...)})
}

// recoveryInstallTick asks the proposed members that have not installed
// (with backoff), and asks for the activation once enough have.
func (n *Node) recoveryInstallTick() {
	w := n.recovery
	md := n.ctrl.Metadata()
	for i := range w.installs {
		a := &w.installs[i]
		if a.receipt != nil {
			if b, ok := md.Broker(a.node); ok && b.Live && (b.Process != a.receipt.Process || b.Storage != a.receipt.Storage) {
				// The member restarted since it installed: the activation
				// names the live process, so that one must install (it
				// finds its predecessor's copy and completes or checks
				// it). Asked at once: the restart is news.
				a.receipt, a.nextNs, a.backoffNs = nil, n.x.NowNs, recoveryBackoffMinNs
			}
		}
		if a.receipt != nil || n.x.NowNs < a.nextNs {
			continue
		}
		a.nextNs, a.askedNs = n.x.NowNs+a.backoffNs, n.x.NowNs
		a.backoffNs = n.recoveryBackoff(a.node, a.backoffNs)
		if slices.ContainsFunc(w.t.Previous, func(r recovery.Replica) bool { return r.Node == a.node }) &&
			!slices.ContainsFunc(w.coll.Seals(), func(s recovery.Seal) bool { return s.Node == a.node }) {
			// A previous member installs only once its own seal froze its
			// log: ask for that first (its answer joins the collection).
			req := recovery.SealRequest{Queue: w.t.Queue, Incarnation: w.t.Incarnation, Epoch: w.t.Epoch, Transition: w.t.Digest}
			if a.node == n.x.Node {
				n.sealRequested(n.x.Node, req)
			} else {
				n.out.Send(seam.GroupRecovery, a.node, recovery.AppendSealRequest(n.out.Grow(64), &req))
			}
		}
		req := recovery.InstallRequest{Queue: w.t.Queue, Incarnation: w.t.Incarnation, Epoch: w.t.Epoch, Transition: w.t.Digest,
			Source: w.src.Node, Start: w.src.Start, End: w.src.End, Identity: w.src.Identity, Epochs: w.srcEpochs}
		if a.node == n.x.Node {
			n.installRequested(n.x.Node, req)
			if n.recovery != w {
				return
			}
			continue
		}
		n.out.Send(seam.GroupRecovery, a.node, recovery.AppendInstallRequest(n.out.Grow(128+16*len(w.srcEpochs)), &req))
	}
	n.recoveryActivate()
}

// installedArrived takes a proposed member's installation receipt.
func (n *Node) installedArrived(r recovery.Installed) {
	w := n.recovery
	if w == nil || !w.selected || r.Queue != w.t.Queue || r.Transition != w.t.Digest || r.Identity != w.src.Identity {
		return
	}
	i := slices.IndexFunc(w.installs, func(a installAsk) bool { return a.node == r.Node })
	if i < 0 {
		return
	}
	w.installs[i].receipt = &r
	w.activateNs = 0 // ask at once
	n.recoveryActivate()
}

// recoveryActivate asks the leader to commit the activation once the
// owner and the new W installed, every proposed member live.
func (n *Node) recoveryActivate() {
	w := n.recovery
	if w == nil || (w.activateNs != 0 && n.x.NowNs-w.activateNs < recoveryBackoffMinNs) {
		return
	}
	md := n.ctrl.Metadata()
	q, ok := md.Queue(w.name)
	if !ok || !q.Assignment.Fenced || q.Incarnation != w.t.Incarnation || recovery.Digest(q.Assignment.Pending.Digest) != w.t.Digest {
		// The committed metadata moved on (this node applied the next
		// transition before its tick ended the attempt): the activation
		// names the transition whose seals and installations this
		// worker holds, never whatever is pending now (seed 9000006174:
		// an activation built from the metadata's pending transition
		// committed the next epoch without one seal of its members).
		return
	}
	c := metadata.Command{Kind: metadata.Activate, Queue: q.Name, Incarnation: q.Incarnation, Epoch: q.Assignment.Epoch,
		Digest: q.Assignment.Pending.Digest}
	for _, p := range q.Assignment.Pending.Proposed.Slice() {
		b, ok := md.Broker(p)
		if !ok || !b.Live {
			return // a proposed member is gone: wait
		}
		c.Members.M[c.Members.N] = metadata.Member{Node: p, Process: b.Process, Storage: b.Storage}
		c.Members.N++
		i := slices.IndexFunc(w.installs, func(a installAsk) bool { return a.node == p })
		if i >= 0 && w.installs[i].receipt != nil && w.installs[i].receipt.Process == b.Process && w.installs[i].receipt.Storage == b.Storage {
			c.InSync.ID[c.InSync.N] = p
			c.InSync.N++
		}
	}
	members := c.Members.N
	if c.InSync.N == 0 || c.InSync.N < q.Policy.WriteQuorum(members, min(q.MinInsync, members)) {
		return
	}
	if !n.oldOwnerStopped(w, &q) && n.x.NowNs < w.detectNs+ownerLeaseNs+leaseMarginNs {
		return // the old owner may still serve on its lease: wait it out
	}
	// The owner: the previous one if it installed (clients stay), else the
	// source (it held the history already), else the lowest installed.
	switch {
	case slices.Contains(c.InSync.Slice(), q.Assignment.Owner):
		c.Owner = q.Assignment.Owner
	case slices.Contains(c.InSync.Slice(), w.src.Node):
		c.Owner = w.src.Node
	default:
		c.Owner = c.InSync.ID[0]
	}
	w.activateNs = n.x.NowNs
	n.recoveryNote(w.t.Queue, "recovery q=%d epoch=%d asks to activate: owner n%d, installed %v", w.t.Queue, w.t.Epoch, c.Owner, c.InSync.Slice())
	n.stepCtrl(ctrl.Input{Kind: ctrl.InRequestActivate, Msg: ctrl.AppendActivateRequest(nil, &c)})
}
