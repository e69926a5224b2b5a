// Package front is the AMQP front door's bridge between client connections
// (amqp/conn, one state machine per socket) and the broker's core (core,
// through io/driver's Host): it turns the connections' broker requests into
// core client requests (ReqMeta declarations, ReqTopology, ReqPublish,
// ReqSubscribe, ReqAck) and the core's replies and deliveries back into
// connection inputs. It owns every connection's machine, so a daemon only
// moves bytes, keeps one timer and carries requests to the host.
//
// It is pure, like the core: no clock, randomness, goroutines, channels or
// I/O, and no Go map order reaches an effect (internal/detguard guards it).
// Every call takes the instant and returns effects in the order the driver
// must carry them out.
//
// # The driver contract
//
// A driver owns one Front and must:
//
//  1. Pass Accept for every accepted socket (a ConnID of its choosing,
//     never reused), Bytes for every chunk read from it, and SocketGone
//     when it ends without the Front asking (EOF, a read or write error).
//  2. Carry out the effects in order before the next call: EfWrite (write
//     the bytes), EfClose (close the socket after the writes before it;
//     the connection is gone), EfPauseRead / EfResumeRead (stop or resume
//     reading the socket), EfRequest (Host.Request with Client and Req),
//     EfClientGone (Host.ClientGone) and EfTimer (call Tick at or after
//     AtNs; only the latest counts).
//  3. Pass every EfReply, EfDeliver and EfCancel effect of the core to Core, in the
//     order the core emitted them, after the call that caused them has
//     returned (effects of the core are queued, never fed back from inside
//     a Front call). Their bytes are copied by the driver first: the core's
//     are valid only until its next step.
//  4. Never pass an instant earlier than one already passed.
//
// # What the front does
//
// Names. The core's catalogue (core/metadata) names queues; the front
// learns a name's queue id by a ReqTopology, answered from the metadata the
// node applied, and keeps it. Until the node applied the metadata it held
// committed at its start, the answer says so (seam.ReasonCatchingUp) and
// the operations naming the queue wait, asked again every RetryNs (up to
// RouteWaitNs): a queue missing then may exist, and a publish acked as
// unroutable would be lost. A publish to the default exchange routes to
// the queue named by its routing key; a name the catalogue does not hold
// is unroutable (acked, and returned when mandatory, as RabbitMQ).
// Publishes and subscriptions naming a queue not yet resolved wait for its
// answer, in order.
//
// Order. Until a queue's owner has confirmed one of a connection's
// publishes (since it last refused one because its epoch was not ready,
// or the queue moved), the connection's publishes to it go one at a
// time: an owner whose epoch is not ready refuses what arrives before it
// is and takes what arrives after, so two in flight could land out of
// order; once one is confirmed, those held behind it go at once.
//
// Exchanges (exchange.go). exchange.declare, exchange.delete, queue.bind
// and queue.unbind commit a metadata command (retried as a declaration
// is: each is idempotent), then ask this broker's core a route question
// (seam.ReqRoute) carrying the committed index, until it has applied it,
// so that what the client does next here sees it. A publish to another
// exchange asks the core which queues the message reaches (ReqRoute, at
// least as new as the last command the connection saw committed); it and
// every later publish of the connection wait in order until the answer,
// then it goes to each queue; reaching none it is unroutable; reaching
// several, the client's answer waits for every queue's (confirmed only if
// none failed, nacked if one did).
//
// Lifetimes (lifetime.go). A declaration carries the queue's lifetime
// (exclusive to the connection, with this broker its home; auto-delete;
// non-durable; server-named, named by the committed entry). A queue
// exclusive to another connection is 405 to declare and consume. The
// front's janitor, a core client of its own, deletes a connection's
// exclusive queues when it ends, and an auto-delete queue when a
// subscription to it ended here and its owner counts no consumer.
//
// queue.declare commits a DeclareQueue command through the metadata group
// (ReqMeta; x-sluice-replicas, x-sluice-policy, x-sluice-min-insync, with
// defaults 1 (with Forward: 3, or as many brokers as there are below
// that), majority_durable and 1), then asks the topology until the
// controller has placed the queue or says why it cannot serve it, then
// the queue's owner for what declare-ok reports (ReqCount: the messages
// ready, not those delivered and unacked, and the consumers, as RabbitMQ
// counts them; a refused count asks the topology again). Not the leader yet, an unknown outcome (a declaration is idempotent),
// "not placed yet", metadata still catching up and a recovery under way
// ("fenced", "owner down") are retried every RetryNs until
// DeclareTimeoutNs.
// Without Forward a queue placed elsewhere cannot be served here.
//
// # Forwarding (Config.Forward: a broker of a cluster)
//
// Any broker serves any queue: a request for a queue whose owner (by the
// topology, from the committed metadata this broker applied) is another
// broker is an EfRequest naming that broker (Node), which the driver
// carries there; the replies and deliveries that come back are passed to
// Core like the local core's. The front keeps the owner each queue was
// last routed to:
//
//   - a publish the broker it went to refuses without storing it ("not
//     the owner", "no such queue", "fenced: ...": a recovery moved the
//     queue, or is under way; or a topology answer of "owner down: ...",
//     the owner's broker down in the metadata and the transition to
//     follow) waits, and the topology is asked again every
//     RouteRetryNs until it names a serving owner, then it goes there; a
//     publish waits at most RouteWaitNs, then it is nacked. Waiting
//     publishes keep their connection's order: they go again in publish
//     order, and only once no publish to their queue is still in flight;
//   - a subscription runs at the owner it was routed to, and its acks and
//     its end (EfClientGone with Node) go there. One that finds no
//     serving owner known (the route dropped with a lost broker, a
//     recovery under way), or that the broker it went to refuses without
//     setting it up (not the owner, fenced, unreachable), waits like a
//     publish: the topology is asked every RouteRetryNs (the same one
//     question per connection and queue that publishes ask), and it goes
//     to the owner named; past RouteWaitNs from its first try it is
//     refused with 405;
//   - a declaration's command goes to the leader a "not the leader:
//     leader=N" refusal names; a topology answer of "no such queue" (this
//     broker has not applied the committed declaration yet), "fenced" or
//     "owner down" (a recovery) is asked again until DeclareTimeoutNs;
//   - a declaration still unanswered at DeclareTimeoutNs, and a
//     subscription RouteWaitNs after its first try, are refused with 405
//     by the front itself (a broker that stopped without closing its
//     connections never answers); a subscription refused so is ended at
//     its broker, and a late answer finds nothing waiting;
//   - NodeLost(node): the driver lost its way to that broker (its process
//     died, the link failed). Every connection with a request in flight
//     there or a subscription there is closed with 320
//     CONNECTION_FORCED: the outcomes of its publishes are unknown to its
//     client, as when the broker it is connected to dies, and it
//     reconnects. Declarations in flight there are asked again here
//     instead (they are idempotent). No queue stays routed there;
//   - NodeUnreachable(node): the driver could not reach that broker at all
//     for what it sent there (its link never connected), so nothing
//     arrived: publishes and subscriptions wait for a serving owner
//     again, declarations are asked again; the connection stays open. This is the common case after an owner dies: the topology
//     still names it for a moment, and its refused address costs the
//     client nothing.
//
// Publishes. Each publish is one ReqPublish on the connection's own core
// client; the record body carries the exchange, routing key, content
// properties and body (see body.go), so a consumer gets the message as it
// was published. The core's outcome maps one to one: confirmed is
// basic.ack, failed basic.nack, unknown closes the connection (amqp/conn).
// A publish the core refuses only because its owner's new epoch is not yet
// durable ("epoch not ready") or because the owner holds its limit of
// unconfirmed publishes ("too many publishes in flight"), both definitely
// not stored, is sent again after RetryNs, and every later publish of the
// connection to that queue waits behind it, so a publisher's order holds;
// the connection's limit on publishes in flight pauses its reading
// meanwhile (back-pressure rather than a nack).
//
// Consumers. Every subscription is a core client of its own (the core
// keeps one consumer per client and queue), with the subscription's
// prefetch; a delivery's handle is its offset in the queue's log, and an
// ack is a ReqAck of that offset on the subscription's client. basic.cancel
// and the end of a channel or connection pass EfClientGone, which returns
// the subscription's unacked deliveries to the queue, redelivered. A no-ack
// subscription acks each delivery as it hands it over. When the core ends
// a subscription itself (EfCancel: its owner's group was fenced, replaced
// or retired by a recovery or a deletion), the subscription goes and the
// client is sent basic.cancel (when it announced consumer_cancel_notify,
// as amqp091-go and the other common clients do), and the queue's route is
// asked again before the next subscription to it.
//
// # Not supported yet (answered, never silently ignored)
//
// basic.nack and basic.reject with requeue are a ReqRequeue of the
// delivery: the core returns it to the queue at once, its prefetch slot
// free, and delivers it again, redelivered, ahead of what was never
// delivered. Without requeue they drop the message (an ack; no dead
// lettering yet). basic.get, queue.purge, declaring an exchange other than
// the default one and bindings are refused with 540 NOT_IMPLEMENTED (a
// connection error); a policy the core does not have with 406.
//
// queue.delete asks the topology, then the owner's count (its ready
// messages, consumers and the incarnation it serves), checks if-empty and
// if-unused on it (406), and commits the metadata's DeleteQueue of that
// incarnation (a queue declared again meanwhile is not deleted: the
// delete starts over); a queue that does not exist is delete-ok with no
// message, as RabbitMQ's delete is idempotent.
package front
