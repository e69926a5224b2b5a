package world

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core"
)

// Mark names a protocol state that a run reached, as the world saw it from
// outside the core (the effects it executed, the faults that struck, what
// clients received). A sweep counts the seeds that reached each mark: the
// coverage table. The first time a run reaches a mark, a trace note says so
// ("mark NAME"); a saved regression names the mark its bug's path hits, and
// its replay fails when the mark is not reached.
type Mark uint8

// The marks.
const (
	MarkOwnerCrashInFlight       Mark = iota + 1 // an owner lost power or exited with publishes in flight
	MarkFollowerTruncate                         // a follower truncated a divergent suffix
	MarkWDown                                    // W or more replicas of a W >= 2 queue were down at once
	MarkAllDown                                  // every replica of a queue was down at once
	MarkRedeliveryAfterLoss                      // a consumer was lost holding a record; a consumer received it again
	MarkSegmentRoll                              // a log started a new segment
	MarkCorruptOwner                             // injected damage struck an owner's copy
	MarkDamageReported                           // a log reported damage at recovery
	MarkReadMetDamage                            // a live read of a log met damage (corrupt or unreadable)
	MarkLostWrite                                // a synced write was lost (struck)
	MarkSyncFailDrop                             // a sync failed and dropped the dirty pages (struck)
	MarkUnreadable                               // an unreadable range was met by a read or a scan
	MarkTornSector                               // a torn write damaged synced bytes of its sector
	MarkCorruptLive                              // corruption of a running broker's log was met by a live read
	MarkPowerCycle                               // every broker lost power at once
	MarkQueueW2                                  // the run has a queue with W >= 2
	MarkProcessDown                              // a broker process stopped (power loss or exit)
	MarkLeaderFault                              // a fault struck the metadata group's leader
	MarkLeaderChange                             // the metadata group had a leader, then another in a later term
	MarkBrokerExpired                            // a broker left the live set by its heartbeats' expiry
	MarkBrokerEager                              // a broker left the live set at once, after its process exited (eager failover)
	MarkQueuePlaced                              // the controller placed a declared queue
	MarkTransitionFenced                         // the controller fenced a placed queue with a pending transition
	MarkQueueRecreated                           // a queue name was declared again after a deletion: a new incarnation
	MarkInSyncChange                             // the controller committed a change of a placed queue's in-sync set (its owner's request, or a lost follower dropped)
	MarkInSyncDropLive                           // a follower whose process still ran left the in-sync set (its owner's lag timer)
	MarkInSyncBack                               // a follower came back into the in-sync set (it reached the high watermark)
	MarkISRConfirm                               // an isr queue confirmed a publish at its high watermark
	MarkUnderMinInSync                           // a committed in-sync change left a queue below its min in-sync
	MarkISRRefused                               // an isr queue refused a publish: its in-sync set below min in-sync
	MarkMetaCompact                              // a broker persisted its metadata image and compacted its log
	MarkMetaSnapshot                             // a follower installed a leader's metadata image sent as a raft snapshot
	MarkMetaImage                                // a process's applied metadata became an image's (at its start, or a snapshot installed)
	MarkRecoverySeal                             // a replica of a fenced queue sealed its log for recovery
	MarkRecoverySelect                           // a recovery worker held enough witnesses and chose its source
	MarkRecoveryReceipt                          // a restarted process answered a seal retry with its predecessor's seal, from the log's receipt
	MarkRecoveryInstall                          // a proposed member installed a recovered history
	MarkRecoveryActivate                         // a recovery's activation committed: the queue serves again
	MarkConsumerCancelled                        // a consumer got the broker's cancel of its subscription (EfCancel) and asked where its queue lives
	MarkRecoveryPropose                          // a recovery's propose stage: the metadata leader applied a transition
	MarkRecoveryDetect                           // a recovery's detect stage: a candidate's worker took a transition up
	MarkRecoveryReattach                         // a recovery's reattach stage: the new owner confirmed its first publish
	MarkRecoveryLateEvidence                     // a recovery asked a previous member for its seal again (none came of the first ask), then activated
	MarkRecoveryPublish                          // an installation published its stage as the log's new generation
	MarkStageResumed                             // an installation opened a stage an earlier one left holding records (resumed, or cut where it parts)
	MarkHoldEntered                              // a queue lost only followers and qualified for the follower-loss hold (by the world's follow of the metadata)
	MarkHoldExpired                              // a transition replaced followers lost longer than the hold, of a queue that otherwise qualified
	MarkHoldReturned                             // a lost follower came back with the same process while its queue kept the assignment that names it
	MarkRetainDeleted                            // a retention deleted a segment of a log's head (its durable start moved)
	MarkReseed                                   // a copy the owner's log left behind was reseeded at the owner's start
	MarkLearnerAdded                             // a held queue's lost follower came back with a new process on its storage, named the learner
	MarkLearnerAdmitted                          // a learner caught up and was admitted as the member
	MarkLearnerNewCopy                           // a queue short of its replicas had a new copy's learner admitted as one member more
	MarkLostDir                                  // a broker's queue directory was emptied while it was down (its binding lost with it)
	MarkActivateShort                            // a recovery activated without a proposed member that was gone (it comes back as a new copy)
	MarkRecoveryHandoff                          // a fenced queue's recovery was handed from its gone or draining candidate to another proposed member
	MarkRecoveryRepropose                        // a fenced queue's pending transition was re-proposed: too few of its proposed members were live for W
	MarkTailOlderEpoch                           // a recovery chose its source among witnesses whose longest log ends in an older epoch than another's
	MarkISRLongestOutside                        // an isr queue's recovery had, among its witnesses, a longest log outside the last committed in-sync set
	MarkOwnerExpiredAlive                        // a queue owner's broker left the live set by expiry while its process ran (paused or cut off, not dead)
	MarkLearnerAdmittedAppending                 // a learner was admitted while its queue's owner appended publishes (within the last 100 ms)
	MarkFollowerLostDraining                     // a queue lost only a follower, on a draining broker, that the hold would otherwise cover: fenced, no hold
	MarkGone                                     // a broker was struck by the gone fault: it never returns
	MarkCandidateDies                            // a recovery's candidate (at its detect) or a proposed member (at its install) was killed mid-recovery
	MarkCandidateGone                            // a proposed member that installed was killed mid-recovery for good
	MarkDiskReplaced                             // a broker restarted on a new, empty data disk (a new storage instance)
	MarkRecoveryDeep                             // a recovery chose a source log holding DeepRecords records or more
	MarkQueuesMany                               // the controller placed ManyQueues queues or more in one run
	MarkPlanResumed                              // a recovery selected its source by the transition's plan, committed by an earlier attempt
	MarkPlanReplaced                             // a transition's plan was replaced: no replica could be shown to hold its history
	markKinds
)

var markNames = [...]string{
	MarkOwnerCrashInFlight:       "owner-crash-inflight",
	MarkFollowerTruncate:         "follower-truncate",
	MarkWDown:                    "w-down",
	MarkAllDown:                  "all-down",
	MarkRedeliveryAfterLoss:      "redelivery-after-loss",
	MarkSegmentRoll:              "segment-roll",
	MarkCorruptOwner:             "corrupt-owner",
	MarkDamageReported:           "damage-reported",
	MarkReadMetDamage:            "read-met-damage",
	MarkLostWrite:                "lost-write",
	MarkSyncFailDrop:             "sync-fail-drop",
	MarkUnreadable:               "unreadable",
	MarkTornSector:               "torn-sector",
	MarkCorruptLive:              "corrupt-live",
	MarkPowerCycle:               "power-cycle",
	MarkQueueW2:                  "queue-w2",
	MarkProcessDown:              "process-down",
	MarkLeaderFault:              "leader-fault",
	MarkLeaderChange:             "leader-change",
	MarkBrokerExpired:            "broker-expired",
	MarkBrokerEager:              "broker-eager",
	MarkQueuePlaced:              "queue-placed",
	MarkTransitionFenced:         "transition-fenced",
	MarkQueueRecreated:           "queue-recreated",
	MarkInSyncChange:             "insync-change",
	MarkInSyncDropLive:           "insync-drop-live",
	MarkInSyncBack:               "insync-back",
	MarkISRConfirm:               "isr-confirm",
	MarkUnderMinInSync:           "under-min-insync",
	MarkISRRefused:               "isr-refused",
	MarkMetaCompact:              "meta-compact",
	MarkMetaSnapshot:             "meta-snapshot",
	MarkMetaImage:                "meta-image",
	MarkRecoverySeal:             "recovery-seal",
	MarkRecoverySelect:           "recovery-select",
	MarkRecoveryReceipt:          "recovery-receipt",
	MarkRecoveryInstall:          "recovery-install",
	MarkRecoveryActivate:         "recovery-activate",
	MarkConsumerCancelled:        "consumer-cancelled",
	MarkRecoveryPropose:          "recovery-propose",
	MarkRecoveryDetect:           "recovery-detect",
	MarkRecoveryReattach:         "recovery-reattach",
	MarkRecoveryLateEvidence:     "recovery-late-evidence",
	MarkRecoveryPublish:          "recovery-publish",
	MarkStageResumed:             "stage-resumed",
	MarkHoldEntered:              "hold-entered",
	MarkHoldExpired:              "hold-expired",
	MarkHoldReturned:             "hold-returned",
	MarkRetainDeleted:            "retain-deleted",
	MarkReseed:                   "reseed",
	MarkLearnerAdded:             "learner-added",
	MarkLearnerAdmitted:          "learner-admitted",
	MarkLearnerNewCopy:           "learner-new-copy",
	MarkLostDir:                  "lost-dir",
	MarkActivateShort:            "activate-short",
	MarkRecoveryHandoff:          "recovery-handoff",
	MarkRecoveryRepropose:        "recovery-repropose",
	MarkTailOlderEpoch:           "witness-tail-older-epoch",
	MarkISRLongestOutside:        "isr-longest-outside-insync",
	MarkOwnerExpiredAlive:        "owner-expired-alive",
	MarkLearnerAdmittedAppending: "learner-admitted-appending",
	MarkFollowerLostDraining:     "follower-lost-draining",
	MarkGone:                     "gone",
	MarkCandidateDies:            "candidate-dies",
	MarkCandidateGone:            "candidate-gone",
	MarkDiskReplaced:             "disk-replaced",
	MarkRecoveryDeep:             "recovery-deep",
	MarkQueuesMany:               "queues-many",
	MarkPlanResumed:              "plan-resumed",
	MarkPlanReplaced:             "plan-replaced",
}

// The sizes the scale marks count from: a recovery whose source holds a
// million records (the deep queue users run), and a run that placed 30
// queues.
const (
	DeepRecords = 1_000_000
	ManyQueues  = 30
)

func (m Mark) String() string {
	if int(m) < len(markNames) && markNames[m] != "" {
		return markNames[m]
	}
	return "mark?"
}

// Marks lists every mark, in order.
func Marks() []Mark {
	out := make([]Mark, 0, markKinds-1)
	for m := Mark(1); m < markKinds; m++ {
		out = append(out, m)
	}
	return out
}

// ParseMark reads a mark's name.
func ParseMark(s string) (Mark, error) {
	for _, m := range Marks() {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown coverage mark %q", s)
}

// Coverage counts how often a run reached each mark.
type Coverage [markKinds]uint64

// mark records that the run reached m.
func (w *World) mark(m Mark) {
	if w.stats.Coverage[m] == 0 {
		w.notef("mark %s", m)
	}
	w.stats.Coverage[m]++
}

// noteDown is called as b's process stops: it marks an owner lost with
// publishes in flight and queues with W or more, or all, replicas down.
func (w *World) noteDown(b *broker) {
	w.mark(MarkProcessDown)
	for _, c := range w.clients {
		if c.kind == publisher && !c.asking && c.at == int32(b.id-1) && len(c.inflight) > 0 {
			w.mark(MarkOwnerCrashInFlight)
			break
		}
	}
	for _, p := range w.memberOf(b) {
		down := 1 // b
		for _, n := range p.members {
			if n != b.id && !w.brokers[n-1].up {
				down++
			}
		}
		if p.w >= 2 && down >= p.w {
			w.mark(MarkWDown)
		}
		if down == len(p.members) {
			w.mark(MarkAllDown)
		}
	}
}

// memberOf returns the queues, in id order, whose assignment (as the
// world followed the committed metadata) names b a member; deleted ones
// are left out.
func (w *World) memberOf(b *broker) []*placedQueue {
	var out []*placedQueue
	for _, id := range w.placedIDs {
		p := w.placedByID[id]
		if !p.deleted && slices.Contains(p.members, b.id) {
			out = append(out, p)
		}
	}
	return out
}

// damageAllowed reports whether injected damage may strike b's copy of q:
// the fault budget lets at most W-1 replicas of a queue lose or corrupt
// records at once (a copy counts until it holds a whole log again; a
// member's on a gone broker counts as long as it is a member: it is lost
// for good), beyond which no design could keep a confirm. A damaged copy is not damaged again
// before it is repaired: the log format detects the loss of any one write
// of a commit, and two independent faults on one commit of one copy are
// outside the model (the repaired copy can be damaged again).
func (w *World) damageAllowed(b *broker, q *placedQueue) bool {
	budget := q.w - 1
	damaged := w.checker.Damaged(q.id)
	for _, n := range damaged {
		if n == b.id {
			return false
		}
	}
	lost := len(damaged)
	permanent := w.lostForGood(q, b.id)
	for i, n := range q.members {
		o := w.brokers[n-1]
		switch {
		case slices.Contains(damaged, n):
		case o.gone, n != b.id && i < len(q.storages) && o.storage != q.storages[i]:
			// (A copy on a replaced disk stays lost for the assignment
			// that names the old one, even once an installation of its
			// recovery filled the new disk.)
			lost++
		case n != b.id && w.sealedLost[unsoundKey{n, q.id}]:
			// (A seal that said lost stands for its transition: an
			// installation since leaves it no witness of it.)
			lost++
		case permanent && n != b.id && w.unsound[unsoundKey{n, q.id}]:
			// With a copy lost for good, not every previous replica can
			// seal again, so a copy the system itself takes for no
			// complete witness (a torn tail it reported) is one less.
			lost++
		}
	}
	return lost < budget
}

// lostForGood reports whether a member of q other than except lost its
// copy for good: its broker gone, or its disk replaced since the
// assignment named its storage.
func (w *World) lostForGood(q *placedQueue, except core.NodeID) bool {
	for i, n := range q.members {
		o := w.brokers[n-1]
		if n != except && (o.gone || (i < len(q.storages) && o.storage != q.storages[i])) {
			return true
		}
	}
	return false
}

// unsoundKey names one broker's copy of a queue.
type unsoundKey struct {
	node  core.NodeID
	queue core.QueueID
}

// noteSound follows whether node's copy of q is sound by the system's own
// account: its log's last recovery reported no damage and no unrepaired
// loss and it sealed no damaged witness since, or an activation named it a
// member (it installed the recovered history). (An installation's copy is
// no witness of the epoch it recovers: its seal of that epoch stands.)
func (w *World) noteSound(node core.NodeID, q core.QueueID, sound bool) {
	if sound {
		delete(w.unsound, unsoundKey{node, q})
		return
	}
	w.unsound[unsoundKey{node, q}] = true
}

// permanentLossAllowed reports whether b's copy of q may be lost for good
// (a broker gone, a disk replaced): damageAllowed, counting too the other
// members' copies the system itself takes for no complete witness (a torn
// tail it reported, a damaged seal), which the injected-damage budget
// leaves out: with them and b's, a recovery would lack its witnesses for
// ever, where a passing fault leaves it waiting only for a restart.
func (w *World) permanentLossAllowed(b *broker, q *placedQueue) bool {
	if !w.damageAllowed(b, q) {
		return false
	}
	damaged := w.checker.Damaged(q.id)
	lost := len(damaged)
	for _, n := range q.members {
		if n != b.id && !slices.Contains(damaged, n) && (w.brokers[n-1].gone || w.unsound[unsoundKey{n, q.id}]) {
			lost++
		}
	}
	return lost < q.w-1 && w.inSyncSpared(b, q, damaged)
}

// inSyncSpared reports whether an isr queue keeps a sound copy in its
// committed in-sync set once b's is lost for good: its recovery takes
// its witness from that set only, so a loss of its last sound member
// there keeps the queue fenced for ever, whatever W allows. A queue of
// another policy, or b outside the set, is spared.
func (w *World) inSyncSpared(b *broker, q *placedQueue, damaged []core.NodeID) bool {
	t, ok := w.inSyncOf[q.name]
	if !q.isr || !ok || !slices.Contains(t.inSync.Slice(), b.id) {
		return true
	}
	for _, n := range t.inSync.Slice() {
		if n != b.id && !slices.Contains(damaged, n) && !w.brokers[n-1].gone && !w.unsound[unsoundKey{n, q.id}] {
			return true
		}
	}
	return false
}

// isOwner reports whether b owns q, by its assignment as the world followed
// the committed metadata.
func isOwner(b *broker, q core.QueueID) bool {
	p, ok := b.w.placedByID[q]
	return ok && p.owner == b.id
}
