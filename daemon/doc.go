// Package daemon is `sluice serve`'s world: one broker process on real
// files, a real clock, crypto randomness and sockets, driving the very
// host (io/driver.Host) and core the simulator drives, with the AMQP 0-9-1
// front door (amqp/front, amqp/conn) on a TCP listener.
//
// # One event loop
//
// The host, the core and the front are single-threaded state machines. One
// goroutine, the loop, owns all three: it takes events from the other
// goroutines (an accepted socket, bytes read, a socket's end, a finished
// sync, a timer, a stop) one at a time, and work the machines asked for (a
// storage operation to run, a core reply to hand to the front) from its
// own FIFO, in batches: a batch is what was queued before it began, and
// between two batches the loop takes a ready event (and a ready timer
// every other batch on average: Go's select picks at random), so that a
// chain of work (a seal's reads of a large log, each completion asking for
// the next) never holds the sockets and timers for the whole chain. The other
// goroutines accept sockets, read and write them, and fdatasync a log the
// host handed over for its sync: nothing else touches the machines. A
// socket's reader reads one chunk ahead at most (a credit the loop gives
// back unless the connection paused reading); its writer takes a bounded
// queue, so the loop never blocks on a client (a client that reads nothing
// is disconnected).
// Every input carries the instant of the monotonic clock (nanoseconds
// since the process started); the tick inputs carry 64 random bits from
// crypto/rand (the metadata group's failure detector jitter).
//
// # Storage
//
// The data directory holds:
//
//	identity   node id and storage instance (drawn once, from crypto/rand,
//	           when the directory is created)
//	process    the last process instance: read, incremented and made
//	           durable (write, fdatasync, rename, directory sync) before
//	           the node starts, so every start's instance is greater
//	meta/      the metadata store (fsio/metapebble: synced pebble batches)
//	queues/qN/ the segment log (io/seglog on fsio) of queue N, opened when
//	           the controller places the queue here (OpOpen)
//
// Appends, truncations and discards run inline (into the page cache);
// syncs (fdatasync and directory syncs, through fsio), reads, verifies,
// persists and opens run as the loop's next work item, so that a sync's
// completion is an input of its own. While a sync runs the sockets keep
// being read, and the publishes that arrive meanwhile are appended after
// it and made durable by the next one: group commit, without a thread per
// log.
//
// # Single node, or one broker of a cluster
//
// Without Config.Cluster the broker is the sole voter of the metadata
// group (core/ctrl): a queue.declare commits through it, its placement
// names this broker, and publishes are confirmed once this broker's log
// holds them durably (W = 1 of 1).
//
// With Config.Cluster (cluster.go) it is one member of a cluster: the
// metadata group's voters are the configured ones and every other member
// is a raft learner; the core's sends to a peer go over netio on the one
// connection this broker dials to it, each peer with a bounded queue
// (full: the message is dropped and counted, the core resends what
// matters), so a slow or stopped peer never stalls the loop; what peers
// send arrives on the connections they dialed here, authenticated before
// any frame is read, and only from configured members, as InMessage
// inputs. Eager failover: a peer's connection closed from its side and a
// reconnect refused is InPeerLost with the process instance that
// connection reached (the handshake carries it); a silence never is.
//
// Client forwarding (forward.go): the front (amqp/front, Forward) routes
// a request for a queue another broker owns to that broker; the daemon
// carries it on a forwarding link (a netio connection of its own, TCP's
// order both ways, bounded queues whose overflow ends the link rather
// than dropping a request), and the owner runs it as a core client of its
// own and sends the replies and deliveries back. A link that ends is the
// front's NodeLost; a session that ends on the owner side ends its
// clients (InClientGone).
//
// # Drain
//
// Shutdown stops accepting, stops reading client sockets, waits (bounded)
// until every publish handed to the core has its outcome and been answered
// to its client, closes the client sockets (their unacked deliveries
// return to their queues), runs the storage work still queued, and closes
// the logs and the metadata store.
package daemon
