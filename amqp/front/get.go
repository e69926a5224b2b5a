package front

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/core/seam"
)

// basic.get and queue.purge.
//
// A basic.get asks the queue's owner for its count (ReqCount); with
// nothing ready it is get-empty; otherwise a core client of its own
// subscribes for one delivery and no more (seam.Request.Once) and that
// delivery is the get-ok (its message count the ready count less it).
// That client holds the delivery
// until the client settles it (at once for no-ack), then ends; with no
// delivery within getWaitNs (another consumer took what was ready) the
// get is get-empty and the client ends, so a late delivery goes back to
// the queue. The subscription counts as a consumer while it lasts, as a
// basic.get does not in RabbitMQ.
//
// A queue.purge asks the owner to settle what is ready (seam.ReqPurge),
// PurgeRecordsMax at a time, until a request settles fewer; purge-ok
// reports the total.

// getWaitNs bounds a basic.get's wait for its delivery.
const getWaitNs = 200_000_000

// getOp is a basic.get in progress, or its delivery held until settled.
type getOp struct {
	op        conn.OpID
	name      string
	queue     seam.QueueID
	node      seam.NodeID // the owner it went to (0: this broker)
	noAck     bool
	client    seam.ClientID // its subscription's (once asked)
	ready     uint64        // the owner's count
	untilNs   int64         // get-empty past it, while no delivery came
	delivered bool
}

// purgeOp is a queue.purge in progress.
type purgeOp struct {
	op      conn.OpID
	name    string
	queue   seam.QueueID
	node    seam.NodeID
	total   uint64
	atNs    int64 // asked again then (in connState.purges)
	untilNs int64
}

// purgesDue asks again the purges whose time came.
func (f *Front) purgesDue(c *connState) {
	var due []*purgeOp
	c.purges, due = takeDue(c.purges, f.nowNs, func(p *purgeOp) int64 { return p.atNs })
	for _, p := range due {
		f.request(c, c.client, seam.Request{Kind: seam.ReqPurge, Queue: p.queue}, &pending{kind: pPurge, purge: p}, p.node)
	}
}

// parked is a basic.get or queue.purge waiting for the publishes to its
// queue sent before it on the connection to be answered: the client's
// order (a publish, then a get of the same queue) holds.
type parked struct {
	queue seam.QueueID
	name  string
	op    conn.Effect
}

// publishesPending says whether publishes of c to queue q are unanswered.
func (c *connState) publishesPending(q seam.QueueID) bool {
	return c.inflight[q] > 0 || slices.ContainsFunc(c.retry, func(p pubItem) bool { return p.queue == q })
}

// park holds op until c's publishes to q are answered; it reports whether
// it did.
func (f *Front) park(c *connState, q seam.QueueID, name string, op conn.Effect) bool {
	if !c.publishesPending(q) && !slices.ContainsFunc(c.parked, func(p parked) bool { return p.queue == q }) {
		return false
	}
	c.parked = append(c.parked, parked{queue: q, name: name, op: op})
	return true
}

// unpark runs the parked operations whose queues have no publish
// unanswered, in order.
func (f *Front) unpark(c *connState) {
	if len(c.parked) == 0 {
		return
	}
	var waiting []seam.QueueID
	keep := c.parked[:0]
	var run []parked
	for _, p := range c.parked {
		if slices.Contains(waiting, p.queue) || c.publishesPending(p.queue) {
			waiting = append(waiting, p.queue)
			keep = append(keep, p)
			continue
		}
		run = append(run, p)
	}
	c.parked = keep
	for _, p := range run {
		f.resolved(c, p.queue, p.name, p.op)
	}
}

// ownerFor is the broker operation op on queue q goes to (0: this one);
// with none serving it known, op is refused (405) and ok is false.
func (f *Front) ownerFor(c *connState, q seam.QueueID, name string, op conn.OpID) (node seam.NodeID, ok bool) {
	node, ok = f.route(q)
	if !ok {
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: op, Code: wire.ResourceLocked, Text: fmt.Sprintf("queue '%s' has no serving owner now", name)})
		return 0, false
	}
	if node == f.cfg.Node {
		node = 0
	}
	return node, true
}

// getStart begins basic.get x on queue q.
func (f *Front) getStart(c *connState, q seam.QueueID, name string, x conn.EfGet) {
	if f.lockedFor(c, name) {
		f.refuseLocked(c, x.Op, name)
		return
	}
	if f.park(c, q, name, x) {
		return
	}
	node, ok := f.ownerFor(c, q, name, x.Op)
	if !ok {
		return
	}
	g := &getOp{op: x.Op, name: name, queue: q, node: node, noAck: x.NoAck}
	f.request(c, c.client, seam.Request{Kind: seam.ReqCount, Queue: q}, &pending{kind: pGetCount, get: g}, node)
}

// getCounted takes the owner's count for get g.
func (f *Front) getCounted(c *connState, g *getOp, e *seam.Effect) {
	switch {
	case e.Outcome != seam.Confirmed:
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: g.op, Code: wire.ResourceLocked, Text: fmt.Sprintf("cannot get from queue '%s': %s", g.name, e.Reason)})
	case e.Offset == 0:
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: g.op}) // get-empty
	default:
		g.ready = e.Offset
		g.client = f.newGetClient(c.id)
		g.untilNs = f.nowNs + getWaitNs
		c.gets = append(c.gets, g)
		f.request(c, g.client, seam.Request{Kind: seam.ReqSubscribe, Queue: g.queue, Prefetch: 1, Once: true}, &pending{kind: pGetSub, get: g}, g.node)
	}
}

// newGetClient is a core client for a get of connection id.
func (f *Front) newGetClient(id ConnID) seam.ClientID {
	f.lastClient++
	f.clients[f.lastClient] = clientRef{conn: id, get: true}
	return f.lastClient
}

// getSubscribed takes the subscription's answer: refused, the get is
// get-empty (an exclusive consumer holds the queue, say).
func (f *Front) getSubscribed(c *connState, g *getOp, e *seam.Effect) {
	if e.Outcome != seam.Confirmed && !g.delivered {
		f.getEnd(c, g)
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: g.op})
	}
}

// getDelivered takes the delivery of get g: the get-ok.
func (f *Front) getDelivered(c *connState, g *getOp, msg conn.Message, offset uint64) {
	if g.delivered {
		// Prefetch 1: the core never hands a second one before the
		// first is settled, and the client ends with that.
		panic(fmt.Sprintf("front: a second delivery for basic.get of queue %s", g.name))
	}
	g.delivered = true
	if g.noAck {
		f.request(c, g.client, seam.Request{Kind: seam.ReqAck, Queue: g.queue, Offset: offset}, nil, g.node)
		f.getEnd(c, g)
	} else {
		c.held[heldKey{queue: g.name, handle: msg.Handle}] = g.client
	}
	f.input(c, conn.InResult{NowNs: f.nowNs, Op: g.op, Message: &msg, MessageCount: uint32(min(g.ready-1, 1<<32-1))})
}

// getEnd ends get g's core client (its delivery, if unsettled, goes back).
func (f *Front) getEnd(c *connState, g *getOp) {
	if g.client != 0 {
		delete(f.clients, g.client)
		f.out = append(f.out, Effect{Kind: EfClientGone, Client: g.client, Node: g.node})
	}
	c.gets = slices.DeleteFunc(c.gets, func(x *getOp) bool { return x == g })
}

// getOf returns the get whose client cl is, or nil.
func (c *connState) getOf(cl seam.ClientID) *getOp {
	for _, g := range c.gets {
		if g.client == cl {
			return g
		}
	}
	return nil
}

// getsDue answers get-empty the gets that waited for their delivery in
// vain.
func (f *Front) getsDue(c *connState) {
	for _, g := range slices.Clone(c.gets) {
		if !g.delivered && g.untilNs <= f.nowNs {
			f.getEnd(c, g)
			f.input(c, conn.InResult{NowNs: f.nowNs, Op: g.op})
		}
	}
}

// purgeStart begins queue.purge x of queue q.
func (f *Front) purgeStart(c *connState, q seam.QueueID, name string, x conn.EfPurgeQueue) {
	if f.lockedFor(c, name) {
		f.refuseLocked(c, x.Op, name)
		return
	}
	if f.park(c, q, name, x) {
		return
	}
	node, ok := f.ownerFor(c, q, name, x.Op)
	if !ok {
		return
	}
	p := &purgeOp{op: x.Op, name: name, queue: q, node: node, untilNs: f.nowNs + f.cfg.DeclareTimeoutNs}
	f.request(c, c.client, seam.Request{Kind: seam.ReqPurge, Queue: q}, &pending{kind: pPurge, purge: p}, node)
}

// purged takes the owner's answer to one purge request.
func (f *Front) purged(c *connState, p *purgeOp, e *seam.Effect) {
	if e.Outcome == seam.Failed && e.Reason == reasonNotReady && f.nowNs+f.cfg.RetryNs <= p.untilNs {
		// Placed and not serving yet (a new queue's first epoch, or a
		// restart's rebuild): ask again.
		p.atNs = f.nowNs + f.cfg.RetryNs
		c.purges = append(c.purges, p)
		return
	}
	if e.Outcome != seam.Confirmed {
		f.input(c, conn.InResult{NowNs: f.nowNs, Op: p.op, Code: wire.ResourceLocked, Text: fmt.Sprintf("cannot purge queue '%s': %s", p.name, e.Reason)})
		return
	}
	p.total += e.Offset
	if e.Offset >= seam.PurgeRecordsMax {
		f.request(c, c.client, seam.Request{Kind: seam.ReqPurge, Queue: p.queue}, &pending{kind: pPurge, purge: p}, p.node)
		return
	}
	f.input(c, conn.InResult{NowNs: f.nowNs, Op: p.op, MessageCount: uint32(min(p.total, 1<<32-1))})
}
