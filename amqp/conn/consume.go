package conn

import (
	"fmt"
	"math"
	"slices"

	"github.com/sluicemq/sluice/amqp/wire"
)

// Consuming: basic.qos, consume, cancel, deliver, get, and the settling of
// deliveries (ack, nack, reject, recover).

type consState uint8

const (
	consSubscribing consState = iota + 1 // EfSubscribe not answered yet
	consActive
)

// consumer is one AMQP consumer: a subscription of a channel.
type consumer struct {
	sub       SubID
	tag       string
	queue     string
	ch        *channel
	noAck     bool
	prefetch  uint16 // the PrefetchCount the broker was given
	unsettled int    // its deliveries in ch.unacked
	state     consState
	// cancelling: basic.cancel came (deliveries still go out until the
	// broker answers). The issued flags say whether EfSubscribe and
	// EfCancel have left, which decides what a closing channel must undo.
	cancelling   bool
	subIssued    bool
	cancelIssued bool
}

// unacked is a delivery the client has not settled.
type unacked struct {
	tag    uint64
	queue  string
	handle Handle
	cons   *consumer // nil for basic.get
}

func (ch *channel) consumerByTag(tag string) *consumer {
	for _, k := range ch.consumers {
		if k.tag == tag {
			return k
		}
	}
	return nil
}

// onQos stores the prefetch count. prefetch_size is refused as RabbitMQ
// does (540): byte-based windows are not implemented. global=false (what
// clients send by default) applies to consumers created after it on the
// channel; global=true is stored and refused at basic.consume, as
// RabbitMQ's quorum queues refuse it: a window shared by several queues'
// subscriptions cannot be kept by their separate owners.
func (c *Conn) onQos(ch *channel, x *wire.BasicQos) {
	cls, id := x.ID()
	if x.PrefetchSize != 0 {
		c.fail(ch, errorf(wire.NotImplemented, cls, id, "prefetch_size=%d is not supported; use prefetch_count", x.PrefetchSize))
		return
	}
	if x.Global {
		ch.prefetchGlob = x.PrefetchCount
	} else {
		ch.prefetchCount = x.PrefetchCount
	}
	c.reply(ch, &wire.BasicQosOk{})
}

// effectivePrefetch bounds every subscription's window: 0 (unlimited in
// AMQP) and counts above the limit become Config.PrefetchMax.
func (c *Conn) effectivePrefetch(n uint16) uint16 {
	if n == 0 || n > c.cfg.PrefetchMax {
		return c.cfg.PrefetchMax
	}
	return n
}

func (c *Conn) onConsume(ch *channel, x *wire.BasicConsume) {
	cls, id := x.ID()
	q, ok := c.queueName(ch, x.Queue, cls, id)
	if !ok {
		return
	}
	if ch.prefetchGlob != 0 {
		c.fail(ch, errorf(wire.PreconditionFailed, cls, id, "basic.qos global=true (prefetch %d) is not supported for Sluice queues, as for quorum queues", ch.prefetchGlob))
		return
	}
	tag := x.ConsumerTag
	if tag == "" {
		for {
			c.lastCtag++
			tag = fmt.Sprintf("amq.ctag-%d", c.lastCtag)
			if ch.consumerByTag(tag) == nil {
				break
			}
		}
	} else if ch.consumerByTag(tag) != nil {
		c.fail(ch, errorf(wire.NotAllowed, cls, id, "consumer tag %q is in use on channel %d", tag, ch.id))
		return
	}
	if len(ch.consumers) >= c.cfg.ConsumersPerChannelMax {
		c.fail(ch, errorf(wire.ResourceError, cls, id, "channel %d has %d consumers, the limit", ch.id, len(ch.consumers)))
		return
	}
	var priority int32
	if v, ok := x.Arguments.Get("x-priority"); ok {
		n, isInt := x.Arguments.Int("x-priority")
		if !isInt || n < math.MinInt32 || n > math.MaxInt32 {
			c.fail(ch, errorf(wire.PreconditionFailed, cls, id, "invalid arg 'x-priority' for consumer: %v is not a 32-bit integer", v))
			return
		}
		priority = int32(n)
	}
	c.lastSub++
	k := &consumer{sub: c.lastSub, tag: tag, queue: q, ch: ch, noAck: x.NoAck,
		prefetch: c.effectivePrefetch(ch.prefetchCount), state: consSubscribing}
	ch.consumers = append(ch.consumers, k)
	c.subs[k.sub] = k
	c.enqueue(ch, &request{kind: reqSubscribe, sub: k.sub, cons: k, noWait: x.NoWait, classID: cls, methodID: id, queue: q,
		effect: EfSubscribe{Sub: k.sub, Queue: q, ConsumerTag: tag, PrefetchCount: k.prefetch, NoAck: x.NoAck, Exclusive: x.Exclusive, Priority: priority}})
}

// dropConsumer forgets a consumer; its unacked deliveries stay unacked (the
// client may still settle them). Idempotent.
func (c *Conn) dropConsumer(ch *channel, k *consumer) {
	i := slices.Index(ch.consumers, k)
	if i < 0 {
		return
	}
	ch.consumers = slices.Delete(ch.consumers, i, i+1)
	delete(c.subs, k.sub)
}

// onCancel: an unknown tag is answered cancel-ok at once, as RabbitMQ
// does; a known one after the broker confirms no delivery follows.
func (c *Conn) onCancel(ch *channel, x *wire.BasicCancel) {
	cls, id := x.ID()
	k := ch.consumerByTag(x.ConsumerTag)
	if k == nil || k.cancelling {
		if !x.NoWait {
			c.reply(ch, &wire.BasicCancelOk{ConsumerTag: x.ConsumerTag})
		}
		return
	}
	k.cancelling = true
	c.enqueue(ch, &request{kind: reqCancel, sub: k.sub, cons: k, noWait: x.NoWait, classID: cls, methodID: id,
		effect: EfCancel{Sub: k.sub}})
}

// onCancelled: the broker ended a subscription (its queue was deleted).
// A client that announced consumer_cancel_notify gets basic.cancel.
func (c *Conn) onCancelled(x InCancelled) {
	assert(x.Sub > 0 && x.Sub <= c.lastSub, "a cancel for a subscription the machine made")
	if c.state != stOpened {
		return
	}
	k := c.subs[x.Sub]
	if k == nil {
		return
	}
	c.dropConsumer(k.ch, k)
	if c.cancelNotify {
		c.writeMethod(k.ch.id, &wire.BasicCancel{ConsumerTag: k.tag, NoWait: true})
	}
}

// onDelivery gives a delivery its channel's next tag and writes it. A
// delivery for a subscription that is gone (its channel closed) returns to
// its queue; while the connection closes, deliveries are dropped: the
// session's end returns every unsettled one.
func (c *Conn) onDelivery(x InDelivery) {
	assert(x.Sub > 0 && x.Sub <= c.lastSub, "a delivery for a subscription the machine made")
	if c.state != stOpened {
		return
	}
	k := c.subs[x.Sub]
	if k == nil {
		c.emit(EfSettle{Queue: x.Queue, Handle: x.Message.Handle, How: SettleNack, Requeue: true})
		return
	}
	assert(k.state != consSubscribing, "no delivery before the subscription is answered")
	assert(x.Queue == k.queue, "a delivery comes from its subscription's queue")
	ch := k.ch
	if !k.noAck {
		assert(k.unsettled < int(k.prefetch), "the broker keeps within the prefetch window")
	}
	ch.lastDelivery++
	tag := ch.lastDelivery
	m := &wire.BasicDeliver{ConsumerTag: k.tag, DeliveryTag: tag, Redelivered: x.Message.Redelivered,
		Exchange: x.Message.Exchange, RoutingKey: x.Message.RoutingKey}
	if err := c.writeContent(ch.id, m, &x.Message.Content); err != nil {
		c.connError(errorf(wire.ResourceError, 0, 0, "a message for consumer %q does not fit this connection's frame_max %d: %v", k.tag, c.frameMaxBytes, err))
		return
	}
	if !k.noAck {
		k.unsettled++
		ch.unacked = append(ch.unacked, unacked{tag: tag, queue: k.queue, handle: x.Message.Handle, cons: k})
	}
}

func (c *Conn) onGet(ch *channel, x *wire.BasicGet) {
	cls, id := x.ID()
	q, ok := c.queueName(ch, x.Queue, cls, id)
	if !ok {
		return
	}
	if !x.NoAck {
		if ch.getUnacked >= c.cfg.GetUnackedPerChannelMax {
			c.fail(ch, errorf(wire.PreconditionFailed, cls, id, "channel %d holds %d unacknowledged basic.get deliveries, the limit", ch.id, ch.getUnacked))
			return
		}
		ch.getUnacked++ // reserved now, released if the queue is empty
	}
	c.enqueue(ch, &request{kind: reqGet, noAck: x.NoAck, classID: cls, methodID: id, queue: q,
		effect: EfGet{Queue: q, NoAck: x.NoAck}})
}

func (c *Conn) onGetResult(ch *channel, r *request, x InResult) {
	if x.Message == nil {
		if !r.noAck {
			ch.getUnacked--
		}
		c.writeMethod(ch.id, &wire.BasicGetEmpty{})
		return
	}
	ch.lastDelivery++
	tag := ch.lastDelivery
	m := &wire.BasicGetOk{DeliveryTag: tag, Redelivered: x.Message.Redelivered, Exchange: x.Message.Exchange,
		RoutingKey: x.Message.RoutingKey, MessageCount: x.MessageCount}
	if err := c.writeContent(ch.id, m, &x.Message.Content); err != nil {
		c.connError(errorf(wire.ResourceError, 0, 0, "a message got from %q does not fit this connection's frame_max %d: %v", r.queue, c.frameMaxBytes, err))
		return
	}
	if !r.noAck {
		ch.unacked = append(ch.unacked, unacked{tag: tag, queue: r.queue, handle: x.Message.Handle})
	}
}

// settle handles basic.ack, nack and reject. Delivery tags are the
// channel's, so the machine expands multiple into the deliveries it
// covers, in tag order, one EfSettle each. A tag that is not an unacked
// delivery is 406 PRECONDITION_FAILED (spec: basic.ack rule); multiple
// with tag 0 means every unacked delivery.
func (c *Conn) settle(ch *channel, tag uint64, multiple bool, how Settle, requeue bool, cls, id uint16) {
	var n int
	if multiple && tag == 0 {
		n = len(ch.unacked)
	} else {
		i, found := slices.BinarySearchFunc(ch.unacked, tag, func(u unacked, t uint64) int { return cmpU64(u.tag, t) })
		if !found {
			c.fail(ch, errorf(wire.PreconditionFailed, cls, id, "unknown delivery tag %d", tag))
			return
		}
		n = i + 1
		if !multiple {
			c.settleOrHold(ch, ch.unacked[i], how, requeue)
			ch.unacked = slices.Delete(ch.unacked, i, i+1)
			return
		}
	}
	for _, u := range ch.unacked[:n] {
		c.settleOrHold(ch, u, how, requeue)
	}
	ch.unacked = slices.Delete(ch.unacked, 0, n)
}

// settleOrHold settles u, or holds the settle until its transaction
// commits (tx.go).
func (c *Conn) settleOrHold(ch *channel, u unacked, how Settle, requeue bool) {
	if ch.tx {
		ch.txSettles = append(ch.txSettles, txSettle{u: u, how: how, requeue: requeue})
		return
	}
	c.settleOne(ch, u, how, requeue)
}

func (c *Conn) settleOne(ch *channel, u unacked, how Settle, requeue bool) {
	if u.cons != nil {
		u.cons.unsettled--
		assert(u.cons.unsettled >= 0, "unsettled count")
	} else {
		ch.getUnacked--
		assert(ch.getUnacked >= 0, "get count")
	}
	c.emit(EfSettle{Queue: u.queue, Handle: u.handle, How: how, Requeue: requeue && how != SettleAck})
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// onRecover returns every unacked delivery of the channel to its queue
// (requeue=true); redelivery to the same consumer (requeue=false) is not
// implemented (540).
func (c *Conn) onRecover(ch *channel, x *wire.BasicRecover) {
	cls, id := x.ID()
	if !x.Requeue {
		c.fail(ch, errorf(wire.NotImplemented, cls, id, "basic.recover requeue=false is not supported"))
		return
	}
	c.settle(ch, 0, true, SettleNack, true, cls, id)
	c.reply(ch, &wire.BasicRecoverOk{})
}
