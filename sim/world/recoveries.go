package world

import (
	"slices"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/recovery"
	"github.com/sluicemq/sluice/core/seam"
)

// RecoveryTimes is one queue recovery as its stage marks tell it: for
// each stage, the simulated time from the propose mark (the
// metadata leader applied the transition that fenced the queue) to the
// stage's first mark, -1 where the run never reached it.
type RecoveryTimes struct {
	Queue core.QueueID `json:"queue"`
	Epoch uint64       `json:"epoch"` // the transition's epoch
	// SinceProposeNs, indexed by stage (seam.StageDetect ..
	// seam.StageMax; index 0 and seam.StagePropose itself are 0)
	SinceProposeNs [seam.StageMax + 1]int64 `json:"since_propose_ns"`
}

// recoveriesMax bounds the recoveries a run times; more are counted in
// Stats.RecoveriesUntimed.
const recoveriesMax = 1024

// recoveryTimed is a recovery being timed: its marks' first instants.
type recoveryTimed struct {
	queue core.QueueID
	epoch uint64
	atNs  [seam.StageMax + 1]int64 // 0: not marked
	// asked: the previous members asked for their seals (by a message);
	// reasked: one was asked again (no seal came of the first ask)
	asked   []core.NodeID
	reasked bool
	// seals: each previous member's latest seal of the transition (at
	// most one a node)
	seals []recovery.Seal
}

// recoverySealed keeps a seal of the transition to epoch for the marks
// its selection may earn.
func (w *World) recoverySealed(s *recovery.Seal) {
	for i := len(w.recoveries) - 1; i >= 0; i-- {
		if r := &w.recoveries[i]; r.queue == s.Queue && r.epoch == s.Epoch {
			if j := slices.IndexFunc(r.seals, func(o recovery.Seal) bool { return o.Node == s.Node }); j >= 0 {
				r.seals[j] = *s
			} else if len(r.seals) < seam.ReplicasMax {
				r.seals = append(r.seals, *s)
			}
			return
		}
	}
}

// recoverySelected marks what the witnesses of a selection show: the
// longest log ending in an older epoch than another's (the source must
// follow epochs, not length), and for an isr queue, the longest log on a
// node outside the last committed in-sync set (the clean-election rule
// must not take it for granted). The checkers judge the source it chose.
func (w *World) recoverySelected(q core.QueueID, epoch uint64) {
	for i := len(w.recoveries) - 1; i >= 0; i-- {
		r := &w.recoveries[i]
		if r.queue != q || r.epoch != epoch {
			continue
		}
		var longest *recovery.Seal
		lastEpochMax := uint64(0)
		for j := range r.seals {
			s := &r.seals[j]
			if s.Damaged || s.End == s.Start {
				continue
			}
			lastEpochMax = max(lastEpochMax, s.LastEpoch)
			if longest == nil || s.End > longest.End {
				longest = s
			}
		}
		if longest == nil {
			return
		}
		if longest.LastEpoch < lastEpochMax {
			w.mark(MarkTailOlderEpoch)
		}
		if p := w.placedByID[q]; p != nil && p.isr {
			if t, ok := w.inSyncOf[p.name]; ok && !slices.Contains(t.inSync.Slice(), longest.Node) {
				w.mark(MarkISRLongestOutside)
			}
		}
		return
	}
}

// recoverySealAsked takes a seal request on the network: a second one to
// the same member is evidence that was not at hand.
func (w *World) recoverySealAsked(to core.NodeID, msg []byte) {
	req, err := recovery.DecodeSealRequest(msg)
	if err != nil {
		panic("world: a seal request that does not decode: " + err.Error())
	}
	for i := len(w.recoveries) - 1; i >= 0; i-- {
		if r := &w.recoveries[i]; r.queue == req.Queue && r.epoch == req.Epoch {
			if slices.Contains(r.asked, to) {
				r.reasked = true
			} else if len(r.asked) < seam.ReplicasMax {
				r.asked = append(r.asked, to)
			}
			return
		}
	}
}

// recoveryStage takes a stage mark.
func (w *World) recoveryStage(q core.QueueID, epoch uint64, st seam.RecoveryStage) {
	if st == 0 || st > seam.StageMax {
		panic("world: a recovery stage out of range")
	}
	for i := len(w.recoveries) - 1; i >= 0; i-- {
		if r := &w.recoveries[i]; r.queue == q && r.epoch == epoch {
			if r.atNs[st] == 0 {
				r.atNs[st] = w.now
			}
			if st == seam.StageActivate && r.reasked {
				w.mark(MarkRecoveryLateEvidence)
			}
			return
		}
	}
	if st != seam.StagePropose {
		// A stage of a transition whose propose mark the run did not see
		// (the leader that applied it lost its lead before its effects
		// came out): left untimed rather than timed from a later instant.
		w.stats.RecoveriesUntimed++
		return
	}
	if len(w.recoveries) >= recoveriesMax {
		w.stats.RecoveriesUntimed++
		return
	}
	r := recoveryTimed{queue: q, epoch: epoch}
	r.atNs[st] = w.now
	w.recoveries = append(w.recoveries, r)
}

// recoveryTimes returns the timed recoveries, in the order proposed.
func (w *World) recoveryTimes() []RecoveryTimes {
	out := make([]RecoveryTimes, 0, len(w.recoveries))
	for _, r := range w.recoveries {
		t := RecoveryTimes{Queue: r.queue, Epoch: r.epoch}
		for st := seam.StageDetect; st <= seam.StageMax; st++ {
			switch {
			case st == seam.StagePropose:
			case r.atNs[st] == 0:
				t.SinceProposeNs[st] = -1
			default:
				t.SinceProposeNs[st] = r.atNs[st] - r.atNs[seam.StagePropose]
			}
		}
		out = append(out, t)
	}
	return out
}
