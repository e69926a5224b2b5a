package conn

import (
	"bytes"
	"fmt"

	"github.com/sluicemq/sluice/amqp/wire"
)

// connState is where the connection is in its life.
type connState uint8

const (
	stNew     connState = iota // before InAccept
	stHeader                   // waiting for the protocol header
	stStartOk                  // sent connection.start
	stTuneOk                   // sent connection.tune
	stOpen                     // tuned, waiting for connection.open
	stOpened                   // open: channels work
	stClosing                  // sent connection.close, waiting for close-ok
	stClosed                   // EfClose emitted; nothing more happens
)

func (s connState) String() string {
	return [...]string{"new", "header", "start-ok", "tune-ok", "open", "opened", "closing", "closed"}[s]
}

// Conn is the protocol state machine of one client connection. It is not
// safe for concurrent use; the driver calls Step with one input at a time.
type Conn struct {
	cfg   Config
	peer  Peer
	state connState
	nowNs int64
	out   []Effect // the effects of the current Step

	in   []byte // received, not yet parsed
	src  sliceReader
	fr   *wire.FrameReader
	wbuf bytes.Buffer
	fw   *wire.FrameWriter

	frameMaxBytes uint32 // FrameBytesMin until tune-ok, then negotiated
	channelMax    uint16
	heartbeatS    uint16
	user          string
	cancelNotify  bool // the client takes server-sent basic.cancel

	channels   map[uint16]*channel // lookup only
	channelIDs []uint16            // open and closing channels, sorted: the iteration order
	ops        map[OpID]*request   // issued operations awaiting InResult
	pubs       map[PublishID]*pub  // issued publishes awaiting an outcome
	subs       map[SubID]*consumer // subscriptions of open channels

	lastOp   OpID
	lastPub  PublishID
	lastSub  SubID
	lastCtag uint64

	queuedRequests int
	queuedBytes    uint64
	assemblyBytes  uint64
	paused         bool

	acceptNs, lastReadNs, lastWriteNs, closeDeadlineNs int64
	timerNs                                            int64 // armed EfTimer, 0 for none
}

// New returns the machine of one accepted connection. Its first input must
// be InAccept.
func New(cfg Config, peer Peer) (*Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Conn{
		cfg:           cfg.withDefaults(),
		peer:          peer,
		frameMaxBytes: wire.FrameBytesMin,
		channels:      make(map[uint16]*channel),
		ops:           make(map[OpID]*request),
		pubs:          make(map[PublishID]*pub),
		subs:          make(map[SubID]*consumer),
	}
	var err error
	c.fr, err = wire.NewFrameReader(&c.src, wire.FrameBytesMin)
	assert(err == nil, "frame reader at frame-min-size")
	c.fw, err = wire.NewFrameWriter(&c.wbuf, wire.FrameBytesMin)
	assert(err == nil, "frame writer at frame-min-size")
	return c, nil
}

// Closed reports whether the connection has ended (EfClose was emitted).
func (c *Conn) Closed() bool { return c.state == stClosed }

// Step takes one input and returns the effects, in order. After EfClose it
// returns nothing.
func (c *Conn) Step(in Input) []Effect {
	c.out = nil
	if c.state == stClosed {
		return nil
	}
	now := in.nowNs()
	if c.state == stNew {
		_, ok := in.(InAccept)
		assert(ok, "the first input is InAccept")
	} else {
		assert(now >= c.nowNs, "time never goes back")
	}
	c.nowNs = now
	switch x := in.(type) {
	case InAccept:
		assert(c.state == stNew, "one InAccept")
		c.state = stHeader
		c.acceptNs, c.lastReadNs, c.lastWriteNs = now, now, now
	case InBytes:
		if len(x.Bytes) > 0 {
			c.lastReadNs = now
			c.in = append(c.in, x.Bytes...)
		}
	case InTime:
		c.onTime()
	case InPublished:
		c.onPublished(x)
	case InResult:
		c.onResult(x)
	case InDelivery:
		c.onDelivery(x)
	case InCancelled:
		c.onCancelled(x)
	case InBrokerLost:
		c.onBrokerLost(x)
	default:
		panic(fmt.Sprintf("amqp/conn: unknown input %T", in))
	}
	c.parse()
	if c.state != stClosed && len(c.in) > c.cfg.InputBytesMax {
		c.connError(errorf(wire.ResourceError, 0, 0, "%d received bytes held unparsed, over the limit of %d", len(c.in), c.cfg.InputBytesMax))
	}
	c.updatePause()
	c.updateTimer()
	c.checkCheap()
	return c.out
}

func (c *Conn) emit(e Effect) { c.out = append(c.out, e) }

// closeSocket ends the connection: the last effect.
func (c *Conn) closeSocket(reason string) {
	assert(c.state != stClosed, "close once")
	c.emit(EfClose{Reason: reason})
	c.state = stClosed
	c.in = nil
}

// closeAnswered ends the connection after the server's close-ok to the
// client's connection.close: the client closes the socket.
func (c *Conn) closeAnswered(x *wire.ConnectionClose) {
	c.writeMethod(0, &wire.ConnectionCloseOk{})
	c.closeSocket(closeReason(x))
	c.out[len(c.out)-1] = EfClose{Reason: closeReason(x), ClientCloses: true}
}

// fail answers a refusal: a soft code closes the channel, a hard code (or
// a fault outside any channel) the connection.
func (c *Conn) fail(ch *channel, e *wire.Error) {
	if ch == nil || wire.IsHardError(e.Code) {
		c.connError(e)
		return
	}
	c.channelError(ch, e)
}

// connError closes the connection with e. Before connection.open-ok the
// socket closes right after the connection.close (the handshake has no
// channels to drain, and a peer that failed it gets no more time); after
// it, the server waits up to CloseTimeoutNs for close-ok, discarding every
// other frame (spec: connection.close).
func (c *Conn) connError(e *wire.Error) {
	if c.state == stClosing || c.state == stClosed {
		return
	}
	c.writeMethod(0, &wire.ConnectionClose{ReplyCode: e.Code, ReplyText: e.ReplyText(), ClassID: e.ClassID, MethodID: e.MethodID})
	if c.state != stOpened {
		c.closeSocket(e.ReplyText())
		return
	}
	c.state = stClosing
	c.closeDeadlineNs = c.nowNs + c.cfg.CloseTimeoutNs
	c.in = c.in[:0:0] // what the client sent after the fault is discarded
}

// onBrokerLost closes the connection: the outcomes of its unconfirmed
// publishes will never come, and a closed connection is how a client learns
// that they are unknown.
func (c *Conn) onBrokerLost(x InBrokerLost) {
	if c.state == stClosing {
		return
	}
	c.connError(errorf(wire.ConnectionForced, 0, 0, "broker connection lost (%s); unconfirmed publishes have unknown outcomes", x.Reason))
}

// updatePause pauses reading while a limit on work handed to the broker is
// reached, and resumes when it is not.
// parse stops at the same limits, so a chunk of many publishes overshoots
// a limit by at most one request.
func (c *Conn) updatePause() {
	if c.state == stClosed {
		return // EfClose is the last effect
	}
	want := c.overLimit()
	if want == c.paused {
		return
	}
	c.paused = want
	if !want {
		// Silence while paused was ours, not the peer's.
		c.lastReadNs = c.nowNs
	}
	c.emit(EfRead{Paused: want})
}

// overLimit reports whether work handed to the broker is at a limit.
func (c *Conn) overLimit() bool {
	return c.state == stOpened && (len(c.pubs) >= c.cfg.PublishesInFlightMax ||
		c.queuedRequests >= c.cfg.QueuedRequestsMax || c.queuedBytes >= c.cfg.QueuedBytesMax)
}

// heartbeatNs is the negotiated heartbeat interval, 0 when off.
func (c *Conn) heartbeatNs() int64 { return int64(c.heartbeatS) * 1_000_000_000 }

// deadlineNs is the next instant the machine must look at the clock, 0 for
// none.
func (c *Conn) deadlineNs() int64 {
	var d int64
	take := func(t int64) {
		if d == 0 || t < d {
			d = t
		}
	}
	switch c.state {
	case stHeader, stStartOk, stTuneOk, stOpen:
		take(c.acceptNs + c.cfg.HandshakeTimeoutNs)
	case stClosing:
		take(c.closeDeadlineNs)
	}
	if h := c.heartbeatNs(); h > 0 && (c.state == stOpen || c.state == stOpened) {
		take(c.lastWriteNs + h)
		if !c.paused {
			take(c.lastReadNs + 2*h)
		}
	}
	return d
}

func (c *Conn) updateTimer() {
	if c.state == stClosed {
		return
	}
	d := c.deadlineNs()
	if d == 0 {
		return
	}
	if c.timerNs == 0 || c.timerNs <= c.nowNs || d < c.timerNs {
		if d != c.timerNs {
			c.timerNs = d
			c.emit(EfTimer{AtNs: d})
		}
	}
}

// onTime closes what has timed out and sends a heartbeat when the server
// has been silent for an interval.
func (c *Conn) onTime() {
	now := c.nowNs
	switch c.state {
	case stHeader, stStartOk, stTuneOk, stOpen:
		if now >= c.acceptNs+c.cfg.HandshakeTimeoutNs {
			c.closeSocket(fmt.Sprintf("handshake not done within %dns (state %s)", c.cfg.HandshakeTimeoutNs, c.state))
			return
		}
	case stClosing:
		if now >= c.closeDeadlineNs {
			c.closeSocket("no connection.close-ok within the close timeout")
			return
		}
	}
	h := c.heartbeatNs()
	if h == 0 || (c.state != stOpen && c.state != stOpened) {
		return
	}
	// Spec: a peer silent for two heartbeat intervals is gone; close the
	// socket without the close handshake.
	if !c.paused && now >= c.lastReadNs+2*h {
		c.closeSocket(fmt.Sprintf("missed heartbeats: peer silent for %dns, heartbeat %ds", now-c.lastReadNs, c.heartbeatS))
		return
	}
	if now >= c.lastWriteNs+h {
		c.wbuf.Reset()
		err := c.fw.WriteHeartbeat()
		assert(err == nil, "heartbeat encodes")
		c.flushWrite()
	}
}

// assert panics on a broken invariant of this package: a programmer error
// or a driver that broke the contract, never bad bytes from the peer.
func assert(ok bool, msg string) {
	if !ok {
		panic("amqp/conn: assertion failed: " + msg)
	}
}

// errorf builds a refusal with its reply code and the method it refuses.
func errorf(code uint16, classID, methodID uint16, format string, args ...any) *wire.Error {
	return &wire.Error{Code: code, Text: fmt.Sprintf(format, args...), ClassID: classID, MethodID: methodID}
}

// sliceReader feeds the frame reader from the input buffer.
type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, errNoBytes
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

var errNoBytes = fmt.Errorf("amqp/conn: no buffered bytes")
