package conn

import (
	"bytes"
	"crypto/subtle"
	"encoding/binary"
	"fmt"

	"github.com/sluicemq/sluice/amqp/wire"
)

// The handshake: protocol header, start / start-ok, tune / tune-ok, open /
// open-ok. Until open-ok a refusal writes connection.close and closes the
// socket at once.

// Mechanisms offered in connection.start.
const mechanisms = "PLAIN AMQPLAIN"

// serverProperties is connection.start's server-properties. The
// capabilities are the RabbitMQ extensions this front door implements;
// clients switch features on by them.
func serverProperties() wire.Table {
	return wire.Table{
		{Name: "capabilities", Value: wire.Table{
			{Name: "publisher_confirms", Value: true},
			{Name: "consumer_cancel_notify", Value: true},
			{Name: "basic.nack", Value: true},
			{Name: "per_consumer_qos", Value: true},
			{Name: "authentication_failure_close", Value: true},
			{Name: "connection.blocked", Value: false},
			{Name: "exchange_exchange_bindings", Value: true},
			{Name: "consumer_priorities", Value: true},
		}},
		{Name: "product", Value: "Sluice"},
		{Name: "platform", Value: "Go"},
		{Name: "information", Value: "a replicated message broker"},
	}
}

func (c *Conn) sendStart() {
	c.writeMethod(0, &wire.ConnectionStart{
		VersionMajor:     0,
		VersionMinor:     9,
		ServerProperties: serverProperties(),
		Mechanisms:       mechanisms,
		Locales:          "en_US",
	})
	c.state = stStartOk
}

// handshakeFrame handles a frame before connection.open-ok.
func (c *Conn) handshakeFrame(f wire.Frame) {
	if f.Type == wire.FrameHeartbeat {
		return
	}
	if f.Channel != 0 {
		c.connError(errorf(wire.ChannelError, 0, 0, "frame on channel %d before connection.open-ok", f.Channel))
		return
	}
	if f.Type != wire.FrameMethod {
		c.connError(errorf(wire.UnexpectedFrame, 0, 0, "content frame (type %d) during the handshake", f.Type))
		return
	}
	m, err := wire.DecodeMethod(f.Payload)
	if err != nil {
		c.connError(err.(*wire.Error))
		return
	}
	if x, ok := m.(*wire.ConnectionClose); ok {
		c.closeAnswered(x)
		return
	}
	switch x := m.(type) {
	case *wire.ConnectionStartOk:
		if c.state == stStartOk {
			c.onStartOk(x)
			return
		}
	case *wire.ConnectionTuneOk:
		if c.state == stTuneOk {
			c.onTuneOk(x)
			return
		}
	case *wire.ConnectionOpen:
		if c.state == stOpen {
			c.onOpen(x)
			return
		}
	}
	cls, id := m.ID()
	want := "connection.open"
	switch c.state {
	case stStartOk:
		want = "connection.start-ok"
	case stTuneOk:
		want = "connection.tune-ok"
	}
	c.connError(errorf(wire.CommandInvalid, cls, id, "expected %s, got %s", want, wire.MethodName(cls, id)))
}

func (c *Conn) onStartOk(x *wire.ConnectionStartOk) {
	if caps, ok := x.ClientProperties.Table("capabilities"); ok {
		c.cancelNotify, _ = caps.Bool("consumer_cancel_notify")
	}
	var user, password string
	var ok bool
	switch x.Mechanism {
	case "PLAIN":
		user, password, ok = parsePlain(x.Response)
	case "AMQPLAIN":
		user, password, ok = parseAMQPlain(x.Response)
	default:
		// Spec, start-ok rule validity: a mechanism the server did not offer
		// closes the socket with no further data.
		c.closeSocket(fmt.Sprintf("client chose mechanism %q, not one of %q", x.Mechanism, mechanisms))
		return
	}
	if !ok || !c.authenticate(user, password) {
		// The same words whether the user is unknown, the password wrong or
		// the user limited to loopback: the refusal tells a prober nothing.
		c.connError(errorf(wire.AccessRefused, 0, 0, "login refused using authentication mechanism %s", x.Mechanism))
		return
	}
	c.user = user
	c.writeMethod(0, &wire.ConnectionTune{ChannelMax: c.cfg.ChannelMax, FrameMax: c.cfg.FrameMaxBytes, Heartbeat: c.cfg.HeartbeatS})
	c.state = stTuneOk
}

// authenticate checks the user table; passwords compare in constant time.
func (c *Conn) authenticate(user, password string) bool {
	for _, u := range c.cfg.Users {
		if u.Name != user {
			continue
		}
		if subtle.ConstantTimeCompare([]byte(u.Password), []byte(password)) != 1 {
			return false
		}
		return !u.LoopbackOnly || c.peer.Loopback
	}
	return false
}

// parsePlain splits a PLAIN response, "[authzid] NUL authcid NUL passwd"
// (RFC 4616). An authorization identity other than empty or the user
// itself is refused: there is no acting as another user here.
func parsePlain(resp string) (user, password string, ok bool) {
	parts := bytes.Split([]byte(resp), []byte{0})
	if len(parts) != 3 || len(parts[1]) == 0 {
		return "", "", false
	}
	if len(parts[0]) != 0 && !bytes.Equal(parts[0], parts[1]) {
		return "", "", false
	}
	return string(parts[1]), string(parts[2]), true
}

// parseAMQPlain reads an AMQPLAIN response: a field table's contents
// without its length prefix, holding LOGIN and PASSWORD.
func parseAMQPlain(resp string) (user, password string, ok bool) {
	if len(resp) > wire.TableBytesMax {
		return "", "", false
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(len(resp)))
	t, err := wire.DecodeTable(append(b, resp...))
	if err != nil {
		return "", "", false
	}
	user, ok1 := t.String("LOGIN")
	password, ok2 := t.String("PASSWORD")
	return user, password, ok1 && ok2 && user != ""
}

// onTuneOk takes the client's tuning. channel_max and frame_max of 0 mean
// "no limit of the client's", so the server's proposal; a value above the
// proposal, or a frame_max below frame-min-size, breaks the spec's
// upper-limit and minimum rules: the connection closes (the spec asks for
// no close handshake; a connection.close 530 goes first, as RabbitMQ does,
// so the client can say why). The heartbeat is the client's: clients
// apply the spec's negotiation (the lower non-zero of the two) before they
// answer, and 0 turns heartbeats off, as RabbitMQ accepts.
func (c *Conn) onTuneOk(x *wire.ConnectionTuneOk) {
	channelMax, frameMax := x.ChannelMax, x.FrameMax
	if channelMax == 0 {
		channelMax = c.cfg.ChannelMax
	}
	if frameMax == 0 {
		frameMax = c.cfg.FrameMaxBytes
	}
	cls, id := x.ID()
	switch {
	case channelMax > c.cfg.ChannelMax:
		c.connError(errorf(wire.NotAllowed, cls, id, "channel_max %d is above the server's %d", channelMax, c.cfg.ChannelMax))
		return
	case frameMax < wire.FrameBytesMin:
		c.connError(errorf(wire.NotAllowed, cls, id, "frame_max %d is below the minimum %d", frameMax, wire.FrameBytesMin))
		return
	case frameMax > c.cfg.FrameMaxBytes:
		c.connError(errorf(wire.NotAllowed, cls, id, "frame_max %d is above the server's %d", frameMax, c.cfg.FrameMaxBytes))
		return
	}
	c.channelMax, c.frameMaxBytes, c.heartbeatS = channelMax, frameMax, x.Heartbeat
	assert(c.fr.SetFrameMax(frameMax) == nil, "negotiated frame_max within the reader's range")
	assert(c.fw.SetFrameMax(frameMax) == nil, "negotiated frame_max within the writer's range")
	c.lastReadNs, c.lastWriteNs = c.nowNs, c.nowNs
	c.state = stOpen
}

// onOpen opens the one virtual host, "/".
func (c *Conn) onOpen(x *wire.ConnectionOpen) {
	if x.VirtualHost != "/" {
		cls, id := x.ID()
		c.connError(errorf(wire.NotAllowed, cls, id, "vhost %q not found (Sluice has the one vhost \"/\")", x.VirtualHost))
		return
	}
	c.writeMethod(0, &wire.ConnectionOpenOk{})
	c.state = stOpened
}
