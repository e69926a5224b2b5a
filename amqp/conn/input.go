package conn

import (
	"fmt"
	"strings"

	"github.com/sluicemq/sluice/amqp/wire"
)

// OpID names one broker operation the machine asked for (declare, delete,
// purge, bind, unbind, subscribe, cancel, get). Chosen by the machine,
// increasing from 1 per connection, never reused.
type OpID uint64

// PublishID names one publish handed to the broker. Chosen by the machine,
// increasing from 1 per connection, never reused.
type PublishID uint64

// SubID names one subscription (an AMQP consumer). Chosen by the machine,
// increasing from 1 per connection, never reused.
type SubID uint64

// Handle is the broker's name for one delivery, opaque to the machine and
// returned in EfSettle. Unique among the deliveries of a queue that are
// outstanding.
type Handle uint64

// Input is one thing that happened: bytes from the socket, the passage of
// time, or a broker outcome. Every input carries the instant, in
// nanoseconds of a clock that never goes back.
type Input interface {
	nowNs() int64
	// String is the input's stable one-line text form.
	String() string
}

// InAccept is the first input of every connection: the socket was accepted.
type InAccept struct{ NowNs int64 }

// InBytes is bytes read from the socket, any chunk of the stream.
type InBytes struct {
	NowNs int64
	Bytes []byte
}

// InTime is the passage of time (the timer of EfTimer fired, or any other
// reason: a spurious InTime is harmless).
type InTime struct{ NowNs int64 }

// InPublished is the broker's outcomes of publishes, any number and in any
// order (a group commit resolves many at once).
type InPublished struct {
	NowNs   int64
	Results []PublishResult
}

// Outcome is what became of a publish.
type Outcome uint8

const (
	// Confirmed: held durably by W replicas; the client gets basic.ack.
	Confirmed Outcome = iota + 1
	// Unroutable: no queue is bound for the exchange and routing key.
	// Counted as confirmed (RabbitMQ acks unroutable messages); a mandatory
	// publish is first returned with basic.return 312 NO_ROUTE, with the
	// content the broker hands back in Returned.
	Unroutable
	// Failed: definitely not stored and never delivered; basic.nack.
	Failed
	// Refused: the publish was not valid (Code, Text), e.g. 404 NOT_FOUND
	// for an exchange that does not exist; the channel (or, for a hard
	// code, the connection) is closed with it.
	Refused
	// Unknown: the broker cannot say (the owner was lost mid-write). The
	// connection is closed with 320 CONNECTION_FORCED, so the client sees
	// this publish, and every other unconfirmed one, as unknown: AMQP has
	// no other way to say "unknown", and a nack would claim a failure.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case Confirmed:
		return "confirmed"
	case Unroutable:
		return "unroutable"
	case Failed:
		return "failed"
	case Refused:
		return "refused"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// PublishResult is the outcome of one publish.
type PublishResult struct {
	ID      PublishID
	Outcome Outcome
	Code    uint16 // Refused only: the reply code
	Text    string // Refused, Failed, Unknown: the reason
	// Returned is the content of a mandatory publish that was Unroutable,
	// handed back by the broker for basic.return.
	Returned *Content
}

// Content is a message's properties and body.
type Content struct {
	Properties wire.Properties
	Body       []byte
}

// Message is one message the broker delivers (to a subscription or for a
// basic.get).
type Message struct {
	Handle      Handle
	Redelivered bool
	Exchange    string // as published
	RoutingKey  string // as published
	Content
}

// InResult is the broker's answer to an operation. Code 0 is success; any
// other is a reply code of the spec (404 NOT_FOUND, 405 RESOURCE_LOCKED,
// 406 PRECONDITION_FAILED, 403 ACCESS_REFUSED, 530 NOT_ALLOWED, ...) that
// closes the channel (soft codes) or the connection (hard codes).
type InResult struct {
	NowNs int64
	Op    OpID
	Code  uint16
	Text  string
	// MessageCount answers queue.declare, queue.delete, queue.purge and
	// basic.get-ok; ConsumerCount answers queue.declare.
	MessageCount  uint32
	ConsumerCount uint32
	// Message answers a basic.get: nil means the queue was empty.
	Message *Message
	// Queue answers a server-named queue.declare: the name it was given.
	Queue string
}

// InDelivery is a message for a subscription. The broker never has more
// unsettled deliveries outstanding for a subscription than its
// EfSubscribe's PrefetchCount (unless NoAck).
type InDelivery struct {
	NowNs   int64
	Sub     SubID
	Queue   string // the subscription's queue, so a delivery that arrives too late can be returned
	Message Message
}

// InCancelled says the broker ended a subscription on its own (its queue
// was deleted): no delivery for it follows.
type InCancelled struct {
	NowNs int64
	Sub   SubID
}

// InBrokerLost says the connection to the broker that serves this client is
// gone: outcomes still pending will never arrive.
type InBrokerLost struct {
	NowNs  int64
	Reason string
}

func (in InAccept) nowNs() int64     { return in.NowNs }
func (in InBytes) nowNs() int64      { return in.NowNs }
func (in InTime) nowNs() int64       { return in.NowNs }
func (in InPublished) nowNs() int64  { return in.NowNs }
func (in InResult) nowNs() int64     { return in.NowNs }
func (in InDelivery) nowNs() int64   { return in.NowNs }
func (in InCancelled) nowNs() int64  { return in.NowNs }
func (in InBrokerLost) nowNs() int64 { return in.NowNs }

func (in InAccept) String() string { return fmt.Sprintf("accept t=%d", in.NowNs) }
func (in InBytes) String() string {
	return fmt.Sprintf("bytes t=%d %s", in.NowNs, bytesText(in.Bytes))
}
func (in InTime) String() string { return fmt.Sprintf("time t=%d", in.NowNs) }
func (in InPublished) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "published t=%d", in.NowNs)
	for _, r := range in.Results {
		fmt.Fprintf(&b, " id=%d:%s", r.ID, r.Outcome)
		if r.Code != 0 {
			fmt.Fprintf(&b, ":%d", r.Code)
		}
		if r.Text != "" {
			fmt.Fprintf(&b, ":%q", r.Text)
		}
		if r.Returned != nil {
			fmt.Fprintf(&b, ":returned{%s %s}", propsText(&r.Returned.Properties), bytesText(r.Returned.Body))
		}
	}
	return b.String()
}
func (in InResult) String() string {
	s := fmt.Sprintf("result t=%d op=%d code=%d", in.NowNs, in.Op, in.Code)
	if in.Text != "" {
		s += fmt.Sprintf(" text=%q", in.Text)
	}
	s += fmt.Sprintf(" messages=%d consumers=%d", in.MessageCount, in.ConsumerCount)
	if in.Message != nil {
		s += " " + in.Message.text()
	}
	return s
}
func (in InDelivery) String() string {
	return fmt.Sprintf("delivery t=%d sub=%d queue=%q %s", in.NowNs, in.Sub, in.Queue, in.Message.text())
}
func (in InCancelled) String() string { return fmt.Sprintf("cancelled t=%d sub=%d", in.NowNs, in.Sub) }
func (in InBrokerLost) String() string {
	return fmt.Sprintf("broker-lost t=%d reason=%q", in.NowNs, in.Reason)
}

func (m *Message) text() string {
	return fmt.Sprintf("handle=%d redelivered=%t exchange=%q routing-key=%q props={%s} body=%s",
		m.Handle, m.Redelivered, m.Exchange, m.RoutingKey, propsText(&m.Properties), bytesText(m.Body))
}
