package ctrl

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/metadata"
	"go.etcd.io/raft/v3"
)

// Activation requests: a recovery worker that holds a verified source asks
// the leader to commit its Plan command, and once enough members installed
// it, the Activate command it built. The leader proposes it when it names a
// pending transition as the leader applied it (the metadata checks the
// rest at apply: the digest, the proposed members live with their exact
// instances, W installed); a request for anything else is dropped, and
// the worker asks again.

// peerMsgActivate is the activation request's kind: version, kind, then
// the Activate command's encoding.
const peerMsgActivate = 3

// activateMsgBytesMax bounds an activation request.
const activateMsgBytesMax = 2 + metadata.CommandBytesMax

// AppendActivateRequest appends the request for activation (or plan)
// command cmd.
func AppendActivateRequest(dst []byte, cmd *metadata.Command) []byte {
	return cmd.Encode(append(dst, peerMsgVersion, peerMsgActivate))
}

// decodeActivate reads an activation request exactly.
func decodeActivate(b []byte) (metadata.Command, error) {
	if len(b) > activateMsgBytesMax || len(b) < 2 || b[0] != peerMsgVersion || b[1] != peerMsgActivate {
		return metadata.Command{}, fmt.Errorf("not an activation request")
	}
	c, err := metadata.Decode(b[2:])
	if err != nil {
		return metadata.Command{}, err
	}
	if c.Kind != metadata.Activate && c.Kind != metadata.Plan {
		return metadata.Command{}, fmt.Errorf("an activation request carrying a %s command", c.Kind)
	}
	return c, nil
}

// requestActivate is this node's worker asking: handled here when this
// node leads, else sent to the leader it knows (dropped when it knows
// none; the worker asks again).
func (g *Group) requestActivate(in Input) {
	c, err := decodeActivate(in.Msg)
	if err != nil {
		panic("ctrl: the node's own activation request does not decode: " + err.Error())
	}
	st := g.rn.BasicStatus()
	switch {
	case st.RaftState == raft.StateLeader:
		g.onActivate(c)
	case st.Lead != 0:
		g.out = append(g.out, Effect{Kind: EfSendPeer, To: st.Lead, Msg: slices.Clone(in.Msg)})
	}
}

// onActivate is a request at the leader.
func (g *Group) onActivate(c metadata.Command) {
	if g.rn.BasicStatus().RaftState != raft.StateLeader {
		return
	}
	q, ok := g.md.Queue(c.Queue)
	if !ok || q.Incarnation != c.Incarnation || !q.Assignment.Fenced || q.Assignment.Epoch != c.Epoch || q.Assignment.Pending.Digest != c.Digest {
		return // stale
	}
	g.proposePlacement(c)
}
