package conn

import (
	"fmt"

	"github.com/sluicemq/sluice/amqp/wire"
)

// Publishing: basic.publish, its content header and body frames, the
// handing over to the broker and the outcomes, which become basic.ack and
// basic.nack on a confirm channel.

// assembly is a basic.publish whose content is still arriving.
type assembly struct {
	method        *wire.BasicPublish
	header        bool // the content header arrived
	props         wire.Properties
	sizeBytes     uint64 // the header's body-size
	body          []byte
	reservedBytes uint64 // counted in Conn.assemblyBytes
}

func (a *assembly) waiting() string {
	if !a.header {
		return "waiting for the content header"
	}
	return fmt.Sprintf("waiting for %d more body bytes", a.sizeBytes-uint64(len(a.body)))
}

// pub is a publish from its arrival to its outcome.
type pub struct {
	id         PublishID // set when handed to the broker
	ch         *channel
	seq        uint64 // confirm sequence number, 0 outside confirm mode
	exchange   string
	routingKey string
	mandatory  bool
	resolved   Settle // SettleAck or SettleNack once the outcome is in; 0 before
	inTx       bool   // a transaction's (tx.go)
}

// onPublish starts a content. The exchange is checked for syntax only:
// whether it exists, and where the routing key leads, is the broker's
// (see EfPublish).
func (c *Conn) onPublish(ch *channel, x *wire.BasicPublish) {
	cls, id := x.ID()
	if x.Exchange != "" {
		if e := checkName("exchange", x.Exchange, cls, id); e != nil {
			c.fail(ch, e)
			return
		}
	}
	if x.Immediate {
		// As RabbitMQ since 3.0.
		c.fail(ch, errorf(wire.NotImplemented, cls, id, "immediate=true is not supported"))
		return
	}
	ch.asm = &assembly{method: x}
}

// onContentHeader takes the header of the content being assembled.
func (c *Conn) onContentHeader(ch *channel, payload []byte) {
	a := ch.asm
	if a == nil || a.header {
		c.connError(errorf(wire.UnexpectedFrame, 0, 0, "content header on channel %d without a basic.publish before it", ch.id))
		return
	}
	h, err := wire.DecodeContentHeader(payload)
	if err != nil {
		c.connError(err.(*wire.Error))
		return
	}
	if h.BodySize > c.cfg.MessageBytesMax {
		c.fail(ch, errorf(wire.ContentTooLarge, wire.ClassBasic, wire.MethodBasicPublish,
			"message body of %d bytes is larger than the maximum of %d", h.BodySize, c.cfg.MessageBytesMax))
		return
	}
	if p := &h.Properties; p.Flags&wire.FlagUserID != 0 && p.UserID != c.user {
		// RabbitMQ's validated user-id: a message never claims a sender
		// other than the connection's login (the words are RabbitMQ's).
		c.fail(ch, errorf(wire.PreconditionFailed, wire.ClassBasic, wire.MethodBasicPublish,
			"user_id property set to '%s' but authenticated user was '%s'", p.UserID, c.user))
		return
	}
	if c.assemblyBytes+h.BodySize > c.cfg.AssemblyBytesMax {
		c.connError(errorf(wire.ResourceError, wire.ClassBasic, wire.MethodBasicPublish,
			"contents being assembled would hold %d bytes, over the limit of %d", c.assemblyBytes+h.BodySize, c.cfg.AssemblyBytesMax))
		return
	}
	a.header, a.props, a.sizeBytes = true, h.Properties, h.BodySize
	a.reservedBytes = h.BodySize
	c.assemblyBytes += h.BodySize
	if h.BodySize == 0 {
		c.contentDone(ch)
	}
}

// onContentBody takes one body frame of the content being assembled.
func (c *Conn) onContentBody(ch *channel, payload []byte) {
	a := ch.asm
	if a == nil || !a.header {
		c.connError(errorf(wire.UnexpectedFrame, 0, 0, "content body on channel %d without a content header before it", ch.id))
		return
	}
	rest := a.sizeBytes - uint64(len(a.body))
	if uint64(len(payload)) > rest {
		c.connError(errorf(wire.UnexpectedFrame, 0, 0, "body frame of %d bytes on channel %d, only %d remain of the content's body-size %d",
			len(payload), ch.id, rest, a.sizeBytes))
		return
	}
	a.body = append(a.body, payload...)
	if uint64(len(a.body)) == a.sizeBytes {
		c.contentDone(ch)
	}
}

// contentDone hands a complete publish on. Its confirm sequence number is
// given now, in the order the client published.
func (c *Conn) contentDone(ch *channel) {
	a := ch.asm
	ch.asm = nil
	c.assemblyBytes -= a.reservedBytes
	p := &pub{ch: ch, exchange: a.method.Exchange, routingKey: a.method.RoutingKey, mandatory: a.method.Mandatory}
	if ch.confirm {
		ch.nextSeq++
		p.seq = ch.nextSeq
		ch.unconfirmed = append(ch.unconfirmed, p)
	}
	body := a.body
	if body == nil {
		body = []byte{}
	}
	r := &request{kind: reqPublish, pub: p, bytes: uint64(len(body)),
		effect: EfPublish{Exchange: p.exchange, RoutingKey: p.routingKey, Mandatory: p.mandatory,
			Content: Content{Properties: a.props, Body: body}}}
	if ch.tx {
		r.ch = ch
		c.txHold(ch, r)
		return
	}
	c.enqueue(ch, r)
}

// onPublished takes outcomes. Acks and nacks go out once per channel after
// all the outcomes of the input are in, so that a group commit becomes one
// basic.ack with multiple set.
func (c *Conn) onPublished(x InPublished) {
	var touched []*channel
	for _, r := range x.Results {
		assert(r.ID > 0 && r.ID <= c.lastPub, "an outcome for a publish the machine handed over")
		if c.state != stOpened {
			continue // closing: outcomes can no longer reach the client
		}
		p := c.pubs[r.ID]
		if p == nil {
			continue // a duplicate outcome; the first one counted
		}
		delete(c.pubs, r.ID)
		ch := p.ch
		if ch.released {
			continue
		}
		if p.inTx && r.Outcome != Unknown && r.Outcome != Refused {
			if r.Outcome == Unroutable && p.mandatory {
				assert(r.Returned != nil, "an unroutable mandatory publish comes back with its content")
				c.returnPublish(ch, p, r.Returned)
			}
			c.txPublished(ch, r.Outcome == Failed, r.Text)
			continue
		}
		switch r.Outcome {
		case Confirmed:
			p.resolved = SettleAck
		case Unroutable:
			if p.mandatory {
				assert(r.Returned != nil, "an unroutable mandatory publish comes back with its content")
				c.returnPublish(ch, p, r.Returned)
			}
			p.resolved = SettleAck
		case Failed:
			p.resolved = SettleNack
		case Refused:
			code := r.Code
			if wire.ReplyName(code) == "" || code == wire.ReplySuccess {
				code = wire.InternalError
			}
			c.fail(ch, &wire.Error{Code: code, Text: r.Text, ClassID: wire.ClassBasic, MethodID: wire.MethodBasicPublish})
			continue
		case Unknown:
			if ch.confirm || p.inTx {
				c.connError(errorf(wire.ConnectionForced, 0, 0, "publish outcome unknown (%s); unconfirmed publishes on this connection have unknown outcomes", r.Text))
			}
			continue
		default:
			panic(fmt.Sprintf("amqp/conn: outcome %d", r.Outcome))
		}
		if p.seq != 0 && !containsChannel(touched, ch) {
			touched = append(touched, ch)
		}
	}
	for _, ch := range touched {
		if c.state != stOpened {
			return
		}
		if !ch.released {
			c.sendConfirms(ch)
		}
	}
}

func containsChannel(chs []*channel, ch *channel) bool {
	for _, x := range chs {
		if x == ch {
			return true
		}
	}
	return false
}

// returnPublish sends basic.return 312 NO_ROUTE with the content.
func (c *Conn) returnPublish(ch *channel, p *pub, ct *Content) {
	m := &wire.BasicReturn{ReplyCode: wire.NoRoute, ReplyText: "NO_ROUTE", Exchange: p.exchange, RoutingKey: p.routingKey}
	if err := c.writeContent(ch.id, m, ct); err != nil {
		// Its own headers once fitted this connection's frame_max.
		panic("amqp/conn: a returned publish does not fit the frame_max it came in: " + err.Error())
	}
}

// sendConfirms writes the acks and nacks of resolved publishes, in
// sequence order. A run of acks from the oldest unconfirmed publish is one
// basic.ack with multiple set (every lower number is resolved already); an
// ack behind a publish still waiting goes alone, so that no multiple ever
// covers a publish without an outcome. Nacks go alone.
func (c *Conn) sendConfirms(ch *channel) {
	blocked := false
	var runLast uint64
	runLen := 0
	flush := func() {
		if runLen > 0 {
			c.writeMethod(ch.id, &wire.BasicAck{DeliveryTag: runLast, Multiple: runLen > 1})
		}
		runLen = 0
	}
	keep := ch.unconfirmed[:0]
	for _, p := range ch.unconfirmed {
		switch p.resolved {
		case 0:
			flush()
			blocked = true
			keep = append(keep, p)
		case SettleAck:
			if blocked {
				c.writeMethod(ch.id, &wire.BasicAck{DeliveryTag: p.seq})
			} else {
				runLast = p.seq
				runLen++
			}
		case SettleNack:
			flush()
			c.writeMethod(ch.id, &wire.BasicNack{DeliveryTag: p.seq})
		}
	}
	flush()
	clear(ch.unconfirmed[len(keep):])
	ch.unconfirmed = keep
}
