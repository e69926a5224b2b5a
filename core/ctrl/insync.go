package ctrl

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
	"go.etcd.io/raft/v3"
)

// In-sync requests (docs/design/in-sync.md): a placed queue's owner asks the leader to
// record a new in-sync set for its assignment (a follower that stopped
// reaching the log end for replica.lag_time_max_ms leaves it; one that
// reached the high watermark again comes back). The owner keeps using the
// committed set until the change commits. The leader proposes SetInSync
// when the request names the current, unfenced assignment and the
// version of the committed set it was asked from; the metadata guards the
// rest (again at apply: only from the version still current). A request
// for the committed set itself withdraws the owner's pending requests.

// peerMsgInSync is the in-sync request's kind.
const peerMsgInSync = 2

// inSyncReq is one owner's request.
type inSyncReq struct {
	queue              seam.QueueID
	incarnation, epoch uint64
	inSync             metadata.Nodes
	version            uint64 // of the committed set it was asked from
}

// AppendInSyncRequest appends an in-sync request's encoding: version, kind,
// then the queue id, incarnation, epoch, the in-sync version it was asked
// from, the count and the nodes, as uvarints.
func AppendInSyncRequest(dst []byte, q seam.QueueID, incarnation, epoch, version uint64, inSync *metadata.Nodes) []byte {
	dst = append(dst, peerMsgVersion, peerMsgInSync)
	dst = binary.AppendUvarint(dst, uint64(q))
	dst = binary.AppendUvarint(dst, incarnation)
	dst = binary.AppendUvarint(dst, epoch)
	dst = binary.AppendUvarint(dst, version)
	dst = binary.AppendUvarint(dst, uint64(inSync.N))
	for _, n := range inSync.Slice() {
		dst = binary.AppendUvarint(dst, uint64(n))
	}
	return dst
}

var errInSync = errors.New("not an in-sync request")

// decodeInSync reads an in-sync request exactly.
func decodeInSync(b []byte) (inSyncReq, error) {
	if len(b) > peerMsgBytesMax || len(b) < 2 || b[0] != peerMsgVersion || b[1] != peerMsgInSync {
		return inSyncReq{}, errInSync
	}
	b = b[2:]
	next := func(max uint64) (uint64, bool) {
		x, n := binary.Uvarint(b)
		if n <= 0 || n != len(binary.AppendUvarint(nil, x)) || x > max {
			return 0, false
		}
		b = b[n:]
		return x, true
	}
	var r inSyncReq
	q, ok1 := next(1<<32 - 1)
	inc, ok2 := next(1<<63 - 1)
	ep, ok3 := next(1<<63 - 1)
	ver, ok4 := next(1<<63 - 1)
	cnt, ok5 := next(seam.ReplicasMax)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || q == 0 || inc == 0 || ep == 0 || cnt == 0 {
		return inSyncReq{}, errInSync
	}
	r.queue, r.incarnation, r.epoch, r.version, r.inSync.N = seam.QueueID(q), inc, ep, ver, int(cnt)
	for i := range r.inSync.N {
		n, ok := next(1<<32 - 1)
		if !ok || n == 0 || (i > 0 && seam.NodeID(n) <= r.inSync.ID[i-1]) {
			return inSyncReq{}, errInSync
		}
		r.inSync.ID[i] = seam.NodeID(n)
	}
	if len(b) != 0 {
		return inSyncReq{}, errInSync
	}
	return r, nil
}

// requestInSync is this node's owner asking: handled here when this node
// leads, else sent to the leader it knows (dropped when it knows none; the
// owner asks again).
func (g *Group) requestInSync(in Input) {
	r, err := decodeInSync(in.Msg)
	if err != nil {
		panic("ctrl: the node's own in-sync request does not decode")
	}
	g.atLeader(in.Msg, func() { g.onInSync(g.cfg.ID, r) })
}

// atLeader runs handle when this node leads, else sends msg (an owner's
// request) to the leader it knows; it drops it when it knows none (the
// owner asks again).
func (g *Group) atLeader(msg []byte, handle func()) {
	st := g.rn.BasicStatus()
	switch {
	case st.RaftState == raft.StateLeader:
		handle()
	case st.Lead != 0:
		g.out = append(g.out, Effect{Kind: EfSendPeer, To: st.Lead, Msg: slices.Clone(msg)})
	}
}

// leaderQueue returns, at the leader, the queue of id q (nil elsewhere, or
// when there is none).
func (g *Group) leaderQueue(q seam.QueueID) *metadata.Queue {
	if g.rn.BasicStatus().RaftState != raft.StateLeader {
		return nil
	}
	qs := g.md.Queues()
	i := slices.IndexFunc(qs, func(x metadata.Queue) bool { return x.ID == q })
	if i < 0 {
		return nil
	}
	return &qs[i]
}

// onInSync is a request at the leader.
func (g *Group) onInSync(from uint64, r inSyncReq) {
	q := g.leaderQueue(r.queue)
	if q == nil {
		return
	}
	a := &q.Assignment
	if q.Incarnation != r.incarnation || !q.Assigned || a.Fenced || a.Epoch != r.epoch || a.Owner != seam.NodeID(from) || a.InSyncVersion != r.version {
		return // stale, or not the owner's
	}
	for _, n := range r.inSync.Slice() {
		if slices.Contains(a.InSync.Slice(), n) {
			continue
		}
		if i := slices.IndexFunc(a.Members.Slice(), func(m metadata.Member) bool { return m.Node == n }); i < 0 || !g.memberLive(a.Members.Slice()[i]) {
			// A member the metadata holds down (or running another process)
			// does not come back into the set (it lost its place as the
			// controller saw it gone: docs/design/in-sync.md, "A broker that
			// leaves the live set"). Its owner, which last heard it
			// at the log's end, asks it back as long as the queue is idle:
			// granted, the set flapped with every removal.
			g.note("in-sync request for %q refused: n%d is not a live member", q.Name, n)
			return
		}
	}
	g.proposePlacement(metadata.Command{Kind: metadata.SetInSync, Queue: q.Name, Incarnation: q.Incarnation, Epoch: a.Epoch, InSync: r.inSync, InSyncVersion: r.version})
}
