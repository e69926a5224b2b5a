package conn

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/sluicemq/sluice/amqp/wire"
)

// parse takes complete frames off the input buffer and handles them, until
// the buffer holds no complete frame, the connection closes, or a limit
// pauses reading. A frame's size (against frame_max), type and heartbeat
// shape are checked from its 7-byte header, so no more than one frame_max is
// awaited for a frame and none for a frame its header refuses; the
// validation of the frame (type, frame-end, heartbeat shape) is amqp/wire's.
func (c *Conn) parse() {
	for c.state != stClosed && !c.overLimit() {
		if c.state == stHeader {
			if !c.parseProtocolHeader() {
				return
			}
			continue
		}
		if len(c.in) < wire.FrameHeaderBytes {
			break
		}
		size := uint64(binary.BigEndian.Uint32(c.in[3:]))
		total := size + wire.FrameOverheadBytes
		// A frame its header already refuses (over frame_max, an unknown
		// type, a heartbeat off channel 0 or with a payload) is refused at
		// once, not after its payload arrives: a client that sent a bad
		// header may never send the rest.
		refused := total > uint64(c.frameMaxBytes) || !frameHeaderValid(c.in[0], binary.BigEndian.Uint16(c.in[1:]), size)
		if !refused && uint64(len(c.in)) < total {
			break
		}
		c.src.b = c.in
		f, err := c.fr.ReadFrame()
		if err != nil {
			e, ok := err.(*wire.Error)
			assert(ok, "a complete frame reads without I/O error")
			if c.state == stClosing {
				// Out of step: the close-ok can no longer be found.
				c.closeSocket("bad frame while closing: " + e.ReplyText())
				return
			}
			c.connError(e)
			return
		}
		assert(uint64(len(c.in)-len(c.src.b)) == total, "the reader took exactly one frame")
		c.in = c.src.b
		c.onFrame(f)
	}
	c.compactInput()
}

// frameHeaderValid says whether a frame header's type and shape are ones
// amqp/wire's reader takes (it refuses the others from the header alone).
func frameHeaderValid(typ uint8, ch uint16, size uint64) bool {
	switch typ {
	case wire.FrameMethod, wire.FrameHeader, wire.FrameBody:
		return true
	case wire.FrameHeartbeat:
		return ch == 0 && size == 0
	}
	return false
}

// compactInput moves an unparsed remainder to the front of a fresh buffer,
// so the buffer's backing array does not keep every chunk ever received.
func (c *Conn) compactInput() {
	if c.state == stClosed {
		return
	}
	if len(c.in) == 0 {
		c.in = nil
		return
	}
	if cap(c.in) > 2*len(c.in) {
		c.in = append([]byte(nil), c.in...)
	}
}

// parseProtocolHeader handles the first 8 bytes. A wrong header gets the
// server's and a closed socket (spec, connection.start rule protocol-name).
func (c *Conn) parseProtocolHeader() bool {
	n := min(len(c.in), len(wire.ProtocolHeader))
	if !bytes.Equal(c.in[:n], wire.ProtocolHeader[:n]) {
		c.emit(EfWrite{Bytes: append([]byte(nil), wire.ProtocolHeader[:]...)})
		c.closeSocket("wrong protocol header")
		return false
	}
	if n < len(wire.ProtocolHeader) {
		return false
	}
	c.in = c.in[n:]
	c.sendStart()
	return true
}

// onFrame routes one frame by the connection's state.
func (c *Conn) onFrame(f wire.Frame) {
	switch c.state {
	case stStartOk, stTuneOk, stOpen:
		c.handshakeFrame(f)
	case stOpened:
		c.openedFrame(f)
	case stClosing:
		c.closingFrame(f)
	default:
		panic("amqp/conn: frame in state " + c.state.String())
	}
}

// closingFrame: after the server's connection.close, only close and
// close-ok count; everything else is discarded (spec: connection.close).
func (c *Conn) closingFrame(f wire.Frame) {
	if f.Type != wire.FrameMethod || f.Channel != 0 {
		return
	}
	m, err := wire.DecodeMethod(f.Payload)
	if err != nil {
		return
	}
	switch x := m.(type) {
	case *wire.ConnectionCloseOk:
		c.closeSocket("connection closed by the server")
	case *wire.ConnectionClose:
		// Both sides closed at once: each answers the other.
		c.closeAnswered(x)
	}
}

// openedFrame handles a frame of an open connection.
func (c *Conn) openedFrame(f wire.Frame) {
	if f.Type == wire.FrameHeartbeat {
		return // its bytes already count as traffic
	}
	if f.Channel == 0 {
		c.channelZeroFrame(f)
		return
	}
	ch := c.channels[f.Channel]
	if ch == nil {
		c.unopenedChannelFrame(f)
		return
	}
	c.channelFrame(ch, f)
}

// channelZeroFrame: channel 0 carries connection methods only.
func (c *Conn) channelZeroFrame(f wire.Frame) {
	if f.Type != wire.FrameMethod {
		c.connError(errorf(wire.UnexpectedFrame, 0, 0, "content frame (type %d) on channel 0", f.Type))
		return
	}
	m, err := wire.DecodeMethod(f.Payload)
	if err != nil {
		c.connError(err.(*wire.Error))
		return
	}
	cls, id := m.ID()
	switch x := m.(type) {
	case *wire.ConnectionClose:
		c.closeAnswered(x)
	case *wire.ConnectionUpdateSecret:
		// The new secret must log the connection's user in, as at the
		// handshake; Sluice's secrets are passwords, which do not
		// expire, so this is a check, and the connection goes on. A
		// secret that does not is refused as RabbitMQ refuses it.
		if !c.authenticate(c.user, x.NewSecret) {
			c.connError(errorf(wire.NotAllowed, cls, id, "new secret refused for user %q", c.user))
			return
		}
		c.writeMethod(0, &wire.ConnectionUpdateSecretOk{})
	default:
		c.connError(errorf(wire.CommandInvalid, cls, id, "%s on channel 0 of an open connection", wire.MethodName(cls, id)))
	}
}

// unopenedChannelFrame: only channel.open may name a channel not open.
func (c *Conn) unopenedChannelFrame(f wire.Frame) {
	if f.Type == wire.FrameMethod {
		m, err := wire.DecodeMethod(f.Payload)
		if err != nil {
			c.connError(err.(*wire.Error))
			return
		}
		if _, ok := m.(*wire.ChannelOpen); ok {
			c.openChannel(f.Channel)
			return
		}
		cls, id := m.ID()
		c.connError(errorf(wire.ChannelError, cls, id, "%s on channel %d, which is not open", wire.MethodName(cls, id), f.Channel))
		return
	}
	c.connError(errorf(wire.ChannelError, 0, 0, "frame type %d on channel %d, which is not open", f.Type, f.Channel))
}

func closeReason(x *wire.ConnectionClose) string {
	return fmt.Sprintf("client closed the connection: %d %s", x.ReplyCode, x.ReplyText)
}
