package world

import (
	"github.com/sluicemq/sluice/core/ctrl"
	"strings"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/queue"
	"github.com/sluicemq/sluice/core/record"
	"github.com/sluicemq/sluice/core/recovery"
	"github.com/sluicemq/sluice/core/seam"
	"github.com/sluicemq/sluice/core/wire"
	"github.com/sluicemq/sluice/io/seglog"
	"github.com/sluicemq/sluice/sim/check"
)

// brokerEnv is a broker process's world, as its host sees it (driver.Env),
// and the checkers' view of its storage (driver.Observer).
type brokerEnv struct {
	w *World
	b *broker
}

// Send carries a group's message as a wire frame, through the network's
// faults.
func (env *brokerEnv) Send(to core.NodeID, g core.GroupID, msg []byte) {
	w, from := env.w, env.b.id
	f, t := from-1, to-1
	if len(msg) > 0 && g < seam.GroupReservedMin {
		// The network may look at what it carries: coverage marks.
		switch queue.MsgKind(msg[0]) {
		case queue.MsgAppendReply:
			// A follower's durable report: evidence the checker names when
			// a confirm lacks its copies (it judges from the disks).
			if queue.DecodeMsgInto(&w.replyScratch, msg) == nil && w.replyScratch.Ok {
				w.checker.Reported(w.now, from, core.QueueID(g), w.replyScratch.End)
			}
		}
	}
	if g == core.GroupCtrl {
		w.ctrlSeen(from, msg)
	}
	if g == seam.GroupRecovery {
		if k, err := recovery.KindOf(msg); err == nil && k == recovery.KindSealRequest {
			w.recoverySealAsked(to, msg)
		}
	}
	if w.now < w.isolated[f] || w.now < w.isolated[t] || w.now < w.oneWay[f][t] {
		return // partitioned
	}
	rates := &w.prof.Faults
	if !w.working {
		rates = &noFaults // healed
	}
	// The metadata group's messages draw from its own stream: adding the
	// group left the queues' draws as they were.
	r, delay := w.rNet, w.netDelay
	if controlled(g) {
		r, delay = w.rCtrl, w.ctrlDelay
	}
	if rates.DropPer1000 > 0 && r.Intn(1000) < rates.DropPer1000 {
		w.stats.Armed[FaultDrop]++
		w.stats.Struck[FaultDrop]++
		return
	}
	data := wire.Append(w.frames.get(wire.Size(len(msg))), g, msg)
	if rates.CorruptPer1000 > 0 && r.Intn(1000) < rates.CorruptPer1000 {
		data[r.Intn(len(data))] ^= byte(1) << r.Intn(8)
		w.stats.Armed[FaultCorruptMsg]++
		w.stats.Struck[FaultCorruptMsg]++
	}
	copies := 1
	if rates.DupPer1000 > 0 && r.Intn(1000) < rates.DupPer1000 {
		copies = 2
		w.stats.Armed[FaultDuplicate]++
		w.stats.Struck[FaultDuplicate]++
	}
	for i := 0; i < copies; i++ {
		d := delay()
		if w.now < w.clogged[f][t] {
			d += ClogDelayNs
		}
		if i == 1 && r.Chance(1, 4) {
			// A late duplicate (a retransmission stuck in a queue): it
			// arrives long after, often in a later epoch, and fencing
			// must refuse it.
			d += r.Range(100e6, LateDuplicateNsMax)
		}
		e := w.schedule1(w.now+d, evMsg)
		e.node, e.from, e.data, e.inc, e.t0 = int32(t), from, data, env.b.inc, w.now // (inc, t0: the sender's, and when it sent, for noteHeard)
		if i == 0 && copies == 2 {
			// Each copy is a frame of its own: each goes back to the pool.
			data = append(w.frames.get(len(data)), data...)
		}
	}
}

// Client passes a reply or delivery to its client's connection.
func (env *brokerEnv) Client(eff *core.Effect) {
	w := env.w
	// Judge every reply and delivery as it leaves the broker, whether or not
	// its connection is still open to receive it.
	switch eff.Kind {
	case core.EfReply:
		if eff.Client == w.admin.cid {
			w.adminReply(eff)
			return
		}
		if p := w.placedPubOf(eff.Client); p != nil {
			if !p.asking && eff.Outcome == core.Confirmed {
				w.checker.ConfirmedBy(w.now, eff.Queue, env.b.id, env.b.inc+1)
			}
			w.placedReply(p, eff)
			return
		}
		if w.connKind[eff.Client] == publisher && eff.Outcome == core.Confirmed {
			w.checker.ConfirmEmitted(w.now, eff.Queue, eff.Offset)
			w.checker.ConfirmedBy(w.now, eff.Queue, env.b.id, env.b.inc+1)
		}
	case core.EfDeliver:
		w.checker.DeliverEmitted(w.now, eff.Queue, eff.Offset, KeyOf(eff.Body), eff.Redelivered)
	}
	ci, ok := w.conns[eff.Client]
	if !ok {
		return
	}
	// The connection delivers in order, as a TCP stream does.
	c := w.clients[ci]
	at := max(w.now+w.netDelay(), c.replyAt)
	c.replyAt = at
	e := w.schedule1(at, evReply)
	e.inc, e.eff, e.t0 = uint64(eff.Client), *eff, w.now
	if eff.Kind == core.EfDeliver {
		// The effect's body is the broker's until its next step: the
		// connection carries a copy, as a socket's buffer would, given
		// back once the consumer took it.
		e.eff.Body = append(w.frames.get(len(eff.Body)), eff.Body...)
	}
}

// StartStorage lets a storage effect start. Appends, truncations, discards
// and the repaired mark are writes into the page cache: they run at once,
// inline, and report back only when they fail. Syncs and reads take the
// disk's time and complete as events.
func (env *brokerEnv) StartStorage(l int, op *core.Effect) bool {
	w, b := env.w, env.b
	if op.Op == core.OpPersist {
		// The batch is written (the host did it); its sync takes the
		// device's time, and a power loss meanwhile keeps or loses it
		// whole. (The sync-fail fault strikes the logs' syncs only.)
		env.runAt(w.now+w.ctrlSyncDelay(b), l)
		return false
	}
	if op.Op != core.OpSync && op.Op != core.OpRead && op.Op != core.OpVerify && op.Op != core.OpSeal && op.Op != core.OpPublish && op.Op != core.OpRetain {
		return true
	}
	r := w.rDisk
	if controlled(op.Group) {
		r = w.rCtrl
	}
	if op.Op == core.OpSync {
		// The writes reach the page cache as the sync starts; the device
		// takes its time to make them durable, and a power loss meanwhile
		// finds them unsynced. A failed write fails the log, and the sync
		// completes with that failure.
		if err := b.host.Log(l).Flush(); err != nil {
			b.flushErrNs = w.now
		}
		if b.armed&armTorn != 0 && !controlled(op.Group) {
			// The armed torn write strikes now, while this sync's writes
			// share sectors with synced bytes.
			b.armed &^= armTorn
			e := w.schedule1(w.now, evTear)
			e.node, e.inc = int32(b.id-1), b.inc
		}
	}
	env.runAt(w.now+w.storageDelay(r, b, op.Op), l)
	return false
}

// RunLater hands an inline operation's failure to the host as an event of
// its own, at this instant.
func (env *brokerEnv) RunLater(l int) { env.runAt(env.w.now, l) }

func (env *brokerEnv) runAt(at int64, l int) {
	e := env.w.schedule1(at, evStorage)
	e.node, e.q, e.inc = int32(env.b.id-1), int32(l), env.b.inc
}

// Timer keeps one tick event per broker in the heap; the host ignores a
// tick whose instant it no longer expects.
func (env *brokerEnv) Timer(at int64) {
	e := env.w.schedule1(at, evTick)
	e.node, e.inc = int32(env.b.id-1), env.b.inc
}

// Exit: a log failed and the core stopped using it. The supervisor restarts
// the process, whose recovery scan then judges what the disk holds. No power
// is lost: the page cache (whatever a failed sync left in it) is what the
// new process reads.
func (env *brokerEnv) Exit(d *core.StorageDone) {
	w, b := env.w, env.b
	if d.Group == core.GroupCtrl {
		w.notef("n%d metadata store failed (%s): the process exits", b.id, d.Err)
	} else {
		w.notef("n%d log of queue %d failed (%s): the process exits", b.id, queueOf(d.Group), d.Err)
	}
	w.stopProcess(b, w.rFault.Range(100e6, 2e9), true)
}

// Recovered records what a log's recovery found, for the checkers.
// Issued notes when the core issued each retention: it chose the point
// by then, and a member heard later (while the retention waited behind a
// sync, say) cannot have protected anything (retention-held; seed
// 24000006057 was judged by the instant the retention started running).
func (env *brokerEnv) Issued(l int, op *core.Effect) {
	if op.Op != core.OpRetain {
		return
	}
	b := env.b
	for len(b.retainIssuedNs) <= l {
		b.retainIssuedNs = append(b.retainIssuedNs, 0)
	}
	b.retainIssuedNs[l] = env.w.now
}

func (env *brokerEnv) Recovered(l int, st core.LogState) {
	w, b := env.w, env.b
	if st.Log == core.LogStage {
		// A stage is no replica's truth until it is published
		// (Executed): the checkers judge it then, from the disk.
		if st.Damage != "" {
			w.damageMet(b, st.Damage)
		}
		if st.End > st.Start {
			w.mark(MarkStageResumed)
		}
		return
	}
	w.checker.Recovered(w.now, b.id, queueOf(st.Group), st)
	w.noteSound(b.id, queueOf(st.Group), st.Damage == "" && !st.Unrepaired)
	if st.Damage != "" {
		w.mark(MarkDamageReported)
		w.damageMet(b, st.Damage)
	}
}

// Executed records the ground truth the checkers need as each storage
// operation runs on the disk, before the core hears of it.
func (env *brokerEnv) Executed(l int, op *core.Effect, done *core.StorageDone, log *seglog.Log) {
	w, b := env.w, env.b
	if op.Op == core.OpPersist {
		if done.Err == "" && op.Batch != nil {
			switch {
			case op.Batch.Snapshot != nil:
				w.mark(MarkMetaSnapshot)
			case op.Batch.CompactIndex != 0:
				w.mark(MarkMetaCompact)
			}
		}
		return // the metadata disk is judged at the end (ctrlFinal)
	}
	q := queueOf(op.Group)
	if op.Log == core.LogStage {
		env.stageExecuted(q, op, done, log)
		return
	}
	if done.Err != "" {
		// A failed truncation or discard may still have cut the log: what
		// it removed no longer counts as acknowledged.
		switch op.Op {
		case core.OpTruncate:
			w.checker.Truncated(b.id, q, op.Offset)
		case core.OpDiscard:
			w.checker.Discarded(b.id, q, log.End())
		case core.OpReseed:
			w.checker.Reseeded(b.id, q, 0) // what it removed is gone; the disk is read afresh
		case core.OpRead, core.OpVerify:
			b.damageMetNs = w.now
			w.mark(MarkReadMetDamage)
			w.damageMet(b, done.Err)
		}
		return
	}
	switch op.Op {
	case core.OpSync:
		// The completion is handed to the core right after: the disk must
		// hold what the sync covers now.
		w.checker.SyncAcked(w.now, b.id, q, op.Offset)
	case core.OpTruncate:
		w.checker.Truncated(b.id, q, op.Offset)
		if !isOwner(b, q) {
			w.mark(MarkFollowerTruncate)
		}
	case core.OpDiscard:
		w.checker.Discarded(b.id, q, log.End())
	case core.OpRetain:
		if w.checker.Retained(w.now, b.retainIssuedNs[l], b.id, q) {
			w.mark(MarkRetainDeleted)
		}
	case core.OpReseed:
		w.checker.Reseeded(b.id, q, op.Offset)
		if op.Offset > 0 {
			w.mark(MarkReseed)
		}
	case core.OpAppend:
		w.checker.Appended(b.id, q, op.Records)
		for i := range op.Records {
			r := &op.Records[i]
			if r.Kind == record.KindAck {
				acked, _ := record.AckedOffset(r.Body)
				w.checker.AckAppended(q, b.id, r.Offset, check.IdentOf(r), acked)
			}
			if r.Kind != record.KindPublish {
				w.internalAppended(q, r)
			} else if isOwner(b, q) {
				w.publishAppendedNs[q] = w.now
			}
		}
	}
}

// ownerExpiredAliveMark marks a broker whose process, still running
// (paused or cut off), left the live set by its heartbeats' expiry while
// it owned a placed, unfenced queue: an old owner that is not dead, which
// the one-owner checker judges.
func (w *World) ownerExpiredAliveMark(node core.NodeID, process uint64) {
	if b := w.brokers[node-1]; !b.up || b.inc+1 != process {
		return
	}
	for _, id := range w.placedIDs {
		if p := w.placedByID[id]; p.owner == node && !p.deleted && !w.checker.Fenced(id) {
			w.mark(MarkOwnerExpiredAlive)
			return
		}
	}
}

// stageExecuted takes an operation on b's stage of q (a recovery's
// installation): only its publish changes the replica's truth; its
// records join q's history as any replica's appends do.
func (env *brokerEnv) stageExecuted(q core.QueueID, op *core.Effect, done *core.StorageDone, log *seglog.Log) {
	w, b := env.w, env.b
	switch {
	case done.Err != "":
		if op.Op == core.OpRead {
			b.damageMetNs = w.now
			w.mark(MarkReadMetDamage)
			w.damageMet(b, done.Err)
		}
	case op.Op == core.OpPublish:
		w.mark(MarkRecoveryPublish)
		w.checker.Published(w.now, b.id, q, log.Generation(), log.Start(), log.End(), log.Epochs())
	case op.Op == core.OpAppend:
		for i := range op.Records {
			if r := &op.Records[i]; r.Kind != record.KindPublish {
				w.internalAppended(q, r)
			}
		}
	}
}

// Watermark passes a queue owner's high watermark to the checkers.
func (env *brokerEnv) Watermark(e *core.Effect) {
	env.w.checker.Watermark(env.w.now, e.Queue, env.b.id, env.b.inc+1, e.Offset)
}

// Recovery takes a stage of a queue's recovery: coverage, and every seal
// for the checkers, which judge it from the disk.
func (env *brokerEnv) Recovery(e *core.Effect) {
	w := env.w
	w.recoveryStage(e.Queue, e.Offset, e.Stage)
	w.candidateStage(env.b, e)
	switch e.Stage {
	case seam.StagePropose:
		w.mark(MarkRecoveryPropose)
	case seam.StageDetect:
		w.mark(MarkRecoveryDetect)
	case seam.StageReattach:
		w.mark(MarkRecoveryReattach)
	case seam.StageSeal:
		w.mark(MarkRecoverySeal)
		if strings.HasSuffix(e.Reason, core.ReceiptNote) {
			w.mark(MarkRecoveryReceipt)
		}
		s, err := recovery.DecodeSeal(e.Body)
		if err != nil {
			panic("world: a seal stage that does not decode: " + err.Error())
		}
		w.checker.Sealed(w.now, env.b.id, s.Queue, s.Epoch, s.Start, s.End, s.Identity, s.Damaged)
		w.recoverySealed(&s)
		if s.Damaged {
			w.noteSound(env.b.id, s.Queue, false)
		}
		if s.Lost {
			w.sealedLost[unsoundKey{env.b.id, s.Queue}] = true
		}
	case seam.StageInstall:
		w.mark(MarkRecoveryInstall)
		w.checker.Installed(w.now, env.b.id, e.Queue)
	case seam.StageSelect:
		w.mark(MarkRecoverySelect)
		s, err := recovery.DecodeSeal(e.Body)
		if err != nil {
			panic("world: a select stage that does not decode: " + err.Error())
		}
		w.checker.SourceChosen(w.now, s.Node, s.Queue, s.Epoch, s.Start, s.End, s.Identity)
		if p := w.placedByID[s.Queue]; p != nil {
			if q, ok := w.checker.MetaQueue(p.name); ok && q.Plan.Source != 0 && q.Plan.Start == s.Start && q.Plan.End == s.End && recovery.Digest(q.Plan.Identity) == s.Identity {
				w.mark(MarkPlanResumed)
			}
		}
		if s.End-s.Start >= DeepRecords {
			w.mark(MarkRecoveryDeep)
		}
		w.recoverySelected(s.Queue, s.Epoch)
	}
}

// Applied records what the metadata group applied, for the checkers.
func (env *brokerEnv) Applied(e *core.Effect) {
	w := env.w
	w.checker.MetaApplied(w.now, env.b.id, e.Offset, e.Tag, e.Body, e.Reason)
	w.termApplied(e.Tag)
	if e.Reason == ctrl.ImageRestoredNote {
		w.mark(MarkMetaImage)
		return
	}
	c, err := metadata.Decode(e.Body)
	if err != nil || strings.Contains(e.Reason, "=> refused") {
		return
	}
	defer w.memberApplied(env.b.id, &c) // (after the first application's following, below)
	if e.Offset <= w.metaFollowed {
		// Applied already by another broker (or an earlier process of this
		// one): the world follows each entry once, at its first
		// application, so entries in index order.
		return
	}
	w.metaFollowed = e.Offset
	w.fenceJudge(e.Tag, e.Body)
	w.holdFollow(&c)
	defer w.fenceFollow()
	switch c.Kind {
	case metadata.BrokerDown:
		// Eager when the world reported this process's exit.
		if w.exited[c.Node] == c.Process {
			w.mark(MarkBrokerEager)
		} else {
			w.mark(MarkBrokerExpired)
			w.ownerExpiredAliveMark(c.Node, c.Process)
		}
	case metadata.Assign:
		w.mark(MarkQueuePlaced)
		w.placedApplied(&c)
		w.inSyncApplied(e.Offset, &c)
	case metadata.Transition:
		w.mark(MarkTransitionFenced)
		if q, ok := w.checker.MetaQueue(c.Queue); ok && q.Fenced && q.Proposed == c.Proposed {
			w.transitionApplied(&c) // (not one refused: a transition pending already)
		}
	case metadata.Activate:
		w.mark(MarkRecoveryActivate)
		w.activatedApplied(&c)
	case metadata.AddLearner:
		w.mark(MarkLearnerAdded)
		w.learnerApplied(&c)
	case metadata.AdmitLearner:
		w.mark(MarkLearnerAdmitted)
		w.admittedApplied(&c)
	case metadata.Handoff:
		w.mark(MarkRecoveryHandoff)
	case metadata.Plan:
		if q, ok := w.checker.MetaQueue(c.Queue); ok && q.Plan == c.Plan && c.Replaces != (metadata.Digest{}) {
			w.mark(MarkPlanReplaced) // (applied, by the model)
		}
	case metadata.Repropose:
		if q, ok := w.checker.MetaQueue(c.Queue); ok && q.Fenced && q.Proposed == c.Proposed {
			// (Applied, by the model, which folded the entry already.)
			w.mark(MarkRecoveryRepropose)
			w.transitionApplied(&c)
		}
	case metadata.DeleteQueue:
		w.fencedApplied(c.Queue, c.Incarnation, true)
		w.deletedNames[c.Queue] = true
	case metadata.DeclareQueue:
		if w.deletedNames[c.Queue] && strings.Contains(e.Reason, "=> declared") {
			w.mark(MarkQueueRecreated)
		}
	case metadata.SetInSync:
		w.mark(MarkInSyncChange)
		w.inSyncApplied(e.Offset, &c)
		if strings.Contains(e.Reason, "under-min-insync") {
			w.mark(MarkUnderMinInSync)
		}
	}
}

// Draw is the randomness of a tick input: the broker's own stream.
func (env *brokerEnv) Draw() uint64 { return env.b.draws.Uint64() }
