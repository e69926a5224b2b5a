package conn

import (
	"strings"
	"unicode/utf8"

	"github.com/sluicemq/sluice/amqp/wire"
)

// Queue and exchange methods. The machine checks names and arguments and
// asks the broker; the broker owns the catalogue (queues, exchanges,
// bindings) and answers with an InResult.

// nameBytesMax is a name's limit: a shortstr's 255 bytes. The spec's
// domains say 127 octets of [a-zA-Z0-9-_.:]; RabbitMQ, which clients are
// written against, takes any UTF-8 name a shortstr holds, and so does
// this server (a missing queue with a '/' in its name is 404, not 406).
const nameBytesMax = 255

// checkName refuses a queue or exchange name that is not valid UTF-8 or
// holds a control character, with 406 PRECONDITION_FAILED.
func checkName(what, name string, cls, id uint16) *wire.Error {
	if len(name) > nameBytesMax {
		return errorf(wire.PreconditionFailed, cls, id, "%s name of %d bytes, over %d", what, len(name), nameBytesMax)
	}
	if !utf8.ValidString(name) {
		return errorf(wire.PreconditionFailed, cls, id, "%s name %q is not UTF-8", what, name)
	}
	for i := 0; i < len(name); i++ {
		if b := name[i]; b < 0x20 || b == 0x7f {
			return errorf(wire.PreconditionFailed, cls, id, "%s name %q has the control character %#02x", what, name, b)
		}
	}
	return nil
}

// queueName resolves a queue name: empty means the channel's last declared
// queue (spec rule default-queue). With none, 404 NOT_FOUND on the channel,
// with RabbitMQ's words, as clients expect (the spec's rule says 530 on the
// connection; RabbitMQ, which the clients are written against, does not).
func (c *Conn) queueName(ch *channel, name string, cls, id uint16) (string, bool) {
	if name == "" {
		if ch.lastDecl != nil {
			return "", true // resolved at issue (namesDefaultQueue)
		}
		if ch.lastQueue == "" {
			c.fail(ch, errorf(wire.NotFound, cls, id, "no previously declared queue"))
			return "", false
		}
		return ch.lastQueue, true
	}
	if e := checkName("queue", name, cls, id); e != nil {
		c.fail(ch, e)
		return "", false
	}
	return name, true
}

func (c *Conn) onQueueDeclare(ch *channel, x *wire.QueueDeclare) {
	cls, id := x.ID()
	name := x.Queue
	if name == "" && x.Passive {
		// A passive declaration of "" checks the last declared queue.
		var ok bool
		if name, ok = c.queueName(ch, "", cls, id); !ok {
			return
		}
	}
	if e := checkName("queue", name, cls, id); e != nil {
		c.fail(ch, e)
		return
	}
	spec := QueueSpec{Name: name, Passive: x.Passive, Durable: x.Durable}
	if !x.Passive {
		if strings.HasPrefix(name, "amq.") {
			c.fail(ch, errorf(wire.AccessRefused, cls, id, "queue name %q: the amq. prefix is reserved", name))
			return
		}
		spec.AutoDelete, spec.Exclusive, spec.ServerNamed = x.AutoDelete, x.Exclusive, name == ""
		if e := parseQueueArgs(&spec, x.Arguments, cls, id); e != nil {
			c.fail(ch, e)
			return
		}
	}
	r := &request{kind: reqDeclareQueue, effect: EfDeclareQueue{Queue: spec}, noWait: x.NoWait, classID: cls, methodID: id, queue: name}
	if spec.ServerNamed {
		if x.NoWait {
			// Its name comes only in declare-ok, which no-wait forgoes:
			// the client could never name it.
			c.fail(ch, errorf(wire.PreconditionFailed, cls, id, "a server-named queue declared with no-wait"))
			return
		}
		ch.lastQueue, ch.lastDecl = "", r
	} else if name != "" {
		ch.lastQueue, ch.lastDecl = name, nil
	}
	c.enqueue(ch, r)
}

// parseQueueArgs reads the arguments of queue.declare that Sluice knows:
//
//	x-queue-type                 "quorum" or "classic" (both are Sluice queues;
//	                             quorum also demands durable, as RabbitMQ's)
//	x-sluice-replicas            1..5 replicas (x-quorum-initial-group-size too)
//	x-sluice-policy              leader_durable, majority_durable, all_durable, isr
//	x-sluice-min-insync          1..replicas
//
// Any other x- argument (x-message-ttl, x-max-length, x-dead-letter-*, ...)
// is refused with 406 rather than ignored: a client that sets one relies
// on behaviour Sluice does not have. Arguments without the x- prefix carry
// no meaning to any broker and are ignored.
func parseQueueArgs(spec *QueueSpec, args wire.Table, cls, id uint16) *wire.Error {
	bad := func(format string, a ...any) *wire.Error {
		return errorf(wire.PreconditionFailed, cls, id, format, a...)
	}
	var quorum bool
	replicasFrom := ""
	for _, f := range args {
		switch f.Name {
		case "x-queue-type":
			s, ok := f.Value.(string)
			if !ok {
				return bad("x-queue-type must be a string")
			}
			switch s {
			case "quorum":
				quorum = true
			case "classic":
			default:
				return bad("unknown x-queue-type %q: Sluice accepts quorum and classic", s)
			}
		case "x-sluice-replicas", "x-quorum-initial-group-size":
			n, ok := args.Int(f.Name)
			if !ok || n < 1 || n > 5 {
				return bad("%s must be an integer in 1..5", f.Name)
			}
			if replicasFrom != "" && int64(spec.Replicas) != n {
				return bad("%s and %s disagree", replicasFrom, f.Name)
			}
			spec.Replicas, replicasFrom = uint8(n), f.Name
		case "x-sluice-policy":
			s, ok := f.Value.(string)
			p := Policy(s)
			if !ok || (p != PolicyLeaderDurable && p != PolicyMajorityDurable && p != PolicyAllDurable && p != PolicyISR) {
				return bad("x-sluice-policy must be one of leader_durable, majority_durable, all_durable, isr")
			}
			spec.Policy = p
		case "x-sluice-min-insync":
			n, ok := args.Int(f.Name)
			if !ok || n < 1 || n > 5 {
				return bad("x-sluice-min-insync must be an integer in 1..5")
			}
			spec.MinInSync = uint8(n)
		default:
			if strings.HasPrefix(f.Name, "x-") {
				return bad("queue argument %q is not supported", f.Name)
			}
		}
	}
	if spec.MinInSync > 0 && spec.Replicas > 0 && spec.MinInSync > spec.Replicas {
		return bad("x-sluice-min-insync %d is above the %d replicas", spec.MinInSync, spec.Replicas)
	}
	if quorum && !spec.Durable {
		return bad("invalid property 'non-durable' for a quorum queue")
	}
	// RabbitMQ's quorum queues refuse the two properties of a queue that
	// lives with its consumers or connection; other queues take them.
	if quorum && spec.Exclusive {
		return bad("invalid property 'exclusive' for a quorum queue")
	}
	if quorum && spec.AutoDelete {
		return bad("invalid property 'auto-delete' for a quorum queue")
	}
	return nil
}

func (c *Conn) onQueueDelete(ch *channel, x *wire.QueueDelete) {
	cls, id := x.ID()
	q, ok := c.queueName(ch, x.Queue, cls, id)
	if !ok {
		return
	}
	c.enqueue(ch, &request{kind: reqDeleteQueue, effect: EfDeleteQueue{Queue: q, IfUnused: x.IfUnused, IfEmpty: x.IfEmpty},
		noWait: x.NoWait, classID: cls, methodID: id, queue: q})
}

func (c *Conn) onQueuePurge(ch *channel, x *wire.QueuePurge) {
	cls, id := x.ID()
	q, ok := c.queueName(ch, x.Queue, cls, id)
	if !ok {
		return
	}
	c.enqueue(ch, &request{kind: reqPurgeQueue, effect: EfPurgeQueue{Queue: q}, noWait: x.NoWait, classID: cls, methodID: id, queue: q})
}

// checkBindExchange refuses the default exchange (its bindings are
// implicit, RabbitMQ answers 403 too) and bad names.
func checkBindExchange(name string, cls, id uint16) *wire.Error {
	if name == "" {
		return errorf(wire.AccessRefused, cls, id, "operation not permitted on the default exchange")
	}
	return checkName("exchange", name, cls, id)
}

func (c *Conn) onQueueBind(ch *channel, x *wire.QueueBind) {
	cls, id := x.ID()
	q, ok := c.queueName(ch, x.Queue, cls, id)
	if !ok {
		return
	}
	if e := checkBindExchange(x.Exchange, cls, id); e != nil {
		c.fail(ch, e)
		return
	}
	c.enqueue(ch, &request{kind: reqBind, effect: EfBind{Queue: q, Exchange: x.Exchange, RoutingKey: x.RoutingKey, Arguments: x.Arguments},
		noWait: x.NoWait, classID: cls, methodID: id, queue: q})
}

func (c *Conn) onQueueUnbind(ch *channel, x *wire.QueueUnbind) {
	cls, id := x.ID()
	q, ok := c.queueName(ch, x.Queue, cls, id)
	if !ok {
		return
	}
	if e := checkBindExchange(x.Exchange, cls, id); e != nil {
		c.fail(ch, e)
		return
	}
	c.enqueue(ch, &request{kind: reqUnbind, effect: EfBind{Unbind: true, Queue: q, Exchange: x.Exchange, RoutingKey: x.RoutingKey, Arguments: x.Arguments},
		classID: cls, methodID: id, queue: q})
}

// onExchangeBind takes exchange.bind and exchange.unbind (RabbitMQ's
// extension): neither end may be the default exchange (403, as RabbitMQ).
func (c *Conn) onExchangeBind(ch *channel, dest, source, key string, noWait bool, args wire.Table, unbind bool, m wire.Method) {
	cls, id := m.ID()
	for _, name := range []string{dest, source} {
		if e := checkBindExchange(name, cls, id); e != nil {
			c.fail(ch, e)
			return
		}
	}
	kind := reqExchangeBind
	if unbind {
		kind = reqExchangeUnbind
	}
	c.enqueue(ch, &request{kind: kind, effect: EfBind{Unbind: unbind, Destination: dest, Exchange: source, RoutingKey: key, Arguments: args},
		noWait: noWait, classID: cls, methodID: id})
}

// onExchangeDeclare accepts the spec's standard types (direct, fanout,
// topic, headers); any other type is 503 COMMAND_INVALID, the spec's code
// for a type the server does not support (exchange.declare type, rule
// support). The amq. prefix is the broker's to refuse (403 for a new
// name; a predeclared exchange may be declared as it is).
func (c *Conn) onExchangeDeclare(ch *channel, x *wire.ExchangeDeclare) {
	cls, id := x.ID()
	if x.Exchange == "" {
		c.fail(ch, errorf(wire.AccessRefused, cls, id, "operation not permitted on the default exchange"))
		return
	}
	if e := checkName("exchange", x.Exchange, cls, id); e != nil {
		c.fail(ch, e)
		return
	}
	var alternate string
	if !x.Passive {
		switch x.Type {
		case "direct", "fanout", "topic", "headers":
		default:
			c.fail(ch, errorf(wire.CommandInvalid, cls, id, "unknown exchange type '%s'", x.Type))
			return
		}
		if v, ok := x.Arguments.Get("alternate-exchange"); ok {
			s, isStr := v.(string)
			if !isStr {
				c.fail(ch, errorf(wire.PreconditionFailed, cls, id, "invalid arg 'alternate-exchange' for exchange '%s' in vhost '/': a longstr is required", x.Exchange))
				return
			}
			if e := checkName("exchange", s, cls, id); e != nil {
				c.fail(ch, e)
				return
			}
			alternate = s
		}
	}
	c.enqueue(ch, &request{kind: reqDeclareExchange, effect: EfDeclareExchange{Exchange: x.Exchange, Type: x.Type, Passive: x.Passive,
		Durable: x.Durable, AutoDelete: x.AutoDelete, Internal: x.Internal, Alternate: alternate},
		noWait: x.NoWait, classID: cls, methodID: id})
}

func (c *Conn) onExchangeDelete(ch *channel, x *wire.ExchangeDelete) {
	cls, id := x.ID()
	if e := checkBindExchange(x.Exchange, cls, id); e != nil {
		c.fail(ch, e)
		return
	}
	c.enqueue(ch, &request{kind: reqDeleteExchange, effect: EfDeleteExchange{Exchange: x.Exchange, IfUnused: x.IfUnused},
		noWait: x.NoWait, classID: cls, methodID: id})
}
