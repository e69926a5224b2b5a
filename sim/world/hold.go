package world

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/io/driver"
)

// The follower-loss hold, judged (docs/design/follower-loss-hold.md;
// core/ctrl/hold.go).
// The world follows, from the committed metadata as first applied, what
// the hold depends on: each broker's live process and when it left the
// live set, draining, and the hold setting; with it, it judges every
// fencing transition (hold-kept) and marks the hold's coverage rows. It
// never asks the controller whether it held.
//
// hold-kept: a transition applied for a queue that, by the world's follow
// of the committed metadata, lost only followers less than the hold ago
// (none back with another process),
// keeps its owner live and at least W - 1 followers live, W >= 2, no
// member draining, fails, when nothing the hold depends on changed since
// the first of those losses (so any leader that proposed it, however
// stale its view, saw the same: it includes every entry up to the loss,
// and nothing after it bears on the queue) and the transition excludes
// exactly the lost members (it was proposed about this loss). A leader's
// clock of a loss starts at or after the world's, so its hold never ends
// sooner than the world's reckoning.

// liveTruth is the world's follow of one broker in the committed metadata.
type liveTruth struct {
	process   uint64 // its registered process
	storage   uint64 // and storage
	live      bool
	downProc  uint64 // the last process that left the live set
	downNs    int64  // when (first application)
	changedNs int64  // the last change of its liveness or process
	draining  bool
	drainNs   int64 // the last drain change
}

// holdTruth is what the world followed of the hold's inputs.
type holdTruth struct {
	brokers   []liveTruth // by node - 1
	holdMs    int64
	expiryMs  int64 // the liveness expiry in force
	holdSetNs int64
	// hold-ended's: when each term's first entry was applied; since when
	// each placed queue has been a case placement must fence (0: not one)
	termStartNs  map[uint64]int64
	fenceSinceNs map[core.QueueID]int64
	// handoff-due's: since when each fenced queue's recovery has been one
	// placement must hand to another proposed member (0: not one)
	handoffSinceNs map[core.QueueID]int64
}

func newHoldTruth(brokers int) holdTruth {
	return holdTruth{brokers: make([]liveTruth, brokers), holdMs: metadata.Settings[metadata.FollowerLossHoldMs].Default,
		expiryMs: metadata.Settings[metadata.LivenessExpiryMs].Default, holdSetNs: -1,
		termStartNs: map[uint64]int64{}, fenceSinceNs: map[core.QueueID]int64{}, handoffSinceNs: map[core.QueueID]int64{}}
}

// holdFollow follows an applied command (first application, in index
// order).
func (w *World) holdFollow(c *metadata.Command) {
	h := &w.hold
	if c.Node >= 1 && int(c.Node) <= len(h.brokers) {
		b := &h.brokers[c.Node-1]
		switch c.Kind {
		case metadata.RegisterBroker:
			if b.live && b.process != c.Process {
				b.downProc, b.downNs = b.process, w.now
			}
			if b.live && b.process == c.Process {
				return
			}
			returned := !b.live && b.process == c.Process
			b.process, b.storage, b.live, b.changedNs = c.Process, c.Storage, true, w.now
			if returned && w.heldMember(c.Node, c.Process) {
				w.mark(MarkHoldReturned)
			}
		case metadata.BrokerDown:
			if b.live && b.process == c.Process {
				b.live, b.downProc, b.downNs, b.changedNs = false, c.Process, w.now, w.now
				w.holdEntered()
			}
		case metadata.Drain:
			if c.Draining && !b.draining {
				defer w.drainApplied(c.Node)
			}
			b.draining, b.drainNs = c.Draining, w.now
		}
	}
	if c.Kind == metadata.SetSetting && c.Key == metadata.Settings[metadata.LivenessExpiryMs].Key {
		h.expiryMs = c.Value
	}
	if c.Kind == metadata.SetSetting && c.Key == metadata.Settings[metadata.FollowerLossHoldMs].Key {
		if c.Value != h.holdMs {
			h.holdMs, h.holdSetNs = c.Value, w.now
		}
	}
}

// memberLive reports whether member node of p runs, by the committed
// metadata, the process p's assignment names.
func (w *World) memberLive(p *placedQueue, i int) bool {
	b := &w.hold.brokers[p.members[i]-1]
	return i < len(p.processes) && b.live && b.process == p.processes[i]
}

// holdQualifies reports whether p, unfenced, qualifies for the hold now
// by the world's follow, and the instant of its first lost member's loss.
func (w *World) holdQualifies(p *placedQueue) (firstDownNs int64, ok bool) {
	h := &w.hold
	if h.holdMs == 0 || p.w < 2 || p.deleted || w.checker.Fenced(p.id) || len(p.processes) != len(p.members) {
		return 0, false
	}
	liveFollowers, lost := 0, 0
	firstDownNs = w.now
	for i, n := range p.members {
		b := &h.brokers[n-1]
		if b.draining {
			return 0, false
		}
		if w.memberLive(p, i) {
			if n != p.owner {
				liveFollowers++
			}
			continue
		}
		if n == p.owner || b.downProc != p.processes[i] || b.live || w.now-b.downNs >= h.holdMs*1_000_000-1_000_000 {
			// The owner lost, a loss the world did not see as this
			// process's, a broker back with another process (it rejoins
			// through recovery), or a loss (about) as old as the hold.
			return 0, false
		}
		lost++
		firstDownNs = min(firstDownNs, b.downNs)
	}
	return firstDownNs, lost > 0 && liveFollowers >= p.w-1
}

// holdEntered marks queues that a loss just made qualify for the hold.
func (w *World) holdEntered() {
	for _, id := range w.placedIDs {
		if _, ok := w.holdQualifies(w.placedByID[id]); ok {
			w.mark(MarkHoldEntered)
			return
		}
	}
}

// heldMember reports whether node's process is a member of a placed,
// unfenced queue's assignment: back with the same process, its copy is
// counted again without a recovery.
func (w *World) heldMember(node core.NodeID, process uint64) bool {
	for _, id := range w.placedIDs {
		p := w.placedByID[id]
		if p.deleted || w.checker.Fenced(id) {
			continue
		}
		for i, n := range p.members {
			if n == node && i < len(p.processes) && p.processes[i] == process {
				return true
			}
		}
	}
	return false
}

// holdJudge judges a fencing transition of p that proposes proposed, as it
// is first applied (before the world follows it).
func (w *World) holdJudge(p *placedQueue, proposed []core.NodeID) {
	h := &w.hold
	firstDownNs, ok := w.holdQualifies(p)
	if !ok {
		w.holdExpiredMark(p)
		return
	}
	if h.holdSetNs >= firstDownNs {
		return // the setting changed since: a leader's view may differ
	}
	for i, n := range p.members {
		b := &h.brokers[n-1]
		live := w.memberLive(p, i)
		if b.drainNs >= firstDownNs || (live && b.changedNs >= firstDownNs) || (!live && b.changedNs != b.downNs) {
			return // something the hold depends on changed since the loss
		}
		if slices.Contains(proposed, n) != live {
			return // not proposed about this loss
		}
	}
	w.checker.Fail("hold-kept", w.now, "q=%d epoch=%d: a transition fenced the queue, which lost only followers %s less than the hold of %d ms ago, its owner n%d and enough followers live for W=%d",
		p.id, p.epoch, w.lostNames(p), h.holdMs, p.owner, p.w)
}

// holdExpiredMark marks a transition that replaces followers lost longer
// than the hold, of a queue that otherwise qualified.
func (w *World) holdExpiredMark(p *placedQueue) {
	h := &w.hold
	if h.holdMs == 0 || p.w < 2 || len(p.processes) != len(p.members) {
		return
	}
	live, expired := 0, false
	for i, n := range p.members {
		b := &h.brokers[n-1]
		switch {
		case w.memberLive(p, i):
			if n != p.owner {
				live++
			}
		case n == p.owner || b.draining || b.live:
			return
		case b.downProc == p.processes[i] && w.now-b.downNs >= h.holdMs*1_000_000:
			expired = true
		}
	}
	if expired && live >= p.w-1 {
		w.mark(MarkHoldExpired)
	}
}

func (w *World) lostNames(p *placedQueue) string {
	s := ""
	for i, n := range p.members {
		if !w.memberLive(p, i) {
			s += " n" + strconv.FormatUint(uint64(n), 10)
		}
	}
	return s
}

// hold-ended: the other side of the hold. A queue that lost a member and
// that the hold does not cover, by the world's follow, for a reason every
// leader sees alike (its owner lost, fewer than W - 1 followers left,
// W < 2, the hold set to 0, a lost member draining or back with another
// process; never the hold's expiry, which a leader may reckon later than
// the world), and for which placement can propose a transition (enough
// live, undrained brokers to keep the configured W), must be fenced by
// the leader's next placement check. The world judges it at each of its
// operator's commands as it is applied: if the command reached its broker
// (where a leader proposed it) a second or more after both the queue's
// case began and the command's term's first entry was applied, that
// leader ran placement (every 100 ms) with the case in view before it
// proposed the command, so the queue's transition is earlier in the log,
// applied already (raft applies in log order). A stale leader changes
// nothing: the command's term is its own.

// fenceCase reports whether placed queue p lost a member and must be
// fenced by the rule every leader applies alike.
func (w *World) fenceCase(p *placedQueue) bool {
	h := &w.hold
	if p.deleted || w.checker.Fenced(p.id) || len(p.processes) != len(p.members) {
		return false
	}
	info, ok := w.checker.MetaQueue(p.name)
	if !ok || info.ID != p.id {
		return false
	}
	var keep []core.NodeID
	liveFollowers, structural := 0, h.holdMs == 0 || p.w < 2
	for i, n := range p.members {
		b := &h.brokers[n-1]
		if w.memberLive(p, i) {
			keep = append(keep, n)
			if n != p.owner {
				liveFollowers++
			}
			continue
		}
		// (Back with another process on the member's storage: a
		// follower's comes back as a learner, under the hold.)
		structural = structural || n == p.owner || b.draining || (b.live && (i >= len(p.storages) || b.storage != p.storages[i] || n == p.owner))
	}
	if len(keep) == len(p.members) {
		return false // nothing lost
	}
	structural = structural || liveFollowers < p.w-1
	if !structural {
		return false
	}
	// What placement would propose: the live members and replacements
	// among the live, undrained brokers not among them.
	cands := 0
	for i := range h.brokers {
		b := &h.brokers[i]
		if b.live && !b.draining && !slices.Contains(keep, core.NodeID(i+1)) {
			cands++
		}
	}
	n := len(keep) + min(max(info.Replicas-len(keep), 0), cands)
	return n > 0 && info.Policy.WriteQuorum(n, min(info.MinInsync, n)) >= info.Policy.WriteQuorum(info.Replicas, min(info.MinInsync, info.Replicas))
}

// termApplied records when an entry of term was first applied.
func (w *World) termApplied(term uint64) {
	if _, ok := w.hold.termStartNs[term]; !ok {
		w.hold.termStartNs[term] = w.now
	}
}

// fenceJudge judges, as an entry of term carrying body is first applied
// (before the world follows it), whether it is the operator's command and
// came after a case placement had to fence.
func (w *World) fenceJudge(term uint64, body []byte) {
	h := &w.hold
	a := &w.admin
	if !a.waiting || a.arriveNs == 0 || !bytes.Equal(body, a.cmd) {
		return
	}
	for _, id := range w.placedIDs {
		if since := h.handoffSinceNs[id]; since != 0 && max(since, h.termStartNs[term])+1e9 <= a.arriveNs {
			w.checker.Fail("handoff-due", w.now, "q=%d: fenced, its recovery's candidate gone or draining and another proposed member available since %s, yet the operator's command that reached its broker at %s (term %d, whose first entry applied at %s) committed before any handoff",
				id, driver.AppendInstant(nil, since), driver.AppendInstant(nil, a.arriveNs), term, driver.AppendInstant(nil, h.termStartNs[term]))
			h.handoffSinceNs[id] = 0 // once per case
		}
		since := h.fenceSinceNs[id]
		if since != 0 && max(since, h.termStartNs[term])+1e9 <= a.arriveNs {
			w.checker.Fail("hold-ended", w.now, "q=%d epoch=%d: it lost%s, which no hold covers, since %s, placement could propose its transition, yet the operator's command that reached its broker at %s (term %d, whose first entry applied at %s) committed first",
				id, w.placedByID[id].epoch, w.lostNames(w.placedByID[id]), driver.AppendInstant(nil, since), driver.AppendInstant(nil, a.arriveNs), term, driver.AppendInstant(nil, h.termStartNs[term]))
			h.fenceSinceNs[id] = 0 // once per case
		}
	}
}

// fenceFollow follows the cases as they stand after an applied entry.
func (w *World) fenceFollow() {
	h := &w.hold
	for _, id := range w.placedIDs {
		switch p := w.placedByID[id]; {
		case p.deleted || !w.checker.MetaHandoffDue(p.name):
			h.handoffSinceNs[id] = 0
		case h.handoffSinceNs[id] == 0:
			h.handoffSinceNs[id] = w.now
		}
		switch {
		case !w.fenceCase(w.placedByID[id]):
			h.fenceSinceNs[id] = 0
		case h.fenceSinceNs[id] == 0:
			h.fenceSinceNs[id] = w.now
			if w.lostOnlyDraining(w.placedByID[id]) {
				w.mark(MarkFollowerLostDraining)
			}
		}
	}
}

// lostOnlyDraining reports whether placed queue p lost only followers,
// each on a draining broker, and would otherwise qualify for the hold
// (the hold set, W >= 2, its owner and W - 1 followers live): no hold may
// apply, and hold-ended judges that placement fences it.
func (w *World) lostOnlyDraining(p *placedQueue) bool {
	h := &w.hold
	if h.holdMs == 0 || p.w < 2 || len(p.processes) != len(p.members) {
		return false
	}
	liveFollowers, lost := 0, 0
	for i, n := range p.members {
		switch {
		case w.memberLive(p, i):
			if n != p.owner {
				liveFollowers++
			}
		case n == p.owner || !h.brokers[n-1].draining:
			return false
		default:
			lost++
		}
	}
	return lost > 0 && liveFollowers >= p.w-1
}
