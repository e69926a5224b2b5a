package recovery

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/quorum"
	"github.com/sluicemq/sluice/core/seam"
)

// Replica is one replica of the previous assignment: its node and the
// storage instance (data directory) it held the log in. A seal from any
// process of that node and storage instance witnesses for it.
type Replica struct {
	Node    seam.NodeID
	Storage uint64
}

// Transition is what a collection needs to know of the pending transition
// it gathers evidence for, all fixed for the transition's life.
type Transition struct {
	Queue       seam.QueueID
	Incarnation uint64
	Epoch       uint64 // the proposed fencing epoch
	Digest      Digest
	// Previous is the previous assignment's replicas (E = its length) and
	// W its write requirement.
	Previous []Replica
	W        int
	// ISR: the queue confirms at its in-sync set's high watermark; InSync
	// is the last committed in-sync set, from which the clean election
	// takes its witness and source.
	ISR    bool
	InSync []seam.NodeID
}

// Collection gathers the seals of one transition.
type Collection struct {
	t          Transition
	r          int              // R = E - W + 1 (0: not an R collection, an isr one)
	seals      []Seal           // at most one per previous replica, in arrival order
	gone       []seam.NodeID    // previous replicas that never seal (their storage replaced)
	blocked    string           // the block's detail
	blockedWhy seam.AsideReason // non-zero: blocked (contradictory evidence, lost copies); the collection stops
}

// NewCollection starts the collection of t's seals. A malformed
// transition (no previous replicas, W outside 1..E, more replicas than a
// queue has, an isr queue without an in-sync set) is an error.
func NewCollection(t Transition) (*Collection, error) {
	e := len(t.Previous)
	switch {
	case e == 0 || e > seam.ReplicasMax:
		return nil, fmt.Errorf("recovery: %d previous replicas, want 1 to %d", e, seam.ReplicasMax)
	case t.W < 1 || t.W > e:
		return nil, fmt.Errorf("recovery: W=%d of E=%d", t.W, e)
	case t.ISR && len(t.InSync) == 0:
		return nil, fmt.Errorf("recovery: an isr transition without an in-sync set")
	}
	for i, p := range t.Previous {
		if slices.ContainsFunc(t.Previous[:i], func(q Replica) bool { return q.Node == p.Node }) {
			return nil, fmt.Errorf("recovery: n%d is a previous replica twice", p.Node)
		}
	}
	c := &Collection{t: t}
	if !t.ISR {
		c.r = quorum.RecoveryThreshold(e, t.W)
	}
	return c, nil
}

// Threshold is R, the complete witnesses the collection needs (1 for an
// isr queue: one member of the in-sync set).
func (c *Collection) Threshold() int {
	if c.t.ISR {
		return 1
	}
	return c.r
}

// Add records seal s. It returns an error, and records nothing, for a seal
// of another transition or from a replica that is not one of the previous
// assignment's; an identical retry is accepted and counts once; a damaged
// seal replaces a complete one (the replica met damage since), and
// nothing replaces a damaged one; any other different seal from a replica
// that already reported blocks the collection (Blocked says why).
func (c *Collection) Add(s Seal) error {
	switch {
	case s.Queue != c.t.Queue || s.Incarnation != c.t.Incarnation || s.Epoch != c.t.Epoch || s.Transition != c.t.Digest:
		return fmt.Errorf("recovery: a seal of queue %d incarnation %d for epoch %d, transition %x: not this transition", s.Queue, s.Incarnation, s.Epoch, s.Transition[:6])
	case !slices.Contains(c.t.Previous, Replica{Node: s.Node, Storage: s.Storage}):
		return fmt.Errorf("recovery: n%d storage %d is not a replica of the previous assignment", s.Node, s.Storage)
	}
	i := slices.IndexFunc(c.seals, func(o Seal) bool { return o.Node == s.Node })
	switch {
	case i < 0:
		c.seals = append(c.seals, s)
	case sameEvidence(&c.seals[i], &s):
		// An identical retry, perhaps from a restarted process of the
		// replica (its log frozen, the same evidence): counted once.
		c.seals[i].Process = max(c.seals[i].Process, s.Process)
	case s.Damaged && !c.seals[i].Damaged:
		// The replica met damage in its log since it sealed (it restarted
		// and its recovery reported it): it is no complete witness now.
		c.seals[i] = s
	case c.seals[i].Damaged:
		// Evidence from a log already known damaged counts for nothing.
	default:
		if c.blockedWhy == 0 {
			c.blockedWhy = seam.AsideContradictorySeals
			c.blocked = fmt.Sprintf("n%d sealed twice with different evidence ([%d, %d) epoch %d %x, then [%d, %d) epoch %d %x)",
				s.Node, c.seals[i].Start, c.seals[i].End, c.seals[i].LastEpoch, c.seals[i].Identity[:6], s.Start, s.End, s.LastEpoch, s.Identity[:6])
		}
	}
	c.blockIfLost()
	return nil
}

// Gone records that previous replica node never seals this transition
// (its storage is another instance than the one the transition names: a
// replaced disk). Once the replicas left cannot make Threshold complete
// witnesses, and with one gone every replica can no longer seal, the
// collection blocks (Blocked says so): the queue stays fenced with the
// loss reported, and the worker is free for other queues. A node that is
// no previous replica, or already sealed, changes nothing.
func (c *Collection) Gone(node seam.NodeID) {
	if !slices.ContainsFunc(c.t.Previous, func(r Replica) bool { return r.Node == node }) ||
		slices.Contains(c.gone, node) || slices.ContainsFunc(c.seals, func(s Seal) bool { return s.Node == node }) {
		return
	}
	c.gone = append(c.gone, node)
	c.blockIfLost()
}

// Blocked says why the collection cannot complete (contradictory
// evidence), or "".
func (c *Collection) Blocked() string { return c.blocked }

// BlockedWhy returns the typed cause of the block (0: not blocked).
func (c *Collection) BlockedWhy() seam.AsideReason { return c.blockedWhy }

// eligible reports whether s counts: a complete witness (no detected
// damage) and, for an isr queue, a member of the in-sync set.
func (c *Collection) eligible(s *Seal) bool {
	return !s.Damaged && (!c.t.ISR || slices.Contains(c.t.InSync, s.Node))
}

// Witnesses counts the complete witnesses so far.
func (c *Collection) Witnesses() int {
	n := 0
	for i := range c.seals {
		if c.eligible(&c.seals[i]) {
			n++
		}
	}
	return n
}

// Complete reports whether the collection holds enough evidence: not
// blocked, and at least Threshold complete witnesses, or a seal from every
// previous replica (AllSealed) while fewer than W of them lost what they
// acknowledged (Lost). With W or more lost, a confirmed record may have
// been on lost copies only: the collection blocks (Blocked says so), and
// the queue stays fenced with the loss reported rather than served cut.
func (c *Collection) Complete() bool {
	return c.blockedWhy == 0 && (c.Witnesses() >= c.Threshold() || (c.AllSealed() && c.lost() < c.t.W))
}

// blockIfLost blocks the collection when every previous replica sealed,
// too few are complete witnesses, and W or more of them lost what they
// acknowledged.
func (c *Collection) blockIfLost() {
	if c.blockedWhy != 0 {
		return
	}
	if lost := c.lost(); c.AllSealed() && c.Witnesses() < c.Threshold() && lost >= c.t.W {
		c.blockedWhy = seam.AsideLostCopies
		c.blocked = fmt.Sprintf("%d of the %d previous replicas lost what they acknowledged (a lost directory, or damage to synced records), W is %d: a confirmed record may be on none of the others",
			lost, len(c.t.Previous), c.t.W)
		return
	}
	if possible := c.Witnesses() + c.mayWitness(); len(c.gone) > 0 && possible < c.Threshold() {
		c.blockedWhy = seam.AsideLostCopies
		c.blocked = fmt.Sprintf("the copies of %v are gone (their storage replaced): at most %d complete witnesses remain possible, R is %d",
			c.gone, possible, c.Threshold())
	}
}

// mayWitness counts the previous replicas that have not sealed yet, are
// not gone, and would count as complete witnesses if they sealed whole.
func (c *Collection) mayWitness() int {
	n := 0
	for _, r := range c.t.Previous {
		if !slices.Contains(c.gone, r.Node) && !slices.ContainsFunc(c.seals, func(s Seal) bool { return s.Node == r.Node }) &&
			(!c.t.ISR || slices.Contains(c.t.InSync, r.Node)) {
			n++
		}
	}
	return n
}

// lost counts the seals of logs that certainly lost what they
// acknowledged.
func (c *Collection) lost() int {
	n := 0
	for i := range c.seals {
		if c.seals[i].Lost {
			n++
		}
	}
	return n
}

// AllSealed reports whether every replica of the previous assignment
// sealed, damaged or not. That is enough evidence within the fault budget
// (at most W − 1 replicas lose or corrupt any one durable record): each
// confirmed record is then intact on some previous replica, and the log
// that reaches furthest by (last epoch, end) over every replica's valid
// prefix holds it (its epoch's members share one history up to their
// ends, and a later epoch began from a recovery that held it). Without it
// a queue whose replicas met conservative damage (a torn tail past the
// synced end, which the format cannot tell from a lost write) would stay
// fenced for ever once more than E − R of them did, with nothing lost.
func (c *Collection) AllSealed() bool { return len(c.seals) == len(c.t.Previous) }

// Source returns the witness recovery copies from: among the complete
// witnesses, the one whose log reaches furthest, by (last epoch, end),
// ties to the lowest node id; when there are fewer than Threshold complete
// witnesses but every previous replica sealed, among all seals (their
// valid prefixes). ok is false until the collection is complete.
func (c *Collection) Source() (s Seal, ok bool) {
	if !c.Complete() {
		return Seal{}, false
	}
	all := c.Witnesses() < c.Threshold()
	for i := range c.seals {
		w := &c.seals[i]
		if !all && !c.eligible(w) {
			continue
		}
		if !ok || w.LastEpoch > s.LastEpoch || (w.LastEpoch == s.LastEpoch && (w.End > s.End || (w.End == s.End && w.Node < s.Node))) {
			s, ok = *w, true
		}
	}
	return s, ok
}

// Seals returns the seals recorded, in arrival order (the caller must not
// change them).
func (c *Collection) Seals() []Seal { return c.seals }

// sameEvidence reports whether two seals of one replica say the same of
// its log (the process that answered aside).
func sameEvidence(a, b *Seal) bool {
	x, y := *a, *b
	x.Process, y.Process = 0, 0
	return x == y
}
