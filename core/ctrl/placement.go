package ctrl

import (
	"slices"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
)

// Placement, at the leader on every tick and right after it applied a
// broker's BrokerDown (Step), from the committed metadata:
//
//   - a declared queue not yet placed gets its replicas on live brokers
//     that are not draining, the owner on the broker owning the fewest
//     queues, the followers on those holding the fewest replicas (ties by
//     node id); with too few such brokers it waits;
//   - a placed queue one of whose members left the live set, or runs
//     another process or storage instance, is held when only followers
//     were lost a short while ago and the rest still meet W (hold.go);
//     else it is fenced by a transition that
//     proposes the surviving members plus replacements for the rest
//     (chosen as above), under the next epoch, bound by its digest. The
//     queue admits no writes until recovery activates the next
//     assignment. A queue is never proposed so few members that their W
//     falls below the W of its configured replica count (a majority queue
//     of 3 is not moved to one broker, an isr queue not below min_insync):
//     it waits for live brokers instead;
//   - a placed queue left on fewer members than its replicas (a recovery
//     that found no replacement) gets a learner on a live, undrained
//     broker outside them, which catches up and is admitted as one member
//     more (learner.go), one copy at a time, until the queue is back to
//     its declared count;
//   - a fenced queue whose recovery candidate left the live set or drains
//     is handed to another live, undrained proposed member (Handoff).
//
// The same proposal about one queue is not repeated within proposeRetryNs.

// placed is the leader's record of its last proposal about one queue.
type placed struct {
	queue string
	kind  metadata.Kind
	cmd   metadata.Command
	atNs  int64
}

// placementCheck proposes what placement needs now.
func (g *Group) placementCheck() {
	qs := g.md.Queues()
	if len(qs) == 0 {
		return
	}
	g.holdsEnd()
	load := g.loads()
	for i := range qs {
		q := &qs[i]
		switch {
		case !q.Assigned:
			ms, owner, ok := g.chooseHome(load, q)
			if !ok {
				continue // too few live brokers: wait
			}
			c := metadata.Command{Kind: metadata.Assign, Queue: q.Name, Incarnation: q.Incarnation, Epoch: 1, Owner: owner, Members: ms}
			if g.proposePlacement(c) {
				load.add(&c.Members, owner)
			}
		case !q.Assignment.Fenced && !g.membersLive(&q.Assignment):
			g.dropLostFromInSync(q)
			if g.holds(q) {
				g.proposeLearner(q) // a lost follower back with a new process (learner.go)
				continue            // the follower-loss hold (hold.go)
			}
			var keep []seam.NodeID
			for _, m := range q.Assignment.Members.Slice() {
				if g.memberLive(m) {
					keep = append(keep, m.Node)
				}
			}
			ms, _, _ := g.choose(load, q.Replicas-len(keep), keep)
			var proposed metadata.Nodes
			for _, m := range keep {
				proposed.ID[proposed.N] = m
				proposed.N++
			}
			for _, m := range ms.Slice() {
				proposed.ID[proposed.N] = m.Node
				proposed.N++
			}
			slices.Sort(proposed.ID[:proposed.N])
			if proposed.N == 0 {
				continue // no broker at all: a transition needs one
			}
			if proposedW, configuredW := q.Policy.WriteQuorum(proposed.N, min(q.MinInsync, proposed.N)),
				q.Policy.WriteQuorum(q.Replicas, min(q.MinInsync, q.Replicas)); proposedW < configuredW {
				// Too few live brokers for the queue's configured write
				// requirement: an assignment of fewer members would confirm
				// on fewer copies than the operator asked for (a majority of
				// one, say), and a recovery never weakens W to fit what is
				// left (docs/design/recovery.md). The queue waits, fenced or not, for live
				// brokers; its owner, if alive, keeps serving only while its
				// in-sync set still meets W (an isr queue's lost member left
				// that set already).
				continue
			}
			c := metadata.Command{Kind: metadata.Transition, Queue: q.Name, Incarnation: q.Incarnation, Epoch: q.Assignment.Epoch,
				Proposed: proposed, Digest: metadata.TransitionDigest(q, &proposed)}
			g.proposePlacement(c)
		case !q.Assignment.Fenced && q.Assignment.Members.N < q.Replicas:
			g.proposeNewCopy(q, load) // learner.go
		case q.Assignment.Fenced:
			g.proposeHandoff(q)
			g.proposeReplacements(q, load)
		}
	}
}

// proposeHandoff hands a fenced queue's recovery to another proposed
// member when its candidate left the live set or drains
// (docs/design/recovery.md, "Handoff and re-proposal"): a
// live, undrained one, a previous member first (its log is a witness
// already), in the proposed order. The transition stays as it was; with
// no such member the queue waits for its candidate.
func (g *Group) proposeHandoff(q *metadata.Queue) {
	a := &q.Assignment
	from := a.Candidate()
	if g.available(from) || g.cfg.Bugs.Has(bugs.NoHandoff) {
		return
	}
	to := seam.NodeID(0)
	for _, previous := range []bool{true, false} {
		for _, p := range a.Pending.Proposed.Slice() {
			was := slices.ContainsFunc(a.Members.Slice(), func(m metadata.Member) bool { return m.Node == p })
			if to == 0 && p != from && was == previous && g.available(p) {
				to = p
			}
		}
	}
	if to == 0 {
		return
	}
	g.proposePlacement(metadata.Command{Kind: metadata.Handoff, Queue: q.Name, Incarnation: q.Incarnation, Epoch: a.Epoch,
		Digest: a.Pending.Digest, Node: from, Candidate: to})
}

// proposeReplacements re-proposes a fenced queue's pending transition when
// too few of its proposed members are live for the queue's configured W
// (a replacement that died mid-recovery, or a broker gone for good, would
// keep it fenced for ever): the live proposed members stay, and live,
// undrained brokers outside the proposal take the others' places, as
// many as there are. With too few of those the queue waits, as it does
// for a first transition.
func (g *Group) proposeReplacements(q *metadata.Queue, load loads) {
	a := &q.Assignment
	var keep []seam.NodeID
	for _, n := range a.Pending.Proposed.Slice() {
		if b, ok := g.md.Broker(n); ok && b.Live {
			keep = append(keep, n)
		}
	}
	wOf := func(n int) int { return q.Policy.WriteQuorum(n, min(q.MinInsync, n)) }
	configuredW := wOf(q.Replicas)
	if len(keep) > 0 && wOf(len(keep)) >= configuredW {
		return // it can activate with those
	}
	ms, _, _ := g.choose(load, a.Pending.Proposed.N-len(keep), a.Pending.Proposed.Slice())
	var proposed metadata.Nodes
	for _, n := range keep {
		proposed.ID[proposed.N] = n
		proposed.N++
	}
	for _, m := range ms.Slice() {
		proposed.ID[proposed.N] = m.Node
		proposed.N++
	}
	slices.Sort(proposed.ID[:proposed.N])
	if proposed.N == 0 || proposed == a.Pending.Proposed || wOf(proposed.N) < configuredW {
		return // too few live brokers: wait
	}
	g.proposePlacement(metadata.Command{Kind: metadata.Repropose, Queue: q.Name, Incarnation: q.Incarnation, Epoch: a.Epoch,
		Digest: a.Pending.Digest, Proposed: proposed})
}

// available reports whether broker n is live and not draining.
func (g *Group) available(n seam.NodeID) bool {
	b, ok := g.md.Broker(n)
	return ok && b.Live && !b.Draining
}

// dropLostFromInSync proposes queue q's in-sync set without its followers
// that left the live set (a stopped broker loses its place as soon as the
// controller sees it gone, not when its owner's lag timer runs out:
// docs/design/in-sync.md, "A broker that leaves the live set"), under the set's current version, so that it commits before the
// transition that fences the queue. The owner stays: it is never out of
// its own set.
func (g *Group) dropLostFromInSync(q *metadata.Queue) {
	a := &q.Assignment
	var set metadata.Nodes
	for _, n := range a.InSync.Slice() {
		i := slices.IndexFunc(a.Members.Slice(), func(m metadata.Member) bool { return m.Node == n })
		if n == a.Owner || (i >= 0 && g.memberLive(a.Members.M[i])) {
			set.ID[set.N] = n
			set.N++
		}
	}
	if set != a.InSync {
		g.proposePlacement(metadata.Command{Kind: metadata.SetInSync, Queue: q.Name, Incarnation: q.Incarnation, Epoch: a.Epoch, InSync: set, InSyncVersion: a.InSyncVersion})
	}
}

func (g *Group) memberLive(m metadata.Member) bool {
	b, ok := g.md.Broker(m.Node)
	return ok && b.Live && b.Process == m.Process && b.Storage == m.Storage
}

func (g *Group) membersLive(a *metadata.Assignment) bool {
	for _, m := range a.Members.Slice() {
		if !g.memberLive(m) {
			return false
		}
	}
	return true
}

// brokerLoad counts, per broker, the queues it owns and the replicas it
// holds.
type brokerLoad struct {
	node            seam.NodeID
	owned, replicas int
}

type loads []brokerLoad

func (l loads) at(n seam.NodeID) *brokerLoad {
	for i := range l {
		if l[i].node == n {
			return &l[i]
		}
	}
	return nil
}

func (l loads) add(ms *metadata.Members, owner seam.NodeID) {
	for _, m := range ms.Slice() {
		if b := l.at(m.Node); b != nil {
			b.replicas++
			if m.Node == owner {
				b.owned++
			}
		}
	}
}

// loads returns the load of every live, undrained broker, by node. The
// slice is g.loadsBuf, reused by the next call: placementCheck's, which
// keeps nothing of it (choose copies what it picks). Its length is bounded
// by the brokers (metadata.BrokersMax).
func (g *Group) loads() loads {
	l := g.loadsBuf[:0]
	for _, b := range g.md.Brokers() {
		if b.Live && !b.Draining {
			l = append(l, brokerLoad{node: b.Node})
		}
	}
	for _, q := range g.md.Queues() {
		if q.Assigned {
			l.add(&q.Assignment.Members, q.Assignment.Owner)
		}
	}
	g.loadsBuf = l
	return l
}

// chooseHome picks a new queue's members as choose does, except that a
// queue with a home (an exclusive queue's connection's broker) gets its
// home as the owner while the home is live and undrained.
func (g *Group) chooseHome(l loads, q *metadata.Queue) (ms metadata.Members, owner seam.NodeID, ok bool) {
	home := q.Life.Home
	if home == 0 || !slices.ContainsFunc(l, func(b brokerLoad) bool { return b.node == home }) {
		return g.choose(l, q.Replicas, nil)
	}
	rest, _, ok := g.choose(l, q.Replicas-1, []seam.NodeID{home})
	b, _ := g.md.Broker(home)
	ms.M[0] = metadata.Member{Node: b.Node, Process: b.Process, Storage: b.Storage}
	ms.N = 1
	for _, m := range rest.Slice() {
		ms.M[ms.N] = m
		ms.N++
	}
	slices.SortFunc(ms.M[:ms.N], func(a, b metadata.Member) int { return int(a.Node) - int(b.Node) })
	return ms, home, ok
}

// choose picks n members among the live, undrained brokers not in exclude:
// the owner (only when exclude is empty) with the fewest owned queues,
// the rest with the fewest replicas; ties by node id. ok is false when
// there are fewer than n.
func (g *Group) choose(l loads, n int, exclude []seam.NodeID) (ms metadata.Members, owner seam.NodeID, ok bool) {
	var cands []brokerLoad
	for _, b := range l {
		if !slices.Contains(exclude, b.node) {
			cands = append(cands, b)
		}
	}
	if n <= 0 {
		return ms, 0, true
	}
	if len(cands) < n {
		n = len(cands)
		ok = false
	} else {
		ok = true
	}
	if n == 0 {
		return ms, 0, false
	}
	picked := make([]brokerLoad, 0, n)
	if len(exclude) == 0 {
		o := slices.MinFunc(cands, func(a, b brokerLoad) int {
			if a.owned != b.owned {
				return a.owned - b.owned
			}
			return int(a.node) - int(b.node)
		})
		owner = o.node
		picked = append(picked, o)
		cands = slices.DeleteFunc(cands, func(b brokerLoad) bool { return b.node == o.node })
	}
	slices.SortFunc(cands, func(a, b brokerLoad) int {
		if a.replicas != b.replicas {
			return a.replicas - b.replicas
		}
		return int(a.node) - int(b.node)
	})
	picked = append(picked, cands[:n-len(picked)]...)
	slices.SortFunc(picked, func(a, b brokerLoad) int { return int(a.node) - int(b.node) })
	for _, p := range picked {
		b, _ := g.md.Broker(p.node)
		ms.M[ms.N] = metadata.Member{Node: b.Node, Process: b.Process, Storage: b.Storage}
		ms.N++
	}
	return ms, owner, ok
}

// proposePlacement proposes c unless the same was proposed within
// proposeRetryNs; it reports whether it proposed.
func (g *Group) proposePlacement(c metadata.Command) bool {
	// One entry per queue and kind: a loss proposes an in-sync change and
	// a transition for the same queue, each repeated only after the retry
	// time.
	i := slices.IndexFunc(g.placing, func(p placed) bool { return p.queue == c.Queue && p.kind == c.Kind })
	if i >= 0 && g.placing[i].cmd == c && g.nowNs-g.placing[i].atNs < proposeRetryNs {
		return false
	}
	if i < 0 {
		if len(g.placing) >= metadata.QueuesMax {
			g.placing = g.placing[:0] // a bound; forgetting only repeats a proposal
		}
		g.placing = append(g.placing, placed{queue: c.Queue, kind: c.Kind})
		i = len(g.placing) - 1
	}
	g.placing[i].cmd, g.placing[i].atNs = c, g.nowNs
	if err := g.rn.Propose(c.Encode(nil)); err != nil {
		g.note("propose %s: %v", c.String(), err)
		return false
	}
	g.note("proposed %s", c.String())
	return true
}
