package front

import (
	"encoding/binary"
	"errors"

	"github.com/sluicemq/sluice/amqp/conn"
	"github.com/sluicemq/sluice/amqp/wire"
	"github.com/sluicemq/sluice/core/record"
)

// A record's body, as the front writes a publish into a queue's log:
//
//	byte    bodyVersion (1)
//	byte    len(exchange), then the exchange
//	byte    len(routing key), then the routing key
//	uint32  len(header), big-endian, then the AMQP content header
//	        (amqp/wire's encoding: class 60, body size, properties)
//	...     the message body, exactly body size bytes
//
// Everything a consumer's basic.deliver needs travels in the log, so any
// replica serves it. Strict: truncated, padded or inconsistent bytes are
// refused.
const bodyVersion = 1

// headerBytesMax bounds the encoded content header a record may carry
// (amqp/wire's table limit plus the fixed fields).
const headerBytesMax = wire.TableBytesMax + 4096

// MessageBytesMax is the largest message body whose record always fits a
// log record (core/record.BodyBytesMax) whatever its properties, exchange
// and routing key: the front door's limit on a publish's body size (a
// larger one is refused with 311 CONTENT_TOO_LARGE before it reaches the
// core).
const MessageBytesMax = record.BodyBytesMax - headerBytesMax - 2*(1+255) - 1 - 4

// encodeBody writes a publish as a record body.
func encodeBody(dst []byte, exchange, routingKey string, c *conn.Content) ([]byte, error) {
	if len(exchange) > 255 || len(routingKey) > 255 {
		return dst, errors.New("exchange or routing key over 255 bytes")
	}
	dst = append(dst, bodyVersion, byte(len(exchange)))
	dst = append(dst, exchange...)
	dst = append(dst, byte(len(routingKey)))
	dst = append(dst, routingKey...)
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	h := wire.ContentHeader{ClassID: wire.ClassBasic, BodySize: uint64(len(c.Body)), Properties: c.Properties}
	var err error
	dst, err = wire.AppendContentHeader(dst, &h)
	if err != nil {
		return dst[:at], err
	}
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return append(dst, c.Body...), nil
}

// decodeBody reads a record body written by encodeBody. The returned body
// aliases b.
func decodeBody(b []byte) (exchange, routingKey string, c conn.Content, err error) {
	bad := errors.New("malformed message record")
	if len(b) < 2 || b[0] != bodyVersion {
		return "", "", c, bad
	}
	n := int(b[1])
	b = b[2:]
	if len(b) < n+1 {
		return "", "", c, bad
	}
	exchange, b = string(b[:n]), b[n:]
	n = int(b[0])
	b = b[1:]
	if len(b) < n+4 {
		return "", "", c, bad
	}
	routingKey, b = string(b[:n]), b[n:]
	hl := binary.BigEndian.Uint32(b)
	b = b[4:]
	if hl > headerBytesMax || uint64(len(b)) < uint64(hl) {
		return "", "", c, bad
	}
	h, err := wire.DecodeContentHeader(b[:hl])
	if err != nil {
		return "", "", c, err
	}
	b = b[hl:]
	if h.BodySize != uint64(len(b)) {
		return "", "", c, bad
	}
	c.Properties, c.Body = h.Properties, b
	return exchange, routingKey, c, nil
}

// DecodeRecordBody reads a publish record's body as the front wrote it:
// the exchange, the routing key and the content (its body aliases b). For
// tools that read a queue's log outside a broker (sluice export).
func DecodeRecordBody(b []byte) (exchange, routingKey string, c conn.Content, err error) {
	return decodeBody(b)
}

// EncodeRecordBody writes a publish as a record body, as the front does
// (for tools and tests that build a queue's log outside a broker).
func EncodeRecordBody(dst []byte, exchange, routingKey string, c *conn.Content) ([]byte, error) {
	return encodeBody(dst, exchange, routingKey, c)
}
