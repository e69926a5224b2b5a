// Package conn is the AMQP 0-9-1 front door's state machine for one client
// connection: bytes from the socket, the passage of time and the broker's
// outcomes go in (Input); bytes to write, a socket to close, a timer, read
// back-pressure and requests to the broker come out (Effect). It is pure:
// no clock, no randomness, no goroutines, no channels, no I/O, and no Go
// map order reaches an effect. Every input and effect has one stable text
// line (String), used by traces and the golden transcripts of testdata/.
// It is built on amqp/wire and the standard library only.
//
// # The driver contract
//
// A driver owns one Conn per accepted socket and must:
//
//  1. Create it with New and pass InAccept first, then call Step with one
//     input at a time, with a NowNs that never decreases, and carry out the
//     effects in the order given before the next Step.
//  2. Pass every chunk read from the socket as InBytes, whatever its size
//     or frame boundaries. After EfRead{Paused: true} stop reading (bytes
//     already read are still passed in); resume on EfRead{Paused: false}.
//  3. Keep one timer: EfTimer replaces the one armed; when it fires pass
//     InTime. Extra InTime inputs are harmless.
//  4. Hand the broker requests (EfDeclareQueue, EfDeleteQueue,
//     EfPurgeQueue, EfDeclareExchange, EfDeleteExchange, EfBind, EfPublish,
//     EfSubscribe, EfCancel, EfGet, EfSettle) to the broker in effect
//     order, and bring back exactly one InResult per operation id (any
//     order across channels), one outcome per PublishID in InPublished
//     (batches welcome: a batch becomes one basic.ack with multiple), and
//     the deliveries of each subscription as InDelivery, never before its
//     EfSubscribe's InResult and never more unsettled (not yet named by an
//     EfSettle) than its PrefetchCount, unless NoAck. After an EfCancel's
//     InResult no delivery for that subscription may follow. InCancelled
//     reports a subscription the broker ended on its own.
//  5. Pass InBrokerLost when the broker serving the connection is gone.
//  6. On EfClose: close the socket after the writes before it, and end the
//     connection's broker session: cancel its subscriptions, return its
//     unsettled deliveries to their queues, drop answers still due.
//     Publishes already handed over go on; no one hears their outcome.
//
// Breaking the contract (a result for an operation never asked, a delivery
// over the prefetch window, time going back) is a programmer error and
// panics; bytes from the client never do.
//
// # Design choices
//
// Routing. The machine forwards the exchange and routing key of every
// publish; the broker, which owns the catalogue of queues, exchanges and
// bindings, resolves them (the default exchange "" routes to the queue
// named by the key; a direct exchange to the queues bound with the key)
// and answers one outcome per publish: Confirmed once every queue it
// reached confirmed it (W durable copies), Unroutable (acked, and returned
// first with 312 NO_ROUTE when mandatory), Failed (definitely not stored:
// basic.nack), Refused (e.g. 404 for a missing exchange: the channel
// closes), or Unknown. The machine keeps no copy of the catalogue, so no
// two connections can disagree about a binding.
//
// Confirms. On a confirm channel each publish takes the next sequence
// number from 1 when its content completes. basic.ack goes out only on
// Confirmed or Unroutable; a run of acks from the oldest unresolved publish
// is one basic.ack with multiple set, and an ack behind a publish still
// waiting goes alone, so a multiple never covers a publish without an
// outcome. basic.nack (never multiple) only on Failed.
//
// Unknown outcomes and broker loss. AMQP has no way to say "unknown" but
// closing: an Unknown outcome on a confirm channel, and InBrokerLost,
// close the connection with 320 CONNECTION_FORCED. The client then treats
// every unconfirmed publish as unknown, as it must after a dropped
// connection; a nack would claim a failure the broker cannot vouch for
// (a publish reported failed must never reach a consumer). Outcomes that
// arrive while closing are dropped.
//
// Order. A channel's requests reach the broker in the client's order with
// at most one operation unanswered: requests behind it wait (bounded), so
// replies leave in order, a publish after a no-wait queue.declare cannot
// overtake it, and basic.consume-ok always precedes the consumer's first
// delivery. Publishes do not wait for their outcomes.
//
// Consumers. prefetch_count (basic.qos global=false, what clients send)
// applies per consumer, as RabbitMQ; 0 and counts above Config.PrefetchMax
// become PrefetchMax, so every window is bounded. global=true is refused at
// basic.consume with 406, as RabbitMQ's quorum queues do; prefetch_size is
// 540. Delivery tags are the channel's, from 1; ack, nack and reject with
// multiple are expanded into one EfSettle per delivery, in tag order. A
// tag that is not unacked is 406 PRECONDITION_FAILED. A closed channel
// cancels its subscriptions and returns its unacked deliveries (EfSettle
// nack requeue); a delivery that arrives for a gone subscription is
// returned the same way.
//
// Queues. queue.declare takes x-queue-type quorum or classic (anything else
// is 406), x-sluice-replicas (or x-quorum-initial-group-size) 1..5,
// x-sluice-policy leader_durable, majority_durable, all_durable or isr, and
// x-sluice-min-insync 1..replicas; any other x- argument is 406 rather than
// silently ignored. Exclusive, auto-delete and non-durable queues go to
// the broker (a quorum queue refuses all three, 406, as RabbitMQ's); an
// empty name asks the broker to name the queue (declare-ok says the
// name; an operation on "" sent before that answer names that queue, and
// a no-wait server-named declaration, whose name no client could learn,
// is 406).
// Exchanges of the four standard types (direct, fanout, topic, headers)
// with their flags and alternate-exchange argument, and bindings with
// their arguments, go to the broker, which owns the catalogue; unknown
// types are 503 (the spec's rule for a type the server does not support).
// Transactions (tx.go): a transaction channel holds its publishes and
// settles until tx.commit hands them over and answers once every publish
// has its outcome; tx.rollback drops them.
//
// # Limits
//
// Every buffer has a limit (Config; defaults in parentheses): channels
// (channel_max, 2047), frame size (frame_max, 128 KiB proposed), unparsed
// input (4 MiB, else 506), message body (16 MiB, else 311
// CONTENT_TOO_LARGE on the channel), bodies being assembled on all
// channels (64 MiB, else 506), consumers per channel (256, else 506),
// unsettled deliveries per consumer (PrefetchMax 4096), unacked basic.get
// deliveries per channel (4096, else 406), publishes in flight (16384) and
// requests waiting behind an operation (1024, 32 MiB): at these two the
// machine pauses reading (EfRead) instead of refusing, which is the
// back-pressure a publisher feels. Publishes in flight can exceed their
// limit by at most the waiting requests an answer releases.
//
// # Timers
//
// The handshake, from InAccept to connection.open-ok, must finish within
// HandshakeTimeoutNs (10 s) or the socket closes. After the server sends
// connection.close it waits CloseTimeoutNs (3 s) for close-ok. The
// heartbeat is the client's tune-ok value (clients take the lower non-zero
// of the two proposals; 0 turns heartbeats off, as RabbitMQ allows): the
// server sends a heartbeat frame after an interval without writing, and
// closes the socket, without the close handshake (spec), after two
// intervals without a byte from the client, not counting time while
// reading was paused.
package conn
