package conn

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/sluicemq/sluice/amqp/wire"
)

// The stable text forms of bytes, properties and frames, for traces and
// golden files. They print values, never Go map order.

// bytesTextMax is the longest byte string printed whole; longer ones print
// as their length, a prefix and a CRC-32C.
const bytesTextMax = 48

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// bytesText prints b as its length and either its quoted bytes or a prefix
// and checksum.
func bytesText(b []byte) string {
	if len(b) <= bytesTextMax {
		return fmt.Sprintf("%dB:%q", len(b), b)
	}
	return fmt.Sprintf("%dB:%q...crc=%08x", len(b), b[:16], crc32.Checksum(b, castagnoli))
}

// propsText prints the present properties, in the spec's order.
func propsText(p *wire.Properties) string {
	var parts []string
	add := func(flag uint16, name string, v any) {
		if p.Flags&flag != 0 {
			parts = append(parts, fmt.Sprintf("%s=%v", name, v))
		}
	}
	add(wire.FlagContentType, "content-type", p.ContentType)
	add(wire.FlagContentEncoding, "content-encoding", p.ContentEncoding)
	add(wire.FlagHeaders, "headers", tableText(p.Headers))
	add(wire.FlagDeliveryMode, "delivery-mode", p.DeliveryMode)
	add(wire.FlagPriority, "priority", p.Priority)
	add(wire.FlagCorrelationID, "correlation-id", p.CorrelationID)
	add(wire.FlagReplyTo, "reply-to", p.ReplyTo)
	add(wire.FlagExpiration, "expiration", p.Expiration)
	add(wire.FlagMessageID, "message-id", p.MessageID)
	add(wire.FlagTimestamp, "timestamp", uint64(p.Timestamp))
	add(wire.FlagType, "type", p.Type)
	add(wire.FlagUserID, "user-id", p.UserID)
	add(wire.FlagAppID, "app-id", p.AppID)
	add(wire.FlagReserved, "reserved", p.Reserved)
	return strings.Join(parts, " ")
}

// tableText prints a field table in wire order.
func tableText(t wire.Table) string {
	parts := make([]string, 0, len(t))
	for _, f := range t {
		parts = append(parts, f.Name+":"+valueText(f.Value))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func valueText(v wire.Value) string {
	switch x := v.(type) {
	case wire.Table:
		return tableText(x)
	case wire.Array:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, valueText(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case string:
		return fmt.Sprintf("%q", x)
	case []byte:
		return bytesText(x)
	}
	return fmt.Sprintf("%v", v)
}

// framesText describes the frames in b, one after another, as the peer
// would decode them: "ch=1 basic.deliver{...} | ch=1 header{...} | ...".
// Bytes that are not frames (the protocol header) print as what they are.
func framesText(b []byte) string {
	if len(b) == len(wire.ProtocolHeader) && string(b[:4]) == "AMQP" {
		return fmt.Sprintf("protocol-header %q", b)
	}
	var parts []string
	for len(b) > 0 {
		if len(b) < wire.FrameOverheadBytes {
			parts = append(parts, "partial "+bytesText(b))
			break
		}
		typ, ch := b[0], binary.BigEndian.Uint16(b[1:])
		size := int(binary.BigEndian.Uint32(b[3:]))
		if len(b) < wire.FrameOverheadBytes+size {
			parts = append(parts, "partial "+bytesText(b))
			break
		}
		payload := b[wire.FrameHeaderBytes : wire.FrameHeaderBytes+size]
		parts = append(parts, fmt.Sprintf("ch=%d %s", ch, frameText(typ, payload)))
		b = b[wire.FrameOverheadBytes+size:]
	}
	return strings.Join(parts, " | ")
}

func frameText(typ uint8, payload []byte) string {
	switch typ {
	case wire.FrameMethod:
		m, err := wire.DecodeMethod(payload)
		if err != nil {
			return "bad-method " + err.Error()
		}
		return methodText(m)
	case wire.FrameHeader:
		h, err := wire.DecodeContentHeader(payload)
		if err != nil {
			return "bad-header " + err.Error()
		}
		if p := propsText(&h.Properties); p != "" {
			return fmt.Sprintf("header{size=%d %s}", h.BodySize, p)
		}
		return fmt.Sprintf("header{size=%d}", h.BodySize)
	case wire.FrameBody:
		return "body " + bytesText(payload)
	case wire.FrameHeartbeat:
		return "heartbeat"
	}
	return fmt.Sprintf("frame-type-%d %s", typ, bytesText(payload))
}

// methodText prints a method as its name and its fields; field tables
// print in wire order.
func methodText(m wire.Method) string {
	c, id := m.ID()
	name := wire.MethodName(c, id)
	switch x := m.(type) {
	case *wire.ConnectionStart:
		return fmt.Sprintf("%s{version=%d-%d props=%s mechanisms=%q locales=%q}", name,
			x.VersionMajor, x.VersionMinor, tableText(x.ServerProperties), x.Mechanisms, x.Locales)
	case *wire.QueueDeclare:
		return fmt.Sprintf("%s{queue=%q passive=%t durable=%t exclusive=%t auto-delete=%t no-wait=%t args=%s}", name,
			x.Queue, x.Passive, x.Durable, x.Exclusive, x.AutoDelete, x.NoWait, tableText(x.Arguments))
	}
	return name + strings.TrimPrefix(fmt.Sprintf("%+v", m), "&")
}
