package ctrl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/metadata"
	"github.com/sluicemq/sluice/core/seam"
	"go.etcd.io/raft/v3"
)

// Brokers and liveness. Every member heartbeats the leader it knows (every
// voter when it knows none) with its process and storage instances. The
// leader keeps, in memory, when it last heard each member (all of them
// count as heard when it takes office, so a new leader first waits a full
// expiry). From that it proposes:
//
//   - RegisterBroker when a heartbeat names instances the metadata does not
//     hold live (a new broker, a new process, a new data directory, or a
//     broker back after it left the live set);
//   - BrokerDown when a live broker's heartbeats stopped for
//     liveness.expiry_ms (the setting, read on every tick);
//   - BrokerDown at once on InPeerLost naming the committed process: an
//     explicit connection loss and a failed reconnect (eager failover).
//     Every replica remembers the losses it was told of while the
//     metadata holds the process live, and a new leader proposes them on
//     taking office: the loss of the leader's own broker is told to the
//     followers, one of which leads next (else the survivors' leader
//     would wait a whole expiry for a broker whose exit all of them saw).
//
// A proposal for a broker is not repeated within proposeRetryNs; a change
// of leader forgets all of it (the new leader starts over from the
// committed metadata).

// proposeRetryNs: the leader proposes one broker's change at most this often.
const proposeRetryNs = 1_000_000_000

// heartbeatIntervalMaxNs bounds the gap between a member's heartbeats; with
// a short expiry they come more often (expiry/8).
const heartbeatIntervalMaxNs = 1_000_000_000

// peerMsgVersion and the peer message kinds.
const (
	peerMsgVersion   = 1
	peerMsgHeartbeat = 1
	peerMsgBytesMax  = 64
)

// AppendHeartbeat appends a heartbeat's encoding: version, kind, then the
// node, process and storage instances as uvarints.
func AppendHeartbeat(dst []byte, node, process, storage uint64) []byte {
	dst = append(dst, peerMsgVersion, peerMsgHeartbeat)
	dst = binary.AppendUvarint(dst, node)
	dst = binary.AppendUvarint(dst, process)
	return binary.AppendUvarint(dst, storage)
}

type heartbeatMsg struct{ node, process, storage uint64 }

var errPeerMsg = errors.New("ctrl: peer message does not decode")

// decodeHeartbeat reads a heartbeat exactly: no trailing, truncated or
// padded bytes, no zero field.
func decodeHeartbeat(b []byte) (heartbeatMsg, error) {
	if len(b) > peerMsgBytesMax || len(b) < 2 || b[0] != peerMsgVersion || b[1] != peerMsgHeartbeat {
		return heartbeatMsg{}, errPeerMsg
	}
	b = b[2:]
	var v [3]uint64
	for i := range v {
		x, n := binary.Uvarint(b)
		if n <= 0 || n != len(binary.AppendUvarint(nil, x)) || x == 0 {
			return heartbeatMsg{}, errPeerMsg
		}
		v[i], b = x, b[n:]
	}
	if len(b) != 0 || v[0] > 1<<32-1 {
		return heartbeatMsg{}, errPeerMsg
	}
	return heartbeatMsg{node: v[0], process: v[1], storage: v[2]}, nil
}

// AppendPeerMsgText renders a controller peer message.
func AppendPeerMsgText(dst []byte, msg []byte) []byte {
	if len(msg) >= 2 && msg[1] == peerMsgActivate {
		c, err := decodeActivate(msg)
		if err != nil {
			return fmt.Appendf(dst, "ctrl-peer undecodable bytes=%d", len(msg))
		}
		if c.Kind == metadata.Plan {
			return append(append(dst, "plan-request "...), c.String()...)
		}
		return append(append(dst, "activate-request "...), c.String()...)
	}
	if len(msg) >= 2 && msg[1] == peerMsgAdmit {
		r, err := decodeAdmit(msg)
		if err != nil {
			return fmt.Appendf(dst, "ctrl-peer undecodable bytes=%d", len(msg))
		}
		return fmt.Appendf(dst, "admit-request q=%d incarnation=%d epoch=%d learner=n%d/%d/%d", r.queue, r.incarnation, r.epoch,
			r.learner.Node, r.learner.Process, r.learner.Storage)
	}
	if len(msg) >= 2 && msg[1] == peerMsgInSync {
		r, err := decodeInSync(msg)
		if err != nil {
			return fmt.Appendf(dst, "ctrl-peer undecodable bytes=%d", len(msg))
		}
		return fmt.Appendf(dst, "in-sync-request q=%d incarnation=%d epoch=%d version=%d in-sync=%v", r.queue, r.incarnation, r.epoch, r.version, r.inSync.Slice())
	}
	hb, err := decodeHeartbeat(msg)
	if err != nil {
		return fmt.Appendf(dst, "ctrl-peer undecodable bytes=%d", len(msg))
	}
	return fmt.Appendf(dst, "heartbeat n%d process=%d storage=%d", hb.node, hb.process, hb.storage)
}

// heard is what the leader knows of one member's heartbeats.
type heard struct {
	node       uint64
	atNs       int64 // the last heartbeat (or the leader's taking office)
	proposedNs int64 // the last proposal about it; 0 none
	// proposed is that proposal: the same one is not repeated within
	// proposeRetryNs, another goes at once
	proposed metadata.Command
}

// heartbeat sends this node's heartbeat when it is due.
func (g *Group) heartbeat() {
	if g.cfg.Process == 0 || g.nowNs < g.nextHeartbeatNs {
		return
	}
	interval := min(g.md.Setting(metadata.LivenessExpiryMs)*1_000_000/8, heartbeatIntervalMaxNs)
	g.nextHeartbeatNs = g.nowNs + max(interval, g.cfg.TickNs)
	st := g.rn.BasicStatus()
	if st.RaftState == raft.StateLeader {
		g.onHeartbeat(heartbeatMsg{node: g.cfg.ID, process: g.cfg.Process, storage: g.cfg.Storage})
		return
	}
	msg := AppendHeartbeat(nil, g.cfg.ID, g.cfg.Process, g.cfg.Storage)
	if st.Lead != 0 && st.Lead != g.cfg.ID {
		g.out = append(g.out, Effect{Kind: EfSendPeer, To: st.Lead, Msg: msg})
		return
	}
	for _, v := range g.voters {
		if v != g.cfg.ID {
			g.out = append(g.out, Effect{Kind: EfSendPeer, To: v, Msg: slices.Clone(msg)})
		}
	}
}

func (g *Group) peerMessage(in Input) {
	if len(in.Msg) >= 2 && (in.Msg[1] == peerMsgActivate || in.Msg[1] == peerMsgInSync || in.Msg[1] == peerMsgAdmit) {
		// A request for the leader: decoded exactly, or refused.
		var err error
		switch in.Msg[1] {
		case peerMsgActivate:
			var c metadata.Command
			if c, err = decodeActivate(in.Msg); err == nil {
				g.onActivate(c)
			}
		case peerMsgInSync:
			var r inSyncReq
			if r, err = decodeInSync(in.Msg); err == nil {
				g.onInSync(in.From, r)
			}
		case peerMsgAdmit:
			var r admitReq
			if r, err = decodeAdmit(in.Msg); err == nil {
				g.onAdmit(in.From, r)
			}
		}
		if err != nil {
			g.note("refused peer message from %d: %v", in.From, err)
		}
		return
	}
	hb, err := decodeHeartbeat(in.Msg)
	if err != nil || hb.node != in.From {
		g.note("refused peer message from %d: %d bytes that are no heartbeat of it", in.From, len(in.Msg))
		return
	}
	if _, ok := slices.BinarySearch(g.members, hb.node); !ok {
		g.note("refused heartbeat from %d: not a member", in.From)
		return
	}
	if g.rn.BasicStatus().RaftState != raft.StateLeader {
		return // a stale view of the leader; the sender learns the new one from raft
	}
	g.onHeartbeat(hb)
}

// office resets the leader's liveness view when it takes office (a new
// term): every member counts as just heard. It reports whether it did.
func (g *Group) office() bool {
	term := g.rn.BasicStatus().GetTerm()
	if g.heardTerm == term {
		return false
	}
	g.heardTerm = term
	g.heard = g.heard[:0]
	g.placing = g.placing[:0]
	for _, m := range g.members {
		g.heard = append(g.heard, heard{node: m, atNs: g.nowNs})
	}
	return true
}

func (g *Group) heardOf(node uint64) *heard {
	g.office()
	i, ok := slices.BinarySearchFunc(g.heard, node, func(h heard, n uint64) int {
		switch {
		case h.node < n:
			return -1
		case h.node > n:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return &g.heard[i]
}

// onHeartbeat is a heartbeat at the leader.
func (g *Group) onHeartbeat(hb heartbeatMsg) {
	h := g.heardOf(hb.node)
	if h == nil {
		return
	}
	b, known := g.md.Broker(seam.NodeID(hb.node))
	if known && hb.process < b.Process {
		return // a delayed heartbeat of an older process
	}
	h.atNs = g.nowNs
	if known && b.Live && b.Process == hb.process && b.Storage == hb.storage {
		return
	}
	g.proposeFor(h, metadata.Command{Kind: metadata.RegisterBroker, Node: seam.NodeID(hb.node), Process: hb.process, Storage: hb.storage})
}

// livenessCheck, at the leader on every tick: a live broker not heard for
// the expiry leaves the live set.
func (g *Group) livenessCheck() {
	if g.office() && g.cfg.Process != 0 {
		// A leader taking office knows itself alive: its own heartbeat.
		g.onHeartbeat(heartbeatMsg{node: g.cfg.ID, process: g.cfg.Process, storage: g.cfg.Storage})
	}
	if len(g.lost) > 0 {
		g.proposeLost()
	}
	expiryNs := g.md.Setting(metadata.LivenessExpiryMs) * 1_000_000
	for _, b := range g.md.Brokers() {
		if !b.Live {
			continue
		}
		h := g.heardOf(uint64(b.Node))
		if h == nil || g.nowNs-h.atNs <= expiryNs {
			continue
		}
		g.proposeFor(h, metadata.Command{Kind: metadata.BrokerDown, Node: b.Node, Process: b.Process})
	}
}

// leaderGoneJitterDiv: a voter whose leader's process exited campaigns in
// its slot of CampaignTimeoutNs / leaderGoneJitterDiv: the first voter
// after the gone leader (by id) at once, the k-th k slots on, each within
// one slot's jitter.
const leaderGoneJitterDiv = 4

// leaderGoneRank is this voter's place among the voters other than the
// gone leader, by id: 0 for the lowest.
func (g *Group) leaderGoneRank() int {
	rank := 0
	for _, v := range g.cfg.Voters {
		if v != g.goneLeader && v < g.cfg.ID {
			rank++
		}
	}
	return rank
}

// lostPeer is a peer process whose exit this replica was told of.
type lostPeer struct{ node, process uint64 }

// peerLost is eager failover: a live broker whose committed process's
// connection was lost (and a reconnect failed) leaves at once, proposed by
// the leader now or by whichever replica leads next.
func (g *Group) peerLost(in Input) {
	if st := g.rn.BasicStatus(); st.RaftState != raft.StateLeader && st.Lead == in.From && g.isVoter {
		if b, ok := g.md.Broker(seam.NodeID(in.From)); ok && b.Process == in.Process {
			// The leader this voter follows is gone (its process exited,
			// a reconnect failed): elect another now, not after the
			// failure detector's timeout.
			g.leaderGone, g.goneLeader = true, in.From
			if g.leaderGoneRank() == 0 {
				// The first voter after it: no other campaigns within a
				// slot, so no vote to split; a tick (20 ms in the daemon)
				// is worth saving on the path of an owner's failover.
				g.note("leader n%d's process %d exited: campaigning now, the first voter after it", in.From, in.Process)
				if err := g.rn.Campaign(); err != nil {
					g.note("campaign failed: %v", err)
				}
				g.heardNs, g.campaignAtNs, g.leaderGone = in.NowNs, 0, false
			} else {
				g.note("leader n%d's process %d exited: campaigning at a tick %d slots on", in.From, in.Process, g.leaderGoneRank())
			}
		}
	}
	b, ok := g.md.Broker(seam.NodeID(in.From))
	if !ok || !b.Live || b.Process != in.Process {
		return // gone already, or a newer process runs
	}
	if i := slices.IndexFunc(g.lost, func(l lostPeer) bool { return l.node == in.From }); i >= 0 {
		g.lost[i].process = in.Process
	} else if len(g.lost) < metadata.BrokersMax {
		g.lost = append(g.lost, lostPeer{node: in.From, process: in.Process})
	}
	if g.rn.BasicStatus().RaftState == raft.StateLeader {
		g.proposeLost()
	}
}

// proposeLost, at the leader: each remembered loss whose process the
// metadata still holds live is proposed down (at most once per
// proposeRetryNs); the others are forgotten.
func (g *Group) proposeLost() {
	g.lost = slices.DeleteFunc(g.lost, func(l lostPeer) bool {
		b, ok := g.md.Broker(seam.NodeID(l.node))
		if !ok || !b.Live || b.Process != l.process {
			return true
		}
		if h := g.heardOf(l.node); h != nil {
			g.proposeFor(h, metadata.Command{Kind: metadata.BrokerDown, Node: b.Node, Process: b.Process})
		}
		return false
	})
}

// proposeFor proposes a change about h's broker; the same change at most
// once per proposeRetryNs (an earlier one may still be on its way to
// commit).
func (g *Group) proposeFor(h *heard, c metadata.Command) {
	if h.proposedNs != 0 && h.proposed == c && g.nowNs-h.proposedNs < proposeRetryNs {
		return
	}
	h.proposedNs, h.proposed = g.nowNs, c
	if err := g.rn.Propose(c.Encode(nil)); err != nil {
		g.note("propose %s: %v", c.String(), err)
		return
	}
	g.note("proposed %s", c.String())
}
