package conn

import (
	"slices"

	"github.com/sluicemq/sluice/amqp/wire"
)

// channel is one open (or closing) AMQP channel.
type channel struct {
	id uint16
	// closing: the server sent channel.close and waits for close-ok; every
	// other frame on the channel is discarded (spec: channel.close).
	closing bool
	// released: the channel's work was let go (closed by either side);
	// broker answers that still name it are orphans.
	released bool

	confirm       bool
	nextSeq       uint64 // the last publish sequence number of confirm mode
	unconfirmed   []*pub // confirm-mode publishes without a sent ack or nack, by seq
	prefetchCount uint16 // basic.qos for consumers created after it (global=false)
	prefetchGlob  uint16 // basic.qos global=true; refused at consume (see consume.go)
	consumers     []*consumer
	lastDelivery  uint64    // the last delivery tag given
	unacked       []unacked // by delivery tag
	getUnacked    int       // basic.get deliveries unacked or asked for
	lastQueue     string    // spec: an empty queue name means the last declared
	// lastDecl: the last declaration, of a server-named queue, not
	// answered yet: an operation on "" until then names its queue, which
	// the request takes at issue, after that answer (namesDefaultQueue)
	lastDecl *request
	// Transaction mode (tx.go): the publishes and settles held until
	// commit, their bodies' bytes, and the publishes handed over by a
	// commit still without an outcome.
	tx            bool
	txPubs        []*request
	txBytes       uint64
	txSettles     []txSettle
	txOutstanding int

	asm *assembly // a basic.publish being assembled

	// Requests reach the broker in the order the client sent them, with at
	// most one operation unanswered (head): what follows waits in queue.
	// This keeps replies in order and keeps a publish after a no-wait
	// declare from overtaking it.
	head  *request
	queue []*request
}

// openChannel answers channel.open on a channel that is not open.
func (c *Conn) openChannel(id uint16) {
	if id > c.channelMax {
		c.connError(errorf(wire.NotAllowed, wire.ClassChannel, wire.MethodChannelOpen, "channel %d is above the negotiated channel_max %d", id, c.channelMax))
		return
	}
	assert(c.channels[id] == nil, "open a channel that is not open")
	c.channels[id] = &channel{id: id}
	i, found := slices.BinarySearch(c.channelIDs, id)
	assert(!found, "channel ids unique")
	c.channelIDs = slices.Insert(c.channelIDs, i, id)
	c.writeMethod(id, &wire.ChannelOpenOk{})
}

// forgetChannel frees a channel's number for a new channel.open.
func (c *Conn) forgetChannel(ch *channel) {
	assert(ch.released, "release before forget")
	delete(c.channels, ch.id)
	i, found := slices.BinarySearch(c.channelIDs, ch.id)
	assert(found, "forget a known channel")
	c.channelIDs = slices.Delete(c.channelIDs, i, i+1)
}

// channelError closes a channel with a soft error and lets its work go.
func (c *Conn) channelError(ch *channel, e *wire.Error) {
	assert(!wire.IsHardError(e.Code), "a soft code closes a channel")
	if ch.closing {
		return
	}
	c.writeMethod(ch.id, &wire.ChannelClose{ReplyCode: e.Code, ReplyText: e.ReplyText(), ClassID: e.ClassID, MethodID: e.MethodID})
	ch.closing = true
	c.releaseChannel(ch)
}

// releaseChannel lets a closed channel's work go: requests not yet handed
// to the broker are dropped (they never happened); active subscriptions
// are cancelled and unacked deliveries returned to their queues, in tag
// order; publishes and operations the broker holds become orphans whose
// outcomes are dropped (a subscription that succeeds after all is
// cancelled, a message got after all is returned).
func (c *Conn) releaseChannel(ch *channel) {
	if ch.released {
		return
	}
	ch.released = true
	for _, r := range ch.queue {
		c.queuedRequests--
		c.queuedBytes -= r.bytes
	}
	ch.queue = nil
	if ch.asm != nil {
		c.assemblyBytes -= ch.asm.reservedBytes
		ch.asm = nil
	}
	cons := slices.Clone(ch.consumers)
	slices.SortFunc(cons, func(a, b *consumer) int { return cmpSub(a.sub, b.sub) })
	for _, k := range cons {
		// An active subscription whose EfCancel has not left is cancelled
		// now; one whose EfSubscribe is out unanswered is cancelled when
		// the answer comes (orphanResult); one never issued never existed.
		if k.state == consActive && !k.cancelIssued {
			c.orphanCancel(k.sub)
		}
		delete(c.subs, k.sub)
	}
	ch.consumers = nil
	c.txUnsettle(ch) // settled by a transaction never committed: returned too
	ch.txPubs, ch.txBytes, ch.txOutstanding = nil, 0, 0
	for _, u := range ch.unacked {
		c.emit(EfSettle{Queue: u.queue, Handle: u.handle, How: SettleNack, Requeue: true})
	}
	ch.unacked = nil
	ch.getUnacked = 0
	ch.unconfirmed = nil
}

// orphanCancel cancels a subscription whose channel is gone; the answer is
// dropped.
func (c *Conn) orphanCancel(sub SubID) {
	c.lastOp++
	r := &request{kind: reqCancel, op: c.lastOp, sub: sub, orphan: true}
	c.ops[r.op] = r
	c.emit(EfCancel{Op: r.op, Sub: sub})
}

func cmpSub(a, b SubID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// channelFrame handles a frame on an open or closing channel.
func (c *Conn) channelFrame(ch *channel, f wire.Frame) {
	if ch.closing {
		c.closingChannelFrame(ch, f)
		return
	}
	switch f.Type {
	case wire.FrameHeader:
		c.onContentHeader(ch, f.Payload)
		return
	case wire.FrameBody:
		c.onContentBody(ch, f.Payload)
		return
	}
	if ch.asm != nil {
		c.connError(errorf(wire.UnexpectedFrame, 0, 0, "method frame on channel %d while a content is incomplete (%s)", ch.id, ch.asm.waiting()))
		return
	}
	m, err := wire.DecodeMethod(f.Payload)
	if err != nil {
		c.connError(err.(*wire.Error))
		return
	}
	c.channelMethod(ch, m)
}

// closingChannelFrame: after the server's channel.close only close and
// close-ok count.
func (c *Conn) closingChannelFrame(ch *channel, f wire.Frame) {
	if f.Type != wire.FrameMethod {
		return
	}
	m, err := wire.DecodeMethod(f.Payload)
	if err != nil {
		return
	}
	switch m.(type) {
	case *wire.ChannelCloseOk:
		c.forgetChannel(ch)
	case *wire.ChannelClose:
		// Both sides closed at once: answer, and still wait for close-ok.
		c.writeMethod(ch.id, &wire.ChannelCloseOk{})
	}
}

// channelMethod dispatches a method on an open channel.
func (c *Conn) channelMethod(ch *channel, m wire.Method) {
	cls, id := m.ID()
	switch x := m.(type) {
	case *wire.ChannelOpen:
		c.connError(errorf(wire.ChannelError, cls, id, "channel %d is already open", ch.id))
	case *wire.ChannelClose:
		c.releaseChannel(ch)
		c.writeMethod(ch.id, &wire.ChannelCloseOk{})
		c.forgetChannel(ch)
	case *wire.ChannelFlow:
		if !x.Active {
			// As RabbitMQ: the server does not stop deliveries on request;
			// basic.qos is how a consumer limits them.
			c.connError(errorf(wire.NotImplemented, cls, id, "channel.flow active=false is not supported; use basic.qos"))
			return
		}
		c.reply(ch, &wire.ChannelFlowOk{Active: true})
	case *wire.ConfirmSelect:
		if ch.tx {
			c.fail(ch, errorf(wire.PreconditionFailed, cls, id, "cannot switch from tx to confirm mode"))
			return
		}
		ch.confirm = true
		if !x.NoWait {
			c.reply(ch, &wire.ConfirmSelectOk{})
		}
	case *wire.ExchangeDeclare:
		c.onExchangeDeclare(ch, x)
	case *wire.ExchangeDelete:
		c.onExchangeDelete(ch, x)
	case *wire.ExchangeBind:
		c.onExchangeBind(ch, x.Destination, x.Source, x.RoutingKey, x.NoWait, x.Arguments, false, x)
	case *wire.ExchangeUnbind:
		c.onExchangeBind(ch, x.Destination, x.Source, x.RoutingKey, x.NoWait, x.Arguments, true, x)
	case *wire.QueueDeclare:
		c.onQueueDeclare(ch, x)
	case *wire.QueueBind:
		c.onQueueBind(ch, x)
	case *wire.QueueUnbind:
		c.onQueueUnbind(ch, x)
	case *wire.QueuePurge:
		c.onQueuePurge(ch, x)
	case *wire.QueueDelete:
		c.onQueueDelete(ch, x)
	case *wire.BasicQos:
		c.onQos(ch, x)
	case *wire.BasicConsume:
		c.onConsume(ch, x)
	case *wire.BasicCancel:
		c.onCancel(ch, x)
	case *wire.BasicPublish:
		c.onPublish(ch, x)
	case *wire.BasicGet:
		c.onGet(ch, x)
	case *wire.BasicAck:
		c.settle(ch, x.DeliveryTag, x.Multiple, SettleAck, false, cls, id)
	case *wire.BasicReject:
		c.settle(ch, x.DeliveryTag, false, SettleReject, x.Requeue, cls, id)
	case *wire.BasicNack:
		c.settle(ch, x.DeliveryTag, x.Multiple, SettleNack, x.Requeue, cls, id)
	case *wire.BasicRecover:
		c.onRecover(ch, x)
	case *wire.TxSelect:
		c.onTxSelect(ch, cls, id)
	case *wire.TxCommit:
		c.onTxCommit(ch, cls, id)
	case *wire.TxRollback:
		c.onTxRollback(ch, cls, id)
	default:
		// Methods only a server sends, connection methods off channel 0,
		// answers to requests the server never made.
		c.connError(errorf(wire.CommandInvalid, cls, id, "%s is not a method a client sends on a channel", wire.MethodName(cls, id)))
	}
}
