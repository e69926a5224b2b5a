package core

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/recovery"
	"github.com/sluicemq/sluice/core/seam"
)

// Installation (issue 11, point 5). A proposed member of a pending
// transition, asked by the recovery worker, makes its log of the queue the
// verified source's history: after a fresh committed view shows the
// transition pending and this node proposed (and, if it held the queue
// before, after its own seal froze the log), it truncates its log where it
// parts from the source (by epoch history: one owner writes an offset once
// per epoch, and epochs are unique to an assignment), copies the rest from
// the source by sealed reads, syncs, reads its whole log back and checks
// that it hashes to the source's identity; only then does it answer with
// its receipt (its exact process and storage instance). One installation
// runs at a time on a broker.
//
// Why installing in place is safe where seed 004 stages apart: what it
// removes is a suffix the source does not hold, which the sealed reads
// showed to be of epochs the source superseded, so never confirmed (every
// confirmed record is on the source: source-complete judges it); what it
// appends is the source's. A member's log is thus, at every moment, its
// sealed records up to the parting point, then a prefix of the source's
// rest: a later attempt at the same transition finds witnesses that still
// hold every confirmed record they held. The source itself is never
// written. TODO(issue 11): a stage apart and a generation pointer, so that
// an interrupted installation leaves the sealed generation untouched. The
// plan: the stage is a second log of the queue's group (seam.LogID 1, its
// own directory gen-EPOCH beside the live one, opened by OpOpen naming the
// log); the installation copies the shared prefix from the live log and
// the rest from the source into it, in pages, and resumes from its
// recovered end after a restart; once its read-back matches the identity,
// a new OpPublish writes the checksummed pointer file naming gen-EPOCH
// (temporary file, sync, rename, directory sync) and the host swaps the
// group's log 0 for it; old generations stay (seed 004: no reclamation
// yet). seglog.Open, the daemon's and the world's PlacedLog, the
// checker's DiskLog (sim/check: the pointer decides which directory is
// the replica's truth; a publish is a truncation to 0 plus the stage's
// records) and the fault injection's choice of files all follow the
// pointer.

// installTag marks, with sealTag, the storage effects of an installation.
const installTag uint64 = 2

// installsKeptMax bounds the receipts a process remembers.
const installsKeptMax = 64

type installPhase uint8

const (
	installFresh   installPhase = iota + 1 // waiting for the fresh committed view
	installOpen                            // waiting for the log to open
	installCopy                            // copying pages from the source
	installSync                            // waiting for the copy to be durable
	installVerify                          // reading the log back
	installReceipt                         // storing the log's new seal receipt
)

type installJob struct {
	req   recovery.InstallRequest
	from  NodeID
	phase installPhase
	token uint64
	st    seam.LogState // the log as this installation issued it
	// askedNs: when the page wanted from the source was asked for
	askedNs int64
	id      *recovery.Identity
}

type installer struct {
	job  *installJob
	done []recovery.Installed // this process's receipts, oldest first
}

func sameInstall(a, b *recovery.InstallRequest) bool {
	return a.Queue == b.Queue && a.Incarnation == b.Incarnation && a.Epoch == b.Epoch && a.Transition == b.Transition && a.Source == b.Source
}

// installRequested starts an installation for the worker on from, or
// answers a retry, or refuses.
func (n *Node) installRequested(from NodeID, req recovery.InstallRequest) {
	in := &n.installer
	for i := range in.done {
		if d := &in.done[i]; d.Queue == req.Queue && d.Transition == req.Transition && d.Identity == req.Identity {
			n.installAnswer(from, d)
			return
		}
	}
	switch {
	case n.ctrl == nil:
		n.installRefuse(from, &req, false, "no metadata here")
		return
	case in.job != nil && sameInstall(&in.job.req, &req):
		return // running; the answer comes
	case in.job != nil && in.job.req.Queue == req.Queue && in.job.req.Transition == req.Transition && in.job.phase <= installCopy:
		// A later attempt of the same transition chose another source
		// (its worker restarted, or a witness changed): the running copy
		// would wait for pages of a source nobody verifies now. It ends
		// (its log stays a prefix of the old source's history past the
		// parting point, which the new installation cuts where it parts)
		// and the new request starts.
		n.installEnd(false, fmt.Sprintf("superseded by an installation from n%d", req.Source))
	case in.job != nil:
		n.installRefuse(from, &req, true, fmt.Sprintf("installing queue %d", in.job.req.Queue))
		return
	case n.sealer.job != nil && n.sealer.job.req.Queue == req.Queue:
		n.installRefuse(from, &req, true, "sealing it")
		return
	}
	n.sealer.lastToken++
	in.job = &installJob{req: req, from: from, phase: installFresh, token: n.sealer.lastToken}
	n.stepCtrl(ctrl.Input{Kind: ctrl.InFreshRead, Seq: in.job.token})
}

// installFreshDone checks the request against the fresh committed view and
// finds the log.
func (n *Node) installFreshDone(e *ctrl.Effect) bool {
	j := n.installer.job
	if j == nil || j.phase != installFresh || j.token != e.Seq {
		return false
	}
	if e.Result != ctrl.Committed {
		n.installEnd(false, "no fresh committed view: "+e.Note)
		return true
	}
	req := &j.req
	q, ok := placedQueue(n.ctrl.Metadata(), req.Queue)
	switch {
	case !ok || q.Incarnation != req.Incarnation || !q.Assigned || !q.Assignment.Fenced:
		n.installEnd(false, fmt.Sprintf("queue %d incarnation %d has no pending transition", req.Queue, req.Incarnation))
		return true
	case q.Assignment.Pending.Epoch != req.Epoch || recovery.Digest(q.Assignment.Pending.Digest) != req.Transition:
		n.installEnd(false, fmt.Sprintf("queue %d's pending transition is to epoch %d", req.Queue, q.Assignment.Pending.Epoch))
		return true
	case !slices.Contains(q.Assignment.Pending.Proposed.Slice(), n.x.Node):
		n.installEnd(false, fmt.Sprintf("n%d is not proposed", n.x.Node))
		return true
	}
	previous := slices.ContainsFunc(q.Assignment.Members.Slice(), func(m metadata.Member) bool { return m.Node == n.x.Node })
	sealed := slices.ContainsFunc(n.sealer.done, func(s recovery.Seal) bool {
		return s.Queue == req.Queue && s.Epoch == req.Epoch && s.Transition == req.Transition
	})
	if previous && !sealed && n.queue(seam.QueueGroup(req.Queue)) != nil {
		// Its log is evidence of the transition, and a replica group of
		// this process runs on it: frozen by a seal first. (A restarted
		// process runs no group of a fenced queue, its assignment names
		// the old process: its log lies still, as its predecessor left it.)
		n.installEnd(false, "not sealed by this process: seal first")
		return true
	}
	i := n.placedIndex(req.Queue)
	switch {
	case i >= 0 && n.placed[i].opening:
		n.installEnd(true, "its log is opening")
	case i >= 0:
		st := n.placed[i].state
		if r := n.queue(seam.QueueGroup(req.Queue)); r != nil && !n.placed[i].byInstall {
			// (Once an installation wrote the log, the sealed group on it
			// no longer knows what it holds: the placed state does.)
			s := r.LogState()
			st = &s
		}
		if st == nil {
			n.installEnd(false, "its log did not open")
			return true
		}
		n.installBegin(st)
	default:
		if len(n.placed) >= placedMax {
			panic("core: more placed queues than the catalogue holds")
		}
		j.phase = installOpen
		n.placed = append(n.placed, placedGroup{queue: req.Queue, incarnation: req.Incarnation, opening: true, forSeal: true})
		n.out.Storage(seam.Effect{Op: seam.OpOpen, Group: seam.QueueGroup(req.Queue)})
	}
	return true
}

// installOpened continues an installation whose log opened.
func (n *Node) installOpened(d *StorageDone) bool {
	j := n.installer.job
	if j == nil || j.phase != installOpen || seam.QueueGroup(j.req.Queue) != d.Group {
		return false
	}
	if d.Err == "" {
		n.installBegin(d.State)
	}
	return true
}

// installBegin cuts the log where it parts from the source and starts the
// copy.
func (n *Node) installBegin(st *seam.LogState) {
	j := n.installer.job
	req := &j.req
	if st.Start != req.Start && st.End > st.Start {
		n.installEnd(false, fmt.Sprintf("its log starts at %d, the source's at %d", st.Start, req.Start))
		return
	}
	j.st = seam.LogState{Group: st.Group, Start: req.Start, End: st.End, Epochs: slices.Clone(st.Epochs), Unrepaired: st.Unrepaired}
	if d := partingPoint(j.st.Epochs, j.st.End, req.Epochs, req.End, req.Start); st.Damage != "" || d < j.st.End || d < req.End {
		// The installation is about to write the log: its seal for this
		// transition (if it sealed) no longer describes it, so its
		// receipt says first, durably (one log's operations run in
		// order), that it is no complete witness any more.
		n.installMarkReceipt()
	}
	if st.Damage != "" {
		// Its tail past End is torn or corrupt (its seal said so: a
		// damaged witness). The installation replaces everything past
		// the parting point with the source's history, so it discards
		// the damaged tail first, in the open; the log is marked
		// unrepaired until the copy is verified whole.
		n.out.Storage(seam.Effect{Op: seam.OpDiscard, Group: seam.QueueGroup(req.Queue), Offset: st.End, Tag: sealTag | installTag})
		j.st.Unrepaired = true
	}
	if st.End == st.Start {
		j.st.End, j.st.Epochs = req.Start, nil
		if st.End != req.Start {
			n.installEnd(false, fmt.Sprintf("its empty log is at %d, the source starts at %d", st.End, req.Start))
			return
		}
	}
	d := partingPoint(j.st.Epochs, j.st.End, req.Epochs, req.End, req.Start)
	g := seam.QueueGroup(req.Queue)
	if j.st.End > d {
		n.out.Storage(seam.Effect{Op: seam.OpTruncate, Group: g, Offset: d, Tag: sealTag | installTag})
		j.st.End = d
		j.st.Epochs = slices.DeleteFunc(j.st.Epochs, func(e seam.EpochStart) bool { return e.Offset >= d })
	}
	j.phase = installCopy
	n.installAskPage()
}

// partingPoint is the first offset where a log (epochs, end) and the
// source's (srcEpochs, srcEnd, from srcStart) part: where their epochs
// differ, or the shorter's end.
func partingPoint(epochs []seam.EpochStart, end uint64, srcEpochs []seam.EpochStart, srcEnd, srcStart uint64) uint64 {
	common := min(end, srcEnd)
	// The epochs change only at the starts of either history: compare at
	// each of them.
	points := []uint64{srcStart}
	for _, e := range epochs {
		points = append(points, e.Offset)
	}
	for _, e := range srcEpochs {
		points = append(points, e.Offset)
	}
	slices.Sort(points)
	for _, o := range points {
		if o >= common {
			break
		}
		if o >= srcStart && seam.EpochAt(epochs, o) != seam.EpochAt(srcEpochs, o) {
			return o
		}
	}
	return common
}

// installAskPage asks the source for the next page, or syncs the copy.
func (n *Node) installAskPage() {
	j := n.installer.job
	req := &j.req
	if j.st.End >= req.End {
		j.phase = installSync
		n.out.Storage(seam.Effect{Op: seam.OpSync, Group: seam.QueueGroup(req.Queue), Offset: j.st.End, Tag: sealTag | installTag})
		return
	}
	j.askedNs = n.x.NowNs
	rr := recovery.ReadRequest{Queue: req.Queue, Incarnation: req.Incarnation, Epoch: req.Epoch, Transition: req.Transition,
		From: j.st.End, Count: recovery.PageRecordsMax}
	if req.Source == n.x.Node {
		// Its own log is the source, yet parts from the history its seal
		// gave: it changed since (met damage).
		n.installEnd(false, sourceChangedNote+": its own log parts from its history")
		return
	}
	n.out.Send(seam.GroupRecovery, req.Source, recovery.AppendReadRequest(n.out.Grow(96), &rr))
}

// installPage takes a page of the source's sealed log for the copy; it
// reports whether the page was the installation's.
func (n *Node) installPage(p *recovery.ReadPage) bool {
	j := n.installer.job
	if j == nil || j.phase != installCopy || p.Queue != j.req.Queue || p.Transition != j.req.Transition || p.Node != j.req.Source {
		return false
	}
	if p.From != j.st.End || len(p.Records) == 0 {
		return true // a late duplicate, or nothing: asked again on a tick
	}
	recs := p.Records[:min(len(p.Records), int(j.req.End-j.st.End))]
	for i := range recs {
		r := &recs[i]
		if r.Epoch != seam.EpochAt(j.req.Epochs, r.Offset) {
			n.installEnd(false, fmt.Sprintf("the source's record at o=%d is of epoch %d, its history says %d", r.Offset, r.Epoch, seam.EpochAt(j.req.Epochs, r.Offset)))
			return true
		}
		if k := len(j.st.Epochs); k == 0 || j.st.Epochs[k-1].Epoch != r.Epoch {
			j.st.Epochs = append(j.st.Epochs, seam.EpochStart{Epoch: r.Epoch, Offset: r.Offset})
		}
	}
	n.out.Storage(seam.Effect{Op: seam.OpAppend, Group: seam.QueueGroup(j.req.Queue), Records: recs, Tag: sealTag | installTag})
	j.st.End += uint64(len(recs))
	n.installAskPage()
	return true
}

// installTick asks again for a page not answered, and ends an installation
// whose transition is no longer pending (activated without it, replaced,
// or its queue deleted): one runs at a time on a broker, and one waiting
// for a source that can no longer answer would keep every other queue's
// installation out for good.
func (n *Node) installTick() {
	j := n.installer.job
	if j == nil {
		return
	}
	if j.phase >= installCopy && j.phase != installReceipt {
		q, ok := placedQueue(n.ctrl.Metadata(), j.req.Queue)
		if !ok || q.Incarnation != j.req.Incarnation || !q.Assignment.Fenced || q.Assignment.Pending.Epoch != j.req.Epoch ||
			recovery.Digest(q.Assignment.Pending.Digest) != j.req.Transition {
			n.installEnd(false, "the transition is no longer pending")
			return
		}
	}
	if j.phase == installCopy && n.x.NowNs-j.askedNs >= recoveryBackoffMinNs {
		n.installAskPage()
	}
}

// installStorage takes the completion of an installation's storage effect.
func (n *Node) installStorage(d *StorageDone) {
	j := n.installer.job
	if d.Err != "" || j == nil || seam.QueueGroup(j.req.Queue) != d.Group {
		return // the failure policy (the process exits), or an installation ended
	}
	switch {
	case d.Op == seam.OpSeal && j.phase == installReceipt:
		n.installDone()
	case d.Op == seam.OpSync && j.phase == installSync:
		j.phase = installVerify
		id, err := recovery.NewIdentity(j.req.Queue, j.req.Start, j.req.End)
		if err != nil {
			n.installEnd(false, err.Error())
			return
		}
		j.id = id
		n.installReadNext()
	case d.Op == seam.OpRead && j.phase == installVerify:
		if len(d.Records) == 0 {
			n.installEnd(false, fmt.Sprintf("the installed log has no record at %d", j.id.Next()))
			return
		}
		for i := range d.Records {
			if err := j.id.Add(&d.Records[i]); err != nil {
				n.installEnd(false, "the installed log: "+err.Error())
				return
			}
		}
		n.installReadNext()
	}
}

func (n *Node) installReadNext() {
	j := n.installer.job
	g := seam.QueueGroup(j.req.Queue)
	if next := j.id.Next(); next < j.req.End {
		n.out.Storage(seam.Effect{Op: seam.OpRead, Group: g, Offset: next,
			Count: int(min(j.req.End-next, uint64(n.x.Lim.BatchRecordsMax))), Tag: sealTag | installTag})
		return
	}
	if sum, err := j.id.Sum(); err != nil || sum != j.req.Identity {
		n.installEnd(false, fmt.Sprintf("the installed log does not hash to the source's identity %x", j.req.Identity[:6]))
		return
	}
	if j.st.Unrepaired {
		// Its content is the source's whole history now: nothing of it is
		// missing any more.
		n.out.Storage(seam.Effect{Op: seam.OpRepaired, Group: g, Tag: sealTag | installTag})
		j.st.Unrepaired = false
	}
	i := n.placedIndex(j.req.Queue)
	if old := n.placed[i].state; old != nil && len(old.Seal) > 0 {
		if s, err := recovery.DecodeSeal(old.Seal); err == nil && s.Queue == j.req.Queue && s.Incarnation == j.req.Incarnation &&
			s.Epoch == j.req.Epoch && s.Transition == j.req.Transition {
			// The log was sealed for this very transition: its receipt
			// must say what the log holds now, the source's verified
			// history, or a later process would find the log changed since
			// its seal and withhold its evidence for good. The new receipt
			// is durable before the installation is answered.
			s.Process, s.Start, s.End, s.Identity, s.Damaged = n.x.Process, j.req.Start, j.req.End, j.req.Identity, false
			s.LastEpoch = 0
			if s.End > s.Start {
				s.LastEpoch = seam.EpochAt(j.st.Epochs, s.End-1)
			}
			j.st.Seal = recovery.AppendSeal(nil, &s)
			for k := range n.sealer.done {
				if d := &n.sealer.done[k]; d.Queue == s.Queue && d.Incarnation == s.Incarnation && d.Epoch == s.Epoch && d.Transition == s.Transition {
					*d = s // a later ask of this process answers what its log holds
				}
			}
			j.phase = installReceipt
			n.out.Storage(seam.Effect{Op: seam.OpSeal, Group: g, Body: j.st.Seal, Tag: sealTag | installTag})
			return
		}
	}
	n.installDone()
}

// installMarkReceipt rewrites the log's seal receipt for the running
// installation's transition, if it has one that claims a complete log, to
// say the log is damaged: a process that restarts with the installation
// half done then answers as a damaged witness (recovery.Collection counts
// such a seal only when every previous replica sealed), not as one whose
// log changed since its seal, whose evidence is withheld for good.
func (n *Node) installMarkReceipt() {
	j := n.installer.job
	i := n.placedIndex(j.req.Queue)
	if i < 0 || n.placed[i].state == nil || len(n.placed[i].state.Seal) == 0 {
		return // never sealed for anything (the receipt is the placed state's: a group's view has none)
	}
	s, err := recovery.DecodeSeal(n.placed[i].state.Seal)
	if err != nil || s.Queue != j.req.Queue || s.Incarnation != j.req.Incarnation || s.Epoch != j.req.Epoch ||
		s.Transition != j.req.Transition || s.Damaged {
		return
	}
	s.Damaged = true
	receipt := recovery.AppendSeal(nil, &s)
	j.st.Seal = receipt
	n.placed[i].state.Seal = receipt
	for k := range n.sealer.done {
		if d := &n.sealer.done[k]; d.Queue == s.Queue && d.Incarnation == s.Incarnation && d.Epoch == s.Epoch && d.Transition == s.Transition {
			*d = s
		}
	}
	n.out.Storage(seam.Effect{Op: seam.OpSeal, Group: seam.QueueGroup(j.req.Queue), Body: receipt, Tag: sealTag | installTag})
}

// installDone answers the installation: its log holds the source's
// verified history, durably.
func (n *Node) installDone() {
	j := n.installer.job
	i := n.placedIndex(j.req.Queue)
	st := j.st
	n.placed[i].state, n.placed[i].byInstall = &st, true
	r := recovery.Installed{Queue: j.req.Queue, Transition: j.req.Transition, Node: n.x.Node, Process: n.x.Process, Storage: n.storage,
		End: j.req.End, Identity: j.req.Identity}
	in := &n.installer
	if len(in.done) >= installsKeptMax {
		in.done = slices.Delete(in.done, 0, 1)
	}
	in.done = append(in.done, r)
	in.job = nil
	n.out.Recovery(r.Queue, seam.StageInstall, j.req.Epoch, recovery.AppendInstalled(n.out.Grow(96), &r),
		fmt.Sprintf("n%d installed the source n%d's [%d,%d) id=%x", n.x.Node, j.req.Source, j.req.Start, j.req.End, j.req.Identity[:6]))
	n.installAnswer(j.from, &r)
}

// installEnd ends the running installation unmade, telling the worker.
// Its log stays as issued (a prefix of the source's history after the
// parting point), recorded for a later group or attempt.
func (n *Node) installEnd(busy bool, why string) {
	j := n.installer.job
	n.installer.job = nil
	if j.phase >= installCopy {
		if i := n.placedIndex(j.req.Queue); i >= 0 {
			st := j.st
			n.placed[i].state, n.placed[i].byInstall = &st, true
		}
	}
	n.recoveryNote(j.req.Queue, "recovery q=%d epoch=%d n%d did not install: %s", j.req.Queue, j.req.Epoch, n.x.Node, why)
	n.installRefuse(j.from, &j.req, busy, why)
}

// installAbort drops the installation of queue q (its assignment moved
// on), keeping the log as issued.
func (n *Node) installAbort(q QueueID) {
	if j := n.installer.job; j != nil && j.req.Queue == q {
		if j.phase >= installCopy {
			if i := n.placedIndex(q); i >= 0 {
				st := j.st
				n.placed[i].state, n.placed[i].byInstall = &st, true
			}
		}
		n.installer.job = nil
	}
}

func (n *Node) installAnswer(to NodeID, r *recovery.Installed) {
	if to == n.x.Node {
		n.installedArrived(*r)
		return
	}
	n.out.Send(seam.GroupRecovery, to, recovery.AppendInstalled(n.out.Grow(96), r))
}

func (n *Node) installRefuse(to NodeID, req *recovery.InstallRequest, busy bool, why string) {
	r := recovery.SealRefused{Queue: req.Queue, Transition: req.Transition, Busy: busy, Reason: why, Install: true}
	if to == n.x.Node {
		n.sealRefusedBy(to, r)
		return
	}
	n.out.Send(seam.GroupRecovery, to, recovery.AppendSealRefused(n.out.Grow(64+len(why)), &r))
}
