package conn

import (
	"github.com/sluicemq/sluice/amqp/wire"
)

// Frames leave through one wire.FrameWriter that encodes into a buffer;
// each logical send (one method, or a method with its content) becomes one
// EfWrite, so a content's frames are never interleaved with another's.

// flushWrite turns the encoded frames into an EfWrite.
func (c *Conn) flushWrite() {
	if c.wbuf.Len() == 0 {
		return
	}
	c.emit(EfWrite{Bytes: append([]byte(nil), c.wbuf.Bytes()...)})
	c.wbuf.Reset()
	c.lastWriteNs = c.nowNs
}

// writeMethod sends one method frame. Every method the server sends is
// built from values that fit the wire (names and tags came in shortstrs,
// reply texts are clipped), so an encoding error is a bug.
func (c *Conn) writeMethod(channel uint16, m wire.Method) {
	assert(c.state != stClosed, "no writes after close")
	c.wbuf.Reset()
	err := c.fw.WriteMethod(channel, m)
	assert(err == nil, "server method encodes")
	c.flushWrite()
}

// writeContent sends a method with its content header and body frames. It
// fails only when the content header does not fit this connection's
// frame_max (a message published on a connection with a larger one, with
// large headers); nothing is written then.
func (c *Conn) writeContent(channel uint16, m wire.Method, ct *Content) error {
	assert(c.state != stClosed, "no writes after close")
	c.wbuf.Reset()
	err := c.fw.WriteMethod(channel, m)
	assert(err == nil, "server content method encodes")
	h := wire.ContentHeader{ClassID: wire.ClassBasic, BodySize: uint64(len(ct.Body)), Properties: ct.Properties}
	if err := c.fw.WriteContentHeader(channel, &h); err != nil {
		c.wbuf.Reset()
		return err
	}
	err = c.fw.WriteBody(channel, ct.Body)
	assert(err == nil, "body frames fit frame_max")
	c.flushWrite()
	return nil
}
