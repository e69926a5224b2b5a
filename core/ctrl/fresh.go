package ctrl

import (
	"encoding/binary"
	"fmt"

	"go.etcd.io/raft/v3"
)

// Fresh reads. A node that must act on committed metadata it cannot trust
// to be current (a replica asked to seal its log for a transition must
// act on a fresh committed view, never on stale local metadata:
// docs/design/metadata-group.md, "Fresh reads") asks for a fresh read. The group asks raft for a read index (ReadIndex, forwarded
// to the leader, which confirms its leadership with a quorum of heartbeats
// before it answers with its commit index), then waits until it applied
// that index: whatever was committed when the read was asked is then in
// the applied metadata. No entry is written. A read with no leader to
// answer it is dropped by raft, silently: the group asks raft again every
// FreshReadRetryNs while no index came (so a read asked while no leader
// was known is answered soon after one is, not only when the caller gives
// up), and the caller learns of a read that found no leader for
// FreshReadTimeoutNs by an Unknown answer.

// FreshReadTimeoutNs is how long a fresh read waits for its answer (a
// seal's authorization gives up after ten seconds); FreshReadRetryNs how
// long it waits for a read index before it asks raft again.
const (
	FreshReadTimeoutNs = 10_000_000_000
	FreshReadRetryNs   = 1_000_000_000
)

// freshReadsMax bounds the fresh reads pending at once; one more is
// answered Unknown at once.
const freshReadsMax = 64

// freshRead is one fresh read asked and not yet answered.
type freshRead struct {
	token uint64 // the caller's (Input.Seq)
	ctx   uint64 // raft's request context: the group's own counter
	atNs  int64
	// askedNs: when raft was last asked for its read index
	askedNs int64
	index   uint64 // the read index, once known
	known   bool
}

type freshReads struct {
	pending []freshRead
	lastCtx uint64
}

func (g *Group) freshRead(in Input) {
	if len(g.fresh.pending) >= freshReadsMax {
		g.freshAnswer(in.Seq, Unknown, 0, fmt.Sprintf("%d fresh reads pending already", freshReadsMax))
		return
	}
	g.fresh.lastCtx++
	r := freshRead{token: in.Seq, ctx: g.fresh.lastCtx, atNs: in.NowNs, askedNs: in.NowNs}
	g.fresh.pending = append(g.fresh.pending, r)
	g.rn.ReadIndex(binary.BigEndian.AppendUint64(nil, r.ctx))
}

// readStates records the read indexes raft answered.
func (g *Group) readStates(rs []raft.ReadState) {
	for _, s := range rs {
		if len(s.RequestCtx) != 8 {
			continue
		}
		ctx := binary.BigEndian.Uint64(s.RequestCtx)
		for i := range g.fresh.pending {
			if r := &g.fresh.pending[i]; r.ctx == ctx && !r.known {
				r.index, r.known = s.Index, true
			}
		}
	}
}

// answerFresh answers the reads whose index this node applied, and those
// that waited too long.
func (g *Group) answerFresh() {
	if len(g.fresh.pending) == 0 {
		return
	}
	keep := g.fresh.pending[:0]
	for _, r := range g.fresh.pending {
		switch {
		case r.known && g.applied >= r.index:
			g.freshAnswer(r.token, Committed, r.index, "")
		case g.nowNs-r.atNs >= FreshReadTimeoutNs:
			why := "no leader answered"
			if r.known {
				why = fmt.Sprintf("index %d not applied (at %d)", r.index, g.applied)
			}
			g.freshAnswer(r.token, Unknown, 0, why)
		default:
			if !r.known && g.nowNs-r.askedNs >= FreshReadRetryNs {
				// Dropped, most likely (no leader then): ask again, under
				// the same context (a late answer to the first ask is as
				// good).
				r.askedNs = g.nowNs
				g.rn.ReadIndex(binary.BigEndian.AppendUint64(nil, r.ctx))
			}
			keep = append(keep, r)
		}
	}
	clear(g.fresh.pending[len(keep):])
	g.fresh.pending = keep
}

func (g *Group) freshAnswer(token uint64, res Result, index uint64, why string) {
	g.out = append(g.out, Effect{Kind: EfFresh, Seq: token, Result: res, Index: index, Note: why})
}
