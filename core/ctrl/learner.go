package ctrl

import (
	"encoding/binary"
	"errors"

	"github.com/sluicemq/sluice/core/bugs"
	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
)

// Learners (docs/design/recovery.md, "Learners and admission"). A follower of a
// held queue whose broker comes back with a new process on the same
// storage is not replaced through recovery: placement names that exact
// instance the assignment's learner (AddLearner), and the hold goes on
// while it is live. Its node runs the queue's follower group on the
// member's log (the copy it left: catch-up resumes where it stopped, and
// again after a learner restart, which a new AddLearner names). The owner
// streams to it but never counts it toward W; once the learner holds a
// fixed cut of the owner's log durably, the owner asks the leader to admit
// it, and the leader proposes AdmitLearner (the same epoch, no pending
// transition, the same learner: the metadata guards it again at apply).
// Admission makes the learner the member (E and W unchanged) and the
// hold ends, its member live again.

// A queue left on fewer members than its replicas (a recovery that found
// no live broker to replace a lost one) grows back the same way: placement
// names a live, undrained broker outside its members the learner (the
// returning broker or another, by fewest replicas), whose node runs the
// follower group on a fresh copy (core/placed.go keeps an older history
// of the queue it finds apart, in the generation it was), and admission
// adds it as one member more. E grows by one and W stays (the metadata
// refuses a copy that would change it), so every record confirmed before
// the admission, on W of the old members, still meets every R = E - W + 1
// seals of the new ones; later recoveries seal the enlarged set.

// proposeNewCopy proposes, for queue q on fewer members than its
// replicas, a learner on the live, undrained broker outside its members
// holding the fewest replicas, unless its learner is such a broker's
// live process already.
func (g *Group) proposeNewCopy(q *metadata.Queue, load loads) {
	a := &q.Assignment
	if l := a.Learner; l != (metadata.Member{}) {
		if b, ok := g.md.Broker(l.Node); ok && b.Live && !b.Draining && b.Process == l.Process && b.Storage == l.Storage {
			return // catching up
		}
	}
	if g.cfg.Bugs.Has(bugs.NoNewCopy) {
		return // planted: the queue stays short of its replicas
	}
	if !q.GrowthKeepsW() {
		return // a member more would change W: the queue waits for a recovery's replacement
	}
	var members [seam.ReplicasMax]seam.NodeID
	for i, m := range a.Members.Slice() {
		members[i] = m.Node
	}
	ms, _, ok := g.choose(load, 1, members[:a.Members.N])
	if !ok {
		return // no broker outside its members: it waits
	}
	l := ms.M[0]
	if g.proposePlacement(metadata.Command{Kind: metadata.AddLearner, Queue: q.Name, Incarnation: q.Incarnation, Epoch: a.Epoch, Learner: l}) {
		load.add(&ms, 0)
	}
}

// proposeLearner proposes, for held queue q, the learner of a follower
// whose broker is back with a new process on the follower's storage
// (unless that instance is the learner already).
func (g *Group) proposeLearner(q *metadata.Queue) {
	a := &q.Assignment
	for _, m := range a.Members.Slice() {
		b, ok := g.md.Broker(m.Node)
		if m.Node == a.Owner || !ok || !b.Live || b.Draining || b.Process == m.Process || b.Storage != m.Storage {
			continue
		}
		l := metadata.Member{Node: m.Node, Process: b.Process, Storage: b.Storage}
		if a.Learner == l {
			continue
		}
		if g.proposePlacement(metadata.Command{Kind: metadata.AddLearner, Queue: q.Name, Incarnation: q.Incarnation, Epoch: a.Epoch, Learner: l}) {
			return // one at a time (the metadata holds one learner)
		}
	}
}

// peerMsgAdmit is the admission request's kind.
const peerMsgAdmit = 4

// admitReq is one owner's request to admit its queue's learner.
type admitReq struct {
	queue              seam.QueueID
	incarnation, epoch uint64
	learner            metadata.Member
}

// AppendAdmitRequest appends an admission request's encoding: version,
// kind, then the queue id, incarnation, epoch and the learner's node,
// process and storage, as uvarints.
func AppendAdmitRequest(dst []byte, q seam.QueueID, incarnation, epoch uint64, l metadata.Member) []byte {
	dst = append(dst, peerMsgVersion, peerMsgAdmit)
	for _, v := range []uint64{uint64(q), incarnation, epoch, uint64(l.Node), l.Process, l.Storage} {
		dst = binary.AppendUvarint(dst, v)
	}
	return dst
}

var errAdmit = errors.New("not an admission request")

// decodeAdmit reads an admission request exactly.
func decodeAdmit(b []byte) (admitReq, error) {
	if len(b) > peerMsgBytesMax || len(b) < 2 || b[0] != peerMsgVersion || b[1] != peerMsgAdmit {
		return admitReq{}, errAdmit
	}
	b = b[2:]
	var v [6]uint64
	for i := range v {
		x, n := binary.Uvarint(b)
		if n <= 0 || n != len(binary.AppendUvarint(nil, x)) || x == 0 {
			return admitReq{}, errAdmit
		}
		v[i], b = x, b[n:]
	}
	if len(b) != 0 || v[0] > 1<<32-1 || v[3] > 1<<32-1 {
		return admitReq{}, errAdmit
	}
	return admitReq{queue: seam.QueueID(v[0]), incarnation: v[1], epoch: v[2],
		learner: metadata.Member{Node: seam.NodeID(v[3]), Process: v[4], Storage: v[5]}}, nil
}

// requestAdmit is this node's owner asking to admit its learner: handled
// here when this node leads, else sent to the leader it knows (dropped
// when it knows none; the owner asks again).
func (g *Group) requestAdmit(in Input) {
	r, err := decodeAdmit(in.Msg)
	if err != nil {
		panic("ctrl: the node's own admission request does not decode")
	}
	g.atLeader(in.Msg, func() { g.onAdmit(g.cfg.ID, r) })
}

// onAdmit is an admission request at the leader: proposed when it names
// the current, unfenced assignment, its owner asking, and its learner.
func (g *Group) onAdmit(from uint64, r admitReq) {
	q := g.leaderQueue(r.queue)
	if q == nil {
		return
	}
	a := &q.Assignment
	if q.Incarnation != r.incarnation || !q.Assigned || a.Fenced || a.Epoch != r.epoch || a.Owner != seam.NodeID(from) || a.Learner != r.learner {
		return // stale, or not the owner's
	}
	g.proposePlacement(metadata.Command{Kind: metadata.AdmitLearner, Queue: q.Name, Incarnation: q.Incarnation, Epoch: a.Epoch, Learner: r.learner})
}
