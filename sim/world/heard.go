package world

import (
	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/seam"
)

// noteHeard records that b, the owner of a placed queue as the world
// follows it, took in a message of the queue's group from a member's
// named process (the sender's incarnation as the event carries it, the
// world's own knowledge, never the message's word), sent after that
// member applied the assignment: a message it sent before, arriving late
// (a delayed or late duplicate, a clogged link), is an earlier epoch's,
// which the owner's group refuses, and protects nothing (seed 2867: three
// epoch-1 replies of an isolated member, delivered after the activation
// of epoch 2, had it judged as heard).
func (w *World) noteHeard(b *broker, e *event, g core.GroupID) {
	if g >= seam.GroupReservedMin {
		return
	}
	q := w.placedByID[core.QueueID(g)]
	if q == nil || q.owner != b.id {
		return
	}
	for i, n := range q.members {
		if n != e.from || i >= len(q.processes) || q.processes[i] != e.inc+1 ||
			i >= len(q.sinceNs) || q.sinceNs[i] < 0 || e.t0 <= q.sinceNs[i] {
			continue
		}
		h := w.heardNs[q.id]
		for len(h) < len(q.members) {
			h = append(h, -1)
		}
		h[i] = w.now
		w.heardNs[q.id] = h
	}
}

// heard returns when q's owner last took in a message from member node's
// named process (-1: never, or not a member now).
func (w *World) heard(q core.QueueID, node core.NodeID) int64 {
	p := w.placedByID[q]
	if p == nil {
		return -1
	}
	h := w.heardNs[q]
	for i, n := range p.members {
		if n == node && i < len(h) {
			return h[i]
		}
	}
	return -1
}
