package core

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/ctrl"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/recovery"
	"github.com/sluicemq/sluice/core/seam"
)

// Installation (docs/design/recovery.md, "Installation in a stage"). A proposed member of a pending transition, asked by the
// recovery worker, makes its log of the queue the verified source's
// history: after a fresh committed view shows the transition pending and
// this node proposed (and, if it held the queue before, after its own seal
// froze the log), it builds the source's history in a stage apart from its
// live log (the group's log LogStage, a generation of its own in
// io/seglog): the records its live log shares with the source (up to
// where they part, by epoch history: one owner writes an offset once per
// epoch, and epochs are unique to an assignment) are copied locally, the
// rest from the source by sealed reads, in pages. It syncs the stage,
// reads it whole back and checks that it hashes to the source's identity,
// writes the new generation's seal receipt if its live log was sealed for
// the transition, and publishes the stage (OpPublish: one checksummed,
// directory-synced pointer); only then does it answer with its receipt
// (its exact process and storage instance). One installation runs at a
// time on a broker.
//
// The live log is never written by an installation: until the publish,
// it is exactly what its seal described, so an installation interrupted
// at any point (a crash, a superseded attempt, an activation without it)
// leaves a witness whose evidence stands. A stage left unfinished is
// resumed by a later installation of the same generation from its
// recovered end (its records are genuine, the live log's or the source's,
// and anything past where it parts from the new source is cut). A member
// whose live log already is the source's history (the source itself, or
// a copy that holds exactly it) stages nothing: its log is synced and
// verified in place.

// installTag marks, with sealTag, the storage effects of an installation.
const installTag uint64 = 2

// installsKeptMax bounds the receipts a process remembers.
const installsKeptMax = 64

type installPhase uint8

const (
	installFresh     installPhase = iota + 1 // waiting for the fresh committed view
	installOpen                              // waiting for the live log to open
	installStageOpen                         // waiting for the stage to open
	installCopy                              // copying pages, the live log's or the source's
	installSync                              // waiting for the copy to be durable
	installVerify                            // reading the copy back
	installReceipt                           // storing the live log's new seal receipt (in place)
	installPublish                           // waiting for the stage's publish
)

type installJob struct {
	req   recovery.InstallRequest
	from  NodeID
	phase installPhase
	token uint64
	// inPlace: the live log is the source's history; nothing is staged.
	inPlace bool
	// st: the log the installation builds (the stage as issued, or the
	// live log in place); localEnd: the stage copies [st.End, localEnd)
	// from the live log, the rest from the source.
	st       seam.LogState
	localEnd uint64
	// liveSeal: the live log's seal receipt, if it has one
	liveSeal []byte
	// askedNs: when the page wanted from the source was asked for;
	// progressNs: when the copy last took a page (or began), from which
	// its deadline runs (installSilentNs)
	askedNs, progressNs int64
	id                  *recovery.Identity
	// stageRecordsMax, stageBytesMax: the staging budget as the fresh
	// view gave it; stagedBytes: what this installation wrote to its
	// stage so far (a resumed stage's earlier records are not counted
	// again).
	stageRecordsMax, stageBytesMax int64
	stagedBytes                    int64
}

type installer struct {
	job  *installJob
	done []recovery.Installed // this process's receipts, oldest first
}

// invariants checks what holds of the installer between steps; it panics
// with what broke.
func (in *installer) invariants() {
	if len(in.done) > installsKeptMax {
		panic(fmt.Sprintf("core: %d installation receipts kept", len(in.done)))
	}
	j := in.job
	if j == nil {
		return
	}
	bad := func(format string, a ...any) {
		panic(fmt.Sprintf("core: installation of q=%d epoch=%d (phase %d): ", j.req.Queue, j.req.Epoch, j.phase) + fmt.Sprintf(format, a...))
	}
	if j.phase < installFresh || j.phase > installPublish {
		bad("no such phase")
	}
	if j.phase >= installCopy && (j.st.Start != j.req.Start || j.st.End > j.req.End) {
		bad("its log [%d,%d) is not within the history [%d,%d)", j.st.Start, j.st.End, j.req.Start, j.req.End)
	}
	if j.inPlace && (j.phase < installSync || j.st.End != j.req.End) {
		bad("in place, yet copying (end %d of %d)", j.st.End, j.req.End)
	}
	if j.stagedBytes < 0 || (j.stagedBytes > 0 && j.stagedBytes > j.stageBytesMax) {
		bad("%d bytes staged of at most %d", j.stagedBytes, j.stageBytesMax)
	}
}

// sameHistory reports whether a and b install one history of one
// transition, whichever source serves it.
func sameHistory(a, b *recovery.InstallRequest) bool {
	return a.Queue == b.Queue && a.Incarnation == b.Incarnation && a.Epoch == b.Epoch && a.Transition == b.Transition &&
		a.Start == b.Start && a.End == b.End && a.Identity == b.Identity
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
		n.installRefuse(from, &req, recovery.RefusedFor, "no metadata here")
		return
	case in.job != nil && sameInstall(&in.job.req, &req):
		return // running; the answer comes
	case in.job != nil && sameHistory(&in.job.req, &req) && req.Source != n.x.Node:
		// The same history from another holder (a worker handed the
		// recovery, or resumed on the plan, reads it from a copy of the
		// plan's source): the copy goes on from where it is, its pages
		// asked of the new source from now on, and the answer goes to the
		// new asker. (A copy whose new source is this node's own log
		// starts over below: that log is the history, installed in place.)
		j := in.job
		j.req.Source, j.from = req.Source, from
		if j.phase == installCopy && j.st.End >= j.localEnd {
			n.installNext()
		}
		return
	case in.job != nil && in.job.req.Queue == req.Queue && in.job.req.Transition == req.Transition && in.job.phase <= installCopy:
		// A later attempt of the same transition chose another source
		// (its worker restarted, or a witness changed): the running copy
		// would wait for pages of a source nobody verifies now. It ends
		// (its log stays a prefix of the old source's history past the
		// parting point, which the new installation cuts where it parts)
		// and the new request starts.
		n.installEnd(recovery.RefusedFor, fmt.Sprintf("superseded by an installation from n%d", req.Source))
	case in.job != nil:
		n.installRefuse(from, &req, recovery.RefusedBusy, fmt.Sprintf("installing queue %d", in.job.req.Queue))
		return
	case n.sealer.job != nil && n.sealer.job.req.Queue == req.Queue:
		n.installRefuse(from, &req, recovery.RefusedBusy, "sealing it")
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
		n.installEnd(recovery.RefusedFor, "no fresh committed view: "+e.Note)
		return true
	}
	req := &j.req
	q, ok := placedQueue(n.ctrl.Metadata(), req.Queue)
	switch {
	case !ok || q.Incarnation != req.Incarnation || !q.Assigned || !q.Assignment.Fenced:
		n.installEnd(recovery.RefusedFor, fmt.Sprintf("queue %d incarnation %d has no pending transition", req.Queue, req.Incarnation))
		return true
	case q.Assignment.Pending.Epoch != req.Epoch || recovery.Digest(q.Assignment.Pending.Digest) != req.Transition:
		n.installEnd(recovery.RefusedFor, fmt.Sprintf("queue %d's pending transition is to epoch %d", req.Queue, q.Assignment.Pending.Epoch))
		return true
	case !slices.Contains(q.Assignment.Pending.Proposed.Slice(), n.x.Node):
		n.installEnd(recovery.RefusedFor, fmt.Sprintf("n%d is not proposed", n.x.Node))
		return true
	case !planIs(&q.Assignment.Pending.Plan, req.Start, req.End, req.Identity) && !n.x.Bugs.Has(bugs.InstallUnplanned): // (planted: any history)
		// Only the committed plan's history is installed: a worker's
		// selection it does not name (not committed yet, or another
		// one's) grants nothing.
		n.installEnd(recovery.RefusedFor, fmt.Sprintf("the committed plan of queue %d is not [%d,%d) %x", req.Queue, req.Start, req.End, req.Identity[:6]))
		return true
	}
	md := n.ctrl.Metadata()
	j.stageRecordsMax, j.stageBytesMax = md.Setting(metadata.RecoveryStageRecordsMax), md.Setting(metadata.RecoveryStageBytesMax)
	previous := slices.ContainsFunc(q.Assignment.Members.Slice(), func(m metadata.Member) bool { return m.Node == n.x.Node })
	sealed := slices.ContainsFunc(n.sealer.done, func(s recovery.Seal) bool {
		return s.Queue == req.Queue && s.Epoch == req.Epoch && s.Transition == req.Transition
	})
	if previous && !sealed && n.queue(seam.QueueGroup(req.Queue)) != nil {
		// Its log is evidence of the transition, and a replica group of
		// this process runs on it: frozen by a seal first. (A restarted
		// process runs no group of a fenced queue, its assignment names
		// the old process: its log lies still, as its predecessor left it.)
		n.installEnd(recovery.RefusedFor, "not sealed by this process: seal first")
		return true
	}
	i := n.placedIndex(req.Queue)
	switch {
	case i >= 0 && n.placed[i].phase == placedOpening:
		n.installEnd(recovery.RefusedBusy, "its log is opening")
	case i >= 0:
		st := n.placed[i].state
		if r := n.queue(seam.QueueGroup(req.Queue)); r != nil && !n.placed[i].byInstall {
			// (Once an installation wrote the log, the sealed group on it
			// no longer knows what it holds: the placed state does.)
			s := r.LogState()
			st = &s
		}
		if st == nil {
			n.installEnd(recovery.RefusedFor, "its log did not open")
			return true
		}
		n.installBegin(st)
	default:
		if len(n.placed) >= placedMax {
			panic("core: more placed queues than the catalogue holds")
		}
		j.phase = installOpen
		n.placed = append(n.placed, placedGroup{queue: req.Queue, incarnation: req.Incarnation, phase: placedOpening, forSeal: true})
		n.out.Storage(seam.Effect{Op: seam.OpOpen, Group: seam.QueueGroup(req.Queue)})
	}
	return true
}

// installOpened continues an installation whose live log opened.
func (n *Node) installOpened(d *StorageDone) bool {
	j := n.installer.job
	if j == nil || j.phase != installOpen || seam.QueueGroup(j.req.Queue) != d.Group || d.Log != 0 {
		return false
	}
	if d.Err == "" {
		n.installBegin(d.State)
	}
	return true
}

// installBegin decides, from the live log st, whether the installation
// stages the source's history or verifies the live log in place.
func (n *Node) installBegin(st *seam.LogState) {
	j := n.installer.job
	req := &j.req
	p := &n.placed[n.placedIndex(req.Queue)]
	j.liveSeal = st.Seal
	if p.state != nil {
		j.liveSeal = p.state.Seal // a seal of this process renews it there
	}
	d := partingPoint(st.Epochs, st.End, req.Epochs, req.End, req.Start)
	if st.End == st.Start || st.Start > req.Start || st.End < req.Start {
		// An empty log shares nothing; nor does one that lacks the
		// source's first records (its start is past the source's: a
		// retention went further) or ends before them.
		d = req.Start
	}
	g := seam.QueueGroup(req.Queue)
	if st.Damage == "" && st.Start == req.Start && d == st.End && d == req.End {
		// Its live log is the source's history: verified in place, after
		// a sync (a group may have run on it; a seal synced it, an open
		// did, but nothing here relies on which).
		j.inPlace = true
		j.st = seam.LogState{Group: g, Start: st.Start, End: st.End, Epochs: slices.Clone(st.Epochs), Unrepaired: st.Unrepaired,
			Generation: p.generation}
		j.phase = installSync
		n.out.Storage(seam.Effect{Op: seam.OpSync, Group: g, Offset: j.st.End, Tag: sealTag | installTag})
		return
	}
	if req.Source == n.x.Node && d < req.End {
		// Its own log is the source, yet parts from the history its seal
		// gave: it changed since (met damage). (A source whose log has a
		// damaged tail past its history stages that history locally.)
		n.installEnd(recovery.RefusedSourceChanged, "its own log parts from its history")
		return
	}
	if p.publishing != nil || p.copy == copyOpening {
		n.installEnd(recovery.RefusedBusy, "publishing its stage")
		return
	}
	if records := int64(req.End - req.Start); records > j.stageRecordsMax {
		n.installEnd(recovery.RefusedStageBudget, fmt.Sprintf("a stage of %d records is over recovery.stage_records_max (%d)", records, j.stageRecordsMax))
		return
	}
	j.localEnd = d
	gen := req.Epoch
	if p.generation >= gen {
		// The generation of this epoch is the live log already (an
		// earlier installation of the transition published it, from
		// another source): the stage is the next one.
		gen = p.generation + 1
	}
	j.phase = installStageOpen
	n.out.Storage(seam.Effect{Op: seam.OpOpen, Group: g, Log: seam.LogStage, Offset: gen})
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

// stageOpened is the completion of a stage's open.
func (n *Node) stageOpened(d *StorageDone) {
	j := n.installer.job
	if d.Err != "" || j == nil || j.phase != installStageOpen || seam.QueueGroup(j.req.Queue) != d.Group {
		return // the failure policy (the process exits), or the installation ended
	}
	req := &j.req
	st := d.State
	j.st = seam.LogState{Group: d.Group, Log: seam.LogStage, Start: req.Start, End: st.End, Epochs: slices.Clone(st.Epochs),
		Unrepaired: st.Unrepaired, Generation: st.Generation}
	if st.Damage != "" {
		// A torn or corrupt tail (a crash struck the copy): discarded,
		// and the stage is marked unrepaired until verified whole.
		n.stageStorage(seam.Effect{Op: seam.OpDiscard, Offset: st.End})
		j.st.Unrepaired = true
	}
	if st.End == st.Start {
		j.st.Epochs = nil
	}
	if st.Start != req.Start {
		// The source's history starts elsewhere (a retention deleted its
		// head): the stage starts again at the source's start, with the
		// source's history below it.
		var below []seam.EpochStart
		for _, e := range req.Epochs {
			if e.Offset < req.Start {
				below = append(below, e)
			}
		}
		n.stageStorage(seam.Effect{Op: seam.OpReseed, Offset: req.Start, Epochs: below})
		j.st.End, j.st.Epochs = req.Start, slices.Clone(below)
	}
	if d := partingPoint(j.st.Epochs, j.st.End, req.Epochs, req.End, req.Start); j.st.End > d {
		// Resumed from a stage of another source's history: what parts
		// from this one goes.
		n.stageStorage(seam.Effect{Op: seam.OpTruncate, Offset: d})
		j.st.End = d
		j.st.Epochs = slices.DeleteFunc(j.st.Epochs, func(e seam.EpochStart) bool { return e.Offset >= d })
	}
	j.phase, j.progressNs = installCopy, n.x.NowNs
	n.installNext()
}

// stageStorage issues storage effect e on the running installation's
// stage.
func (n *Node) stageStorage(e seam.Effect) {
	j := n.installer.job
	e.Group, e.Log, e.Tag = seam.QueueGroup(j.req.Queue), seam.LogStage, sealTag|installTag
	n.out.Storage(e)
}

// installNext copies the next page into the stage (from the live log
// while it shares the source's history, then from the source), or syncs
// the copy.
func (n *Node) installNext() {
	j := n.installer.job
	req := &j.req
	if j.st.End >= req.End {
		j.phase = installSync
		if n.x.Bugs.Has(bugs.PublishUnsynced) {
			n.installSynced() // planted: verified from the page cache, published unsynced
			return
		}
		n.stageStorage(seam.Effect{Op: seam.OpSync, Offset: j.st.End})
		return
	}
	if j.st.End < j.localEnd {
		n.out.Storage(seam.Effect{Op: seam.OpRead, Group: seam.QueueGroup(req.Queue), Offset: j.st.End,
			Count: int(min(j.localEnd-j.st.End, uint64(n.x.Lim.BatchRecordsMax))), Tag: sealTag | installTag})
		return
	}
	j.askedNs = n.x.NowNs
	rr := recovery.ReadRequest{Queue: req.Queue, Incarnation: req.Incarnation, Epoch: req.Epoch, Transition: req.Transition,
		From: j.st.End, Count: recovery.PageRecordsMax}
	n.out.Send(seam.GroupRecovery, req.Source, recovery.AppendReadRequest(n.out.Grow(96), &rr))
}

// installPage takes a page of the source's sealed log for the copy; it
// reports whether the page was the installation's.
func (n *Node) installPage(p *recovery.ReadPage) bool {
	j := n.installer.job
	if j == nil || j.phase != installCopy || p.Queue != j.req.Queue || p.Transition != j.req.Transition || p.Node != j.req.Source {
		return false
	}
	if p.From != j.st.End || j.st.End < j.localEnd || len(p.Records) == 0 {
		return true // a late duplicate, or nothing: asked again on a tick
	}
	n.stageAppend(p.Records)
	return true
}

// stageAppend appends a page of the source's history at the stage's end
// and goes on.
func (n *Node) stageAppend(page []record.Record) {
	j := n.installer.job
	recs := page[:min(len(page), int(j.req.End-j.st.End))]
	for i := range recs {
		r := &recs[i]
		if r.Offset != j.st.End+uint64(i) {
			n.installEnd(recovery.RefusedFor, fmt.Sprintf("a page's record at o=%d where o=%d was due", r.Offset, j.st.End+uint64(i)))
			return
		}
		if r.Epoch != seam.EpochAt(j.req.Epochs, r.Offset) {
			n.installEnd(recovery.RefusedFor, fmt.Sprintf("the record at o=%d is of epoch %d, the source's history says %d", r.Offset, r.Epoch, seam.EpochAt(j.req.Epochs, r.Offset)))
			return
		}
	}
	var pageBytes int64
	for i := range recs {
		pageBytes += recovery.BudgetBytes(&recs[i])
	}
	if j.stagedBytes+pageBytes > j.stageBytesMax {
		n.installEnd(recovery.RefusedStageBudget, fmt.Sprintf("a stage of %d bytes or more is over recovery.stage_bytes_max (%d)", j.stagedBytes+pageBytes, j.stageBytesMax))
		return
	}
	j.stagedBytes += pageBytes
	for i := range recs {
		if k := len(j.st.Epochs); k == 0 || j.st.Epochs[k-1].Epoch != recs[i].Epoch {
			j.st.Epochs = append(j.st.Epochs, seam.EpochStart{Epoch: recs[i].Epoch, Offset: recs[i].Offset})
		}
	}
	n.stageStorage(seam.Effect{Op: seam.OpAppend, Records: recs})
	j.st.End += uint64(len(recs))
	j.progressNs = n.x.NowNs
	n.installNext()
}

// installTick asks again for a page not answered, and ends an installation
// whose transition is no longer pending (activated without it, replaced,
// or its queue deleted), or whose source sent no page for installSilentNs
// (its deadline): one runs at a time on a broker, and one waiting for a
// source that can no longer answer would keep every other queue's
// installation out for good, also when the worker that asked for it is
// gone and no later attempt supersedes it. A publish under way is waited
// for.
func (n *Node) installTick() {
	j := n.installer.job
	if j == nil {
		return
	}
	if j.phase >= installCopy && j.phase < installReceipt {
		q, ok := placedQueue(n.ctrl.Metadata(), j.req.Queue)
		if !ok || q.Incarnation != j.req.Incarnation || !q.Assignment.Fenced || q.Assignment.Pending.Epoch != j.req.Epoch ||
			recovery.Digest(q.Assignment.Pending.Digest) != j.req.Transition {
			n.installEnd(recovery.RefusedFor, "the transition is no longer pending")
			return
		}
	}
	if j.phase == installCopy && j.st.End >= j.localEnd && n.x.NowNs-j.progressNs >= installSilentNs &&
		!n.x.Bugs.Has(bugs.InstallerAsksReplacedSource) { // (planted: no deadline either)
		n.installEnd(recovery.RefusedSourceSilent, fmt.Sprintf("no page from the source n%d for %d s", j.req.Source, installSilentNs/1_000_000_000))
		return
	}
	if j.phase == installCopy && j.st.End >= j.localEnd && n.x.NowNs-j.askedNs >= recoveryBackoffMinNs {
		n.installNext()
	}
}

// installSilentNs is an installation's deadline: the longest its copy
// waits for a page of the source. A page (at most 16 MiB) takes well
// under a second on any link a cluster runs on; the page is asked again
// every second meanwhile.
const installSilentNs = 10_000_000_000

// installStorage takes the completion of an installation's storage effect.
func (n *Node) installStorage(d *StorageDone) {
	if d.Log == seam.LogStage && d.Op == seam.OpPublish && d.Err == "" {
		i := n.placedIndex(QueueID(d.Group))
		if i < 0 {
			panic(fmt.Sprintf("core: a stage of group %d published, which is not placed here", d.Group))
		}
		n.stagePublished(&n.placed[i])
	}
	j := n.installer.job
	if d.Err != "" || j == nil || seam.QueueGroup(j.req.Queue) != d.Group {
		return // the failure policy (the process exits), or an installation ended
	}
	onLog := seam.LogStage
	if j.inPlace {
		onLog = 0
	}
	switch {
	case d.Op == seam.OpRead && d.Log == 0 && j.phase == installCopy && !j.inPlace:
		if d.Offset != j.st.End || len(d.Records) == 0 {
			n.installEnd(recovery.RefusedFor, fmt.Sprintf("its live log has no record at %d", j.st.End))
			return
		}
		n.stageAppend(d.Records)
	case d.Op == seam.OpSync && d.Log == onLog && j.phase == installSync:
		n.installSynced()
	case d.Op == seam.OpRead && d.Log == onLog && j.phase == installVerify:
		if len(d.Records) == 0 {
			n.installEnd(recovery.RefusedFor, fmt.Sprintf("the installed log has no record at %d", j.id.Next()))
			return
		}
		for i := range d.Records {
			if err := j.id.Add(&d.Records[i]); err != nil {
				n.installEnd(recovery.RefusedFor, "the installed log: "+err.Error())
				return
			}
		}
		n.installReadNext()
	case d.Op == seam.OpSeal && d.Log == 0 && j.phase == installReceipt:
		n.installDone()
	}
}

// installSynced starts reading the durable copy back.
func (n *Node) installSynced() {
	j := n.installer.job
	j.phase = installVerify
	id, err := recovery.NewIdentity(j.req.Queue, j.req.Start, j.req.End)
	if err != nil {
		n.installEnd(recovery.RefusedFor, err.Error())
		return
	}
	j.id = id
	n.installReadNext()
}

func (n *Node) installReadNext() {
	j := n.installer.job
	if next := j.id.Next(); next < j.req.End {
		e := seam.Effect{Op: seam.OpRead, Offset: next, Count: int(min(j.req.End-next, uint64(n.x.Lim.BatchRecordsMax)))}
		if j.inPlace {
			e.Group, e.Tag = seam.QueueGroup(j.req.Queue), sealTag|installTag
			n.out.Storage(e)
		} else {
			n.stageStorage(e)
		}
		return
	}
	if sum, err := j.id.Sum(); err != nil || sum != j.req.Identity {
		n.installEnd(recovery.RefusedFor, fmt.Sprintf("the installed log does not hash to the source's identity %x", j.req.Identity[:6]))
		return
	}
	n.installVerified()
}

// installVerified finishes a copy that hashes to the source's identity:
// its unrepaired mark goes (its content is the source's whole history),
// a receipt the live log holds for this very transition is renewed to say
// what the log holds now (or a later process would find the log changed
// since its seal and withhold its evidence for good), and the stage is
// published; the answer waits for the last of these to be durable.
func (n *Node) installVerified() {
	j := n.installer.job
	g := seam.QueueGroup(j.req.Queue)
	issue := func(e seam.Effect) {
		if j.inPlace {
			e.Group, e.Tag = g, sealTag|installTag
			n.out.Storage(e)
		} else {
			n.stageStorage(e)
		}
	}
	if j.st.Unrepaired {
		issue(seam.Effect{Op: seam.OpRepaired})
		j.st.Unrepaired = false
	}
	// Bound: it holds the source's whole history (a stage gets a binding
	// of its own, in its generation; the live log verified in place keeps
	// its own, or gets one now).
	p := &n.placed[n.placedIndex(j.req.Queue)]
	if j.inPlace {
		n.bindWhole(p, issue)
	} else {
		j.st.Binding = recovery.AppendBinding(nil, j.req.Queue, j.req.Incarnation, n.storage)
		issue(seam.Effect{Op: seam.OpBind, Body: j.st.Binding})
	}
	j.st.Seal = nil
	if len(j.liveSeal) > 0 {
		if s, err := recovery.DecodeSeal(j.liveSeal); err == nil && s.Queue == j.req.Queue && s.Incarnation == j.req.Incarnation &&
			s.Epoch == j.req.Epoch && s.Transition == j.req.Transition {
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
			issue(seam.Effect{Op: seam.OpSeal, Body: j.st.Seal})
		}
	}
	switch {
	case !j.inPlace:
		j.phase = installPublish
		st := j.st
		st.Log = 0
		p.publishing = &st
		n.stageStorage(seam.Effect{Op: seam.OpPublish})
	case len(j.st.Seal) > 0:
		j.phase = installReceipt
	default:
		n.installDone()
	}
}

// stagePublished takes a publish's completion: the stage is the queue's
// log now, whether or not the installation that published it still runs.
func (n *Node) stagePublished(p *placedGroup) {
	if p.publishing == nil {
		panic(fmt.Sprintf("core: queue %d's stage published unasked", p.queue))
	}
	p.state, p.byInstall, p.generation = p.publishing, true, p.publishing.Generation
	p.binding = bindBound // an installation's stage, or a new copy's fresh one, was bound before its publish
	p.publishing = nil
	if j := n.installer.job; j != nil && j.req.Queue == p.queue && j.phase == installPublish {
		n.installDone()
	}
	if p.activateAfterPublish {
		p.activateAfterPublish = false
		n.activateDeferred(p)
	}
}

// activateDeferred starts the group of placed queue p that waited (for a
// publish, or a seal of its old log), if the committed assignment still
// names this process and its group does not run that epoch yet.
func (n *Node) activateDeferred(p *placedGroup) {
	if q, ok := placedQueue(n.ctrl.Metadata(), p.queue); ok && q.Incarnation == p.incarnation && q.Assigned &&
		!q.Assignment.Fenced && n.mine(&q.Assignment) && p.epoch != q.Assignment.Epoch {
		n.activated(p, q)
	}
}

// installDone answers the installation: its log holds the source's
// verified history, durably.
func (n *Node) installDone() {
	j := n.installer.job
	if j.inPlace {
		// The log as verified (and its renewed receipt): what a seal or a
		// group on it starts from.
		i := n.placedIndex(j.req.Queue)
		st := j.st
		n.placed[i].state, n.placed[i].byInstall = &st, true
	}
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
// The live log is as it was; the stage keeps what was issued to it, for a
// later installation to resume.
func (n *Node) installEnd(code recovery.Refusal, why string) {
	j := n.installer.job
	if j.phase == installPublish {
		panic("core: an installation ended while its publish is under way")
	}
	n.installer.job = nil
	n.recoveryNote(j.req.Queue, "recovery q=%d epoch=%d n%d did not install: %s", j.req.Queue, j.req.Epoch, n.x.Node, why)
	n.installRefuse(j.from, &j.req, code, why)
}

// installAbort drops the installation of queue q (its assignment moved
// on). A publish under way completes on its own (stagePublished).
func (n *Node) installAbort(q QueueID) {
	if j := n.installer.job; j != nil && j.req.Queue == q {
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

func (n *Node) installRefuse(to NodeID, req *recovery.InstallRequest, code recovery.Refusal, why string) {
	r := recovery.SealRefused{Queue: req.Queue, Transition: req.Transition, Code: code, Reason: why, Install: true}
	if to == n.x.Node {
		n.sealRefusedBy(to, r)
		return
	}
	n.out.Send(seam.GroupRecovery, to, recovery.AppendSealRefused(n.out.Grow(64+len(why)), &r))
}
