package conn

import (
	"github.com/sluicemq/sluice/amqp/wire"
)

// reqKind is what a request does when its turn comes.
type reqKind uint8

const (
	reqReply        reqKind = iota + 1 // write a reply the server makes alone
	reqPublish                         // hand a publish to the broker
	reqDeclareQueue                    // the rest are operations with a result
	reqDeleteQueue
	reqPurgeQueue
	reqDeclareExchange
	reqDeleteExchange
	reqBind
	reqUnbind
	reqExchangeBind
	reqExchangeUnbind
	reqTxCommit // a transaction's commit: waits for its publishes' outcomes (tx.go)
	reqSubscribe
	reqCancel
	reqGet
)

// request is one thing a channel does in the client's order: a reply, a
// publish, or a broker operation whose answer the channel waits for.
type request struct {
	kind   reqKind
	ch     *channel
	reply  wire.Method // reqReply
	pub    *pub        // reqPublish
	effect Effect      // the broker request, with its Op filled in at issue
	op     OpID        // set at issue
	noWait bool        // no reply on success
	// the method being answered, for the close that a refusal sends
	classID, methodID uint16
	queue             string    // the queue named (declare-ok, get)
	sub               SubID     // reqSubscribe, reqCancel
	cons              *consumer // reqSubscribe, reqCancel (nil for an unknown tag)
	noAck             bool      // reqGet
	bytes             uint64    // body bytes held while queued
	orphan            bool      // its channel is gone: the answer is dropped
	// defaultOf: the server-named declaration whose queue this operation
	// on "" names (taken at issue)
	defaultOf *request
	settles   []txSettle // reqTxCommit
}

// reply sends a server-made reply in the channel's order.
func (c *Conn) reply(ch *channel, m wire.Method) {
	c.enqueue(ch, &request{kind: reqReply, reply: m})
}

// enqueue takes a request in the client's order: at once when nothing on
// the channel waits for the broker, otherwise behind it.
func (c *Conn) enqueue(ch *channel, r *request) {
	assert(!ch.released, "no requests on a released channel")
	r.ch = ch
	if r.queue == "" && ch.lastDecl != nil && ch.lastDecl != r && namesDefaultQueue(r.effect) {
		r.defaultOf = ch.lastDecl
	}
	ch.queue = append(ch.queue, r)
	c.queuedRequests++
	c.queuedBytes += r.bytes
	c.issue(ch)
}

// issue starts queued requests until one waits for the broker.
func (c *Conn) issue(ch *channel) {
	for ch.head == nil && len(ch.queue) > 0 && c.state == stOpened {
		r := ch.queue[0]
		ch.queue[0] = nil
		ch.queue = ch.queue[1:]
		c.queuedRequests--
		c.queuedBytes -= r.bytes
		switch r.kind {
		case reqReply:
			c.writeMethod(ch.id, r.reply)
		case reqTxCommit:
			c.issueTxCommit(ch, r)
		case reqPublish:
			if r.pub.inTx {
				ch.txOutstanding++
			}
			c.lastPub++
			r.pub.id = c.lastPub
			c.pubs[r.pub.id] = r.pub
			e := r.effect.(EfPublish)
			e.ID = r.pub.id
			c.emit(e)
		default:
			switch r.kind {
			case reqSubscribe:
				r.cons.subIssued = true
			case reqCancel:
				r.cons.cancelIssued = true
			}
			if d := r.defaultOf; d != nil {
				// Named "" behind a server-named declaration: the name
				// its declare-ok gave (requests issue one at a time, so
				// that answer came first; a refusal closed the channel).
				assert(d.queue != "", "a default queue name is known at issue")
				r.queue = d.queue
				r.effect = withQueue(r.effect, d.queue)
			}
			c.lastOp++
			r.op = c.lastOp
			c.ops[r.op] = r
			ch.head = r
			c.emit(withOp(r.effect, r.op))
		}
	}
	if len(ch.queue) == 0 {
		ch.queue = nil
	}
}

// namesDefaultQueue says whether e is an operation on a queue named ""
// (the channel's last declared).
func namesDefaultQueue(e Effect) bool {
	switch x := e.(type) {
	case EfDeclareQueue:
		return x.Queue.Name == "" && !x.Queue.ServerNamed
	case EfDeleteQueue:
		return x.Queue == ""
	case EfPurgeQueue:
		return x.Queue == ""
	case EfBind:
		return x.Queue == "" && x.Destination == ""
	case EfSubscribe:
		return x.Queue == ""
	case EfGet:
		return x.Queue == ""
	}
	return false
}

// withQueue names queue q in operation e (namesDefaultQueue).
func withQueue(e Effect, q string) Effect {
	switch x := e.(type) {
	case EfDeclareQueue:
		x.Queue.Name = q
		return x
	case EfDeleteQueue:
		x.Queue = q
		return x
	case EfPurgeQueue:
		x.Queue = q
		return x
	case EfBind:
		x.Queue = q
		return x
	case EfSubscribe:
		x.Queue = q
		return x
	case EfGet:
		x.Queue = q
		return x
	}
	panic("amqp/conn: no queue to name in " + e.String())
}

// withOp fills in the operation id of a broker request.
func withOp(e Effect, op OpID) Effect {
	switch x := e.(type) {
	case EfDeclareQueue:
		x.Op = op
		return x
	case EfDeleteQueue:
		x.Op = op
		return x
	case EfPurgeQueue:
		x.Op = op
		return x
	case EfDeclareExchange:
		x.Op = op
		return x
	case EfDeleteExchange:
		x.Op = op
		return x
	case EfBind:
		x.Op = op
		return x
	case EfSubscribe:
		x.Op = op
		return x
	case EfCancel:
		x.Op = op
		return x
	case EfGet:
		x.Op = op
		return x
	}
	panic("amqp/conn: not an operation effect")
}

// onResult takes the broker's answer to an operation.
func (c *Conn) onResult(x InResult) {
	assert(x.Op > 0 && x.Op <= c.lastOp, "a result answers an operation the machine asked for")
	if c.state != stOpened {
		return // closing: the session's end cleans up
	}
	r := c.ops[x.Op]
	assert(r != nil, "one result per operation")
	delete(c.ops, x.Op)
	if r.orphan || r.ch.released {
		c.orphanResult(r, x)
		return
	}
	ch := r.ch
	assert(ch.head == r, "the answered operation is its channel's head")
	ch.head = nil
	if x.Code != 0 {
		c.refused(r, x)
	} else {
		c.succeeded(r, x)
	}
	if !ch.released && c.state == stOpened {
		c.issue(ch)
	}
}

// orphanResult undoes what an answer for a gone channel created.
func (c *Conn) orphanResult(r *request, x InResult) {
	if x.Code != 0 {
		return
	}
	switch r.kind {
	case reqSubscribe:
		c.orphanCancel(r.sub)
	case reqGet:
		if x.Message != nil && !r.noAck {
			c.emit(EfSettle{Queue: r.queue, Handle: x.Message.Handle, How: SettleNack, Requeue: true})
		}
	}
}

// refused closes the channel (soft code) or connection (hard) with the
// broker's refusal, after undoing what the request had set up.
func (c *Conn) refused(r *request, x InResult) {
	code := x.Code
	if wire.ReplyName(code) == "" || code == wire.ReplySuccess {
		code = wire.InternalError // the broker broke the contract; say so rather than pass it on
	}
	switch r.kind {
	case reqSubscribe:
		c.dropConsumer(r.ch, r.cons)
	case reqGet:
		if !r.noAck {
			r.ch.getUnacked--
		}
	}
	c.fail(r.ch, &wire.Error{Code: code, Text: x.Text, ClassID: r.classID, MethodID: r.methodID})
}

// succeeded writes the -ok of an operation.
func (c *Conn) succeeded(r *request, x InResult) {
	ch := r.ch
	var m wire.Method
	switch r.kind {
	case reqDeclareQueue:
		if e, _ := r.effect.(EfDeclareQueue); e.Queue.ServerNamed {
			assert(x.Queue != "", "a server-named declaration is answered with its name")
			r.queue = x.Queue
			if ch.lastDecl == r {
				ch.lastQueue, ch.lastDecl = x.Queue, nil
			}
		}
		m = &wire.QueueDeclareOk{Queue: r.queue, MessageCount: x.MessageCount, ConsumerCount: x.ConsumerCount}
	case reqDeleteQueue:
		m = &wire.QueueDeleteOk{MessageCount: x.MessageCount}
	case reqPurgeQueue:
		m = &wire.QueuePurgeOk{MessageCount: x.MessageCount}
	case reqDeclareExchange:
		m = &wire.ExchangeDeclareOk{}
	case reqDeleteExchange:
		m = &wire.ExchangeDeleteOk{}
	case reqBind:
		m = &wire.QueueBindOk{}
	case reqUnbind:
		m = &wire.QueueUnbindOk{}
	case reqExchangeBind:
		m = &wire.ExchangeBindOk{}
	case reqExchangeUnbind:
		m = &wire.ExchangeUnbindOk{}
	case reqSubscribe:
		assert(r.cons.state == consSubscribing, "subscribe answered once")
		r.cons.state = consActive
		m = &wire.BasicConsumeOk{ConsumerTag: r.cons.tag}
	case reqCancel:
		if r.cons != nil {
			c.dropConsumer(ch, r.cons)
			m = &wire.BasicCancelOk{ConsumerTag: r.cons.tag}
		}
	case reqGet:
		c.onGetResult(ch, r, x)
		return
	default:
		panic("amqp/conn: result for a request without one")
	}
	if !r.noWait && m != nil {
		c.writeMethod(ch.id, m)
	}
}
