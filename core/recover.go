package core

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/recovery"
	"github.com/sluicemq/sluice/core/seam"
)

// The recovery workers (docs/design/recovery.md, "Workers, backoff and
// deadlines").
// Every node drives up to recovery.workers_per_broker queue recoveries at
// once (default 1): those of the fenced queues whose
// candidate it is, the smallest first by what its own log of each retains
// (ties by name), at each tick and at the end of any step that applied
// metadata, once the metadata entries its log holds beyond what it applied
// have applied too (or after 20 ms: recoveryGathered), so that the fences
// of one broker's loss are chosen among together. The candidate of a pending transition is the
// lowest proposed member that was a previous member too (it holds the
// queue's history), else the lowest proposed member. An attempt asks every
// previous member to seal (itself directly, the others by a recovery
// message), again after a backoff from 1 s doubling to 30 s while a
// member's seal is missing, and collects the seals (core/recovery's
// Collection) until it holds R = E − W + 1 complete witnesses (or, for an
// isr queue, one member of the last committed in-sync set). It then reads
// the furthest witness's sealed log and every other complete witness's, a
// page at a time, two logs at once (core/recovery's Verifier: each page
// wanted is asked once, the tick asks again what a second did not bring;
// each log must hash to its seal's
// identity, none may contradict the source), and accepts the source; has
// the leader commit it as the transition's recovery plan, which later
// attempts resume (recoveryPlanSource: one witness holding the plan's
// history is enough, since the plan was verified against R); has every
// proposed member install the plan's history (install.go); and
// asks the controller to activate the new assignment once the owner and W
// members installed. It marks each stage in the trace. A changed or
// cleared transition ends the attempt; evidence that changed under it
// starts it over. Contradictory evidence or an exhausted inspection budget
// blocks it, with a note; a blocked attempt, and one past its two-minute
// deadline, is set aside with its typed reason (seam.AsideReason) and tried
// again after a backoff (1 s doubling to 30 s), or at once when the
// inspection budget's settings change or the operator's RetryRecovery
// applies, the queue fenced meanwhile: nothing is dropped and no quorum
// weakened to make it fit.
//
// One worker serves one queue at a time; with several, they share this
// broker's one seal and one installation at a time (a busy refusal is
// asked again within 50 ms, recoveryBusyRetryNs).

// Backoff bounds of the worker's seal requests (docs/design/recovery.md,
// "Workers, backoff and deadlines"). The backoff
// grows to recoveryBackoffMaxNs only for a broker the metadata does not
// hold live: one it holds live (heartbeating to the controller) is asked
// again within recoveryBackoffLiveMaxNs, since its silence is a lost
// message far more often than a busy peer, and a request it already
// answered costs it only the answer again (from its receipt).
const (
	recoveryBackoffMinNs     = 1_000_000_000
	recoveryBackoffLiveMaxNs = 2_000_000_000
	recoveryBackoffMaxNs     = 30_000_000_000
	// recoveryBusyRetryNs: a broker busy with another seal or installation
	// (one at a time) is asked again this soon, at the worker's next tick:
	// a seal takes a sync, and with several workers per broker their
	// requests meet on the same brokers
	recoveryBusyRetryNs = 50_000_000
	// recoveryActivateGraceNs: how long an activation that W installations
	// allow waits for the other live proposed members' installations
	// before it leaves them to join as learners.
	recoveryActivateGraceNs = 250_000_000
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
	gone      bool // refused for good: its storage is not the transition's
	// process: the node's process the metadata registered when it was
	// last asked; a new one is news that ends the backoff
	process uint64
	askedNs int64 // when it was last asked
}

// recoveryPhase is where an attempt stands. It only moves forward, from
// collecting to installing; an attempt that must go back (a witness
// stopped counting) collects again with its verification dropped, and
// one whose evidence changed starts over as a new attempt. A block
// (blockedWhy) is not a phase: it may strike in any of them, and it holds
// the attempt where it is until the attempt is set aside.
type recoveryPhase uint8

const (
	// recoveryCollect: asking the previous members for their seals until
	// the collection names a source
	recoveryCollect recoveryPhase = iota + 1
	// recoveryVerify: the source's (and the other witnesses') sealed reads
	recoveryVerify
	// recoveryInstall: the source accepted; its plan committed, the
	// proposed members asked to install it, then the activation
	recoveryInstall
)

func (p recoveryPhase) String() string {
	switch p {
	case recoveryCollect:
		return "collect"
	case recoveryVerify:
		return "verify"
	case recoveryInstall:
		return "install"
	}
	return "phase(" + strconv.Itoa(int(p)) + ")"
}

// recoveryWork is the worker's current recovery.
type recoveryWork struct {
	t       recovery.Transition
	name    string
	phase   recoveryPhase
	coll    *recovery.Collection
	asks    []recoveryAsk
	src     recovery.Seal      // the source being verified
	verify  *recovery.Verifier // its sealed reads; nil while collecting
	askedNs int64              // when a page wanted was last asked for
	// asked: the pages wanted when they were last asked for (each is asked
	// once, until the tick asks them all again)
	asked      [recovery.ReadsAtOnce]recovery.Want
	askedN     int
	blocked    string           // the block's detail
	blockedWhy seam.AsideReason // non-zero: blocked, and why
	// sealRefused, installRefused: a previous member refused (not busy) to
	// seal or serve a sealed read, a proposed member to install; what a
	// deadline's set-aside names (deadlineWhy)
	sealRefused, installRefused bool
	// retries: the pending transition's retry count (the operator's) when
	// the attempt began or last acted on one (recoveryRetryAsked)
	retries uint64
	// After the selection: the source's epoch history, the installations
	// asked of the proposed members, and when activation was last asked.
	srcEpochs  []seam.EpochStart
	installs   []installAsk
	activateNs int64
	planNs     int64 // when the plan was last asked for (0: not yet)
	// quorumNs: when the installations first sufficed for an activation
	// while live proposed members had not installed (0: not so)
	quorumNs  int64
	detectNs  int64 // when the worker took the transition up (after its commit), at its first attempt
	startNs   int64 // when this attempt began (its deadline runs from here)
	blockedNs int64 // when it blocked
	// blockedOn: the replica whose sealed read blocked the verification
	// (0: none), asked for its seal again at blockedAskNs
	blockedOn    NodeID
	blockedAskNs int64
}

// invariants checks what holds of attempt w between steps; it panics with
// what broke.
func (w *recoveryWork) invariants(nowNs int64) {
	bad := func(format string, a ...any) {
		panic(fmt.Sprintf("core: recovery q=%d epoch=%d (%s): ", w.t.Queue, w.t.Epoch, w.phase) + fmt.Sprintf(format, a...))
	}
	switch w.phase {
	case recoveryCollect:
		if w.verify != nil {
			bad("a verification while collecting")
		}
	case recoveryVerify, recoveryInstall:
		if w.verify == nil {
			bad("no verification of its source")
		}
	default:
		bad("no such phase")
	}
	if w.phase != recoveryInstall && (len(w.installs) > 0 || w.srcEpochs != nil) {
		bad("installations asked before its source was accepted")
	}
	if w.coll == nil || len(w.asks) != len(w.t.Previous) {
		bad("%d previous members asked of %d", len(w.asks), len(w.t.Previous))
	}
	if len(w.installs) > seam.ReplicasMax {
		bad("%d installations asked", len(w.installs))
	}
	if w.askedN < 0 || w.askedN > len(w.asked) {
		bad("%d pages asked", w.askedN)
	}
	if w.detectNs > w.startNs || w.startNs > nowNs {
		bad("detected at %d, started at %d, now %d", w.detectNs, w.startNs, nowNs)
	}
	if w.blockedWhy == 0 && (w.blockedOn != 0 || w.blocked != "") {
		bad("a block's detail without its reason")
	}
}

// recoveriesInvariants checks the attempts and the set-aside queues: one
// attempt a queue, one retry a transition, each within the catalogue's
// bound.
func (n *Node) recoveriesInvariants() {
	if len(n.recoveries) > placedMax || len(n.recoveryRetries) > placedMax {
		panic(fmt.Sprintf("core: %d recoveries, %d set aside", len(n.recoveries), len(n.recoveryRetries)))
	}
	for i, w := range n.recoveries {
		w.invariants(n.x.NowNs)
		for _, o := range n.recoveries[:i] {
			if o.t.Queue == w.t.Queue {
				panic(fmt.Sprintf("core: two recoveries of queue %d", w.t.Queue))
			}
		}
	}
	for i, r := range n.recoveryRetries {
		for _, o := range n.recoveryRetries[:i] {
			if o.queue == r.queue && o.digest == r.digest {
				panic(fmt.Sprintf("core: queue %d set aside twice for one transition", r.queue))
			}
		}
	}
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
	// process: the node's process the metadata registered when it was
	// last asked; a new one is news that ends the backoff
	process uint64
	receipt *recovery.Installed
}

// candidate returns the node that runs the recovery of q's pending
// transition.
func candidate(q *metadata.Queue) NodeID {
	return q.Assignment.Candidate()
}

// recoveryTick runs the workers: it ends the attempts whose transition
// changed or was activated, sets aside those blocked or past their
// deadline (to be tried again after a backoff), takes up the next fenced
// queues while a worker is free, and steps each attempt.
func (n *Node) recoveryTick() {
	md := n.ctrl.Metadata()
	n.recoveryRetriesPrune(md)
	for _, w := range slices.Clone(n.recoveries) { // (ending one removes it)
		q, ok := md.Queue(w.name)
		switch {
		case ok && q.Incarnation == w.t.Incarnation && q.Assigned && !q.Assignment.Fenced && q.Assignment.Epoch == w.t.Epoch:
			n.out.Recovery(w.t.Queue, seam.StageActivate, w.t.Epoch, nil, fmt.Sprintf("activated: owner n%d, members %d, in-sync %v",
				q.Assignment.Owner, q.Assignment.Members.N, q.Assignment.InSync.Slice()))
			n.recoveryEnd(w)
		case !ok || q.Incarnation != w.t.Incarnation || !q.Assignment.Fenced || recovery.Digest(q.Assignment.Pending.Digest) != w.t.Digest:
			n.recoveryNote(w.t.Queue, "recovery q=%d epoch=%d ended: the transition is no longer pending", w.t.Queue, w.t.Epoch)
			n.recoveryEnd(w)
		case candidate(&q) != n.x.Node:
			// Handed to another proposed member (this one drains): one
			// worker drives a transition.
			n.out.Recovery(w.t.Queue, seam.StageHandedOff, w.t.Epoch, nil, fmt.Sprintf("handed to n%d", candidate(&q)))
			n.recoveryEnd(w)
		case w.blockedWhy != 0 && n.x.NowNs >= w.blockedNs+recoveryBlockedSetAsideNs:
			// Blocked (contradictory evidence, a budget spent): the queue
			// stays fenced with its diagnostic, and the attempt is set
			// aside so that it does not keep a worker from every other
			// queue; it is tried again, asking everyone afresh, after a
			// backoff (the evidence may have changed: a replica back, a
			// restarted one's receipt).
			n.recoveryRetryLater(w, w.blockedWhy, "blocked: "+w.blocked)
		case n.x.NowNs >= w.startNs+recoveryAttemptNs:
			n.recoveryRetryLater(w, w.deadlineWhy(), fmt.Sprintf("past the attempt's deadline of %d s", recoveryAttemptNs/1_000_000_000))
		}
	}
	if workers := n.recoveryWorkers(md); len(n.recoveries) < workers {
		// The smallest first, by what this node's own log of each retains:
		// a recovery's sealed reads and installation grow with its log, and
		// one worker a node (the default) would otherwise keep every other
		// queue fenced behind the largest (an owner kill's pause behind a
		// 20,000-record queue: 300 ms instead of 15). Ties keep the
		// catalogue's order.
		qs := md.Queues()
		var due []int
		for i := range qs {
			q := &qs[i]
			if q.Assigned && q.Assignment.Fenced && q.Assignment.Pending.Proposed.N > 0 && candidate(q) == n.x.Node &&
				n.recoveryOf(q.ID) == nil && !n.recoveryWaits(q) {
				due = append(due, i)
			}
		}
		switch {
		case len(due) == 0:
			n.gathering = false // a wait begun for queues no longer due is over
		case !n.recoveryGathered():
			due = due[:0]
		}
		if len(due) > 1 {
			slices.SortStableFunc(due, func(a, b int) int { return cmp.Compare(n.localRetained(qs[a].ID), n.localRetained(qs[b].ID)) })
		}
		for _, i := range due {
			if len(n.recoveries) >= workers {
				break
			}
			if w := n.recoveryStart(&qs[i]); w != nil {
				n.recoveries = append(n.recoveries, w)
			}
		}
	}
	for _, w := range slices.Clone(n.recoveries) {
		if slices.Contains(n.recoveries, w) {
			n.recoveryWorkTick(md, w)
		}
	}
}

// recoveryGatherMaxNs bounds how long a free worker waits, with a fenced
// queue due, for the metadata entries its node's log holds beyond what it
// applied (recoveryGathered).
const recoveryGatherMaxNs = 20_000_000

// recoveryGathered reports whether a free worker may take up a queue now:
// the metadata group's log holds nothing past what this node applied, or
// it has waited recoveryGatherMaxNs for it. A broker's loss fences every
// queue it owned by one placement check of the leader, one entry each,
// and they commit a few milliseconds apart as the acknowledgements come
// in; taking up the first one applied would make smallest-first choose
// among one queue (the benchmark's owner kill waited 110 ms behind a
// 20,001-record queue fenced 3 ms before its own). The entries are in the
// log before they commit, so the wait is for them, not a guess; the bound
// covers entries that never commit (a deposed leader's suffix).
func (n *Node) recoveryGathered() bool {
	if n.ctrl.LogEnd() <= n.ctrl.AppliedIndex() {
		n.gathering = false
		return true
	}
	if !n.gathering {
		n.gathering, n.gatherSinceNs = true, n.x.NowNs
	}
	if n.x.NowNs-n.gatherSinceNs < recoveryGatherMaxNs {
		return false
	}
	n.gathering = false
	return true
}

// recoveryWorkTick steps one attempt: it asks for what is missing.
func (n *Node) recoveryWorkTick(md *metadata.State, w *recoveryWork) {
	if w.blockedWhy != 0 {
		if w.blockedOn != 0 && n.x.NowNs >= w.blockedAskNs+recoveryBackoffLiveMaxNs {
			n.recoveryAskBlockedOn(w) // the answer may have been lost
		}
		return
	}
	switch w.phase {
	case recoveryInstall:
		n.recoveryInstallTick(w)
		return
	case recoveryVerify:
		if n.x.NowNs-w.askedNs >= recoveryBackoffMinNs {
			w.askedN = 0
			n.recoveryAskPage(w) // a page or its answer was lost: ask again
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
		if a.sealed || a.gone || n.x.NowNs < a.nextNs {
			continue
		}
		a.nextNs, a.askedNs = n.x.NowNs+a.backoffNs, n.x.NowNs
		a.backoffNs = n.recoveryBackoff(a.node, a.backoffNs)
		req := recovery.SealRequest{Queue: w.t.Queue, Incarnation: w.t.Incarnation, Epoch: w.t.Epoch, Transition: w.t.Digest}
		if a.node == n.x.Node {
			n.sealRequested(n.x.Node, req)
			if !slices.Contains(n.recoveries, w) {
				return // its answer started the attempt over
			}
			continue
		}
		buf := recovery.AppendSealRequest(n.out.Grow(64), &req)
		n.out.Send(seam.GroupRecovery, a.node, buf)
	}
}

// localRetained is how many records this node's log of queue q retains
// (its group's, or the log's as it opened when no group runs on it); a
// queue with neither comes after the others.
func (n *Node) localRetained(q QueueID) uint64 {
	if r := n.queue(seam.QueueGroup(q)); r != nil {
		start, end, _, _ := r.Retained()
		return end - start
	}
	if i := n.placedIndex(q); i >= 0 && n.placed[i].state != nil {
		return n.placed[i].state.End - n.placed[i].state.Start
	}
	return math.MaxUint64
}

// recoveryStart returns a new attempt at the recovery of q's pending
// transition (nil if the committed metadata cannot start one, said why).
// An attempt after one set aside keeps the first one's start: the old
// owner's lease is counted from it.
func (n *Node) recoveryStart(q *metadata.Queue) *recoveryWork {
	a := &q.Assignment
	t := recovery.Transition{Queue: q.ID, Incarnation: q.Incarnation, Epoch: a.Pending.Epoch, Digest: recovery.Digest(a.Pending.Digest),
		W: q.Policy.WriteQuorum(a.Members.N, q.MinInsync), ISR: q.Policy == seam.ISR, InSync: slices.Clone(a.InSync.Slice())}
	w := &recoveryWork{t: t, name: q.Name, phase: recoveryCollect, detectNs: n.x.NowNs, startNs: n.x.NowNs, retries: a.Pending.Retries}
	if i := n.recoveryRetryIndex(q.ID, t.Digest); i >= 0 {
		w.detectNs = n.recoveryRetries[i].firstNs
	}
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
		return nil
	}
	w.coll = coll
	n.out.Recovery(q.ID, seam.StageDetect, t.Epoch, nil, fmt.Sprintf("candidate n%d, %d previous members, R=%d", n.x.Node, len(t.Previous), coll.Threshold()))
	return w
}

// recoveryWorkers returns how many recoveries this node drives at once:
// the setting recovery.workers_per_broker, read on every tick.
func (n *Node) recoveryWorkers(md *metadata.State) int {
	return int(md.Setting(metadata.RecoveryWorkersPerBroker))
}

// recoveryOf returns the attempt at queue q's recovery, or nil.
func (n *Node) recoveryOf(q QueueID) *recoveryWork {
	for _, w := range n.recoveries {
		if w.t.Queue == q {
			return w
		}
	}
	return nil
}

// recoveryEnd ends attempt w.
func (n *Node) recoveryEnd(w *recoveryWork) {
	n.recoveries = slices.DeleteFunc(n.recoveries, func(o *recoveryWork) bool { return o == w })
}

// recoveryRetry is a queue whose attempt was set aside: when its worker
// may try again.
type recoveryRetry struct {
	queue     QueueID
	digest    recovery.Digest // the transition it was for
	notNs     int64           // not before this instant
	backoffNs int64           // the next backoff
	firstNs   int64           // the first attempt's start
	// retries: the pending transition's retry count (the operator's
	// RetryRecovery commands) the attempt set aside had seen, or when it
	// was last retried; a change ends the backoff (recoveryRetryAsked)
	retries uint64
}

// recoveryRetryLater sets attempt w aside: the queue stays fenced, and is
// tried again after a backoff from 1 s doubling to 30 s (an attempt has a
// deadline; budget exhaustion schedules a retry).
func (n *Node) recoveryRetryLater(w *recoveryWork, why seam.AsideReason, detail string) {
	n.recoveryEnd(w)
	i := n.recoveryRetryIndex(w.t.Queue, w.t.Digest)
	if i < 0 {
		if len(n.recoveryRetries) >= placedMax {
			panic("core: more recoveries set aside than the catalogue holds queues")
		}
		n.recoveryRetries = append(n.recoveryRetries, recoveryRetry{queue: w.t.Queue, digest: w.t.Digest, backoffNs: recoveryBackoffMinNs, firstNs: w.detectNs})
		i = len(n.recoveryRetries) - 1
	}
	r := &n.recoveryRetries[i]
	r.retries = w.retries // (a retry this attempt did not see ends the backoff at once)
	r.notNs = n.x.NowNs + r.backoffNs
	n.out.SetAside(w.t.Queue, w.t.Epoch, why, fmt.Sprintf("%s; tried again in %d ms", detail, r.backoffNs/1e6))
	r.backoffNs = min(2*r.backoffNs, recoveryBackoffMaxNs)
}

// deadlineWhy names what attempt w still waited for at its deadline.
func (w *recoveryWork) deadlineWhy() seam.AsideReason {
	switch {
	case w.phase == recoveryInstall && slices.ContainsFunc(w.installs, func(a installAsk) bool { return a.receipt == nil }):
		if w.installRefused {
			return seam.AsideInstallRefused
		}
		return seam.AsideInstallsMissing
	case w.phase == recoveryInstall:
		return seam.AsideActivationWaiting
	case w.phase == recoveryVerify && !w.sealRefused:
		return seam.AsideReadsMissing
	case w.sealRefused:
		return seam.AsideSealRefused
	}
	return seam.AsideSealsMissing
}

func (n *Node) recoveryRetryIndex(q QueueID, d recovery.Digest) int {
	return slices.IndexFunc(n.recoveryRetries, func(r recoveryRetry) bool { return r.queue == q && r.digest == d })
}

// recoveryWaits reports whether q's attempt was set aside and its backoff
// has not run out.
func (n *Node) recoveryWaits(q *metadata.Queue) bool {
	i := n.recoveryRetryIndex(q.ID, recovery.Digest(q.Assignment.Pending.Digest))
	return i >= 0 && n.x.NowNs < n.recoveryRetries[i].notNs
}

// recoveryBudgetChanged retries at once every attempt set aside when the
// inspection or staging budget's settings changed since the node last looked: the
// operator raised the budget an attempt ran out of, and needs no other
// command than the setting to have it tried again.
func (n *Node) recoveryBudgetChanged(md *metadata.State) {
	b := [5]int64{md.Setting(metadata.RecoveryInspectPagesMax), md.Setting(metadata.RecoveryInspectRecordsMax), md.Setting(metadata.RecoveryInspectBytesMax),
		md.Setting(metadata.RecoveryStageRecordsMax), md.Setting(metadata.RecoveryStageBytesMax)}
	if b == n.recoveryBudget {
		return
	}
	n.recoveryBudget = b
	for i := range n.recoveryRetries {
		n.recoveryRetries[i].notNs = n.x.NowNs
	}
	for _, w := range slices.Clone(n.recoveries) { // (starting over replaces it)
		if w.blockedWhy != 0 {
			// Blocked, not yet set aside: it may have run out of the
			// budget just raised, so it asks everyone afresh now.
			n.recoveryStartOver(w, "the recovery budgets changed")
		}
	}
}

// recoveryRetryAsked acts on the operator's retries (`sluice recovery
// retry`, after bringing a broker back, say): of every queue whose pending
// transition counts more retries than this node's attempt at it saw, an
// attempt set aside is tried at once, its backoff back to the shortest; a
// blocked one starts over at once (asking everyone afresh) rather than
// keep its worker blocked; any other has every replica it still waits for
// asked again now, not at the end of a backoff grown while it was away.
func (n *Node) recoveryRetryAsked(md *metadata.State) {
	for _, w := range slices.Clone(n.recoveries) { // (starting over replaces one)
		q, ok := md.Queue(w.name)
		if !ok || q.Incarnation != w.t.Incarnation || !q.Assignment.Fenced || recovery.Digest(q.Assignment.Pending.Digest) != w.t.Digest ||
			q.Assignment.Pending.Retries == w.retries {
			continue
		}
		w.retries = q.Assignment.Pending.Retries
		if w.blockedWhy != 0 {
			n.recoveryStartOver(w, "the operator asked for a retry (retry %d) of the attempt blocked (%s)", w.retries, w.blockedWhy)
			continue
		}
		for i := range w.asks {
			if a := &w.asks[i]; !a.sealed {
				a.nextNs, a.backoffNs = n.x.NowNs, recoveryBackoffMinNs
			}
		}
		for i := range w.installs {
			if a := &w.installs[i]; a.receipt == nil {
				a.nextNs, a.backoffNs = n.x.NowNs, recoveryBackoffMinNs
			}
		}
		n.recoveryNote(w.t.Queue, "recovery q=%d epoch=%d asks again now: the operator asked for a retry (retry %d)", w.t.Queue, w.t.Epoch, w.retries)
	}
	for i := range n.recoveryRetries {
		r := &n.recoveryRetries[i]
		q, ok := placedQueue(md, r.queue)
		if !ok || !q.Assigned || !q.Assignment.Fenced || recovery.Digest(q.Assignment.Pending.Digest) != r.digest || q.Assignment.Pending.Retries == r.retries {
			continue
		}
		r.retries, r.notNs, r.backoffNs = q.Assignment.Pending.Retries, n.x.NowNs, recoveryBackoffMinNs
		n.recoveryNote(r.queue, "recovery q=%d retried at once: the operator asked (retry %d)", r.queue, r.retries)
	}
}

// recoveryRetriesPrune forgets the queues set aside whose transition is no
// longer pending.
func (n *Node) recoveryRetriesPrune(md *metadata.State) {
	n.recoveryRetries = slices.DeleteFunc(n.recoveryRetries, func(r recoveryRetry) bool {
		q, ok := placedQueue(md, r.queue)
		return !ok || !q.Assigned || !q.Assignment.Fenced || recovery.Digest(q.Assignment.Pending.Digest) != r.digest
	})
}

// sealArrived takes a seal for the worker.
func (n *Node) sealArrived(s recovery.Seal) {
	w := n.recoveryOf(s.Queue)
	if w == nil || s.Transition != w.t.Digest {
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
			n.recoveryStartOver(w, "n%d's log changed since its seal (now [%d,%d) damaged=%v)", s.Node, s.Start, s.End, s.Damaged)
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
	if why := w.coll.BlockedWhy(); why != 0 {
		// (Unless a seal holds the committed plan's history: the plan was
		// verified against R witnesses before this evidence came, and any
		// R of them hold every confirmed record.)
		if _, held, _ := n.recoveryPlanSource(w); !held {
			n.recoveryBlocked(w, why, w.coll.Blocked())
			return
		}
	}
	if w.phase == recoveryInstall {
		if s.Node == w.src.Node && !sameSealEvidence(&s, &w.src) {
			// The source met damage since it was chosen (its seal says
			// so now): the installations would wait for pages its log no
			// longer serves. Start over.
			n.recoveryStartOver(w, "the source n%d's seal changed ([%d,%d) damaged=%v, now [%d,%d) damaged=%v)",
				s.Node, w.src.Start, w.src.End, w.src.Damaged, s.Start, s.End, s.Damaged)
		}
		return
	}
	src, held, pinned := n.recoveryPlanSource(w)
	switch {
	case pinned && !held:
		return // the plan's history is what is installed: wait for a holder's seal
	case !pinned:
		var ok bool
		if src, ok = w.coll.Source(); !ok {
			w.phase, w.verify = recoveryCollect, nil // a witness stopped counting: collect again
			return
		}
		if n.x.Bugs.Has(bugs.RecoveryFirstWitness) {
			src = firstWitness(w.coll) // planted
		}
		if n.x.Bugs.Has(bugs.SourceLongest) {
			src = longestWitness(w.coll, src) // planted
		}
	}
	if w.phase == recoveryVerify && src == w.src {
		return // the verification of this source goes on
	}
	md := n.ctrl.Metadata()
	budget := recovery.Budget{PagesMax: int(md.Setting(metadata.RecoveryInspectPagesMax)),
		RecordsMax: int(md.Setting(metadata.RecoveryInspectRecordsMax)), BytesMax: md.Setting(metadata.RecoveryInspectBytesMax)}
	if pinned {
		// The committed plan was verified against R witnesses when it was
		// made: its holder's log is read only to hash it to its seal and
		// learn its epochs (or taken by its seal, when it is this node's).
		w.phase, w.src, w.verify, w.askedN = recoveryVerify, src, recovery.NewVerifier(src, nil, budget), 0
		n.recoveryTakeOwnSource(w)
		n.recoveryAskPage(w)
		return
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
	w.phase, w.src, w.verify, w.askedN = recoveryVerify, src, recovery.NewVerifier(src, witnesses, budget), 0
	if w.t.ISR && w.coll.Witnesses() >= w.coll.Threshold() {
		w.verify = recovery.NewISRVerifier(src, witnesses, budget)
	}
	if n.x.Bugs.Has(bugs.BranchContradiction) {
		w.verify.PlantBranchBlocks()
	}
	n.recoveryTakeOwnSource(w)
	n.recoveryAskPage(w)
}

// recoveryPlanSource returns the source the committed plan of attempt w's
// transition pins it to. pinned: a plan is committed and a replica may
// still hold its history: a complete witness's seal holds it, or none does
// but the plan's source has not answered yet while the metadata holds it
// live on the planned storage. held: such a seal is in, and src is it
// (this node's own log first, then the plan's source, then the lowest
// node: a copy installed from the plan serves as well as the source did).
// A plan that no replica can be shown to hold (its source sealed another
// history, or was refused for good, or is out of the live set or on
// another storage instance, and no seal in holds it) pins nothing: the
// attempt selects afresh against R witnesses, and its plan replaces that
// one (recoveryPlanned).
func (n *Node) recoveryPlanSource(w *recoveryWork) (src recovery.Seal, held, pinned bool) {
	p, ok := n.recoveryCommittedPlan(w)
	if !ok {
		return recovery.Seal{}, false, false
	}
	rank := func(s *recovery.Seal) int {
		switch s.Node {
		case n.x.Node:
			return 0
		case p.Source:
			return 1
		}
		return 2
	}
	sourceAnswered := false
	seals := w.coll.Seals()
	for i := range seals {
		s := &seals[i]
		sourceAnswered = sourceAnswered || s.Node == p.Source
		if s.Damaged || !planIs(&p, s.Start, s.End, s.Identity) {
			continue
		}
		if !held || rank(s) < rank(&src) || rank(s) == rank(&src) && s.Node < src.Node {
			src, held = *s, true
		}
	}
	if held {
		return src, true, true
	}
	for _, a := range w.asks {
		sourceAnswered = sourceAnswered || a.node == p.Source && a.gone
	}
	b, ok := n.ctrl.Metadata().Broker(p.Source)
	return recovery.Seal{}, false, !sourceAnswered && ok && b.Live && b.Storage == p.Storage
}

// recoveryCommittedPlan returns the committed plan of attempt w's
// transition, if there is one.
func (n *Node) recoveryCommittedPlan(w *recoveryWork) (metadata.RecoveryPlan, bool) {
	q, ok := n.ctrl.Metadata().Queue(w.name)
	if !ok || q.Incarnation != w.t.Incarnation || !q.Assignment.Fenced || recovery.Digest(q.Assignment.Pending.Digest) != w.t.Digest ||
		q.Assignment.Pending.Plan.Source == 0 {
		return metadata.RecoveryPlan{}, false
	}
	return q.Assignment.Pending.Plan, true
}

// planIs reports whether plan p names the history [start, end) with
// content identity id.
func planIs(p *metadata.RecoveryPlan, start, end uint64, id recovery.Digest) bool {
	return p.Source != 0 && p.Start == start && p.End == end && recovery.Digest(p.Identity) == id
}

// recoveryPlanned reports whether the committed plan names attempt w's
// verified source's history, and asks the leader to commit it when no
// plan does, or to replace the committed one when no replica can be shown
// to hold its history (again after recoveryBackoffMinNs). A committed plan
// that a replica may still hold starts the attempt over: the next
// collection is pinned to it.
func (n *Node) recoveryPlanned(w *recoveryWork) bool {
	p, ok := n.recoveryCommittedPlan(w)
	if ok && planIs(&p, w.src.Start, w.src.End, w.src.Identity) || n.x.Bugs.Has(bugs.InstallUnplanned) { // (planted: no plan needed)
		return true
	}
	var replaces metadata.Digest
	if ok {
		if _, _, pinned := n.recoveryPlanSource(w); pinned {
			n.recoveryStartOver(w, "the committed plan is %s", p.String())
			return false
		}
		replaces = p.Identity
	}
	if w.planNs != 0 && n.x.NowNs-w.planNs < recoveryBackoffMinNs {
		return false
	}
	q, ok := n.ctrl.Metadata().Queue(w.name)
	if !ok {
		return false
	}
	src := &w.src
	c := metadata.Command{Kind: metadata.Plan, Queue: q.Name, Incarnation: q.Incarnation, Epoch: q.Assignment.Epoch, Digest: q.Assignment.Pending.Digest,
		Plan:     metadata.RecoveryPlan{Source: src.Node, Storage: src.Storage, Start: src.Start, End: src.End, LastEpoch: src.LastEpoch, Identity: metadata.Digest(src.Identity)},
		Replaces: replaces}
	w.planNs = n.x.NowNs
	n.recoveryNote(w.t.Queue, "recovery q=%d epoch=%d asks to plan: %s replaces=%x", w.t.Queue, w.t.Epoch, c.Plan.String(), replaces[:6])
	n.stepCtrl(ctrl.Input{Kind: ctrl.InRequestActivate, Msg: ctrl.AppendActivateRequest(nil, &c)})
	return false
}

func tookNote(took bool) string {
	if took {
		return ", the source its own log by the seal it hashed"
	}
	return ""
}

// recoveryTakeOwnSource takes the source by its seal when it is this
// node's own log, sealed by this very process and unchanged since: the
// sealer hashed every record of it to that seal moments ago, so a sealed
// read of it would only hash them again (a 1,000,000-record log is 1 GiB
// of reads, and as much of the inspection budget). A log an installation
// wrote since is read, as any source is.
func (n *Node) recoveryTakeOwnSource(w *recoveryWork) {
	src := &w.src
	if n.x.Bugs.Has(bugs.RecoveryFirstWitness) || src.Node != n.x.Node || src.Process != n.x.Process || src.Damaged || n.writtenByInstall(src.Queue) {
		return
	}
	s := &n.sealer
	for i := len(s.done) - 1; i >= 0; i-- {
		if s.done[i] == *src {
			if s.doneEpochs[i] != nil || src.Start == src.End {
				if n.x.Bugs.Has(bugs.OwnSourceEpochsWhole) {
					w.verify.PlantEpochsWhole()
				}
				w.verify.TakeSource(s.doneEpochs[i])
			}
			return
		}
	}
}

// recoveryAskPage asks for the page the verification wants next, or ends
// the verification: the source accepted (the select stage) or blocked.
func (n *Node) recoveryAskPage(w *recoveryWork) {
	v := w.verify
	var buf [recovery.ReadsAtOnce]recovery.Want
	wants := v.Wants(buf[:0])
	if len(wants) == 0 {
		if why := v.BlockedWhy(); why != 0 {
			n.recoveryBlocked(w, why, v.Blocked())
			return
		}
		w.phase = recoveryInstall
		src := &w.src
		pages, records, bytes := v.Inspected()
		n.out.Recovery(w.t.Queue, seam.StageSelect, w.t.Epoch, recovery.AppendSeal(n.out.Grow(128), src),
			fmt.Sprintf("source n%d [%d,%d) last-epoch=%d: %d of R=%d witnesses (%d by the source's identity)%s; sealed reads: %d pages, %d records, %d bytes",
				src.Node, src.Start, src.End, src.LastEpoch, w.coll.Witnesses(), w.coll.Threshold(), v.ByIdentity(), tookNote(v.TookSource()), pages, records, bytes))
		w.srcEpochs = slices.Clone(v.SourceEpochs())
		if q, ok := n.ctrl.Metadata().Queue(w.name); ok && q.Incarnation == w.t.Incarnation && recovery.Digest(q.Assignment.Pending.Digest) == w.t.Digest {
			// (The members this transition proposed: a newer transition,
			// applied before the tick ends this attempt, proposes others.)
			for _, p := range q.Assignment.Pending.Proposed.Slice() {
				w.installs = append(w.installs, installAsk{node: p, nextNs: n.x.NowNs, backoffNs: recoveryBackoffMinNs})
			}
		}
		n.recoveryInstallTick(w)
		return
	}
	// Each page wanted is asked once (the one it follows arrived); the
	// others wanted are in flight. The tick asks them all again if none
	// came for recoveryBackoffMinNs.
	asked, askedN := w.asked, w.askedN
	w.askedN = copy(w.asked[:], wants)
	for _, want := range wants {
		if slices.Contains(asked[:askedN], want) {
			continue
		}
		w.askedNs = n.x.NowNs
		req := recovery.ReadRequest{Queue: w.t.Queue, Incarnation: w.t.Incarnation, Epoch: w.t.Epoch, Transition: w.t.Digest,
			From: want.From, Count: recovery.PageRecordsMax}
		if want.Node == n.x.Node {
			if n.readRequested(want.Node, req); !slices.Contains(n.recoveries, w) || w.verify != v {
				return // its refusal ended the attempt
			}
			continue
		}
		n.out.Send(seam.GroupRecovery, want.Node, recovery.AppendReadRequest(n.out.Grow(96), &req))
	}
}

// pageArrived takes a page of a sealed read for an installation or the
// verification.
func (n *Node) pageArrived(p *recovery.ReadPage) {
	if n.installPage(p) {
		return
	}
	w := n.recoveryOf(p.Queue)
	if w == nil || w.phase != recoveryVerify || p.Transition != w.t.Digest {
		return
	}
	w.verify.AddPage(p.Node, p.From, p.Records)
	n.recoveryAskPage(w)
}

// recoveryBlockedSetAsideNs is how long a blocked attempt keeps its worker
// (asking the replica it blocked on again) before it is set aside, and
// recoveryAttemptNs how long any attempt may take (two minutes).
const (
	recoveryBlockedSetAsideNs = 5_000_000_000
	recoveryAttemptNs         = 120_000_000_000
)

func (n *Node) recoveryBlocked(w *recoveryWork, why seam.AsideReason, detail string) {
	if w.blockedWhy == 0 {
		w.blockedNs = n.x.NowNs
		w.blocked, w.blockedWhy = detail, why
		n.recoveryNote(w.t.Queue, "recovery q=%d epoch=%d blocked: %s", w.t.Queue, w.t.Epoch, detail)
		if w.verify != nil {
			if on, ok := w.verify.BlockedOn(); ok {
				w.blockedOn = on
				n.recoveryAskBlockedOn(w)
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
func (n *Node) recoveryAskBlockedOn(w *recoveryWork) {
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
	if j := n.installer.job; j != nil && r.Read && r.Code != recovery.RefusedBusy && from != n.x.Node && j.phase == installCopy &&
		r.Queue == j.req.Queue && r.Transition == j.req.Transition && from == j.req.Source {
		if r.Code != recovery.RefusedNotSealedHere {
			// The source's seal no longer covers what it reported when it
			// was chosen: the worker must choose again.
			n.installEnd(recovery.RefusedSourceChanged, r.Reason)
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
	if j := n.installer.job; j != nil && !r.Read && !r.Install && r.Code == recovery.RefusedStorageReplaced && from != n.x.Node && j.phase == installCopy &&
		r.Queue == j.req.Queue && r.Transition == j.req.Transition && from == j.req.Source &&
		!n.x.Bugs.Has(bugs.InstallerAsksReplacedSource) { // (planted: ask again)
		// The seal asked of the source above is refused for good: it runs
		// on a new disk, the history it served is gone from it. Asked
		// again for ever, the installation would keep every other queue's
		// out of this broker; the worker chooses again.
		n.installEnd(recovery.RefusedSourceChanged, r.Reason)
	}
	w := n.recoveryOf(r.Queue)
	if w == nil || r.Transition != w.t.Digest {
		return
	}
	busy := r.Code == recovery.RefusedBusy
	what := "seal"
	switch {
	case r.Read:
		what = "serve a sealed read"
	case r.Install && r.Code == recovery.RefusedSourceChanged:
		n.recoveryStartOver(w, "n%d: the source's sealed log changed: %s", from, r.Reason)
		return
	case r.Install && r.Code == recovery.RefusedSourceSilent:
		n.recoveryStartOver(w, "n%d: the source is silent: %s", from, r.Reason)
		return
	case r.Install && r.Code == recovery.RefusedStageBudget:
		what = "install"
		// The stage the member would build exceeds the staging budget:
		// asking again changes nothing until an operator raises it (the
		// setting's change retries the attempt at once). The worker
		// neither discards records nor installs elsewhere to fit.
		n.recoveryBlocked(w, seam.AsideStageBudget, fmt.Sprintf("n%d: %s", from, r.Reason))
	case busy && !r.Install:
		// Busy sealing another queue (one seal at a time per broker):
		// that ends soon, so it is asked again soon, not at the end of a
		// backoff grown while it was unreachable.
		if i := slices.IndexFunc(w.asks, func(a recoveryAsk) bool { return a.node == from }); i >= 0 && !w.asks[i].sealed {
			a := &w.asks[i]
			a.nextNs, a.backoffNs = min(a.nextNs, n.x.NowNs+recoveryBusyRetryNs), recoveryBackoffMinNs
		}
	case r.Install:
		what = "install"
		if i := slices.IndexFunc(w.installs, func(a installAsk) bool { return a.node == from }); i >= 0 && busy {
			// Busy with another queue's installation or with its own seal
			// of this one: neither lasts long, so it is asked again soon,
			// not at the end of a backoff grown while it was away.
			a := &w.installs[i]
			a.nextNs, a.backoffNs = min(a.nextNs, n.x.NowNs+recoveryBusyRetryNs), recoveryBackoffMinNs
		}
	}
	switch {
	case busy:
	case r.Install:
		w.installRefused = true
	default:
		w.sealRefused = true
	}
	if r.Code == recovery.RefusedStorageReplaced && !r.Read && !r.Install {
		// That copy never seals: asking it again is useless, and the
		// witnesses left may no longer reach R (a block, set aside soon,
		// rather than a worker kept from every other queue until the
		// attempt's deadline).
		if i := slices.IndexFunc(w.asks, func(a recoveryAsk) bool { return a.node == from }); i >= 0 {
			w.asks[i].gone = true
		}
		w.coll.Gone(from)
		if why := w.coll.BlockedWhy(); why != 0 && w.blockedWhy == 0 {
			n.recoveryBlocked(w, why, w.coll.Blocked())
		}
		if w.phase == recoveryVerify && w.verifyReads(from) && !n.x.Bugs.Has(bugs.VerifierReadsReplacedDisk) { // (planted: read on)
			// A log the verification reads lies on a disk that was
			// replaced: it never serves those pages again (its reads say
			// not-sealed-here, its seal storage-replaced), and the
			// verification would ask for them every second for ever.
			// Start over: the collection, without that copy, chooses
			// again.
			n.recoveryStartOver(w, "n%d, read by the verification, runs on a new disk: %s", from, r.Reason)
			return
		}
	}
	n.recoveryNote(w.t.Queue, "recovery q=%d n%d did not %s (%s): %s", w.t.Queue, from, what, r.Code, r.Reason)
	if r.Read && !busy && from != n.x.Node {
		// Its seal is gone (a restart): it seals again, its log frozen,
		// and the page is asked again on a later tick.
		req := recovery.SealRequest{Queue: w.t.Queue, Incarnation: w.t.Incarnation, Epoch: w.t.Epoch, Transition: w.t.Digest}
		n.out.Send(seam.GroupRecovery, from, recovery.AppendSealRequest(n.out.Grow(64), &req))
	}
}

// verifyReads reports whether the verification reads node's sealed log:
// the source's, or a witness's it has pages to ask of.
func (w *recoveryWork) verifyReads(node NodeID) bool {
	if w.src.Node == node {
		return true
	}
	if w.verify == nil {
		return false
	}
	var wants [recovery.ReadsAtOnce]recovery.Want
	return slices.ContainsFunc(w.verify.Wants(wants[:0]), func(x recovery.Want) bool { return x.Node == node })
}

// recoveryHeard takes a message from peer from, of any group: the peer is
// reachable now, so a seal or installation asked of it during an outage
// is asked again within recoveryBackoffMinNs of the last ask, not at the
// end of a backoff grown while it was cut off (a drain, a healed
// partition: seed 2230 waited past its drain for a seal lost on a one-way
// link).
func (n *Node) recoveryHeard(from NodeID) {
	if from == n.x.Node {
		return
	}
	soon := func(nextNs, askedNs *int64, backoffNs *int64) {
		if t := *askedNs + recoveryBackoffMinNs; *nextNs > t {
			*nextNs, *backoffNs = max(t, n.x.NowNs), recoveryBackoffMinNs
		}
	}
	for _, w := range n.recoveries {
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
}

// recoveryStartOver ends the worker's attempt and begins it again at once:
// every previous member is asked for its seal again (answered from its
// receipt where its log still matches) and the source is chosen again.
// Waiting for a source that changed would wait for ever (a recovering
// owner whose source no longer continues its log would). The
// lease wait keeps the first attempt's start.
func (n *Node) recoveryStartOver(w *recoveryWork, format string, a ...any) {
	n.recoveryNote(w.t.Queue, "recovery q=%d epoch=%d starts over: %s", w.t.Queue, w.t.Epoch, fmt.Sprintf(format, a...))
	i := slices.Index(n.recoveries, w)
	if q, ok := n.ctrl.Metadata().Queue(w.name); ok && q.Assigned && q.Assignment.Fenced && candidate(&q) == n.x.Node {
		if again := n.recoveryStart(&q); again != nil {
			again.detectNs, again.startNs = w.detectNs, w.startNs
			n.recoveries[i] = again // in its place: the workers' order stays
			return
		}
	}
	n.recoveryEnd(w)
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

// longestWitness is the planted bug SourceLongest's source: the complete
// witness whose log ends furthest, whatever its last epoch (src when none
// is longer).
func longestWitness(c *recovery.Collection, src recovery.Seal) recovery.Seal {
	for _, s := range c.Seals() {
		if !s.Damaged && s.End > src.End {
			src = s
		}
	}
	return src
}

func (n *Node) recoveryNote(q QueueID, format string, a ...any) {
	n.out.Effects = append(n.out.Effects, seam.Effect{Kind: seam.EfNote, Group: seam.QueueGroup(q), Reason: fmt.Sprintf(format, a...)})
}

// recoveryInstallTick asks the proposed members that have not installed
// (with backoff), and asks for the activation once enough have.
func (n *Node) recoveryInstallTick(w *recoveryWork) {
	if !n.recoveryPlanned(w) {
		return // installed is only what the committed plan names
	}
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
		if b, ok := md.Broker(a.node); ok && b.Live && b.Process != a.process && a.receipt == nil {
			// Back (or just registered): ask now, as a seal is asked,
			// rather than at the end of a backoff grown while it was
			// down (seed 24000006190: a member back from a restart was
			// asked 8 s later, past the drain).
			a.process, a.nextNs, a.backoffNs = b.Process, min(a.nextNs, n.x.NowNs), recoveryBackoffMinNs
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
			if !slices.Contains(n.recoveries, w) {
				return // its answer started the attempt over
			}
			continue
		}
		n.out.Send(seam.GroupRecovery, a.node, recovery.AppendInstallRequest(n.out.Grow(128+16*len(w.srcEpochs)), &req))
	}
	n.recoveryActivate(w)
}

// installedArrived takes a proposed member's installation receipt.
func (n *Node) installedArrived(r recovery.Installed) {
	w := n.recoveryOf(r.Queue)
	if w == nil || w.phase != recoveryInstall || r.Transition != w.t.Digest || r.Identity != w.src.Identity {
		return
	}
	i := slices.IndexFunc(w.installs, func(a installAsk) bool { return a.node == r.Node })
	if i < 0 {
		return
	}
	w.installs[i].receipt = &r
	w.activateNs = 0 // ask at once
	n.recoveryActivate(w)
}

// recoveryActivate asks the leader to commit the activation once the
// owner and the new W installed: its members are the proposed members
// live now (one gone meanwhile, a replacement that died mid-recovery say,
// is left out as long as W stays what the queue's replicas ask; the queue
// gets that copy back as a new copy's learner).
func (n *Node) recoveryActivate(w *recoveryWork) {
	if w.activateNs != 0 && n.x.NowNs-w.activateNs < recoveryBackoffMinNs {
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
	var waiting []metadata.Member // live proposed members not installed yet
	for _, p := range q.Assignment.Pending.Proposed.Slice() {
		b, ok := md.Broker(p)
		if !ok || !b.Live {
			if n.x.Bugs.Has(bugs.ActivateWaitsAll) {
				return // (planted: wait for it)
			}
			continue // gone: left out
		}
		m := metadata.Member{Node: p, Process: b.Process, Storage: b.Storage}
		i := slices.IndexFunc(w.installs, func(a installAsk) bool { return a.node == p })
		if i < 0 || w.installs[i].receipt == nil || w.installs[i].receipt.Process != b.Process || w.installs[i].receipt.Storage != b.Storage {
			waiting = append(waiting, m)
			continue
		}
		c.Members.M[c.Members.N] = m
		c.Members.N++
		c.InSync.ID[c.InSync.N] = p
		c.InSync.N++
	}
	configuredW := q.Policy.WriteQuorum(q.Replicas, min(q.MinInsync, q.Replicas))
	wOf := func(members int) int { return q.Policy.WriteQuorum(members, min(q.MinInsync, members)) }
	if c.InSync.N == 0 || c.InSync.N < configuredW {
		w.quorumNs = 0
		return // too few installed: wait
	}
	if len(waiting) > 0 {
		if w.quorumNs == 0 {
			w.quorumNs = n.x.NowNs
		}
		if n.x.NowNs < w.quorumNs+recoveryActivateGraceNs {
			return // the others' installations are on their way, as a rule
		}
	}
	// The members: the installed ones, and of the others only as many as
	// the queue's configured W needs (a majority of fewer copies confirms
	// on fewer than the operator asked for). A member that never installed
	// would count in the next recovery's E as a witness to wait for (its
	// registration may outlive its process, or its disk); the rest get
	// their copies back as learners.
	for _, m := range waiting {
		if wOf(c.Members.N) >= configuredW {
			break
		}
		c.Members.M[c.Members.N] = m
		c.Members.N++
	}
	slices.SortFunc(c.Members.M[:c.Members.N], func(a, b metadata.Member) int { return cmp.Compare(a.Node, b.Node) })
	members := c.Members.N
	if c.InSync.N < wOf(members) || wOf(members) < configuredW {
		return // too few installed, or too few live for the queue's W: wait
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
