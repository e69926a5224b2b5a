package wire

// The methods this codec decodes and encodes, one struct each, fields in
// the spec's argument order. Reserved arguments (0-8 leftovers: ticket,
// capabilities, insist, known-hosts, out-of-band, channel-id, cluster-id)
// have no struct field: they are read and ignored, as the spec asks of
// reserved fields, and written as zero or empty.

// ConnectionStart is connection.start (sent by the server).
type ConnectionStart struct {
	VersionMajor     uint8
	VersionMinor     uint8
	ServerProperties Table
	Mechanisms       string
	Locales          string
}

// ID returns (ClassConnection, MethodConnectionStart).
func (*ConnectionStart) ID() (classID, methodID uint16) {
	return ClassConnection, MethodConnectionStart
}

func (m *ConnectionStart) encode(e *encoder) {
	e.u8(m.VersionMajor)
	e.u8(m.VersionMinor)
	e.table(m.ServerProperties, "connection.start server-properties")
	e.longstr(m.Mechanisms, "connection.start mechanisms")
	e.longstr(m.Locales, "connection.start locales")
}

func (m *ConnectionStart) decode(d *decoder) {
	m.VersionMajor = d.u8("connection.start version-major")
	m.VersionMinor = d.u8("connection.start version-minor")
	m.ServerProperties = d.table("connection.start server-properties")
	m.Mechanisms = d.longstr("connection.start mechanisms")
	m.Locales = d.longstr("connection.start locales")
}

// ConnectionStartOk is connection.start-ok (sent by the client).
type ConnectionStartOk struct {
	ClientProperties Table
	Mechanism        string
	Response         string
	Locale           string
}

// ID returns (ClassConnection, MethodConnectionStartOk).
func (*ConnectionStartOk) ID() (classID, methodID uint16) {
	return ClassConnection, MethodConnectionStartOk
}

func (m *ConnectionStartOk) encode(e *encoder) {
	e.table(m.ClientProperties, "connection.start-ok client-properties")
	e.shortstr(m.Mechanism, "connection.start-ok mechanism")
	e.longstr(m.Response, "connection.start-ok response")
	e.shortstr(m.Locale, "connection.start-ok locale")
}

func (m *ConnectionStartOk) decode(d *decoder) {
	m.ClientProperties = d.table("connection.start-ok client-properties")
	m.Mechanism = d.shortstr("connection.start-ok mechanism")
	m.Response = d.longstr("connection.start-ok response")
	m.Locale = d.shortstr("connection.start-ok locale")
}

// ConnectionSecure is connection.secure (sent by the server).
type ConnectionSecure struct {
	Challenge string
}

// ID returns (ClassConnection, MethodConnectionSecure).
func (*ConnectionSecure) ID() (classID, methodID uint16) {
	return ClassConnection, MethodConnectionSecure
}

func (m *ConnectionSecure) encode(e *encoder) {
	e.longstr(m.Challenge, "connection.secure challenge")
}

func (m *ConnectionSecure) decode(d *decoder) {
	m.Challenge = d.longstr("connection.secure challenge")
}

// ConnectionSecureOk is connection.secure-ok (sent by the client).
type ConnectionSecureOk struct {
	Response string
}

// ID returns (ClassConnection, MethodConnectionSecureOk).
func (*ConnectionSecureOk) ID() (classID, methodID uint16) {
	return ClassConnection, MethodConnectionSecureOk
}

func (m *ConnectionSecureOk) encode(e *encoder) {
	e.longstr(m.Response, "connection.secure-ok response")
}

func (m *ConnectionSecureOk) decode(d *decoder) {
	m.Response = d.longstr("connection.secure-ok response")
}

// ConnectionTune is connection.tune (sent by the server).
type ConnectionTune struct {
	ChannelMax uint16
	FrameMax   uint32
	Heartbeat  uint16
}

// ID returns (ClassConnection, MethodConnectionTune).
func (*ConnectionTune) ID() (classID, methodID uint16) { return ClassConnection, MethodConnectionTune }

func (m *ConnectionTune) encode(e *encoder) {
	e.u16(m.ChannelMax)
	e.u32(m.FrameMax)
	e.u16(m.Heartbeat)
}

func (m *ConnectionTune) decode(d *decoder) {
	m.ChannelMax = d.u16("connection.tune channel-max")
	m.FrameMax = d.u32("connection.tune frame-max")
	m.Heartbeat = d.u16("connection.tune heartbeat")
}

// ConnectionTuneOk is connection.tune-ok (sent by the client).
type ConnectionTuneOk struct {
	ChannelMax uint16
	FrameMax   uint32
	Heartbeat  uint16
}

// ID returns (ClassConnection, MethodConnectionTuneOk).
func (*ConnectionTuneOk) ID() (classID, methodID uint16) {
	return ClassConnection, MethodConnectionTuneOk
}

func (m *ConnectionTuneOk) encode(e *encoder) {
	e.u16(m.ChannelMax)
	e.u32(m.FrameMax)
	e.u16(m.Heartbeat)
}

func (m *ConnectionTuneOk) decode(d *decoder) {
	m.ChannelMax = d.u16("connection.tune-ok channel-max")
	m.FrameMax = d.u32("connection.tune-ok frame-max")
	m.Heartbeat = d.u16("connection.tune-ok heartbeat")
}

// ConnectionOpen is connection.open (sent by the client).
type ConnectionOpen struct {
	VirtualHost string
}

// ID returns (ClassConnection, MethodConnectionOpen).
func (*ConnectionOpen) ID() (classID, methodID uint16) { return ClassConnection, MethodConnectionOpen }

func (m *ConnectionOpen) encode(e *encoder) {
	e.shortstr(m.VirtualHost, "connection.open virtual-host")
	e.shortstr("", "connection.open capabilities")
	e.bits(false)
}

func (m *ConnectionOpen) decode(d *decoder) {
	m.VirtualHost = d.shortstr("connection.open virtual-host")
	d.shortstr("connection.open capabilities")
	d.bits(1, 0x1, "connection.open bits")
}

// ConnectionOpenOk is connection.open-ok (sent by the server).
type ConnectionOpenOk struct{}

// ID returns (ClassConnection, MethodConnectionOpenOk).
func (*ConnectionOpenOk) ID() (classID, methodID uint16) {
	return ClassConnection, MethodConnectionOpenOk
}

func (*ConnectionOpenOk) encode(e *encoder) {
	e.shortstr("", "connection.open-ok known-hosts")
}

func (*ConnectionOpenOk) decode(d *decoder) {
	d.shortstr("connection.open-ok known-hosts")
}

// ConnectionClose is connection.close (sent by either peer).
type ConnectionClose struct {
	ReplyCode uint16
	ReplyText string
	ClassID   uint16
	MethodID  uint16
}

// ID returns (ClassConnection, MethodConnectionClose).
func (*ConnectionClose) ID() (classID, methodID uint16) {
	return ClassConnection, MethodConnectionClose
}

func (m *ConnectionClose) encode(e *encoder) {
	e.u16(m.ReplyCode)
	e.shortstr(m.ReplyText, "connection.close reply-text")
	e.u16(m.ClassID)
	e.u16(m.MethodID)
}

func (m *ConnectionClose) decode(d *decoder) {
	m.ReplyCode = d.u16("connection.close reply-code")
	m.ReplyText = d.shortstr("connection.close reply-text")
	m.ClassID = d.u16("connection.close class-id")
	m.MethodID = d.u16("connection.close method-id")
}

// ConnectionCloseOk is connection.close-ok (sent by either peer).
type ConnectionCloseOk struct{}

// ID returns (ClassConnection, MethodConnectionCloseOk).
func (*ConnectionCloseOk) ID() (classID, methodID uint16) {
	return ClassConnection, MethodConnectionCloseOk
}

func (*ConnectionCloseOk) encode(*encoder) {
}

func (*ConnectionCloseOk) decode(*decoder) {
}

// ConnectionBlocked is connection.blocked (sent by the server).
type ConnectionBlocked struct {
	Reason string
}

// ID returns (ClassConnection, MethodConnectionBlocked).
func (*ConnectionBlocked) ID() (classID, methodID uint16) {
	return ClassConnection, MethodConnectionBlocked
}

func (m *ConnectionBlocked) encode(e *encoder) {
	e.shortstr(m.Reason, "connection.blocked reason")
}

func (m *ConnectionBlocked) decode(d *decoder) {
	m.Reason = d.shortstr("connection.blocked reason")
}

// ConnectionUnblocked is connection.unblocked (sent by the server).
type ConnectionUnblocked struct{}

// ID returns (ClassConnection, MethodConnectionUnblocked).
func (*ConnectionUnblocked) ID() (classID, methodID uint16) {
	return ClassConnection, MethodConnectionUnblocked
}

func (*ConnectionUnblocked) encode(*encoder) {
}

func (*ConnectionUnblocked) decode(*decoder) {
}

// ChannelOpen is channel.open (sent by the client).
type ChannelOpen struct{}

// ID returns (ClassChannel, MethodChannelOpen).
func (*ChannelOpen) ID() (classID, methodID uint16) { return ClassChannel, MethodChannelOpen }

func (*ChannelOpen) encode(e *encoder) {
	e.shortstr("", "channel.open out-of-band")
}

func (*ChannelOpen) decode(d *decoder) {
	d.shortstr("channel.open out-of-band")
}

// ChannelOpenOk is channel.open-ok (sent by the server).
type ChannelOpenOk struct{}

// ID returns (ClassChannel, MethodChannelOpenOk).
func (*ChannelOpenOk) ID() (classID, methodID uint16) { return ClassChannel, MethodChannelOpenOk }

func (*ChannelOpenOk) encode(e *encoder) {
	e.longstr("", "channel.open-ok channel-id")
}

func (*ChannelOpenOk) decode(d *decoder) {
	d.longstr("channel.open-ok channel-id")
}

// ChannelFlow is channel.flow (sent by either peer).
type ChannelFlow struct {
	Active bool
}

// ID returns (ClassChannel, MethodChannelFlow).
func (*ChannelFlow) ID() (classID, methodID uint16) { return ClassChannel, MethodChannelFlow }

func (m *ChannelFlow) encode(e *encoder) {
	e.bits(m.Active)
}

func (m *ChannelFlow) decode(d *decoder) {
	bits := d.bits(1, 0x0, "channel.flow bits")
	m.Active = bit(bits, 0)
}

// ChannelFlowOk is channel.flow-ok (sent by either peer).
type ChannelFlowOk struct {
	Active bool
}

// ID returns (ClassChannel, MethodChannelFlowOk).
func (*ChannelFlowOk) ID() (classID, methodID uint16) { return ClassChannel, MethodChannelFlowOk }

func (m *ChannelFlowOk) encode(e *encoder) {
	e.bits(m.Active)
}

func (m *ChannelFlowOk) decode(d *decoder) {
	bits := d.bits(1, 0x0, "channel.flow-ok bits")
	m.Active = bit(bits, 0)
}

// ChannelClose is channel.close (sent by either peer).
type ChannelClose struct {
	ReplyCode uint16
	ReplyText string
	ClassID   uint16
	MethodID  uint16
}

// ID returns (ClassChannel, MethodChannelClose).
func (*ChannelClose) ID() (classID, methodID uint16) { return ClassChannel, MethodChannelClose }

func (m *ChannelClose) encode(e *encoder) {
	e.u16(m.ReplyCode)
	e.shortstr(m.ReplyText, "channel.close reply-text")
	e.u16(m.ClassID)
	e.u16(m.MethodID)
}

func (m *ChannelClose) decode(d *decoder) {
	m.ReplyCode = d.u16("channel.close reply-code")
	m.ReplyText = d.shortstr("channel.close reply-text")
	m.ClassID = d.u16("channel.close class-id")
	m.MethodID = d.u16("channel.close method-id")
}

// ChannelCloseOk is channel.close-ok (sent by either peer).
type ChannelCloseOk struct{}

// ID returns (ClassChannel, MethodChannelCloseOk).
func (*ChannelCloseOk) ID() (classID, methodID uint16) { return ClassChannel, MethodChannelCloseOk }

func (*ChannelCloseOk) encode(*encoder) {
}

func (*ChannelCloseOk) decode(*decoder) {
}

// ExchangeDeclare is exchange.declare (sent by the client).
type ExchangeDeclare struct {
	Exchange   string
	Type       string
	Passive    bool
	Durable    bool
	AutoDelete bool
	Internal   bool
	NoWait     bool
	Arguments  Table
}

// ID returns (ClassExchange, MethodExchangeDeclare).
func (*ExchangeDeclare) ID() (classID, methodID uint16) { return ClassExchange, MethodExchangeDeclare }

func (m *ExchangeDeclare) encode(e *encoder) {
	e.u16(0)
	e.shortstr(m.Exchange, "exchange.declare exchange")
	e.shortstr(m.Type, "exchange.declare type")
	e.bits(m.Passive, m.Durable, m.AutoDelete, m.Internal, m.NoWait)
	e.table(m.Arguments, "exchange.declare arguments")
}

func (m *ExchangeDeclare) decode(d *decoder) {
	d.u16("exchange.declare ticket")
	m.Exchange = d.shortstr("exchange.declare exchange")
	m.Type = d.shortstr("exchange.declare type")
	bits := d.bits(5, 0x0, "exchange.declare bits")
	m.Passive = bit(bits, 0)
	m.Durable = bit(bits, 1)
	m.AutoDelete = bit(bits, 2)
	m.Internal = bit(bits, 3)
	m.NoWait = bit(bits, 4)
	m.Arguments = d.table("exchange.declare arguments")
}

// ExchangeDeclareOk is exchange.declare-ok (sent by the server).
type ExchangeDeclareOk struct{}

// ID returns (ClassExchange, MethodExchangeDeclareOk).
func (*ExchangeDeclareOk) ID() (classID, methodID uint16) {
	return ClassExchange, MethodExchangeDeclareOk
}

func (*ExchangeDeclareOk) encode(*encoder) {
}

func (*ExchangeDeclareOk) decode(*decoder) {
}

// ExchangeDelete is exchange.delete (sent by the client).
type ExchangeDelete struct {
	Exchange string
	IfUnused bool
	NoWait   bool
}

// ID returns (ClassExchange, MethodExchangeDelete).
func (*ExchangeDelete) ID() (classID, methodID uint16) { return ClassExchange, MethodExchangeDelete }

func (m *ExchangeDelete) encode(e *encoder) {
	e.u16(0)
	e.shortstr(m.Exchange, "exchange.delete exchange")
	e.bits(m.IfUnused, m.NoWait)
}

func (m *ExchangeDelete) decode(d *decoder) {
	d.u16("exchange.delete ticket")
	m.Exchange = d.shortstr("exchange.delete exchange")
	bits := d.bits(2, 0x0, "exchange.delete bits")
	m.IfUnused = bit(bits, 0)
	m.NoWait = bit(bits, 1)
}

// ExchangeDeleteOk is exchange.delete-ok (sent by the server).
type ExchangeDeleteOk struct{}

// ID returns (ClassExchange, MethodExchangeDeleteOk).
func (*ExchangeDeleteOk) ID() (classID, methodID uint16) {
	return ClassExchange, MethodExchangeDeleteOk
}

func (*ExchangeDeleteOk) encode(*encoder) {
}

func (*ExchangeDeleteOk) decode(*decoder) {
}

// QueueDeclare is queue.declare (sent by the client).
type QueueDeclare struct {
	Queue      string
	Passive    bool
	Durable    bool
	Exclusive  bool
	AutoDelete bool
	NoWait     bool
	Arguments  Table
}

// ID returns (ClassQueue, MethodQueueDeclare).
func (*QueueDeclare) ID() (classID, methodID uint16) { return ClassQueue, MethodQueueDeclare }

func (m *QueueDeclare) encode(e *encoder) {
	e.u16(0)
	e.shortstr(m.Queue, "queue.declare queue")
	e.bits(m.Passive, m.Durable, m.Exclusive, m.AutoDelete, m.NoWait)
	e.table(m.Arguments, "queue.declare arguments")
}

func (m *QueueDeclare) decode(d *decoder) {
	d.u16("queue.declare ticket")
	m.Queue = d.shortstr("queue.declare queue")
	bits := d.bits(5, 0x0, "queue.declare bits")
	m.Passive = bit(bits, 0)
	m.Durable = bit(bits, 1)
	m.Exclusive = bit(bits, 2)
	m.AutoDelete = bit(bits, 3)
	m.NoWait = bit(bits, 4)
	m.Arguments = d.table("queue.declare arguments")
}

// QueueDeclareOk is queue.declare-ok (sent by the server).
type QueueDeclareOk struct {
	Queue         string
	MessageCount  uint32
	ConsumerCount uint32
}

// ID returns (ClassQueue, MethodQueueDeclareOk).
func (*QueueDeclareOk) ID() (classID, methodID uint16) { return ClassQueue, MethodQueueDeclareOk }

func (m *QueueDeclareOk) encode(e *encoder) {
	e.shortstr(m.Queue, "queue.declare-ok queue")
	e.u32(m.MessageCount)
	e.u32(m.ConsumerCount)
}

func (m *QueueDeclareOk) decode(d *decoder) {
	m.Queue = d.shortstr("queue.declare-ok queue")
	m.MessageCount = d.u32("queue.declare-ok message-count")
	m.ConsumerCount = d.u32("queue.declare-ok consumer-count")
}

// ExchangeBind is exchange.bind (sent by the client; RabbitMQ's
// extension): bind exchange Destination to exchange Source.
type ExchangeBind struct {
	Destination string
	Source      string
	RoutingKey  string
	NoWait      bool
	Arguments   Table
}

// ID returns (ClassExchange, MethodExchangeBind).
func (*ExchangeBind) ID() (classID, methodID uint16) { return ClassExchange, MethodExchangeBind }

func (m *ExchangeBind) encode(e *encoder) {
	e.u16(0)
	e.shortstr(m.Destination, "exchange.bind destination")
	e.shortstr(m.Source, "exchange.bind source")
	e.shortstr(m.RoutingKey, "exchange.bind routing-key")
	e.bits(m.NoWait)
	e.table(m.Arguments, "exchange.bind arguments")
}

func (m *ExchangeBind) decode(d *decoder) {
	d.u16("exchange.bind ticket")
	m.Destination = d.shortstr("exchange.bind destination")
	m.Source = d.shortstr("exchange.bind source")
	m.RoutingKey = d.shortstr("exchange.bind routing-key")
	m.NoWait = bit(d.bits(1, 0x0, "exchange.bind bits"), 0)
	m.Arguments = d.table("exchange.bind arguments")
}

// ExchangeBindOk is exchange.bind-ok (sent by the server).
type ExchangeBindOk struct{}

// ID returns (ClassExchange, MethodExchangeBindOk).
func (*ExchangeBindOk) ID() (classID, methodID uint16) { return ClassExchange, MethodExchangeBindOk }

func (*ExchangeBindOk) encode(*encoder) {}

func (*ExchangeBindOk) decode(*decoder) {}

// ExchangeUnbind is exchange.unbind (sent by the client; RabbitMQ's
// extension).
type ExchangeUnbind struct {
	Destination string
	Source      string
	RoutingKey  string
	NoWait      bool
	Arguments   Table
}

// ID returns (ClassExchange, MethodExchangeUnbind).
func (*ExchangeUnbind) ID() (classID, methodID uint16) { return ClassExchange, MethodExchangeUnbind }

func (m *ExchangeUnbind) encode(e *encoder) {
	e.u16(0)
	e.shortstr(m.Destination, "exchange.unbind destination")
	e.shortstr(m.Source, "exchange.unbind source")
	e.shortstr(m.RoutingKey, "exchange.unbind routing-key")
	e.bits(m.NoWait)
	e.table(m.Arguments, "exchange.unbind arguments")
}

func (m *ExchangeUnbind) decode(d *decoder) {
	d.u16("exchange.unbind ticket")
	m.Destination = d.shortstr("exchange.unbind destination")
	m.Source = d.shortstr("exchange.unbind source")
	m.RoutingKey = d.shortstr("exchange.unbind routing-key")
	m.NoWait = bit(d.bits(1, 0x0, "exchange.unbind bits"), 0)
	m.Arguments = d.table("exchange.unbind arguments")
}

// ExchangeUnbindOk is exchange.unbind-ok (sent by the server).
type ExchangeUnbindOk struct{}

// ID returns (ClassExchange, MethodExchangeUnbindOk).
func (*ExchangeUnbindOk) ID() (classID, methodID uint16) {
	return ClassExchange, MethodExchangeUnbindOk
}

func (*ExchangeUnbindOk) encode(*encoder) {}

func (*ExchangeUnbindOk) decode(*decoder) {}

// QueueBind is queue.bind (sent by the client).
type QueueBind struct {
	Queue      string
	Exchange   string
	RoutingKey string
	NoWait     bool
	Arguments  Table
}

// ID returns (ClassQueue, MethodQueueBind).
func (*QueueBind) ID() (classID, methodID uint16) { return ClassQueue, MethodQueueBind }

func (m *QueueBind) encode(e *encoder) {
	e.u16(0)
	e.shortstr(m.Queue, "queue.bind queue")
	e.shortstr(m.Exchange, "queue.bind exchange")
	e.shortstr(m.RoutingKey, "queue.bind routing-key")
	e.bits(m.NoWait)
	e.table(m.Arguments, "queue.bind arguments")
}

func (m *QueueBind) decode(d *decoder) {
	d.u16("queue.bind ticket")
	m.Queue = d.shortstr("queue.bind queue")
	m.Exchange = d.shortstr("queue.bind exchange")
	m.RoutingKey = d.shortstr("queue.bind routing-key")
	bits := d.bits(1, 0x0, "queue.bind bits")
	m.NoWait = bit(bits, 0)
	m.Arguments = d.table("queue.bind arguments")
}

// QueueBindOk is queue.bind-ok (sent by the server).
type QueueBindOk struct{}

// ID returns (ClassQueue, MethodQueueBindOk).
func (*QueueBindOk) ID() (classID, methodID uint16) { return ClassQueue, MethodQueueBindOk }

func (*QueueBindOk) encode(*encoder) {
}

func (*QueueBindOk) decode(*decoder) {
}

// QueueUnbind is queue.unbind (sent by the client).
type QueueUnbind struct {
	Queue      string
	Exchange   string
	RoutingKey string
	Arguments  Table
}

// ID returns (ClassQueue, MethodQueueUnbind).
func (*QueueUnbind) ID() (classID, methodID uint16) { return ClassQueue, MethodQueueUnbind }

func (m *QueueUnbind) encode(e *encoder) {
	e.u16(0)
	e.shortstr(m.Queue, "queue.unbind queue")
	e.shortstr(m.Exchange, "queue.unbind exchange")
	e.shortstr(m.RoutingKey, "queue.unbind routing-key")
	e.table(m.Arguments, "queue.unbind arguments")
}

func (m *QueueUnbind) decode(d *decoder) {
	d.u16("queue.unbind ticket")
	m.Queue = d.shortstr("queue.unbind queue")
	m.Exchange = d.shortstr("queue.unbind exchange")
	m.RoutingKey = d.shortstr("queue.unbind routing-key")
	m.Arguments = d.table("queue.unbind arguments")
}

// QueueUnbindOk is queue.unbind-ok (sent by the server).
type QueueUnbindOk struct{}

// ID returns (ClassQueue, MethodQueueUnbindOk).
func (*QueueUnbindOk) ID() (classID, methodID uint16) { return ClassQueue, MethodQueueUnbindOk }

func (*QueueUnbindOk) encode(*encoder) {
}

func (*QueueUnbindOk) decode(*decoder) {
}

// QueuePurge is queue.purge (sent by the client).
type QueuePurge struct {
	Queue  string
	NoWait bool
}

// ID returns (ClassQueue, MethodQueuePurge).
func (*QueuePurge) ID() (classID, methodID uint16) { return ClassQueue, MethodQueuePurge }

func (m *QueuePurge) encode(e *encoder) {
	e.u16(0)
	e.shortstr(m.Queue, "queue.purge queue")
	e.bits(m.NoWait)
}

func (m *QueuePurge) decode(d *decoder) {
	d.u16("queue.purge ticket")
	m.Queue = d.shortstr("queue.purge queue")
	bits := d.bits(1, 0x0, "queue.purge bits")
	m.NoWait = bit(bits, 0)
}

// QueuePurgeOk is queue.purge-ok (sent by the server).
type QueuePurgeOk struct {
	MessageCount uint32
}

// ID returns (ClassQueue, MethodQueuePurgeOk).
func (*QueuePurgeOk) ID() (classID, methodID uint16) { return ClassQueue, MethodQueuePurgeOk }

func (m *QueuePurgeOk) encode(e *encoder) {
	e.u32(m.MessageCount)
}

func (m *QueuePurgeOk) decode(d *decoder) {
	m.MessageCount = d.u32("queue.purge-ok message-count")
}

// QueueDelete is queue.delete (sent by the client).
type QueueDelete struct {
	Queue    string
	IfUnused bool
	IfEmpty  bool
	NoWait   bool
}

// ID returns (ClassQueue, MethodQueueDelete).
func (*QueueDelete) ID() (classID, methodID uint16) { return ClassQueue, MethodQueueDelete }

func (m *QueueDelete) encode(e *encoder) {
	e.u16(0)
	e.shortstr(m.Queue, "queue.delete queue")
	e.bits(m.IfUnused, m.IfEmpty, m.NoWait)
}

func (m *QueueDelete) decode(d *decoder) {
	d.u16("queue.delete ticket")
	m.Queue = d.shortstr("queue.delete queue")
	bits := d.bits(3, 0x0, "queue.delete bits")
	m.IfUnused = bit(bits, 0)
	m.IfEmpty = bit(bits, 1)
	m.NoWait = bit(bits, 2)
}

// QueueDeleteOk is queue.delete-ok (sent by the server).
type QueueDeleteOk struct {
	MessageCount uint32
}

// ID returns (ClassQueue, MethodQueueDeleteOk).
func (*QueueDeleteOk) ID() (classID, methodID uint16) { return ClassQueue, MethodQueueDeleteOk }

func (m *QueueDeleteOk) encode(e *encoder) {
	e.u32(m.MessageCount)
}

func (m *QueueDeleteOk) decode(d *decoder) {
	m.MessageCount = d.u32("queue.delete-ok message-count")
}

// BasicQos is basic.qos (sent by the client).
type BasicQos struct {
	PrefetchSize  uint32
	PrefetchCount uint16
	Global        bool
}

// ID returns (ClassBasic, MethodBasicQos).
func (*BasicQos) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicQos }

func (m *BasicQos) encode(e *encoder) {
	e.u32(m.PrefetchSize)
	e.u16(m.PrefetchCount)
	e.bits(m.Global)
}

func (m *BasicQos) decode(d *decoder) {
	m.PrefetchSize = d.u32("basic.qos prefetch-size")
	m.PrefetchCount = d.u16("basic.qos prefetch-count")
	bits := d.bits(1, 0x0, "basic.qos bits")
	m.Global = bit(bits, 0)
}

// BasicQosOk is basic.qos-ok (sent by the server).
type BasicQosOk struct{}

// ID returns (ClassBasic, MethodBasicQosOk).
func (*BasicQosOk) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicQosOk }

func (*BasicQosOk) encode(*encoder) {
}

func (*BasicQosOk) decode(*decoder) {
}

// BasicConsume is basic.consume (sent by the client).
type BasicConsume struct {
	Queue       string
	ConsumerTag string
	NoLocal     bool
	NoAck       bool
	Exclusive   bool
	NoWait      bool
	Arguments   Table
}

// ID returns (ClassBasic, MethodBasicConsume).
func (*BasicConsume) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicConsume }

func (m *BasicConsume) encode(e *encoder) {
	e.u16(0)
	e.shortstr(m.Queue, "basic.consume queue")
	e.shortstr(m.ConsumerTag, "basic.consume consumer-tag")
	e.bits(m.NoLocal, m.NoAck, m.Exclusive, m.NoWait)
	e.table(m.Arguments, "basic.consume arguments")
}

func (m *BasicConsume) decode(d *decoder) {
	d.u16("basic.consume ticket")
	m.Queue = d.shortstr("basic.consume queue")
	m.ConsumerTag = d.shortstr("basic.consume consumer-tag")
	bits := d.bits(4, 0x0, "basic.consume bits")
	m.NoLocal = bit(bits, 0)
	m.NoAck = bit(bits, 1)
	m.Exclusive = bit(bits, 2)
	m.NoWait = bit(bits, 3)
	m.Arguments = d.table("basic.consume arguments")
}

// BasicConsumeOk is basic.consume-ok (sent by the server).
type BasicConsumeOk struct {
	ConsumerTag string
}

// ID returns (ClassBasic, MethodBasicConsumeOk).
func (*BasicConsumeOk) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicConsumeOk }

func (m *BasicConsumeOk) encode(e *encoder) {
	e.shortstr(m.ConsumerTag, "basic.consume-ok consumer-tag")
}

func (m *BasicConsumeOk) decode(d *decoder) {
	m.ConsumerTag = d.shortstr("basic.consume-ok consumer-tag")
}

// BasicCancel is basic.cancel (sent by either peer).
type BasicCancel struct {
	ConsumerTag string
	NoWait      bool
}

// ID returns (ClassBasic, MethodBasicCancel).
func (*BasicCancel) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicCancel }

func (m *BasicCancel) encode(e *encoder) {
	e.shortstr(m.ConsumerTag, "basic.cancel consumer-tag")
	e.bits(m.NoWait)
}

func (m *BasicCancel) decode(d *decoder) {
	m.ConsumerTag = d.shortstr("basic.cancel consumer-tag")
	bits := d.bits(1, 0x0, "basic.cancel bits")
	m.NoWait = bit(bits, 0)
}

// BasicCancelOk is basic.cancel-ok (sent by either peer).
type BasicCancelOk struct {
	ConsumerTag string
}

// ID returns (ClassBasic, MethodBasicCancelOk).
func (*BasicCancelOk) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicCancelOk }

func (m *BasicCancelOk) encode(e *encoder) {
	e.shortstr(m.ConsumerTag, "basic.cancel-ok consumer-tag")
}

func (m *BasicCancelOk) decode(d *decoder) {
	m.ConsumerTag = d.shortstr("basic.cancel-ok consumer-tag")
}

// BasicPublish is basic.publish (sent by the client, followed by a content header and body frames).
type BasicPublish struct {
	Exchange   string
	RoutingKey string
	Mandatory  bool
	Immediate  bool
}

// ID returns (ClassBasic, MethodBasicPublish).
func (*BasicPublish) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicPublish }

func (m *BasicPublish) encode(e *encoder) {
	e.u16(0)
	e.shortstr(m.Exchange, "basic.publish exchange")
	e.shortstr(m.RoutingKey, "basic.publish routing-key")
	e.bits(m.Mandatory, m.Immediate)
}

func (m *BasicPublish) decode(d *decoder) {
	d.u16("basic.publish ticket")
	m.Exchange = d.shortstr("basic.publish exchange")
	m.RoutingKey = d.shortstr("basic.publish routing-key")
	bits := d.bits(2, 0x0, "basic.publish bits")
	m.Mandatory = bit(bits, 0)
	m.Immediate = bit(bits, 1)
}

// BasicReturn is basic.return (sent by the server, followed by a content header and body frames).
type BasicReturn struct {
	ReplyCode  uint16
	ReplyText  string
	Exchange   string
	RoutingKey string
}

// ID returns (ClassBasic, MethodBasicReturn).
func (*BasicReturn) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicReturn }

func (m *BasicReturn) encode(e *encoder) {
	e.u16(m.ReplyCode)
	e.shortstr(m.ReplyText, "basic.return reply-text")
	e.shortstr(m.Exchange, "basic.return exchange")
	e.shortstr(m.RoutingKey, "basic.return routing-key")
}

func (m *BasicReturn) decode(d *decoder) {
	m.ReplyCode = d.u16("basic.return reply-code")
	m.ReplyText = d.shortstr("basic.return reply-text")
	m.Exchange = d.shortstr("basic.return exchange")
	m.RoutingKey = d.shortstr("basic.return routing-key")
}

// BasicDeliver is basic.deliver (sent by the server, followed by a content header and body frames).
type BasicDeliver struct {
	ConsumerTag string
	DeliveryTag uint64
	Redelivered bool
	Exchange    string
	RoutingKey  string
}

// ID returns (ClassBasic, MethodBasicDeliver).
func (*BasicDeliver) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicDeliver }

func (m *BasicDeliver) encode(e *encoder) {
	e.shortstr(m.ConsumerTag, "basic.deliver consumer-tag")
	e.u64(m.DeliveryTag)
	e.bits(m.Redelivered)
	e.shortstr(m.Exchange, "basic.deliver exchange")
	e.shortstr(m.RoutingKey, "basic.deliver routing-key")
}

func (m *BasicDeliver) decode(d *decoder) {
	m.ConsumerTag = d.shortstr("basic.deliver consumer-tag")
	m.DeliveryTag = d.u64("basic.deliver delivery-tag")
	bits := d.bits(1, 0x0, "basic.deliver bits")
	m.Redelivered = bit(bits, 0)
	m.Exchange = d.shortstr("basic.deliver exchange")
	m.RoutingKey = d.shortstr("basic.deliver routing-key")
}

// BasicGet is basic.get (sent by the client).
type BasicGet struct {
	Queue string
	NoAck bool
}

// ID returns (ClassBasic, MethodBasicGet).
func (*BasicGet) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicGet }

func (m *BasicGet) encode(e *encoder) {
	e.u16(0)
	e.shortstr(m.Queue, "basic.get queue")
	e.bits(m.NoAck)
}

func (m *BasicGet) decode(d *decoder) {
	d.u16("basic.get ticket")
	m.Queue = d.shortstr("basic.get queue")
	bits := d.bits(1, 0x0, "basic.get bits")
	m.NoAck = bit(bits, 0)
}

// BasicGetOk is basic.get-ok (sent by the server, followed by a content header and body frames).
type BasicGetOk struct {
	DeliveryTag  uint64
	Redelivered  bool
	Exchange     string
	RoutingKey   string
	MessageCount uint32
}

// ID returns (ClassBasic, MethodBasicGetOk).
func (*BasicGetOk) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicGetOk }

func (m *BasicGetOk) encode(e *encoder) {
	e.u64(m.DeliveryTag)
	e.bits(m.Redelivered)
	e.shortstr(m.Exchange, "basic.get-ok exchange")
	e.shortstr(m.RoutingKey, "basic.get-ok routing-key")
	e.u32(m.MessageCount)
}

func (m *BasicGetOk) decode(d *decoder) {
	m.DeliveryTag = d.u64("basic.get-ok delivery-tag")
	bits := d.bits(1, 0x0, "basic.get-ok bits")
	m.Redelivered = bit(bits, 0)
	m.Exchange = d.shortstr("basic.get-ok exchange")
	m.RoutingKey = d.shortstr("basic.get-ok routing-key")
	m.MessageCount = d.u32("basic.get-ok message-count")
}

// BasicGetEmpty is basic.get-empty (sent by the server).
type BasicGetEmpty struct{}

// ID returns (ClassBasic, MethodBasicGetEmpty).
func (*BasicGetEmpty) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicGetEmpty }

func (*BasicGetEmpty) encode(e *encoder) {
	e.shortstr("", "basic.get-empty cluster-id")
}

func (*BasicGetEmpty) decode(d *decoder) {
	d.shortstr("basic.get-empty cluster-id")
}

// BasicAck is basic.ack (sent by either peer).
type BasicAck struct {
	DeliveryTag uint64
	Multiple    bool
}

// ID returns (ClassBasic, MethodBasicAck).
func (*BasicAck) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicAck }

func (m *BasicAck) encode(e *encoder) {
	e.u64(m.DeliveryTag)
	e.bits(m.Multiple)
}

func (m *BasicAck) decode(d *decoder) {
	m.DeliveryTag = d.u64("basic.ack delivery-tag")
	bits := d.bits(1, 0x0, "basic.ack bits")
	m.Multiple = bit(bits, 0)
}

// BasicReject is basic.reject (sent by the client).
type BasicReject struct {
	DeliveryTag uint64
	Requeue     bool
}

// ID returns (ClassBasic, MethodBasicReject).
func (*BasicReject) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicReject }

func (m *BasicReject) encode(e *encoder) {
	e.u64(m.DeliveryTag)
	e.bits(m.Requeue)
}

func (m *BasicReject) decode(d *decoder) {
	m.DeliveryTag = d.u64("basic.reject delivery-tag")
	bits := d.bits(1, 0x0, "basic.reject bits")
	m.Requeue = bit(bits, 0)
}

// BasicRecover is basic.recover (sent by the client).
type BasicRecover struct {
	Requeue bool
}

// ID returns (ClassBasic, MethodBasicRecover).
func (*BasicRecover) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicRecover }

func (m *BasicRecover) encode(e *encoder) {
	e.bits(m.Requeue)
}

func (m *BasicRecover) decode(d *decoder) {
	bits := d.bits(1, 0x0, "basic.recover bits")
	m.Requeue = bit(bits, 0)
}

// BasicRecoverOk is basic.recover-ok (sent by the server).
type BasicRecoverOk struct{}

// ID returns (ClassBasic, MethodBasicRecoverOk).
func (*BasicRecoverOk) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicRecoverOk }

func (*BasicRecoverOk) encode(*encoder) {
}

func (*BasicRecoverOk) decode(*decoder) {
}

// BasicNack is basic.nack (sent by either peer).
type BasicNack struct {
	DeliveryTag uint64
	Multiple    bool
	Requeue     bool
}

// ID returns (ClassBasic, MethodBasicNack).
func (*BasicNack) ID() (classID, methodID uint16) { return ClassBasic, MethodBasicNack }

func (m *BasicNack) encode(e *encoder) {
	e.u64(m.DeliveryTag)
	e.bits(m.Multiple, m.Requeue)
}

func (m *BasicNack) decode(d *decoder) {
	m.DeliveryTag = d.u64("basic.nack delivery-tag")
	bits := d.bits(2, 0x0, "basic.nack bits")
	m.Multiple = bit(bits, 0)
	m.Requeue = bit(bits, 1)
}

// ConfirmSelect is confirm.select (sent by the client).
type ConfirmSelect struct {
	NoWait bool
}

// ID returns (ClassConfirm, MethodConfirmSelect).
func (*ConfirmSelect) ID() (classID, methodID uint16) { return ClassConfirm, MethodConfirmSelect }

func (m *ConfirmSelect) encode(e *encoder) {
	e.bits(m.NoWait)
}

func (m *ConfirmSelect) decode(d *decoder) {
	bits := d.bits(1, 0x0, "confirm.select bits")
	m.NoWait = bit(bits, 0)
}

// ConfirmSelectOk is confirm.select-ok (sent by the server).
type ConfirmSelectOk struct{}

// ID returns (ClassConfirm, MethodConfirmSelectOk).
func (*ConfirmSelectOk) ID() (classID, methodID uint16) { return ClassConfirm, MethodConfirmSelectOk }

func (*ConfirmSelectOk) encode(*encoder) {
}

func (*ConfirmSelectOk) decode(*decoder) {
}

// TxSelect is tx.select (sent by the client).
type TxSelect struct{}

// ID returns (ClassTx, MethodTxSelect).
func (*TxSelect) ID() (classID, methodID uint16) { return ClassTx, MethodTxSelect }

func (*TxSelect) encode(*encoder) {}

func (*TxSelect) decode(*decoder) {}

// TxSelectOk is tx.select-ok (sent by the server).
type TxSelectOk struct{}

// ID returns (ClassTx, MethodTxSelectOk).
func (*TxSelectOk) ID() (classID, methodID uint16) { return ClassTx, MethodTxSelectOk }

func (*TxSelectOk) encode(*encoder) {}

func (*TxSelectOk) decode(*decoder) {}

// TxCommit is tx.commit (sent by the client).
type TxCommit struct{}

// ID returns (ClassTx, MethodTxCommit).
func (*TxCommit) ID() (classID, methodID uint16) { return ClassTx, MethodTxCommit }

func (*TxCommit) encode(*encoder) {}

func (*TxCommit) decode(*decoder) {}

// TxCommitOk is tx.commit-ok (sent by the server).
type TxCommitOk struct{}

// ID returns (ClassTx, MethodTxCommitOk).
func (*TxCommitOk) ID() (classID, methodID uint16) { return ClassTx, MethodTxCommitOk }

func (*TxCommitOk) encode(*encoder) {}

func (*TxCommitOk) decode(*decoder) {}

// TxRollback is tx.rollback (sent by the client).
type TxRollback struct{}

// ID returns (ClassTx, MethodTxRollback).
func (*TxRollback) ID() (classID, methodID uint16) { return ClassTx, MethodTxRollback }

func (*TxRollback) encode(*encoder) {}

func (*TxRollback) decode(*decoder) {}

// TxRollbackOk is tx.rollback-ok (sent by the server).
type TxRollbackOk struct{}

// ID returns (ClassTx, MethodTxRollbackOk).
func (*TxRollbackOk) ID() (classID, methodID uint16) { return ClassTx, MethodTxRollbackOk }

func (*TxRollbackOk) encode(*encoder) {}

func (*TxRollbackOk) decode(*decoder) {}

// ConnectionUpdateSecret is connection.update-secret (sent by the client;
// RabbitMQ's extension): a new secret for the connection's user.
type ConnectionUpdateSecret struct {
	NewSecret string
	Reason    string
}

// ID returns (ClassConnection, MethodConnectionUpdateSecret).
func (*ConnectionUpdateSecret) ID() (classID, methodID uint16) {
	return ClassConnection, MethodConnectionUpdateSecret
}

func (m *ConnectionUpdateSecret) encode(e *encoder) {
	e.longstr(m.NewSecret, "connection.update-secret new-secret")
	e.shortstr(m.Reason, "connection.update-secret reason")
}

func (m *ConnectionUpdateSecret) decode(d *decoder) {
	m.NewSecret = d.longstr("connection.update-secret new-secret")
	m.Reason = d.shortstr("connection.update-secret reason")
}

// ConnectionUpdateSecretOk is connection.update-secret-ok (sent by the
// server).
type ConnectionUpdateSecretOk struct{}

// ID returns (ClassConnection, MethodConnectionUpdateSecretOk).
func (*ConnectionUpdateSecretOk) ID() (classID, methodID uint16) {
	return ClassConnection, MethodConnectionUpdateSecretOk
}

func (*ConnectionUpdateSecretOk) encode(*encoder) {}

func (*ConnectionUpdateSecretOk) decode(*decoder) {}

// newMethod returns a zero value of the method with these ids, or nil if
// this codec does not decode it.
func newMethod(classID, methodID uint16) Method {
	switch uint32(classID)<<16 | uint32(methodID) {
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionStart):
		return &ConnectionStart{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionStartOk):
		return &ConnectionStartOk{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionSecure):
		return &ConnectionSecure{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionSecureOk):
		return &ConnectionSecureOk{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionTune):
		return &ConnectionTune{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionTuneOk):
		return &ConnectionTuneOk{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionOpen):
		return &ConnectionOpen{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionOpenOk):
		return &ConnectionOpenOk{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionClose):
		return &ConnectionClose{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionCloseOk):
		return &ConnectionCloseOk{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionBlocked):
		return &ConnectionBlocked{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionUnblocked):
		return &ConnectionUnblocked{}
	case uint32(ClassChannel)<<16 | uint32(MethodChannelOpen):
		return &ChannelOpen{}
	case uint32(ClassChannel)<<16 | uint32(MethodChannelOpenOk):
		return &ChannelOpenOk{}
	case uint32(ClassChannel)<<16 | uint32(MethodChannelFlow):
		return &ChannelFlow{}
	case uint32(ClassChannel)<<16 | uint32(MethodChannelFlowOk):
		return &ChannelFlowOk{}
	case uint32(ClassChannel)<<16 | uint32(MethodChannelClose):
		return &ChannelClose{}
	case uint32(ClassChannel)<<16 | uint32(MethodChannelCloseOk):
		return &ChannelCloseOk{}
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeDeclare):
		return &ExchangeDeclare{}
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeDeclareOk):
		return &ExchangeDeclareOk{}
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeDelete):
		return &ExchangeDelete{}
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeDeleteOk):
		return &ExchangeDeleteOk{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionUpdateSecret):
		return &ConnectionUpdateSecret{}
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionUpdateSecretOk):
		return &ConnectionUpdateSecretOk{}
	case uint32(ClassTx)<<16 | uint32(MethodTxSelect):
		return &TxSelect{}
	case uint32(ClassTx)<<16 | uint32(MethodTxSelectOk):
		return &TxSelectOk{}
	case uint32(ClassTx)<<16 | uint32(MethodTxCommit):
		return &TxCommit{}
	case uint32(ClassTx)<<16 | uint32(MethodTxCommitOk):
		return &TxCommitOk{}
	case uint32(ClassTx)<<16 | uint32(MethodTxRollback):
		return &TxRollback{}
	case uint32(ClassTx)<<16 | uint32(MethodTxRollbackOk):
		return &TxRollbackOk{}
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeBind):
		return &ExchangeBind{}
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeBindOk):
		return &ExchangeBindOk{}
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeUnbind):
		return &ExchangeUnbind{}
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeUnbindOk):
		return &ExchangeUnbindOk{}
	case uint32(ClassQueue)<<16 | uint32(MethodQueueDeclare):
		return &QueueDeclare{}
	case uint32(ClassQueue)<<16 | uint32(MethodQueueDeclareOk):
		return &QueueDeclareOk{}
	case uint32(ClassQueue)<<16 | uint32(MethodQueueBind):
		return &QueueBind{}
	case uint32(ClassQueue)<<16 | uint32(MethodQueueBindOk):
		return &QueueBindOk{}
	case uint32(ClassQueue)<<16 | uint32(MethodQueueUnbind):
		return &QueueUnbind{}
	case uint32(ClassQueue)<<16 | uint32(MethodQueueUnbindOk):
		return &QueueUnbindOk{}
	case uint32(ClassQueue)<<16 | uint32(MethodQueuePurge):
		return &QueuePurge{}
	case uint32(ClassQueue)<<16 | uint32(MethodQueuePurgeOk):
		return &QueuePurgeOk{}
	case uint32(ClassQueue)<<16 | uint32(MethodQueueDelete):
		return &QueueDelete{}
	case uint32(ClassQueue)<<16 | uint32(MethodQueueDeleteOk):
		return &QueueDeleteOk{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicQos):
		return &BasicQos{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicQosOk):
		return &BasicQosOk{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicConsume):
		return &BasicConsume{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicConsumeOk):
		return &BasicConsumeOk{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicCancel):
		return &BasicCancel{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicCancelOk):
		return &BasicCancelOk{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicPublish):
		return &BasicPublish{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicReturn):
		return &BasicReturn{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicDeliver):
		return &BasicDeliver{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicGet):
		return &BasicGet{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicGetOk):
		return &BasicGetOk{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicGetEmpty):
		return &BasicGetEmpty{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicAck):
		return &BasicAck{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicReject):
		return &BasicReject{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicRecover):
		return &BasicRecover{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicRecoverOk):
		return &BasicRecoverOk{}
	case uint32(ClassBasic)<<16 | uint32(MethodBasicNack):
		return &BasicNack{}
	case uint32(ClassConfirm)<<16 | uint32(MethodConfirmSelect):
		return &ConfirmSelect{}
	case uint32(ClassConfirm)<<16 | uint32(MethodConfirmSelectOk):
		return &ConfirmSelectOk{}
	}
	return nil
}

// specMethodName returns "class.method" for every method of the 0-9-1 spec
// and RabbitMQ's extensions, decoded here or not, and "" for ids neither
// defines.
func specMethodName(classID, methodID uint16) string {
	switch uint32(classID)<<16 | uint32(methodID) {
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionStart):
		return "connection.start"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionStartOk):
		return "connection.start-ok"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionSecure):
		return "connection.secure"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionSecureOk):
		return "connection.secure-ok"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionTune):
		return "connection.tune"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionTuneOk):
		return "connection.tune-ok"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionOpen):
		return "connection.open"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionOpenOk):
		return "connection.open-ok"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionClose):
		return "connection.close"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionCloseOk):
		return "connection.close-ok"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionBlocked):
		return "connection.blocked"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionUnblocked):
		return "connection.unblocked"
	case uint32(ClassChannel)<<16 | uint32(MethodChannelOpen):
		return "channel.open"
	case uint32(ClassChannel)<<16 | uint32(MethodChannelOpenOk):
		return "channel.open-ok"
	case uint32(ClassChannel)<<16 | uint32(MethodChannelFlow):
		return "channel.flow"
	case uint32(ClassChannel)<<16 | uint32(MethodChannelFlowOk):
		return "channel.flow-ok"
	case uint32(ClassChannel)<<16 | uint32(MethodChannelClose):
		return "channel.close"
	case uint32(ClassChannel)<<16 | uint32(MethodChannelCloseOk):
		return "channel.close-ok"
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeDeclare):
		return "exchange.declare"
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeDeclareOk):
		return "exchange.declare-ok"
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeDelete):
		return "exchange.delete"
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeDeleteOk):
		return "exchange.delete-ok"
	case uint32(ClassQueue)<<16 | uint32(MethodQueueDeclare):
		return "queue.declare"
	case uint32(ClassQueue)<<16 | uint32(MethodQueueDeclareOk):
		return "queue.declare-ok"
	case uint32(ClassQueue)<<16 | uint32(MethodQueueBind):
		return "queue.bind"
	case uint32(ClassQueue)<<16 | uint32(MethodQueueBindOk):
		return "queue.bind-ok"
	case uint32(ClassQueue)<<16 | uint32(MethodQueueUnbind):
		return "queue.unbind"
	case uint32(ClassQueue)<<16 | uint32(MethodQueueUnbindOk):
		return "queue.unbind-ok"
	case uint32(ClassQueue)<<16 | uint32(MethodQueuePurge):
		return "queue.purge"
	case uint32(ClassQueue)<<16 | uint32(MethodQueuePurgeOk):
		return "queue.purge-ok"
	case uint32(ClassQueue)<<16 | uint32(MethodQueueDelete):
		return "queue.delete"
	case uint32(ClassQueue)<<16 | uint32(MethodQueueDeleteOk):
		return "queue.delete-ok"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicQos):
		return "basic.qos"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicQosOk):
		return "basic.qos-ok"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicConsume):
		return "basic.consume"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicConsumeOk):
		return "basic.consume-ok"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicCancel):
		return "basic.cancel"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicCancelOk):
		return "basic.cancel-ok"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicPublish):
		return "basic.publish"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicReturn):
		return "basic.return"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicDeliver):
		return "basic.deliver"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicGet):
		return "basic.get"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicGetOk):
		return "basic.get-ok"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicGetEmpty):
		return "basic.get-empty"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicAck):
		return "basic.ack"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicReject):
		return "basic.reject"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicRecover):
		return "basic.recover"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicRecoverOk):
		return "basic.recover-ok"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicNack):
		return "basic.nack"
	case uint32(ClassConfirm)<<16 | uint32(MethodConfirmSelect):
		return "confirm.select"
	case uint32(ClassConfirm)<<16 | uint32(MethodConfirmSelectOk):
		return "confirm.select-ok"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionUpdateSecret):
		return "connection.update-secret"
	case uint32(ClassConnection)<<16 | uint32(MethodConnectionUpdateSecretOk):
		return "connection.update-secret-ok"
	case uint32(ClassAccess)<<16 | uint32(10):
		return "access.request"
	case uint32(ClassAccess)<<16 | uint32(11):
		return "access.request-ok"
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeBind):
		return "exchange.bind"
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeBindOk):
		return "exchange.bind-ok"
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeUnbind):
		return "exchange.unbind"
	case uint32(ClassExchange)<<16 | uint32(MethodExchangeUnbindOk):
		return "exchange.unbind-ok"
	case uint32(ClassBasic)<<16 | uint32(MethodBasicRecoverAsync):
		return "basic.recover-async"
	case uint32(ClassTx)<<16 | uint32(MethodTxSelect):
		return "tx.select"
	case uint32(ClassTx)<<16 | uint32(MethodTxSelectOk):
		return "tx.select-ok"
	case uint32(ClassTx)<<16 | uint32(MethodTxCommit):
		return "tx.commit"
	case uint32(ClassTx)<<16 | uint32(MethodTxCommitOk):
		return "tx.commit-ok"
	case uint32(ClassTx)<<16 | uint32(MethodTxRollback):
		return "tx.rollback"
	case uint32(ClassTx)<<16 | uint32(MethodTxRollbackOk):
		return "tx.rollback-ok"
	}
	return ""
}

// hasContent reports whether a method is followed by content.
func hasContent(classID, methodID uint16) bool {
	if classID != ClassBasic {
		return false
	}
	switch methodID {
	case MethodBasicPublish, MethodBasicReturn, MethodBasicDeliver, MethodBasicGetOk:
		return true
	}
	return false
}
