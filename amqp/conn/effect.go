package conn

import (
	"fmt"

	"github.com/sluicemq/sluice/amqp/wire"
)

// Effect is one thing the driver must do. Effects of one Step are carried
// out in the order given; byte slices in them belong to the driver.
type Effect interface {
	// String is the effect's stable one-line text form.
	String() string
	effect()
}

// EfWrite: write these bytes to the socket (whole frames, or the protocol
// header a client with the wrong one gets back).
type EfWrite struct{ Bytes []byte }

// EfClose: close the socket, after writing what came before, and end the
// connection's broker session: the broker cancels its subscriptions,
// returns its unsettled deliveries to their queues (redelivered) and drops
// answers to its pending operations. Publishes already handed over go on;
// their outcomes are no longer reported. The last effect of a connection:
// Step returns nothing after it.
type EfClose struct {
	Reason string
	// ClientCloses: the last thing written is the server's close-ok; the
	// client, its receiver, closes the socket (AMQP's rule), which the
	// driver waits for, a bounded while, before closing it itself.
	ClientCloses bool
}

// EfTimer: deliver an InTime at or after AtNs. It replaces any earlier
// EfTimer; the machine emits one whenever it needs an earlier wake-up than
// the one armed, or the armed one has passed.
type EfTimer struct{ AtNs int64 }

// EfRead pauses (Paused) or resumes reading the socket. While paused the
// driver hands in no more InBytes than it had already read; the machine
// holds them (up to Config.InputBytesMax) and parses them on resume. This
// is the back-pressure of publishes: the socket's receive window fills and
// the client waits, as with RabbitMQ's flow control.
type EfRead struct{ Paused bool }

// Policy is a queue's durability policy (x-sluice-policy).
type Policy string

// The durability policies; "" leaves the choice to the broker.
const (
	PolicyLeaderDurable   Policy = "leader_durable"
	PolicyMajorityDurable Policy = "majority_durable"
	PolicyAllDurable      Policy = "all_durable"
	PolicyISR             Policy = "isr"
)

// QueueSpec is what queue.declare asks for. Zero Replicas, Policy and
// MinInSync leave the choice to the broker's defaults.
type QueueSpec struct {
	Name      string // "" with ServerNamed: the broker names it
	Passive   bool
	Durable   bool
	Replicas  uint8 // 1..5
	Policy    Policy
	MinInSync uint8 // 1..Replicas
	// AutoDelete, Exclusive: RabbitMQ's queue properties (exclusive: this
	// connection's alone, deleted with it); ServerNamed: declared with an
	// empty name, which declare-ok reports (InResult.Queue)
	AutoDelete  bool
	Exclusive   bool
	ServerNamed bool
}

// EfDeclareQueue asks the broker to declare (or, Passive, check) a queue.
type EfDeclareQueue struct {
	Op    OpID
	Queue QueueSpec
}

// EfDeleteQueue asks the broker to delete a queue; the flags are the
// client's.
type EfDeleteQueue struct {
	Op       OpID
	Queue    string
	IfUnused bool
	IfEmpty  bool
}

// EfPurgeQueue asks the broker to drop a queue's ready messages.
type EfPurgeQueue struct {
	Op    OpID
	Queue string
}

// EfDeclareExchange asks the broker to declare (or, Passive, check) an
// exchange of type Type (direct, fanout, topic or headers) with its flags
// and alternate exchange (the alternate-exchange argument, "" none).
type EfDeclareExchange struct {
	Op         OpID
	Exchange   string
	Type       string
	Passive    bool
	Durable    bool
	AutoDelete bool
	Internal   bool
	Alternate  string
}

// EfDeleteExchange asks the broker to delete an exchange.
type EfDeleteExchange struct {
	Op       OpID
	Exchange string
	IfUnused bool
}

// EfBind asks the broker to bind (Unbind false) or unbind a queue, or an
// exchange (Destination, for exchange.bind; Queue is then ""), to
// exchange Exchange with a routing key and arguments (a headers exchange
// matches them).
type EfBind struct {
	Op          OpID
	Unbind      bool
	Queue       string
	Destination string
	Exchange    string
	RoutingKey  string
	Arguments   wire.Table
}

// EfPublish hands a message to the broker, which resolves the exchange and
// routing key against its catalogue (the default exchange "" routes to the
// queue named by the key) and answers with an InPublished outcome for ID.
type EfPublish struct {
	ID         PublishID
	Exchange   string
	RoutingKey string
	Mandatory  bool
	Content
}

// EfSubscribe asks the broker to deliver a queue's messages to Sub, with at
// most PrefetchCount unsettled deliveries outstanding (ignored for NoAck:
// the broker settles those itself as it delivers).
type EfSubscribe struct {
	Op            OpID
	Sub           SubID
	Queue         string
	ConsumerTag   string // for the broker's listings only
	PrefetchCount uint16
	NoAck         bool
	Exclusive     bool
	Priority      int32 // the x-priority argument (0: none)
}

// EfCancel ends a subscription; its result says no delivery for Sub follows.
type EfCancel struct {
	Op  OpID
	Sub SubID
}

// EfGet asks the broker for one message of a queue (basic.get).
type EfGet struct {
	Op    OpID
	Queue string
	NoAck bool
}

// Settle is how a delivery is settled.
type Settle uint8

const (
	SettleAck Settle = iota + 1
	SettleNack
	SettleReject
)

func (s Settle) String() string {
	switch s {
	case SettleAck:
		return "ack"
	case SettleNack:
		return "nack"
	case SettleReject:
		return "reject"
	}
	return fmt.Sprintf("settle(%d)", uint8(s))
}

// EfSettle settles one delivery: ack removes it; nack and reject return it
// to its queue (Requeue) or drop it. The machine also returns (nack,
// Requeue) deliveries whose consumer or channel is gone.
type EfSettle struct {
	Queue   string
	Handle  Handle
	How     Settle
	Requeue bool
}

func (EfWrite) effect()           {}
func (EfClose) effect()           {}
func (EfTimer) effect()           {}
func (EfRead) effect()            {}
func (EfDeclareQueue) effect()    {}
func (EfDeleteQueue) effect()     {}
func (EfPurgeQueue) effect()      {}
func (EfDeclareExchange) effect() {}
func (EfDeleteExchange) effect()  {}
func (EfBind) effect()            {}
func (EfPublish) effect()         {}
func (EfSubscribe) effect()       {}
func (EfCancel) effect()          {}
func (EfGet) effect()             {}
func (EfSettle) effect()          {}

func (e EfWrite) String() string { return "write " + framesText(e.Bytes) }
func (e EfClose) String() string {
	if e.ClientCloses {
		return fmt.Sprintf("close reason=%q client-closes", e.Reason)
	}
	return fmt.Sprintf("close reason=%q", e.Reason)
}
func (e EfTimer) String() string { return fmt.Sprintf("timer at=%d", e.AtNs) }
func (e EfRead) String() string {
	if e.Paused {
		return "read pause"
	}
	return "read resume"
}
func (e EfDeclareQueue) String() string {
	q := e.Queue
	s := fmt.Sprintf("declare-queue op=%d queue=%q passive=%t durable=%t replicas=%d policy=%q min-insync=%d",
		e.Op, q.Name, q.Passive, q.Durable, q.Replicas, q.Policy, q.MinInSync)
	if q.AutoDelete {
		s += " auto-delete"
	}
	if q.Exclusive {
		s += " exclusive"
	}
	if q.ServerNamed {
		s += " server-named"
	}
	return s
}
func (e EfDeleteQueue) String() string {
	return fmt.Sprintf("delete-queue op=%d queue=%q if-unused=%t if-empty=%t", e.Op, e.Queue, e.IfUnused, e.IfEmpty)
}
func (e EfPurgeQueue) String() string {
	return fmt.Sprintf("purge-queue op=%d queue=%q", e.Op, e.Queue)
}
func (e EfDeclareExchange) String() string {
	return fmt.Sprintf("declare-exchange op=%d exchange=%q type=%q passive=%t durable=%t auto-delete=%t internal=%t alternate=%q",
		e.Op, e.Exchange, e.Type, e.Passive, e.Durable, e.AutoDelete, e.Internal, e.Alternate)
}
func (e EfDeleteExchange) String() string {
	return fmt.Sprintf("delete-exchange op=%d exchange=%q if-unused=%t", e.Op, e.Exchange, e.IfUnused)
}
func (e EfBind) String() string {
	verb := "bind"
	if e.Unbind {
		verb = "unbind"
	}
	s := fmt.Sprintf("%s op=%d queue=%q exchange=%q routing-key=%q", verb, e.Op, e.Queue, e.Exchange, e.RoutingKey)
	if e.Destination != "" {
		s = fmt.Sprintf("%s op=%d destination=%q exchange=%q routing-key=%q", verb, e.Op, e.Destination, e.Exchange, e.RoutingKey)
	}
	if len(e.Arguments) > 0 {
		s += fmt.Sprintf(" args=%s", e.Arguments)
	}
	return s
}
func (e EfPublish) String() string {
	return fmt.Sprintf("publish id=%d exchange=%q routing-key=%q mandatory=%t props={%s} body=%s",
		e.ID, e.Exchange, e.RoutingKey, e.Mandatory, propsText(&e.Properties), bytesText(e.Body))
}
func (e EfSubscribe) String() string {
	s := fmt.Sprintf("subscribe op=%d sub=%d queue=%q tag=%q prefetch=%d no-ack=%t exclusive=%t",
		e.Op, e.Sub, e.Queue, e.ConsumerTag, e.PrefetchCount, e.NoAck, e.Exclusive)
	if e.Priority != 0 {
		s += fmt.Sprintf(" priority=%d", e.Priority)
	}
	return s
}
func (e EfCancel) String() string { return fmt.Sprintf("cancel op=%d sub=%d", e.Op, e.Sub) }
func (e EfGet) String() string {
	return fmt.Sprintf("get op=%d queue=%q no-ack=%t", e.Op, e.Queue, e.NoAck)
}
func (e EfSettle) String() string {
	return fmt.Sprintf("settle queue=%q handle=%d %s requeue=%t", e.Queue, e.Handle, e.How, e.Requeue)
}
