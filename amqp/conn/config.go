package conn

import (
	"fmt"

	"github.com/sluicemq/sluice/amqp/wire"
)

// User is one entry of the user table the front door checks credentials
// against.
type User struct {
	Name     string
	Password string
	// LoopbackOnly accepts the user only from a loopback peer, as RabbitMQ
	// does for its default guest/guest: a default password must not open
	// the broker to the network.
	LoopbackOnly bool
}

// Config is the front door's configuration, shared by every connection. The
// zero value of a limit means its default (Defaults); Validate refuses a
// configuration no connection could honour.
type Config struct {
	Users []User

	// Proposed in connection.tune. FrameMaxBytes is in [wire.FrameBytesMin,
	// wire.FrameBytesMax]; ChannelMax in [1, 65535]; HeartbeatS 0 proposes
	// no heartbeat.
	FrameMaxBytes uint32
	ChannelMax    uint16
	HeartbeatS    uint16
	// HeartbeatOff makes HeartbeatS = 0 mean "propose none" rather than
	// "the default".
	HeartbeatOff bool

	// HandshakeTimeoutNs bounds the time from accept to connection.open-ok
	// (the protocol header included): a peer that connects and stays silent
	// is closed. CloseTimeoutNs bounds the wait for connection.close-ok
	// after the server sent connection.close.
	HandshakeTimeoutNs int64
	CloseTimeoutNs     int64

	// MessageBytesMax is the largest body a publish may declare; more is
	// refused with 311 CONTENT_TOO_LARGE on the channel.
	MessageBytesMax uint64
	// AssemblyBytesMax bounds the bodies being assembled on all channels of
	// the connection together (declared body sizes of unfinished contents);
	// more closes the connection with 506 RESOURCE_ERROR.
	AssemblyBytesMax uint64
	// InputBytesMax bounds the received bytes the machine holds unparsed
	// (while reading is paused, or a frame is incomplete); more closes the
	// connection with 506 RESOURCE_ERROR. At least twice the frame_max.
	InputBytesMax int

	// ConsumersPerChannelMax: one more basic.consume is 506 RESOURCE_ERROR.
	ConsumersPerChannelMax int
	// PrefetchMax caps every consumer's unsettled deliveries: a prefetch
	// count of 0 (unlimited in AMQP) or above it becomes PrefetchMax.
	PrefetchMax uint16
	// GetUnackedPerChannelMax: a basic.get (without no-ack) on a channel
	// already holding this many unacknowledged basic.get deliveries is
	// refused with 406 PRECONDITION_FAILED.
	GetUnackedPerChannelMax int

	// PublishesInFlightMax bounds the publishes handed to the broker whose
	// outcome has not come back, on all channels together (so it bounds each
	// channel's unconfirmed publishes too). At the limit the machine pauses
	// reading (EfRead) until outcomes come back.
	PublishesInFlightMax int
	// QueuedRequestsMax and QueuedBytesMax bound the requests (and their
	// body bytes) held behind an operation the broker has not answered yet
	// (requests on one channel reach the broker in order, one unanswered
	// operation at a time). At either limit the machine pauses reading.
	QueuedRequestsMax int
	QueuedBytesMax    uint64
}

// Defaults, chosen to match what clients expect of RabbitMQ where a choice
// exists and to bound memory everywhere else.
const (
	ChannelMaxDefault              = 2047 // RabbitMQ's default channel_max
	HeartbeatSDefault              = 60   // RabbitMQ's default heartbeat
	HandshakeTimeoutNsDefault      = 10_000_000_000
	CloseTimeoutNsDefault          = 3_000_000_000
	MessageBytesMaxDefault         = 16 << 20 // RabbitMQ 4's max_message_size; fits netio's 64 MiB data frame
	AssemblyBytesMaxDefault        = 64 << 20
	InputBytesMaxDefault           = 4 << 20
	ConsumersPerChannelMaxDefault  = 256
	PrefetchMaxDefault             = 4096
	GetUnackedPerChannelMaxDefault = 4096
	PublishesInFlightMaxDefault    = 16384
	QueuedRequestsMaxDefault       = 1024
	QueuedBytesMaxDefault          = 32 << 20
)

// withDefaults returns cfg with every zero limit replaced by its default.
func (cfg Config) withDefaults() Config {
	setU32 := func(v *uint32, d uint32) {
		if *v == 0 {
			*v = d
		}
	}
	setU16 := func(v *uint16, d uint16) {
		if *v == 0 {
			*v = d
		}
	}
	setI64 := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setU64 := func(v *uint64, d uint64) {
		if *v == 0 {
			*v = d
		}
	}
	setU32(&cfg.FrameMaxBytes, wire.FrameBytesDefault)
	setU16(&cfg.ChannelMax, ChannelMaxDefault)
	if !cfg.HeartbeatOff {
		setU16(&cfg.HeartbeatS, HeartbeatSDefault)
	}
	setI64(&cfg.HandshakeTimeoutNs, HandshakeTimeoutNsDefault)
	setI64(&cfg.CloseTimeoutNs, CloseTimeoutNsDefault)
	setU64(&cfg.MessageBytesMax, MessageBytesMaxDefault)
	setU64(&cfg.AssemblyBytesMax, AssemblyBytesMaxDefault)
	setInt(&cfg.InputBytesMax, InputBytesMaxDefault)
	setInt(&cfg.ConsumersPerChannelMax, ConsumersPerChannelMaxDefault)
	setU16(&cfg.PrefetchMax, PrefetchMaxDefault)
	setInt(&cfg.GetUnackedPerChannelMax, GetUnackedPerChannelMaxDefault)
	setInt(&cfg.PublishesInFlightMax, PublishesInFlightMaxDefault)
	setInt(&cfg.QueuedRequestsMax, QueuedRequestsMaxDefault)
	setU64(&cfg.QueuedBytesMax, QueuedBytesMaxDefault)
	return cfg
}

// Validate reports a configuration no connection could honour, after
// defaults are applied.
func (cfg Config) Validate() error {
	c := cfg.withDefaults()
	switch {
	case c.FrameMaxBytes < wire.FrameBytesMin || c.FrameMaxBytes > wire.FrameBytesMax:
		return fmt.Errorf("amqp/conn: FrameMaxBytes %d outside [%d, %d]", c.FrameMaxBytes, wire.FrameBytesMin, wire.FrameBytesMax)
	case c.HandshakeTimeoutNs < 0 || c.CloseTimeoutNs < 0:
		return fmt.Errorf("amqp/conn: negative timeout")
	case c.InputBytesMax < 2*int(c.FrameMaxBytes):
		return fmt.Errorf("amqp/conn: InputBytesMax %d below twice FrameMaxBytes %d", c.InputBytesMax, c.FrameMaxBytes)
	case c.AssemblyBytesMax < c.MessageBytesMax:
		return fmt.Errorf("amqp/conn: AssemblyBytesMax %d below MessageBytesMax %d", c.AssemblyBytesMax, c.MessageBytesMax)
	case c.QueuedBytesMax < c.MessageBytesMax:
		return fmt.Errorf("amqp/conn: QueuedBytesMax %d below MessageBytesMax %d: a queued publish could never fit", c.QueuedBytesMax, c.MessageBytesMax)
	case c.ConsumersPerChannelMax < 0 || c.GetUnackedPerChannelMax < 0 || c.PublishesInFlightMax < 0 || c.QueuedRequestsMax < 0:
		return fmt.Errorf("amqp/conn: negative limit")
	}
	seen := make(map[string]bool, len(c.Users))
	for _, u := range c.Users {
		if u.Name == "" {
			return fmt.Errorf("amqp/conn: a user with an empty name")
		}
		if seen[u.Name] {
			return fmt.Errorf("amqp/conn: user %q listed twice", u.Name)
		}
		seen[u.Name] = true
	}
	return nil
}

// Peer is what the driver knows of the client's socket.
type Peer struct {
	// Loopback is true when the client connected from a loopback address
	// (127.0.0.0/8, ::1); LoopbackOnly users are refused otherwise.
	Loopback bool
}
