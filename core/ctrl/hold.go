package ctrl

import (
	"slices"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
)

// The follower-loss hold (docs/design/follower-loss-hold.md). When placement finds a
// placed queue whose only lost members are followers, it keeps the queue's
// assignment, epoch and activation instead of fencing it behind a
// transition, as long as:
//
//   - the queue is activated (assigned, no pending transition);
//   - its W (from the unchanged assignment) is at least 2;
//   - its owner is unchanged (the owner member is live, as committed);
//   - the followers left live number at least W - 1;
//   - every lost follower stopped heartbeating (its process left the live
//     set, by liveness expiry or eager failover, or another process of
//     its broker registered) less than replication.follower_loss_hold_ms
//     ago (read at every check; 0: never held), none is on a draining
//     broker (a copy that is leaving is replaced, not waited for), and
//     none is back with another process on other storage (its copy is
//     gone: it is replaced through recovery).
//
// The owner keeps confirming with the followers left: a lost one never
// reports, so it is never waited for. A follower back with the same
// process (after a network fault) counts again as it streams; past the
// hold, placement proposes the transition that replaces the lost ones.
// Why it is safe (docs/design/follower-loss-hold.md, "Why it is safe"):
// the hold changes neither E (the lost
// follower keeps its place among the previous members a recovery seals)
// nor W, so R = E - W + 1 seals still meet every confirm set, and a
// second failure (the owner lost while a follower is held) finds the same
// R, short of which the queue waits.
//
// When a member stopped is when this replica applied the change that took
// its process out of the live set (each replica records it, so whichever
// leads next knows it); a replica that learned of the loss otherwise (from
// an image) counts from when its placement first saw it: the hold may then
// last longer, never shorter.

// A follower back with a new process on the same storage does not end
// the hold: it rejoins as the queue's learner (learner.go) while the hold
// goes on, and is admitted once it caught up. A queue a transition left on
// fewer members than its replicas gets its lost copies back as new
// copies' learners (learner.go), one at a time, once it serves again.
//
// TODO, what the hold's pieces left:
//
//   - A stage reseeded at its source's start gets no epoch history below
//     it (the source's seal carries none): after a recovery that
//     retained, the followers' first match at the owner's start is
//     vacuous and the record-by-record check does the work.

// downAt is when this replica saw a broker's process leave the live set.
type downAt struct {
	node    seam.NodeID
	process uint64
	atNs    int64
}

// heldQueue is a queue the leader's placement holds (for the counters).
type heldQueue struct {
	queue       string
	incarnation uint64
}

// HoldStats are the hold's counters at this replica (while it leads).
type HoldStats struct {
	// Held: queues held now; Entered: holds begun; Expired: holds that
	// ended in a transition because they lasted the hold.
	Held             int
	Entered, Expired uint64
	// Learners: assignments with a learner catching up now (by the
	// applied metadata); Admitted: learners this replica saw admitted.
	Learners int
	Admitted uint64
}

// Holds returns the hold's counters.
func (g *Group) Holds() HoldStats {
	st := HoldStats{Held: len(g.held), Entered: g.holdsEntered, Expired: g.holdsExpired, Admitted: g.learnersAdmitted}
	for _, q := range g.md.Queues() {
		if q.Assigned && q.Assignment.Learner != (metadata.Member{}) {
			st.Learners++
		}
	}
	return st
}

// noteBrokerChange records, after an entry was applied, a broker whose
// live process before it (live, process) left the live set.
func (g *Group) noteBrokerChange(node seam.NodeID, live bool, process uint64) {
	if !live {
		return
	}
	if b, ok := g.md.Broker(node); ok && b.Live && b.Process == process {
		return
	}
	g.recordDown(node, process)
}

func (g *Group) recordDown(node seam.NodeID, process uint64) {
	i := slices.IndexFunc(g.down, func(d downAt) bool { return d.node == node })
	if i < 0 {
		if len(g.down) >= metadata.BrokersMax {
			g.down = slices.Delete(g.down, 0, 1) // a bound; forgetting only lengthens a hold
		}
		g.down = append(g.down, downAt{})
		i = len(g.down) - 1
	}
	g.down[i] = downAt{node: node, process: process, atNs: g.nowNs}
}

// downSince returns when member m's process stopped, as this replica knows.
func (g *Group) downSince(m metadata.Member) int64 {
	i := slices.IndexFunc(g.down, func(d downAt) bool { return d.node == m.Node && d.process == m.Process })
	if i < 0 {
		g.recordDown(m.Node, m.Process)
		return g.nowNs
	}
	return g.down[i].atNs
}

// holds reports whether placement holds queue q, which lost members, and
// keeps the counters.
func (g *Group) holds(q *metadata.Queue) bool {
	held := g.holdApplies(q)
	i := slices.IndexFunc(g.held, func(h heldQueue) bool { return h.queue == q.Name && h.incarnation == q.Incarnation })
	switch {
	case held && i < 0:
		if len(g.held) < metadata.QueuesMax {
			g.held = append(g.held, heldQueue{queue: q.Name, incarnation: q.Incarnation})
		}
		g.holdsEntered++
		g.note("holding %q epoch=%d: only followers lost, the owner and %d of them meet W", q.Name, q.Assignment.Epoch, g.liveFollowers(&q.Assignment))
	case !held && i >= 0:
		g.held = slices.Delete(g.held, i, i+1)
		if g.holdExpired(q) {
			g.holdsExpired++
			g.note("hold of %q expired: its lost followers are replaced through recovery", q.Name)
		}
	}
	return held
}

// holdApplies is the hold's condition for queue q (assigned, not fenced,
// a member not live).
func (g *Group) holdApplies(q *metadata.Queue) bool {
	holdNs := g.md.Setting(metadata.FollowerLossHoldMs) * 1_000_000
	a := &q.Assignment
	if holdNs == 0 || !q.Assigned || a.Fenced {
		return false
	}
	if g.cfg.Bugs.Has(bugs.NoHold) {
		return false // planted: fenced at once
	}
	w := q.Policy.WriteQuorum(a.Members.N, min(q.MinInsync, a.Members.N))
	if w < 2 || (g.liveFollowers(a) < w-1 && !g.cfg.Bugs.Has(bugs.HoldIgnoresW)) {
		return false
	}
	for _, m := range a.Members.Slice() {
		live := g.memberLive(m)
		if m.Node == a.Owner && !live {
			return false // an owner change takes the recovery path
		}
		if live {
			continue
		}
		b, ok := g.md.Broker(m.Node)
		draining := b.Draining && !g.cfg.Bugs.Has(bugs.HoldWhileDraining) // planted: held while it drains
		if ok && (draining || (b.Live && b.Process != m.Process && b.Storage != m.Storage)) {
			// Leaving: replaced, not waited for. Or back on other
			// storage: its copy is gone, and it rejoins through recovery.
			return false
		}
		if ok && b.Live && b.Process != m.Process && a.Learner == (metadata.Member{Node: m.Node, Process: b.Process, Storage: b.Storage}) {
			continue // back as the queue's learner: catching up, not lost (learner.go)
		}
		if g.nowNs-g.downSince(m) >= holdNs {
			return false
		}
	}
	return true
}

// holdExpired reports whether queue q, held until now, is no longer held
// only because a lost follower's time ran out (or the hold was set to 0).
func (g *Group) holdExpired(q *metadata.Queue) bool {
	holdNs := g.md.Setting(metadata.FollowerLossHoldMs) * 1_000_000
	if holdNs == 0 {
		return true
	}
	for _, m := range q.Assignment.Members.Slice() {
		if !g.memberLive(m) && g.nowNs-g.downSince(m) >= holdNs {
			return true
		}
	}
	return false
}

// liveFollowers counts a's followers whose process is live.
func (g *Group) liveFollowers(a *metadata.Assignment) int {
	n := 0
	for _, m := range a.Members.Slice() {
		if m.Node != a.Owner && g.memberLive(m) {
			n++
		}
	}
	return n
}

// holdsEnd forgets held queues that are no longer in question (all their
// members live again, their queue gone or fenced): they are held no more.
func (g *Group) holdsEnd() {
	g.held = slices.DeleteFunc(g.held, func(h heldQueue) bool {
		q, ok := g.md.Queue(h.queue)
		return !ok || q.Incarnation != h.incarnation || !q.Assigned || q.Assignment.Fenced || g.membersLive(&q.Assignment)
	})
}
