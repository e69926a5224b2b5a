// Package replycheck checks the front door's liveness from the outside:
// it reads one AMQP 0-9-1 connection's two byte streams, the client's as
// the server received it and the server's as the server wrote it, and
// requires that every method the client sent that expects a reply is
// answered within a bound, by one of:
//
//   - its reply (queue.declare-ok for queue.declare, basic.get-ok or
//     basic.get-empty for basic.get, ...), on its channel, in the order
//     the channel's requests were sent;
//   - channel.close from the server on its channel (a refusal with a
//     code), or channel.close-ok after the client's own channel.close;
//   - connection.close or connection.close-ok from the server, or the end
//     of the socket.
//
// A method sent with no-wait expects nothing. Bytes the server cannot
// parse (a bad frame, an unknown method, a frame over the limit) expect
// the connection to close within the bound. After the server's
// channel.close the client's frames on that channel count for nothing
// until its close-ok, as the spec has the server discard them; after the
// server's connection.close, all of them.
//
// The server's stream must make sense too: a reply that answers nothing,
// or answers a request other than the oldest one waiting on its channel,
// is an error, as is a server frame that does not parse.
//
// Time is the caller's: every call takes an instant (nanoseconds, never
// decreasing). Check reports the first request older than the bound;
// Outstanding lists what still waits. The checker is pure (no clock, no
// I/O, no goroutines), so the simulator can run it as well as tests.
//
// The checker reads the streams with its own small frame parser (header,
// size, frame-end), not with the server's reader, so that a fault in the
// server's parsing cannot hide from it; it uses amqp/wire only to decode a
// method's no-wait bit.
package replycheck
