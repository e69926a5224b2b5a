package core

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/ctrl"
)

// The owner lease. An owner of a placed queue serves (confirms, delivers,
// admits publishes) only while its node holds a lease: a fresh committed
// view of the metadata (a fresh read: raft's read index, then applied),
// taken when the read was asked, valid for ownerLeaseNs from then. A node
// that owns placed queues renews it every leaseRenewNs. An owner whose
// queue was fenced while it was paused or cut off from the metadata group
// therefore stops serving within ownerLeaseNs of the transition's commit,
// whatever it has or has not applied; and a recovery does not activate the
// next assignment before that much time passed since it saw the
// transition, unless the old owner sealed or its process is known gone
// (recover.go). (Static queues are not leased.)

// A read not answered within leaseRetryNs is asked again (raft drops a
// read that meets no leader, and a lease that waited for ctrl's own
// FreshReadTimeoutNs would lapse for seconds).
const (
	ownerLeaseNs = 2_000_000_000
	leaseRenewNs = 500_000_000
	leaseRetryNs = 1_000_000_000
)

type lease struct {
	token   uint64 // the fresh read in flight (0: none)
	askedNs int64  // when it was asked
	untilNs int64  // the lease holds until then
}

// invariants checks the lease between steps: asked no later than now, and
// valid no longer than ownerLeaseNs from now (it runs from when its read
// was asked, never from when the answer came: a lease that outlived that
// would let an owner fenced meanwhile serve beside the next one). It
// panics with what broke.
func (l *lease) invariants(nowNs int64) {
	switch {
	case l.askedNs > nowNs:
		panic(fmt.Sprintf("core: the lease's read asked at %d, after now (%d)", l.askedNs, nowNs))
	case l.untilNs > nowNs+ownerLeaseNs:
		panic(fmt.Sprintf("core: the lease holds until %d, more than %d ns after now (%d)", l.untilNs, int64(ownerLeaseNs), nowNs))
	case l.untilNs != 0 && l.untilNs > l.askedNs+ownerLeaseNs:
		panic(fmt.Sprintf("core: the lease holds until %d, past its last read's %d + %d", l.untilNs, l.askedNs, int64(ownerLeaseNs)))
	}
}

// leaseTick renews the lease when this node owns a placed queue; now
// asks at once (a group just started) unless a read is in flight.
func (n *Node) leaseTick(now bool) {
	l := &n.lease
	if l.token != 0 && n.x.NowNs-l.askedNs < leaseRetryNs {
		return // the read in flight may still be answered
	}
	if (!now && n.x.NowNs-l.askedNs < leaseRenewNs) || !n.ownsPlaced() {
		return
	}
	n.sealer.lastToken++
	l.token, l.askedNs = n.sealer.lastToken, n.x.NowNs
	n.stepCtrl(ctrl.Input{Kind: ctrl.InFreshRead, Seq: l.token})
}

// ownsPlaced reports whether a placed group this node runs is an owner.
func (n *Node) ownsPlaced() bool {
	for _, p := range n.placed {
		if r := n.queue(GroupID(p.queue)); r != nil && r.Owns() && !r.Sealed() {
			return true
		}
	}
	return false
}

// leaseFresh takes the answer to the lease's fresh read.
func (n *Node) leaseFresh(e *ctrl.Effect) bool {
	l := &n.lease
	if l.token == 0 || e.Seq != l.token {
		return false
	}
	l.token = 0
	if e.Result == ctrl.Committed {
		l.untilNs = max(l.untilNs, l.askedNs+ownerLeaseNs)
		for _, p := range n.placed {
			if r := n.queue(GroupID(p.queue)); r != nil {
				r.SetLease(l.untilNs)
			}
		}
	}
	return true
}

// peerProcess is one process of a peer.
type peerProcess struct {
	node    NodeID
	process uint64
}

// goneMax bounds the exits remembered: a few per broker of a cluster.
const goneMax = 256

// peerGone remembers that peer node's process exited (the transport saw
// its connection close and a reconnect fail): it serves nothing any more,
// lease or not.
func (n *Node) peerGone(node NodeID, process uint64) {
	if slices.Contains(n.gone, peerProcess{node, process}) {
		return
	}
	if len(n.gone) >= goneMax {
		n.gone = slices.Delete(n.gone, 0, 1)
	}
	n.gone = append(n.gone, peerProcess{node, process})
}

// exited reports whether this node saw node's process exit.
func (n *Node) exited(node NodeID, process uint64) bool {
	return slices.Contains(n.gone, peerProcess{node, process})
}
