// Package wire is the AMQP 0-9-1 wire codec of Sluice's front door: the
// protocol header, frames, field tables, the methods the front door speaks
// and the basic content header. It only turns bytes into values and back;
// what a method means, which frame may come next and what to answer is the
// front door's business. Standard library only.
//
// # Contract
//
//   - Bytes from the peer are untrusted. Every decoder either returns a
//     value or an *Error carrying the reply code the connection must close
//     with (Code), a reason (ReplyText gives the reply-text, clipped to a
//     shortstr) and, for a method's arguments, its class and method ids for
//     connection.close. Decoders never panic on any input and never repair
//     it: truncated values, trailing bytes, undefined bits, unknown type
//     letters, duplicate table keys are refused, not skipped.
//   - Every length read from the wire is checked before it is used to
//     allocate: a frame's size against frame_max from its 7-byte header
//     before the payload is read; a string's or table's length against the
//     bytes that remain. Nothing a peer sends can make the codec hold more
//     than one frame_max of payload plus the decoded values of that frame,
//     and those are bounded by TableValuesMax and TableDepthMax.
//   - Encoders refuse, with an error wrapping ErrEncode, values the wire
//     cannot carry (a shortstr over 255 bytes, a table over its limits, a Go
//     type with no field-type letter, a frame over frame_max), so the server
//     never sends what its own decoder would refuse. Broken invariants of
//     the package itself panic through assert.
//   - Decoded strings, tables and byte arrays are copies: they stay valid
//     after the frame buffer is reused. Frame payloads are not: a
//     FrameReader's payload is valid until its next ReadFrame.
//   - Nothing depends on Go map order: a table is an ordered slice of
//     fields, decoded and re-encoded in the peer's order.
//
// # Reply codes
//
// Following the spec's definitions: a frame that cannot be framed (over
// frame_max, no frame-end 0xCE, unknown type, a bad heartbeat) is 501
// FRAME_ERROR; a method or content header whose fields do not decode
// (truncated, trailing bytes, bad table, undefined bit set, non-zero
// weight) is 502 SYNTAX_ERROR (RabbitMQ says 501 here; both close the
// connection); a method id no spec defines is 503 COMMAND_INVALID; a
// method the spec defines that this codec does not implement (tx.*,
// exchange.bind/unbind, basic.recover-async, access.request,
// connection.update-secret) is 540 NOT_IMPLEMENTED.
//
// # Field tables: RabbitMQ's type letters
//
// The 0-9-1 spec's table of field types disagrees with what brokers and
// clients use (its errata); this codec follows RabbitMQ's letters, as the
// clients people run (amqp091-go, pika, the Java client) do:
//
//	't' bool          'b' int8        'B' uint8       's' int16
//	'u' uint16        'I' int32       'i' uint32      'l' int64
//	'f' float32       'd' float64     'D' Decimal     'S' longstr (string)
//	'A' Array         'T' Timestamp   'F' Table       'V' void (nil)
//	'x' byte array ([]byte)
//
// A decoded table keeps wire order; a duplicate name is refused (not
// first-wins or last-wins: no client we serve sends one, and refusing
// keeps one meaning per name). A boolean octet other than 0 or 1 is
// refused. Strings are bytes: UTF-8 is not checked.
//
// # Limits
//
//	FrameBytesMin      4,096 bytes  spec frame-min-size; the limit before tuning
//	FrameBytesDefault  128 KiB      the frame_max the server proposes
//	FrameBytesMax      1 MiB        hard cap; a larger frame_max is refused
//	TableBytesMax      256 KiB      one table's encoded length
//	TableDepthMax      16           nesting of tables and arrays
//	TableValuesMax     16,384       fields and elements under one table
//	ShortStrBytesMax   255          a shortstr's length octet
//
// frame_max counts the whole frame (7-byte header, payload, frame-end), as
// the spec's tune.frame-max does. A frame_max of 0 ("no limit" in the
// spec) is refused by NewFrameReader and NewFrameWriter: the server always
// negotiates a limit, and a client that answers tune with 0 gets the
// server's proposal.
//
// # Methods
//
// The structs in methods.go, one per method, name the spec's arguments in
// its order; consecutive bit arguments share octets, first argument in the
// least significant bit. Reserved arguments (0-8 leftovers the spec marks
// "Deprecated: must be zero") have no field: written as zero or empty, and
// read and ignored, as RabbitMQ does; they mean nothing in 0-9-1, and
// refusing a stale non-zero one would trade old clients for nothing. Covered: connection.*
// (start through close-ok, blocked, unblocked), channel.*, exchange.declare
// and delete, queue.*, basic.* (qos through nack, without recover-async)
// and confirm.*. The basic content header carries the 14 properties with
// presence flags, so "absent" and "empty" stay distinct.
package wire
