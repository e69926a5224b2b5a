package replycheck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/amqp/wire"
)

// frameBytesMax is the largest frame the checker waits for: no server
// accepts a larger one (amqp/wire's hard cap), so a client frame over it
// means the connection must close.
const frameBytesMax = wire.FrameBytesMax

// Checker observes one connection. It is not safe for concurrent use.
type Checker struct {
	boundNs int64
	nowNs   int64

	client []byte // received from the client, not yet parsed
	server []byte // written by the server, not yet parsed
	// clientHeader: the client's protocol header was read; serverStarted:
	// the server's first bytes were looked at (a server answers a wrong
	// header with its own header).
	clientHeader, serverStarted bool

	channels map[uint16]*channel // lookup only
	ids      []uint16            // channels with state, ascending: the iteration order

	// brokenAtNs: the client's bytes stopped making sense at this instant
	// (0: they make sense); the connection must close within the bound.
	brokenAtNs int64
	brokenWhy  string
	// brokenOn: the channel of a method that did not decode (else 0). The
	// server may have read it after it closed that channel (the checker
	// sees a chunk's frames before the writes they caused), and then
	// discarded it, as the spec wants: that channel's close forgives it.
	brokenOn uint16
	// framesLost: the client's stream lost its framing; nothing after is
	// read.
	framesLost bool
	// connClosing: the server sent connection.close (or close-ok): nothing
	// more is expected on any channel.
	connClosing bool
	closed      bool
	err         error // the server's first error, reported by every call after
	answered    uint64
}

// channel is what one channel waits for.
type channel struct {
	waiting []request // oldest first
	// serverClosing: the server sent channel.close; the client's frames on
	// the channel are discarded until its close-ok.
	serverClosing bool
}

// request is one client method that expects a reply.
type request struct {
	classID, methodID uint16
	replies           []uint16 // acceptable reply method ids, in the same class
	atNs              int64    // when the server received it
	close             bool     // the client's channel.close or connection.close
}

func (r request) String() string {
	if r.classID == 0 {
		return "the protocol header"
	}
	return wire.MethodName(r.classID, r.methodID)
}

// New returns a checker that allows boundNs (> 0) from a request to its
// answer.
func New(boundNs int64) *Checker {
	if boundNs <= 0 {
		panic("replycheck: the bound must be positive")
	}
	return &Checker{boundNs: boundNs, channels: map[uint16]*channel{}}
}

// Answered counts the requests answered so far (by their reply or by a
// close), for a test that wants to show it checked something.
func (c *Checker) Answered() uint64 { return c.answered }

func (c *Checker) at(nowNs int64) {
	if nowNs < c.nowNs {
		panic(fmt.Sprintf("replycheck: time went back: %d after %d", nowNs, c.nowNs))
	}
	c.nowNs = nowNs
}

// ClientBytes takes bytes from the client, at the instant the server
// received them.
func (c *Checker) ClientBytes(nowNs int64, b []byte) error {
	c.at(nowNs)
	if c.err != nil || c.closed || c.connClosing || c.framesLost {
		return c.err
	}
	c.client = append(c.client, b...)
	if !c.clientHeader {
		n := min(len(c.client), len(wire.ProtocolHeader))
		if !bytes.Equal(c.client[:n], wire.ProtocolHeader[:n]) {
			c.broken("a protocol header other than AMQP 0-9-1")
			c.lose()
			return nil
		}
		if n < len(wire.ProtocolHeader) {
			return nil
		}
		c.client = c.client[n:]
		c.clientHeader = true
		c.wait(0, request{atNs: nowNs, replies: []uint16{10}, classID: 0})
	}
	for !c.framesLost && !c.connClosing {
		typ, ch, payload, ok, why := nextFrame(&c.client)
		if why != "" {
			c.broken(why)
			c.lose()
			break
		}
		if !ok {
			break
		}
		if typ == wire.FrameMethod {
			c.clientMethod(ch, payload)
		}
	}
	if len(c.client) == 0 {
		c.client = nil
	}
	return nil
}

// ServerBytes takes bytes the server wrote, at the instant it wrote them.
func (c *Checker) ServerBytes(nowNs int64, b []byte) error {
	c.at(nowNs)
	if c.err != nil || c.closed {
		return c.err
	}
	c.server = append(c.server, b...)
	if !c.serverStarted && len(c.server) > 0 {
		c.serverStarted = true
		if c.server[0] == wire.ProtocolHeader[0] {
			if len(c.server) < len(wire.ProtocolHeader) || !bytes.Equal(c.server[:8], wire.ProtocolHeader[:]) {
				return c.fail("the server's first bytes %q are neither a frame nor its protocol header", c.server[:min(8, len(c.server))])
			}
			// A server answers a wrong header with its own, then closes.
			c.server = c.server[8:]
			c.resolveAll()
			c.connClosing = true
		}
	}
	for c.err == nil {
		typ, ch, payload, ok, why := nextFrame(&c.server)
		if why != "" {
			return c.fail("the server wrote a bad frame: %s", why)
		}
		if !ok {
			break
		}
		if typ == wire.FrameMethod {
			c.serverMethod(ch, payload)
		}
	}
	if len(c.server) == 0 {
		c.server = nil
	}
	return c.err
}

// SocketClosed says the socket ended: nothing is expected any more.
func (c *Checker) SocketClosed(nowNs int64) {
	c.at(nowNs)
	c.resolveAll()
	c.brokenAtNs = 0
	c.closed = true
}

// Check reports the server's first error, or a request (or unparsable
// client bytes) older than the bound at nowNs.
func (c *Checker) Check(nowNs int64) error {
	c.at(nowNs)
	if c.err != nil {
		return c.err
	}
	if c.brokenAtNs != 0 && nowNs-c.brokenAtNs > c.boundNs {
		return fmt.Errorf("replycheck: the client's bytes stopped parsing at %d ns (%s), and %d ns later the connection is still open",
			c.brokenAtNs, c.brokenWhy, nowNs-c.brokenAtNs)
	}
	for _, id := range c.ids {
		for _, r := range c.channels[id].waiting {
			if nowNs-r.atNs > c.boundNs {
				return fmt.Errorf("replycheck: %s on channel %d, received at %d ns, has had no reply and no close for %d ns (bound %d ns)",
					r, id, r.atNs, nowNs-r.atNs, c.boundNs)
			}
		}
	}
	return nil
}

// Outstanding lists what still waits, one line each, by channel and age.
func (c *Checker) Outstanding() []string {
	var out []string
	if c.brokenAtNs != 0 {
		out = append(out, fmt.Sprintf("unparsable client bytes at %d ns (%s): the connection must close", c.brokenAtNs, c.brokenWhy))
	}
	for _, id := range c.ids {
		for _, r := range c.channels[id].waiting {
			out = append(out, fmt.Sprintf("channel %d: %s at %d ns", id, r, r.atNs))
		}
	}
	return out
}

func (c *Checker) fail(format string, args ...any) error {
	if c.err == nil {
		c.err = fmt.Errorf("replycheck: "+format, args...)
	}
	return c.err
}

// broken says the client sent what the server must close the
// connection for; a later method that does not decode keeps the first
// reason.
func (c *Checker) broken(why string) {
	if c.brokenAtNs == 0 {
		c.brokenAtNs, c.brokenWhy, c.brokenOn = max(c.nowNs, 1), why, 0
	}
}

// lose stops reading the client's stream: its framing is gone.
// No channel's close forgives that.
func (c *Checker) lose() {
	c.framesLost = true
	c.brokenOn = 0
	c.client = nil
}

// ch returns channel id's state, creating it.
func (c *Checker) ch(id uint16) *channel {
	if s := c.channels[id]; s != nil {
		return s
	}
	s := &channel{}
	c.channels[id] = s
	i, _ := slices.BinarySearch(c.ids, id)
	c.ids = slices.Insert(c.ids, i, id)
	return s
}

func (c *Checker) forget(id uint16) {
	if c.channels[id] == nil {
		return
	}
	delete(c.channels, id)
	i, _ := slices.BinarySearch(c.ids, id)
	c.ids = slices.Delete(c.ids, i, i+1)
}

func (c *Checker) wait(id uint16, r request) {
	s := c.ch(id)
	s.waiting = append(s.waiting, r)
}

func (c *Checker) resolveAll() {
	for _, id := range c.ids {
		c.answered += uint64(len(c.channels[id].waiting))
	}
	clear(c.channels)
	c.ids = nil
}

// clientMethod takes one method frame the client sent.
func (c *Checker) clientMethod(id uint16, payload []byte) {
	s := c.channels[id]
	m, err := wire.DecodeMethod(payload)
	if s != nil && s.serverClosing {
		// The spec has the server discard all but close and close-ok.
		switch m.(type) {
		case *wire.ChannelCloseOk:
			s.serverClosing = false
			if len(s.waiting) == 0 {
				c.forget(id)
			}
		case *wire.ChannelClose:
			c.wait(id, request{classID: wire.ClassChannel, methodID: wire.MethodChannelClose, replies: []uint16{41}, atNs: c.nowNs, close: true})
		}
		return
	}
	if err != nil {
		if c.brokenAtNs == 0 {
			c.broken(err.Error())
			c.brokenOn = id
		}
		return
	}
	cls, mid := m.ID()
	replies, close := expects(m)
	if len(replies) == 0 {
		return
	}
	c.wait(id, request{classID: cls, methodID: mid, replies: replies, atNs: c.nowNs, close: close})
}

// expects says which replies (method ids of the same class) a client
// method expects, none for a method that expects nothing (sent no-wait, a
// publish, an ack, a reply to the server), and whether it is a close.
func expects(m wire.Method) (replies []uint16, close bool) {
	switch x := m.(type) {
	case *wire.ConnectionStartOk, *wire.ConnectionSecureOk:
		return []uint16{20, 30}, false // secure or tune
	case *wire.ConnectionOpen:
		return []uint16{41}, false
	case *wire.ConnectionClose:
		return []uint16{51}, true
	case *wire.ConnectionUpdateSecret:
		return []uint16{71}, false
	case *wire.ChannelOpen:
		return []uint16{11}, false
	case *wire.ChannelFlow:
		return []uint16{21}, false
	case *wire.ChannelClose:
		return []uint16{41}, true
	case *wire.ExchangeDeclare:
		return unlessNoWait(x.NoWait, 11), false
	case *wire.ExchangeDelete:
		return unlessNoWait(x.NoWait, 21), false
	case *wire.ExchangeBind:
		return unlessNoWait(x.NoWait, 31), false
	case *wire.ExchangeUnbind:
		return unlessNoWait(x.NoWait, 51), false
	case *wire.QueueDeclare:
		return unlessNoWait(x.NoWait, 11), false
	case *wire.QueueBind:
		return unlessNoWait(x.NoWait, 21), false
	case *wire.QueuePurge:
		return unlessNoWait(x.NoWait, 31), false
	case *wire.QueueDelete:
		return unlessNoWait(x.NoWait, 41), false
	case *wire.QueueUnbind:
		return []uint16{51}, false
	case *wire.BasicQos:
		return []uint16{11}, false
	case *wire.BasicConsume:
		return unlessNoWait(x.NoWait, 21), false
	case *wire.BasicCancel:
		return unlessNoWait(x.NoWait, 31), false
	case *wire.BasicGet:
		return []uint16{71, 72}, false // get-ok or get-empty
	case *wire.BasicRecover:
		return []uint16{111}, false
	case *wire.ConfirmSelect:
		return unlessNoWait(x.NoWait, 11), false
	case *wire.TxSelect:
		return []uint16{11}, false
	case *wire.TxCommit:
		return []uint16{21}, false
	case *wire.TxRollback:
		return []uint16{31}, false
	}
	return nil, false
}

func unlessNoWait(noWait bool, reply uint16) []uint16 {
	if noWait {
		return nil
	}
	return []uint16{reply}
}

// isReply says whether a method the server sends answers a client's
// request (connection.start answers the protocol header).
func isReply(cls, mid uint16) bool {
	switch cls {
	case wire.ClassConnection:
		return mid == 10 || mid == 20 || mid == 30 || mid == 41 || mid == 51 || mid == 71
	case wire.ClassChannel:
		return mid == 11 || mid == 21 || mid == 41
	case wire.ClassBasic:
		return mid == 11 || mid == 21 || mid == 31 || mid == 71 || mid == 72 || mid == 111
	case wire.ClassExchange, wire.ClassQueue, wire.ClassTx, wire.ClassConfirm:
		return mid%10 == 1
	}
	return false
}

// serverMethod takes one method frame the server wrote.
func (c *Checker) serverMethod(id uint16, payload []byte) {
	if len(payload) < 4 {
		c.fail("the server wrote a method frame of %d bytes on channel %d", len(payload), id)
		return
	}
	cls, mid := binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:])
	if _, err := wire.DecodeMethod(payload); err != nil {
		c.fail("the server wrote a method that does not decode on channel %d: %v", id, err)
		return
	}
	if c.connClosing {
		return // a close-ok crossing the server's close, or its own close-ok
	}
	switch {
	case cls == wire.ClassConnection && mid == 50: // connection.close
		c.resolveAll()
		c.brokenAtNs = 0
		c.connClosing = true
		return
	case cls == wire.ClassChannel && mid == 40: // channel.close
		s := c.ch(id)
		// Its code answers every request waiting on the channel, except a
		// close of the client's own, which the server still answers with
		// close-ok.
		var keep []request
		for _, r := range s.waiting {
			if r.close {
				keep = append(keep, r)
			} else {
				c.answered++
			}
		}
		s.waiting = keep
		s.serverClosing = true
		if c.brokenAtNs != 0 && c.brokenOn == id && id != 0 {
			c.brokenAtNs = 0
		}
		return
	case cls == wire.ClassChannel && mid == 41: // channel.close-ok
		s := c.channels[id]
		i := -1
		if s != nil {
			i = slices.IndexFunc(s.waiting, func(r request) bool { return r.close })
		}
		if i < 0 {
			c.fail("channel.close-ok on channel %d, which the client did not close", id)
			return
		}
		// The close answers what waited before it: the server drops the
		// replies of a channel the client closed.
		c.answered += uint64(i + 1)
		s.waiting = s.waiting[i+1:]
		if len(s.waiting) == 0 && !s.serverClosing {
			c.forget(id)
		}
		return
	case !isReply(cls, mid):
		return // a delivery, a return, a confirm, a server's basic.cancel
	}
	s := c.channels[id]
	if s == nil || len(s.waiting) == 0 {
		c.fail("%s on channel %d answers nothing the client asked", wire.MethodName(cls, mid), id)
		return
	}
	head := s.waiting[0]
	if head.classID != cls && !(head.classID == 0 && cls == wire.ClassConnection) || !slices.Contains(head.replies, mid) {
		c.fail("%s on channel %d, but the oldest request waiting there is %s", wire.MethodName(cls, mid), id, head)
		return
	}
	c.answered++
	s.waiting = s.waiting[1:]
	if cls == wire.ClassConnection && mid == 51 {
		c.resolveAll()
		c.connClosing = true
		return
	}
	if len(s.waiting) == 0 && !s.serverClosing {
		c.forget(id)
	}
}

// nextFrame takes one complete frame off *buf. ok is false when the frame
// is not complete yet; why says what is wrong with a frame that cannot
// be one (its header or its frame-end), as any server's reader would.
func nextFrame(buf *[]byte) (typ uint8, ch uint16, payload []byte, ok bool, why string) {
	b := *buf
	if len(b) < wire.FrameHeaderBytes {
		return 0, 0, nil, false, ""
	}
	typ, ch = b[0], binary.BigEndian.Uint16(b[1:])
	size := uint64(binary.BigEndian.Uint32(b[3:]))
	switch typ {
	case wire.FrameMethod, wire.FrameHeader, wire.FrameBody:
	case wire.FrameHeartbeat:
		if ch != 0 || size != 0 {
			return 0, 0, nil, false, fmt.Sprintf("a heartbeat frame on channel %d with %d bytes", ch, size)
		}
	default:
		return 0, 0, nil, false, fmt.Sprintf("frame type %d", typ)
	}
	total := size + wire.FrameOverheadBytes
	if total > frameBytesMax {
		return 0, 0, nil, false, fmt.Sprintf("a frame of %d bytes", total)
	}
	if uint64(len(b)) < total {
		return 0, 0, nil, false, ""
	}
	if b[total-1] != wire.FrameEnd {
		return 0, 0, nil, false, fmt.Sprintf("frame-end %#02x", b[total-1])
	}
	payload = b[wire.FrameHeaderBytes : total-1]
	*buf = b[total:]
	return typ, ch, payload, true, ""
}
